"""Command line: ``netui`` (live TUI), ``netui snapshot``, ``netui record``, ``netui replay``,
``netui export``.

The collectors, the engine and asyncio are imported when a command needs them, not with
this module: ``netui --help`` and a bad argument answer at once (tests/test_startup.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from netui import __version__, options
from netui.exits import exit_epilog

if TYPE_CHECKING:
    from netui.config import Config
    from netui.engine.monitor import Monitor

COMMANDS = ("snapshot", "record", "replay", "export", "bench", "doctor", "topology")


# every numeric option: finite, in range, one message shape (netui/options.py)
_positive_float = options.positive_float
_positive_int = options.positive_int
_port = options.port


def _size(text: str) -> int:
    from netui.engine.recording import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Version(argparse.Action):
    """``netui --version``: the version, the event loop netui runs on (NETUI_EVENT_LOOP), asyncssh's
    version and which of netui's asyncssh shims applied (netui/collectors/asyncssh_shims.py)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from netui.collectors import asyncssh_shims
        from netui.engine.eventloop import describe

        print(f"netui {__version__} (Python {sys.version.split()[0]}, event loop {describe()})")
        print("\n".join(asyncssh_shims.describe()))
        parser.exit()


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("hosts", nargs="*", metavar="HOST",
                   help="nodes to watch over SSH: [user@]host[:port] or ranges like gpu[001-128]; "
                        "none: this host")
    p.add_argument("--interval", "-n", type=_positive_float, default=1.0, metavar="S",
                   help="seconds between samples (default 1)")
    inv = p.add_argument_group("which nodes")
    inv.add_argument("-f", "--file", dest="files", action="append", default=[], metavar="FILE",
                     help="read hosts or ranges from FILE, one per line (# comments)")
    inv.add_argument("--slurm", nargs="?", const=None, default=False, metavar="JOBID",
                     help="the nodes of a Slurm job ($SLURM_JOB_NODELIST, or JOBID via scontrol)")
    inv.add_argument("--local", action="store_true", help="watch this host too, alongside the SSH nodes")
    inv.add_argument("--max-nodes", type=options.max_nodes, default=options.MAX_NODES_DEFAULT, metavar="N",
                     help=f"refuse more nodes than N (default {options.MAX_NODES_DEFAULT:,}, "
                          f"at most {options.MAX_NODES:,}): a typo in a range is caught before connecting")
    ssh = p.add_argument_group("SSH")
    ssh.add_argument("-F", dest="ssh_config", action="append", default=[], metavar="FILE",
                     help="ssh_config file (default ~/.ssh/config)")
    ssh.add_argument("-l", dest="user", metavar="USER", help="login user where the host names none")
    ssh.add_argument("-i", dest="identity", action="append", default=[], metavar="KEY",
                     help="private key file (default: ssh-agent and ~/.ssh keys)")
    ssh.add_argument("--connect-timeout", type=_positive_float, default=10.0, metavar="S",
                     help="seconds to connect and log in (default 10)")
    ssh.add_argument("--fanout", type=_positive_int, default=64, metavar="N",
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
    src.add_argument("--exporter-port", type=_port, default=9100, metavar="N",
                     help="node_exporter's port where a host names none (default 9100)")
    src.add_argument("--prometheus-job", metavar="JOB",
                     help="with --source prometheus=URL: read only this scrape job's series "
                          "(default: per node, the job that covers the most nodes)")
    src.add_argument("--scrape-timeout", type=_positive_float, default=5.0, metavar="S",
                     help="seconds for one node_exporter scrape or Prometheus query (default 5)")


def topology_option(p: argparse.ArgumentParser) -> None:
    """``--topology FILE`` for the commands that watch nodes (netui, snapshot, record, bench);
    read by netui/topologycmd.py ``attach_topology``."""
    p.add_argument("--topology", metavar="FILE",
                   help="where each node is cabled: Slurm's topology.conf or netui's TOML map "
                        "(docs/topology.md); with --slurm and no FILE, `scontrol show topology` is asked")


def build_parser(command: str | None) -> argparse.ArgumentParser:
    if command == "snapshot":
        p = argparse.ArgumentParser(prog="netui snapshot",
                                    description="Take two samples one interval apart and print them once.",
                                    epilog=exit_epilog("a node is not up"))
        p.add_argument("--json", action="store_true", help="print the JSON document (see docs/json.md)")
    elif command == "record":
        p = argparse.ArgumentParser(
            prog="netui record",
            description="Record raw samples, node states and health events to a file "
                        "(gzip-compressed JSON lines, readable after a crash; see docs/recording.md).",
            epilog=exit_epilog(extra="130 interrupted (Ctrl-C)"))
        p.add_argument("-o", "--output", required=True, metavar="FILE")
        p.add_argument("--count", type=_positive_int, default=None, metavar="N", help="stop after N ticks")
        p.add_argument("--max-size", type=_size, default=None, metavar="SIZE",
                       help="rotate when FILE reaches SIZE (e.g. 100M): FILE → FILE.1 → … FILE.KEEP")
        p.add_argument("--keep", type=_positive_int, default=5, metavar="N",
                       help="rotated files kept with --max-size (default 5); the oldest goes")
    elif command == "replay":
        p = argparse.ArgumentParser(prog="netui replay",
                                    description="Play a recording back in the UI: pause, speed, seek, events.",
                                    epilog=exit_epilog())
        p.add_argument("file", metavar="FILE", help="a recording (FILE.1 … of a rotated set are read too)")
        p.add_argument("--history", type=_positive_float, default=900.0, metavar="S",
                       help="seconds of history kept per node (default 900)")
        p.add_argument("--config", metavar="PATH",
                       help="health thresholds, health rules and straggler rules, as live "
                            "(TOML; default ~/.config/netui/config.toml)")
        return p
    else:
        p = argparse.ArgumentParser(
            prog="netui",
            description="A terminal cockpit for the network of a training cluster. "
                        "With no arguments it watches this host. "
                        "Commands: snapshot, record, replay, export, bench, doctor, topology.",
            epilog=exit_epilog(),
        )
        p.add_argument("--version", action=_Version,
                       help="show netui's version and event loop, asyncssh's version and which of "
                            "netui's asyncssh shims apply, then exit")
        p.add_argument("--history", type=_positive_float, default=900.0, metavar="S",
                       help="seconds of history kept per node (default 900)")
    p.add_argument("--config", metavar="PATH",
                   help="health thresholds, health rules and straggler rules "
                        "(TOML; default ~/.config/netui/config.toml)")
    _common(p)
    topology_option(p)
    return p


def _ssh_sources(args) -> tuple[list, object | None]:
    from netui.collectors.local import LiveReader
    from netui.collectors.ssh import SshConnector, SshSettings, SshSource
    from netui.engine.sources import LocalSource
    from netui.inventory import InventoryError, build_targets
    from netui.readlimits import unreadable_file

    try:
        targets = build_targets(args.hosts, files=args.files, slurm=args.slurm, local=args.local, user=args.user,
                                max_nodes=args.max_nodes)
    except (InventoryError, OSError) as exc:
        raise SystemExit(f"netui: {exc}") from None
    for flag, paths in (("-F", args.ssh_config), ("-i", args.identity)):
        for path in paths:
            why = unreadable_file(os.path.expanduser(path))
            if why:
                raise SystemExit(f"netui: {flag} {path}: {why}")
    settings = SshSettings(
        config_paths=[os.path.expanduser(p) for p in args.ssh_config],
        user=args.user,
        identity=[os.path.expanduser(p) for p in args.identity],
        connect_timeout_s=args.connect_timeout,
        fanout=args.fanout,
        accept_new_host_keys=args.accept_new_host_keys,
    )
    connector = SshConnector(settings)
    _raise_open_files_limit(len(targets))
    sources: list = []
    for t in targets:
        if t.local:
            source = LocalSource(LiveReader())
            source.name = t.name
            sources.append(source)
        else:
            sources.append(SshSource(t.name, t.host, connector, user=t.user, port=t.port))
    return sources, connector


def _raise_open_files_limit(nodes: int) -> None:
    """A connection per node needs descriptors: raise the soft limit towards the hard one."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard if hard != resource.RLIM_INFINITY else 1 << 20, max(soft, 4 * nodes + 256))
        if want > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):
        pass


def load_settings(args) -> Config:
    """The configuration file's settings; SystemExit with the reason when it is unusable."""
    from netui.config import ConfigError, load_config

    try:
        return load_config(getattr(args, "config", None))
    except ConfigError as exc:
        raise SystemExit(f"netui: {exc}") from None


def build_monitor(args, *, history_s: float, hold_intervals: int | None = None) -> Monitor:
    """The live Monitor the arguments name, judging by the configuration file;
    ``hold_intervals`` overrides the file's (a one-shot snapshot has too few samples to hold)."""
    from dataclasses import replace

    from netui.engine.monitor import Monitor

    config = load_settings(args)
    rules = config.health if hold_intervals is None else replace(config.health, hold_intervals=hold_intervals)
    sources, connector = build_sources(args)
    for source in sources:  # what the first read needs, before the first tick waits for it
        source.prepare()
    monitor = Monitor(sources, interval_s=args.interval, history_s=history_s, thresholds=config.thresholds or None,
                      rules=rules, connector=connector)
    monitor.fleet.straggler_rules = config.straggler
    from netui.topologycmd import attach_topology

    attach_topology(monitor.fleet, args)  # where each node is cabled, if told
    return monitor


def build_sources(args) -> tuple[list, object | None]:
    """The sources named by the arguments; raises SystemExit with a message on bad input."""
    from netui.collectors.local import LiveReader, TreeReader
    from netui.engine.sources import LocalSource, ReplaySource

    if args.source != "ssh":
        from netui.httpsources import build_http_sources, parse_source

        try:
            kind, url = parse_source(args.source)
        except ValueError as exc:
            raise SystemExit(f"netui: {exc}") from None
        if kind != "ssh":
            return build_http_sources(args, kind, url)
    if args.hosts or args.files or args.slurm is not False:
        if args.replay or args.procfs or args.sysfs:
            raise SystemExit("netui: hosts and --replay/--procfs/--sysfs do not go together")
        return _ssh_sources(args)
    if args.replay:
        from netui.engine.recording import RecordingError, load_recording

        try:
            recording = load_recording(args.replay)
        except (OSError, RecordingError) as exc:
            raise SystemExit(f"netui: cannot replay {args.replay}: {exc}") from None
        if not recording:
            raise SystemExit(f"netui: {args.replay} holds no samples")
        return [ReplaySource(name, samples) for name, samples in recording.items()], None
    if args.procfs or args.sysfs:
        procfs = args.procfs or "/proc"
        sysfs = args.sysfs or "/sys"
        for path in (procfs, sysfs):
            if not os.path.isdir(path):
                raise SystemExit(f"netui: {path}: not a directory")
        return [LocalSource(TreeReader(procfs, sysfs))], None
    return [LocalSource(LiveReader())], None


def settled_states() -> frozenset:
    """The node states that no waiting will change: a failure to report."""
    from netui.model.node import NodeState

    return frozenset({NodeState.DOWN, NodeState.AUTH_FAILED, NodeState.HOST_KEY_UNKNOWN,
                      NodeState.HOST_KEY_CHANGED, NodeState.UNSUPPORTED, NodeState.PARSE_ERROR,
                      NodeState.CONFIG_ERROR})


def say_abandoned(monitor: Monitor) -> None:
    """One line on stderr when closing gave up waiting for some nodes (engine/monitor.py)."""
    names = getattr(monitor, "abandoned", None)
    if names:
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5:,} more" if len(names) > 5 else "")
        print(f"netui: stopped without waiting for {len(names):,} node(s) that did not end in time: {shown}",
              file=sys.stderr)


