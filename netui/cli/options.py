"""What every command's options share: the checked number types, the options that name the
nodes and their sources (``common``), and the exit statuses a --help ends with.

Every numeric option goes through one of these argparse types: a number that is not finite
(``inf``, ``nan``), out of range, or not a number at all is a usage error that says which
bounds hold — never an endless wait (``--interval inf``) nor an OverflowError from deep in a
timer (``--scrape-timeout 1e300``). The upper bounds are far above any sensible value; they
keep a typo from turning into a timer the event loop cannot hold or a history ring of
gigabytes.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


from netui.readlimits import MAX_NODES, MAX_NODES_DEFAULT

MAX_SECONDS = 86_400.0  # a day: no interval, timeout or duration netui takes is longer
MAX_COUNT = 1_000_000_000


def number(*, low: float = 0.0, high: float = MAX_SECONDS, low_inclusive: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite float in (low, high] (or [low, high] with ``low_inclusive``)."""
    bounds = f"must be {'at least' if low_inclusive else 'greater than'} {low:g} and at most {high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number: {bounds}")
        if value < low or (value == low and not low_inclusive) or value > high:
            raise argparse.ArgumentTypeError(f"{text}: {bounds}")
        return value

    parse.__name__ = "number"  # argparse names the type in some messages
    return parse


def whole(*, low: int = 1, high: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse type: an int in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text}: must be at least {low:,} and at most {high:,}")
        return value

    parse.__name__ = "whole"
    return parse


positive_float = number()  # seconds and factors: (0, a day]
positive_int = whole()
percent = number(low=0.0, high=100.0, low_inclusive=True)
port = whole(low=1, high=65535)
max_nodes = whole(low=1, high=MAX_NODES)


def size(text: str) -> int:
    """An argparse type: a size such as 100M or 2G, in bytes."""
    from netui.readlimits import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def rotate_size(text: str) -> int:
    """An argparse type: ``--max-size``, a size at least a recording file's smallest."""
    from netui.engine.recording.writer import MIN_ROTATE_BYTES

    value = size(text)
    if value < MIN_ROTATE_BYTES:
        hint = f" (did you mean {text.strip()}M?)" if text.strip().isdigit() else ""
        raise argparse.ArgumentTypeError(f"{text}: a rotated file holds at least {MIN_ROTATE_BYTES >> 10} KiB{hint}")
    return value


def exit_epilog(failure: str | None = None, extra: str = "") -> str:
    """The exit statuses, for a command's --help: the same convention everywhere (netui/exits.py)."""
    return ("Exit status: 0 ok" + (f", 1 {failure}" if failure else "")
            + ", 2 a usage or input error (bad arguments, a file netui cannot read or will not write)"
            + (f", {extra}" if extra else "") + ".")


def common(p: argparse.ArgumentParser) -> None:
    """The options every command that watches nodes takes: the nodes, how to reach them, the
    interval."""
    p.add_argument("hosts", nargs="*", metavar="HOST",
                   help="nodes to watch over SSH: [user@]host[:port] or ranges like gpu[001-128]; "
                        "none: this host")
    p.add_argument("--interval", "-n", type=positive_float, default=1.0, metavar="S",
                   help="seconds between samples (default 1)")
    inv = p.add_argument_group("which nodes")
    inv.add_argument("-f", "--file", dest="files", action="append", default=[], metavar="FILE",
                     help="read hosts or ranges from FILE, one per line (# comments)")
    inv.add_argument("--slurm", nargs="?", const=None, default=False, metavar="JOBID",
                     help="the nodes of a Slurm job ($SLURM_JOB_NODELIST, or JOBID via scontrol)")
    inv.add_argument("--local", action="store_true", help="watch this host too, alongside the SSH nodes")
    inv.add_argument("--max-nodes", type=max_nodes, default=MAX_NODES_DEFAULT, metavar="N",
                     help=f"refuse more nodes than N (default {MAX_NODES_DEFAULT:,}, "
                          f"at most {MAX_NODES:,}): a typo in a range is caught before connecting")
    ssh = p.add_argument_group("SSH")
    ssh.add_argument("-F", dest="ssh_config", action="append", default=[], metavar="FILE",
                     help="ssh_config file (default ~/.ssh/config)")
    ssh.add_argument("-l", dest="user", metavar="USER", help="login user where the host names none")
    ssh.add_argument("-i", dest="identity", action="append", default=[], metavar="KEY",
                     help="private key file (default: ssh-agent and ~/.ssh keys)")
    ssh.add_argument("--connect-timeout", type=positive_float, default=10.0, metavar="S",
                     help="seconds to connect and log in (default 10)")
    ssh.add_argument("--fanout", type=positive_int, default=64, metavar="N",
                     help="SSH handshakes at once (default 64)")
    ssh.add_argument("--accept-new-host-keys", action="store_true",
                     help="record the keys of hosts not yet in known_hosts (a changed key is always refused)")
    src = p.add_argument_group("other sources")
    src.add_argument("--procfs", metavar="PATH", help="read /proc from PATH (a mounted or captured tree)")
    src.add_argument("--sysfs", metavar="PATH", help="read /sys from PATH (with --procfs)")
    src.add_argument("--replay", metavar="FILE", help="replay a recording instead of live data (as netui replay FILE)")
    src.add_argument("--source", default="ssh", metavar="KIND",
                     help="where the HOSTs' counters come from: ssh (default), node-exporter "
                          "(http://HOST:9100/metrics), prometheus=URL (a Prometheus server's API)")
    src.add_argument("--exporter-port", type=port, default=9100, metavar="N",
                     help="node_exporter's port where a host names none (default 9100)")
    src.add_argument("--prometheus-job", metavar="JOB",
                     help="with --source prometheus=URL: read only this scrape job's series "
                          "(default: per node, the job that covers the most nodes)")
    src.add_argument("--scrape-timeout", type=positive_float, default=5.0, metavar="S",
                     help="seconds for one node_exporter scrape or Prometheus query (default 5)")


def topology_option(p: argparse.ArgumentParser) -> None:
    """``--topology FILE`` for the commands that watch nodes (netui, snapshot, record, bench);
    read by cli/topology.py ``attach_topology``."""
    p.add_argument("--topology", metavar="FILE",
                   help="where each node is cabled: Slurm's topology.conf or netui's TOML map "
                        "(docs/topology.md); with --slurm and no FILE, `scontrol show topology` is asked")


def mesh_option(p: argparse.ArgumentParser) -> None:
    """``--mesh off|on|RATE`` for the commands that watch nodes live over SSH (netui, snapshot,
    record): model/mesh.py ``parse_mesh_option``; unset, config.toml's ``mesh`` decides."""
    p.add_argument("--mesh", default=None, metavar="off|on|RATE",
                   help="the probe mesh: every node probes the others over UDP at a low rate and "
                        "answers their probes, to see packet loss no counter shows (docs/mesh.md); "
                        "on: at most 20 probes a second per node, each peer at most every 2 s; RATE: "
                        "probes a second per node; off: no probe (default: config.toml's mesh, else on for up to "
                        "1,024 SSH nodes, off for more)")


def set_interval_default(p: argparse.ArgumentParser, seconds: float, help_text: str) -> None:
    """A command whose samples serve another purpose samples at its own pace by default."""
    p.set_defaults(interval=seconds)
    for action in p._actions:
        if action.dest == "interval":
            action.help = help_text
