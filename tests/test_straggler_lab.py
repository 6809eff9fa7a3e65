"""Straggler detection in the lab: traffic on every node, one slow link, named live."""

from __future__ import annotations

import asyncio
import shutil
import time

import pytest

from tests.test_ssh_lab import monitor_for, started, wait_for

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")


async def test_a_slow_link_is_flagged_within_two_intervals_and_clears(lab):
    nodes = lab.nodes
    # a ring, as an all-reduce moves data: every node sends to the next and receives
    for i, node in enumerate(nodes):
        node.popen(["iperf3", "-s", "-1", "-B", node.address])
    await asyncio.sleep(0.5)
    for i, node in enumerate(nodes):
        peer = nodes[(i + 1) % len(nodes)]
        node.popen(["iperf3", "-c", peer.address, "-t", "14", "-b", "3G"])
    m = monitor_for(lab, interval_s=1.0)
    task = await started(m)
    try:
        await wait_for(lambda: all((n.summary.tx_bytes_per_s or 0) * 8 > 1e9 for n in m.fleet), 8,
                       "traffic on every node", m)
        # all is well: nobody is flagged (a veth at 3 Gb/s can retransmit 0.1 % for a moment,
        # which by the rules is an outlier; it must pass within a few intervals)
        await wait_for(lambda: m.fleet.stragglers == [], 5, "no straggler before the slow link", m)
        def slow_link() -> float:
            lab.node(3).slow_link("200mbit")
            return time.monotonic()  # the nodes' clock too (namespaces share CLOCK_MONOTONIC)

        slowed = await asyncio.to_thread(slow_link)  # pyroute2 runs its own loop
        first_flagged: list[float] = []

        def flagged() -> bool:
            if any(s.node == "node3" for s in m.fleet.stragglers):
                first_flagged.append(m.fleet["node3"].sample.mono_s)  # taken by node3, on its clock
                return True
            return False

        try:
            took = await wait_for(flagged, 10, "node3 flagged", m)
        except AssertionError:
            rates = {n.name: (round((n.summary.rx_bytes_per_s or 0) * 8e-9, 2),
                              round((n.summary.tx_bytes_per_s or 0) * 8e-9, 2)) for n in m.fleet}
            raise AssertionError(f"node3 not flagged; Gbit/s (rx, tx) per node: {rates}") from None
        # "within two intervals", counted on node3's clock, not in how soon this loaded host
        # (four iperf3 flows on two vCPUs) got to its samples: the sample that carried the flag
        # was taken at most two intervals after the first one to see the slow link (≤ 3 s at
        # 1 s, 0.5 s spare)
        after = first_flagged[0] - slowed
        assert after <= 3.5, f"flagged on node3's sample taken {after:.2f} s after the slow link (seen after {took:.2f} s)"
        flag = next(s for s in m.fleet.stragglers if s.node == "node3")
        # the slow TX, or what the slow link makes of it when that ranks worse: the retransmits,
        # or the packets tbf drops past its burst (CI saw "node3: drops 1.0/s vs cluster median 0/s")
        assert flag.metric in ("tx", "retrans", "drops"), flag
        assert flag.reason.startswith("node3: ") and "vs cluster median" in flag.reason
        assert m.fleet["node3"].level >= 2
        await asyncio.to_thread(lab.node(3).clear_link)
        await wait_for(lambda: not any(s.node == "node3" for s in m.fleet.stragglers), 5,
                       "flag cleared", m)
    finally:
        await m.close()
        task.cancel()