async def _snapshot(monitor: Monitor, connect_timeout_s: float) -> dict:
    """Every node with two samples (so rates), or with a failure to report; then one document."""
    from netui.model.node import NodeState

    gave_up = settled_states()

    def settled() -> bool:
        return all(n.samples_seen >= 2 or n.state in gave_up for n in monitor.fleet)

    try:
        await monitor.run_until(settled, timeout_s=connect_timeout_s + 3 * monitor.interval_s + 5)
        monitor.lldp.tick()  # where each node is cabled, if its lldpd says: read, and waited for
        await monitor.lldp.settled(monitor.lldp.timeout_s)
    finally:
        await monitor.close()
        say_abandoned(monitor)
    for n in monitor.fleet:
        if n.state is NodeState.CONNECTING:
            n.fail(NodeState.DOWN, "no answer in time")
    from netui.engine.document import fleet_document
    from netui.engine.eventloop import running

    return {**fleet_document(monitor.fleet), "event_loop": running()}


def _text_report(doc: dict) -> str:
    from netui.model import units

    lines = []
    for n in doc["nodes"]:
        lines.append(f"{n['name']}: {n['state']}" + (f" ({n['error']})" if n["error"] else "")
                     + f"  health {n['health']['level']}")
        if n.get("switch"):
            sw = n["switch"]
            lines.append(f"  switch {sw['leaf']}" + (f" port {sw['port']}" if sw["port"] else ""))
        for r in n["health"]["reasons"]:
            lines.append(f"  ! {r}")
        for i in n["interfaces"]:
            if i["hidden"]:
                continue
            r = i["rates"]
            lines.append(
                f"  {i['name']:<12} {i['operstate'] or '—':<8} RX {units.si(r['rx_bits_per_s'], 'b/s', width=11)}"
                f"  TX {units.si(r['tx_bits_per_s'], 'b/s', width=11)}"
                f"  drops {units.per_s(_add(r['rx_dropped_per_s'], r['tx_dropped_per_s']))}/s"
                f"  errors {units.per_s(_add(r['rx_errors_per_s'], r['tx_errors_per_s']))}/s"
            )
        if n["tcp"]:
            t = n["tcp"]["rates"]
            lines.append(f"  TCP retransmits {units.per_s(t['retrans_segs_per_s'])}/s"
                         f" ({units.ratio_percent(t['retrans_ratio'])} of segments)")
        for p in (n["fabric"] or {}).get("ports", []):
            r = p["rates"] or {}
            lines.append(
                f"  {p['hca'] + '/' + str(p['port']):<12} {p['state'] or '—':<8}"
                f" RX {units.si(r.get('rx_bits_per_s'), 'b/s', width=11)}"
                f"  TX {units.si(r.get('tx_bits_per_s'), 'b/s', width=11)}"
                f"  errors {units.per_s(r.get('errors_per_s'))}/s"
                f"  {'—' if p['rate_gbps'] is None else format(p['rate_gbps'], 'g')} Gb/s {p['link_layer'] or ''}"
                + (f" ↔ {p['netdev']}" if p["netdev"] else "")
            )
        for f in (n["fabric"] or {}).get("pfc", []):
            r = f["rates"] or {}
            lines.append(f"  {f['netdev']:<12} pause RX {units.per_s(r.get('rx_pause_per_s'))}/s"
                         f"  TX {units.per_s(r.get('tx_pause_per_s'))}/s")
    return "\n".join(lines)


