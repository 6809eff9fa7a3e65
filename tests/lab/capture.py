"""Record a demo capture in the lab: the deterministic source of the README's screenshots.

    python -m tests.lab.capture [-o tests/data/lab-capture.jsonl] [--seconds 40]

A 4-node lab with three things going on, all bounded in time and count and all inside
198.18.0.0/15: node1 → node2 iperf3 at full speed; node3 → node4 iperf3 through a 2 Gbit/s
tbf with a short queue on the bridge side of node4's link (real drops mid-path, so real TCP
retransmits on node3); node1 pings node4 with 1472-byte don't-fragment packets while
node4's eth0 has MTU 1400 (real RX drops on node4). netui records it over SSH exactly as a
user would (`netui record`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from pyroute2 import IPRoute

from tests.lab import Lab, network

DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "data" / "lab-capture.jsonl"


def lossy_link(ifname: str) -> None:
    """tbf at 2 Gbit/s with a 300 kB queue on a bridge port: the sender's TCP cannot feel it
    (unlike a tbf on its own interface, lab-notes 14), so the queue overflows and TCP
    retransmits."""
    with IPRoute() as ipr:
        index = ipr.link_lookup(ifname=ifname)[0]
        ipr.tc("replace", "tbf", index, 0x10000, rate=250_000_000, burst=256 * 1024, limit=300_000)


def set_mtu(ns: str, mtu: int) -> None:
    with IPRoute(netns=ns, flags=0) as ipr:
        ipr.link("set", index=ipr.link_lookup(ifname="eth0")[0], mtu=mtu)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT)
    p.add_argument("--seconds", type=int, default=40)
    args = p.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.unlink(missing_ok=True)  # netui record never overwrites a recording
    with Lab(4, name="cap") as lab:
        n1, n2, n3, n4 = lab.nodes
        lossy_link(network.veth_name(lab.name, n4.k))
        set_mtu(n4.namespace, 1400)
        record = subprocess.Popen(
            [sys.executable, "-m", "netui", "record", "-o", str(args.output), "--count", str(args.seconds),
             "-F", str(lab.ssh_config), lab.host_pattern()],
        )
        time.sleep(3)  # a few quiet samples first
        n2.popen(["iperf3", "-s", "-1", "-B", n2.address])
        n4.popen(["iperf3", "-s", "-1", "-B", n4.address])
        time.sleep(0.5)
        traffic_s = max(5, args.seconds - 10)
        n1.popen(["iperf3", "-c", n2.address, "-t", str(traffic_s)])
        n3.popen(["iperf3", "-c", n4.address, "-t", str(traffic_s), "-P", "4"])
        n1.popen(["ping", "-q", "-M", "do", "-s", "1472", "-i", "0.2", "-c", str(traffic_s * 5), n4.address])
        rc = record.wait(timeout=args.seconds * 3 + 30)
    from netui.engine.recording.playback import load

    samples = sum(len(s) for s in load(str(args.output)).samples_by_node().values())
    print(f"capture: {args.output} ({samples} samples)")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
