"""A lab for humans: `python -m tests.lab up 4 | status | down`.

Two-tier: `python -m tests.lab up --leaves 2 --nodes-per-leaf 4 [--shape-uplink leaf1=200mbit]`
builds leaf switches and a spine (namespaces with a bridge each, lldpd in every switch and
node); `python -m tests.lab shape leaf1=200mbit` (or `leaf1=off`) changes an uplink later.

`up` leaves the lab running after it exits; its directory (keys, ssh_config, logs,
lab.json) is /tmp/netui-<name>, /tmp/netui-lab by default. `up` replaces a lab of the
same name that is already up; `down` removes everything a lab of that name made, also
after a crash.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from . import fabric
from .cluster import Lab, read_state, remove_lab
from .network import lab_links, lab_namespaces, namespace_name
from .processes import is_gone, port_open


def lab_directory(name: str) -> Path:
    return Path("/tmp") / f"netui-{name}"


def up(n: int | None, name: str, leaves: int | None = None, nodes_per_leaf: int = 4,
       shaped: dict[int, str] | None = None) -> int:
    directory = lab_directory(name)
    if read_state(directory):
        print(f"replacing the lab already up in {directory}")
    started_at = time.monotonic()
    lab = Lab(n, name=name, directory=directory, leaves=leaves,
              nodes_per_leaf=nodes_per_leaf).start()
    try:
        for leaf, rate in (shaped or {}).items():
            lab.shape_uplink(leaf, rate)
    except BaseException:
        lab.close()
        raise
    lab.detach()
    took_s = time.monotonic() - started_at
    first, last = lab.nodes[0], lab.nodes[-1]
    down_cmd = "python -m tests.lab down" + ("" if name == "lab" else f" --name {name}")
    if lab.leaves is not None:
        print(_fabric_summary(lab, shaped or {}))
    print(f"""lab {name!r} is up: {lab.n} nodes ({first.address} … {last.address}) in {took_s:.2f} s
  ssh_config  {lab.ssh_config}
  try         ssh -F {lab.ssh_config} node1 hostname
  monitor     netui -F {lab.ssh_config} {lab.host_pattern()}
  traffic     ip netns exec {last.namespace} iperf3 -s -D -B {last.address}
              ip netns exec {first.namespace} iperf3 -c {last.address} -t 30
  status      python -m tests.lab status{'' if name == 'lab' else f' --name {name}'}
  down        {down_cmd}""")
    return 0


def _fabric_summary(lab: Lab, shaped: dict[int, str]) -> str:
    lines = []
    for leaf in range(1, lab.leaves + 1):
        nodes = lab.leaf_nodes(leaf)
        uplink = f"uplink shaped to {shaped[leaf]}" if leaf in shaped else "uplink unshaped"
        lines.append(f"  leaf{leaf}: {', '.join(f'{n.name} (swp{n.port})' for n in nodes)}; "
                     f"{uplink}")
    lldp = ("lldpd in every switch and node: ssh -F … node1 lldpctl" if lab.lldp
            else "no lldpd (Debian package lldpd is not installed)")
    return "two-tier fabric, spine + leaves:\n" + "\n".join(lines) + f"\n  {lldp}"


def shape(name: str, specs: list[tuple[int, str]]) -> int:
    """Shape or clear uplinks of a lab that is up: leaf1=200mbit, leaf1=off."""
    for leaf, rate in specs:
        try:
            if rate == "off":
                fabric.clear_uplink(name, leaf)
            else:
                fabric.shape_uplink(name, leaf, rate)
        except ValueError as e:
            print(f"leaf{leaf}: {e}", file=sys.stderr)
            return 2
        print(f"leaf{leaf} uplink: {'unshaped' if rate == 'off' else rate}")
    return 0


def _uplink_spec(text: str) -> tuple[int, str]:
    """'leaf1=200mbit' → (1, '200mbit'); argparse turns a ValueError into a usage error."""
    leaf, sep, rate = text.partition("=")
    number = leaf.removeprefix("leaf")
    if not sep or not leaf.startswith("leaf") or not number.isdigit() or not rate:
        raise argparse.ArgumentTypeError(f"expected leafN=RATE (e.g. leaf1=200mbit), got {text!r}")
    if rate != "off":
        try:
            fabric.network._rate_bytes_per_s(rate)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    return int(number), rate


def down(name: str) -> int:
    directory = lab_directory(name)
    started_at = time.monotonic()
    found = bool(read_state(directory) or lab_namespaces(name) or lab_links(name)
                 or fabric.switch_namespaces(name))
    remove_lab(name, [directory])
    took_s = time.monotonic() - started_at
    print(f"lab {name!r} removed in {took_s:.2f} s" if found else f"no lab {name!r} was up")
    return 0


def status(name: str) -> int:
    """Print one line per node; exit status 0 when every node answers on port 22."""
    directory = lab_directory(name)
    state = read_state(directory)
    namespaces = set(lab_namespaces(name))
    healthy = True
    if not state:
        if namespaces:
            print(f"lab {name!r}: no state in {directory} but namespaces remain: "
                  f"{sorted(namespaces)}; run `python -m tests.lab down`")
            return 1
        print(f"no lab {name!r} is up")
        return 3
    print(f"lab {name!r}: {state['n']} nodes, ssh_config {state['ssh_config']}")
    switch_ns = set(fabric.switch_namespaces(name))
    for switch in state.get("switches", []):
        present = switch["namespace"] in switch_ns
        healthy &= present
        print(f"  {switch['name']:<8} {'':<14} namespace {'ok' if present else 'MISSING'}")
    for node in state["nodes"]:
        pid = node["sshd_pid"]
        in_ns = node["namespace"] in namespaces
        sshd = pid is not None and not is_gone(pid) and _is_lab_sshd(pid, directory)
        answers = in_ns and port_open(node["address"], 22)
        healthy &= in_ns and sshd and answers
        print(f"  {node['name']:<8} {node['address']:<14} "
              f"namespace {'ok' if in_ns else 'MISSING'}  "
              f"sshd {f'pid {pid}' if sshd else 'DOWN'}  "
              f"port 22 {'open' if answers else 'CLOSED'}")
    return 0 if healthy else 1


def _is_lab_sshd(pid: int, directory: Path) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f"-f {directory}/".encode() in f.read().replace(b"\0", b" ")
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    named = argparse.ArgumentParser(add_help=False)
    named.add_argument("--name", default="lab",
                       help="lab name, 1–6 of [a-z0-9] (default: lab); "
                            f"its namespaces are {namespace_name('NAME', 1)}, …")
    parser = argparse.ArgumentParser(prog="python -m tests.lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    up_parser = commands.add_parser("up", parents=[named], help="build a lab that stays up")
    up_parser.add_argument("n", type=int, nargs="?", default=None,
                           help="nodes on one bridge (default 4)")
    up_parser.add_argument("--leaves", type=int, metavar="L",
                           help="two-tier: L leaf switches under a spine, lldpd everywhere")
    up_parser.add_argument("--nodes-per-leaf", type=int, default=4, metavar="N",
                           help="nodes cabled to each leaf (default 4)")
    up_parser.add_argument("--shape-uplink", type=_uplink_spec, action="append", default=[],
                           metavar="leafN=RATE",
                           help="cap a leaf's link to the spine (both ways), e.g. leaf1=200mbit")
    shape_parser = commands.add_parser("shape", parents=[named],
                                       help="shape (RATE) or unshape (off) uplinks of a lab that is up")
    shape_parser.add_argument("uplinks", type=_uplink_spec, nargs="+", metavar="leafN=RATE|off")
    commands.add_parser("down", parents=[named], help="remove the lab")
    commands.add_parser("status", parents=[named], help="show whether every node answers")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("the lab needs root (network namespaces, veths, sshd)", file=sys.stderr)
        return 2
    if args.command == "up":
        if args.leaves is None and (args.shape_uplink or args.nodes_per_leaf != 4):
            parser.error("--nodes-per-leaf and --shape-uplink need --leaves")
        if args.leaves is not None and args.n is not None:
            parser.error("give either n or --leaves (n = leaves × nodes per leaf)")
        if any(leaf > (args.leaves or 0) or leaf < 1 for leaf, _ in args.shape_uplink):
            parser.error(f"--shape-uplink: the lab has leaf1 … leaf{args.leaves}")
        return up(args.n, args.name, args.leaves, args.nodes_per_leaf,
                  dict(args.shape_uplink))
    if args.command == "shape":
        return shape(args.name, args.uplinks)
    if args.command == "down":
        return down(args.name)
    return status(args.name)


if __name__ == "__main__":
    sys.exit(main())