def _add(a, b):
    return None if a is None and b is None else (a or 0) + (b or 0)


async def _record(monitor: Monitor, path: str, count: int | None, *, max_size_bytes: int | None,
                  keep: int) -> tuple[int, int]:
    """Record every tick (engine/recorder.py) for ``count`` ticks or until interrupted;
    (samples, ticks) written."""
    import asyncio
    import contextlib
    import signal

    from netui.engine.recording import rotated_paths

    existing = rotated_paths(path)
    if existing:
        raise SystemExit(f"netui: {existing[-1]} exists: netui record never overwrites a recording "
                         "(name another file, or remove it)")
    try:
        recorder = monitor.start_recording(path, max_size_bytes=max_size_bytes, keep=keep)
    except OSError as exc:
        raise SystemExit(f"netui: cannot record to {path}: {exc}") from None
    with contextlib.suppress(NotImplementedError, RuntimeError):  # SIGTERM ends it like Ctrl-C
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, monitor.stop)
    try:
        await monitor.run(polls=count)
    finally:
        await monitor.close()  # finishes the file
        say_abandoned(monitor)
    if recorder.error:
        raise SystemExit(f"netui: recording to {path} stopped: {recorder.error}")
    return recorder.samples, recorder.ticks


def build_replay(path: str, *, history_s: float, config: Config | None = None):
    """A ReplayMonitor for a recording (a rotated set too), judging the nodes by ``config``
    as live mode does; SystemExit with the reason when it cannot be read."""
    from netui.engine.recording import RecordingError
    from netui.engine.replay import ReplayMonitor, load

    try:
        recording = load(path)
    except (OSError, RecordingError) as exc:
        raise SystemExit(f"netui: cannot replay {exc}") from None  # the message starts with the file
    for note in recording.notes:
        print(f"netui: {note}", file=sys.stderr)
    if config is None:
        return ReplayMonitor(recording, history_s=history_s)
    return ReplayMonitor(recording, history_s=history_s, thresholds=config.thresholds or None, rules=config.health,
                         straggler_rules=config.straggler)


EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + 13  # what a shell shows for a tool ended by SIGPIPE


def main(argv: list[str] | None = None) -> int:
    """The ``netui`` command. From the command line (no ``argv``) it behaves as a Unix tool:
    a SystemExit message goes to standard error with exit status 2 (every usage or input
    error), and a reader that goes away (``netui snapshot --json | head -1``) ends it quietly
    with status 141, no traceback. Given ``argv`` (tests), exceptions pass through."""
    if argv is not None:
        return _run(list(argv))
    try:
        try:
            status = _run(sys.argv[1:])
        except SystemExit as exc:
            status = _exit_status(exc)
        sys.stdout.flush()  # here, not at exit, so that a broken pipe is caught
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    return status


def _exit_status(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return EXIT_USAGE


def _silence_stdout() -> None:
    """Standard output to /dev/null, so that the flush at exit has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _run(argv: list[str]) -> int:
    command = argv[0] if argv and argv[0] in COMMANDS else None
    if command == "bench":  # pair bandwidth tests: their own options (netui/benchcmd.py)
        from netui.benchcmd import main as bench_main

        return bench_main(argv[1:])
    if command == "export":  # rates for plots and notebooks: its own options (netui/engine/export.py)
        from netui.engine.export import main as export_main

        return export_main(argv[1:])
    if command == "doctor":  # configuration checks: their own options (netui/doctorcmd.py)
        from netui.doctorcmd import main as doctor_main

        return doctor_main(argv[1:])
    if command == "topology":  # the ring order check against the switches (netui/topologycmd.py)
        from netui.topologycmd import main as topology_main

        return topology_main(argv[1:])
    args = build_parser(command).parse_args(argv[1:] if command else argv)
    from netui.engine import eventloop  # uvloop when installed (NETUI_EVENT_LOOP)

    if command == "snapshot":
        monitor = build_monitor(args, history_s=60, hold_intervals=1)  # two samples: nothing to hold over
        monitor.set_detail_all(True)  # the document lists every CPU
        doc = eventloop.run(_snapshot(monitor, args.connect_timeout))
        print(json.dumps(doc, indent=2) if args.json else _text_report(doc))
        return 0 if all(n["state"] == "up" for n in doc["nodes"]) else 1
    if command == "record":
        monitor = build_monitor(args, history_s=60)
        try:
            samples, ticks = eventloop.run(_record(monitor, args.output, args.count, max_size_bytes=args.max_size,
                                                   keep=args.keep))
        except KeyboardInterrupt:
            return 130
        print(f"netui: recorded {samples} samples in {ticks} ticks to {args.output}", file=sys.stderr)
        return 0
    if command == "replay" or (args.replay and not (args.hosts or args.files or args.slurm is not False)):
        monitor = build_replay(args.file if command == "replay" else args.replay, history_s=args.history,
                               config=load_settings(args))
        if getattr(args, "topology", None):
            from netui.topologycmd import attach_topology

            attach_topology(monitor.fleet, args)
    else:
        monitor = build_monitor(args, history_s=args.history)
    from netui.ui.app import make_app

    eventloop.run(make_app(monitor).run_async())  # App.run() would take asyncio.run's loop
    return 0
