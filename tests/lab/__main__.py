"""A lab for humans: `python -m tests.lab up 4 | status | down`.

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

from .cluster import Lab, read_state, remove_lab
from .network import lab_links, lab_namespaces, namespace_name
from .processes import is_gone, port_open


def lab_directory(name: str) -> Path:
    return Path("/tmp") / f"netui-{name}"


def up(n: int, name: str) -> int:
    directory = lab_directory(name)
    if read_state(directory):
        print(f"replacing the lab already up in {directory}")
    started_at = time.monotonic()
    lab = Lab(n, name=name, directory=directory).start()
    lab.detach()
    took_s = time.monotonic() - started_at
    first, last = lab.nodes[0], lab.nodes[-1]
    down_cmd = "python -m tests.lab down" + ("" if name == "lab" else f" --name {name}")
    print(f"""lab {name!r} is up: {n} nodes ({first.address} … {last.address}) in {took_s:.2f} s
  ssh_config  {lab.ssh_config}
  try         ssh -F {lab.ssh_config} node1 hostname
  monitor     netui -F {lab.ssh_config} {lab.host_pattern()}
  traffic     ip netns exec {last.namespace} iperf3 -s -D -B {last.address}
              ip netns exec {first.namespace} iperf3 -c {last.address} -t 30
  status      python -m tests.lab status{'' if name == 'lab' else f' --name {name}'}
  down        {down_cmd}""")
    return 0


def down(name: str) -> int:
    directory = lab_directory(name)
    started_at = time.monotonic()
    found = bool(read_state(directory) or lab_namespaces(name) or lab_links(name))
    remove_lab(name, [directory])
    took_s = time.monotonic() - started_at
    print(f"lab {name!r} removed in {took_s:.2f} s" if found else f"no lab {name!r} was up")
    return 0


def status(name: str) -> int:
    """Print one line per node; exit status 0 when every node answers on port 22."""
    directory = lab_directory(name)
    state = read_state(directory)
    namespaces = set(lab_namespaces(name))
    if not state:
        if namespaces:
            print(f"lab {name!r}: no state in {directory} but namespaces remain: "
                  f"{sorted(namespaces)}; run `python -m tests.lab down`")
            return 1
        print(f"no lab {name!r} is up")
        return 3
    print(f"lab {name!r}: {state['n']} nodes, ssh_config {state['ssh_config']}")
    healthy = True
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
    up_parser.add_argument("n", type=int, nargs="?", default=4, help="nodes (default 4)")
    commands.add_parser("down", parents=[named], help="remove the lab")
    commands.add_parser("status", parents=[named], help="show whether every node answers")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("the lab needs root (network namespaces, veths, sshd)", file=sys.stderr)
        return 2
    if args.command == "up":
        return up(args.n, args.name)
    if args.command == "down":
        return down(args.name)
    return status(args.name)


if __name__ == "__main__":
    sys.exit(main())
