"""Record the two-tier demo capture: the source of the fabric screenshot.

    python -m tests.lab.capture_fabric [-o tests/data/fabric-capture.ndjson.gz] [--seconds 40]

A two-tier lab of 3 leaves of 2 nodes under a spine (node1, node2 on leaf1; node3, node4 on
leaf2; node5, node6 on leaf3), leaf2's uplink shaped to 200 Mbit/s both ways by tbf, and a
ring of iperf3 flows at 1 Gbit/s each (each node sends to the next, as an all-reduce ring
does): the two flows that cross leaf2's uplink are slow, the others not. Every iperf3 is
bounded by -t, all traffic inside 198.18.0.0/15. netui records it over SSH as a user would
(`netui record`); the topology the screenshot gives the replay is
tests/data/fabric-capture-topology.toml (a recording does not keep one).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from tests.lab import Lab

DATA = Path(__file__).resolve().parents[1] / "data"
DEFAULT_OUTPUT = DATA / "fabric-capture.ndjson.gz"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT)
    p.add_argument("--seconds", type=int, default=40)
    args = p.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.unlink(missing_ok=True)  # netui record never overwrites a recording
    with Lab(name="capf", leaves=3, nodes_per_leaf=2, lldp=False) as lab:
        lab.shape_uplink("leaf2", "200mbit")
        record = subprocess.Popen(
            [sys.executable, "-m", "netui", "record", "-o", str(args.output), "--count", str(args.seconds),
             "-F", str(lab.ssh_config), lab.host_pattern()],
        )
        time.sleep(3)  # a few quiet samples first
        servers = [node.popen(["iperf3", "-s", "-1", "-B", node.address]) for node in lab.nodes]
        time.sleep(0.5)
        traffic_s = max(5, args.seconds - 8)
        clients = [node.popen(["iperf3", "-c", lab.nodes[(i + 1) % len(lab.nodes)].address, "-t", str(traffic_s),
                               "-b", "1G"]) for i, node in enumerate(lab.nodes)]
        rc = record.wait(timeout=args.seconds * 3 + 30)
        for proc in servers + clients:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
    from netui.engine.recording.playback import load

    samples = sum(len(s) for s in load(str(args.output)).samples_by_node().values())
    print(f"capture: {args.output} ({samples} samples)")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
