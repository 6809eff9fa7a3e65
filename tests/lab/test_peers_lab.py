"""Peers in the lab: node1 sends to node2 with iperf3 (bounded: 25 s at 300 Mbit/s, between the
lab's namespaces only), and netui, watching both over SSH with the sampler as shipped, shows
node2 as node1's peer at about the throughput iperf3 reports, and the flow in the peer matrix."""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import subprocess

import pytest

from netui.model.flows import pair_matrix
from tests.lab.watch import iperf3_servers, monitor_for, started, wait_for

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None,
                                reason="iperf3 is not installed (tests/run.sh installs it)")

SECONDS = 25  # the flow's length: the sampler finds a new socket at its next dump (10-13 s here)


async def test_node1s_peer_node2_carries_the_iperf3_flow_at_its_throughput(lab):
    node1, node2 = lab.node(1), lab.node(2)
    m = monitor_for(lab, ["node1", "node2"], interval_s=1.0)
    rates: list[float] = []
    readings: list = []  # node1's peer readings (for the message when it fails)
    during: list[dict] = []  # the fleet's flows while node1 sent to node2

    def on_sample(name, sample):
        if name == "node1":
            if sample.peers is not None and (not readings or readings[-1].mono_s != sample.peers.mono_s):
                readings.append(sample.peers)
            r = m.fleet.node_peers("node1").get("node2")
            if r is not None and r.tx_bytes_per_s:
                rates.append(r.tx_bytes_per_s * 8)
                during.append(m.fleet.peer_flows())

    m.on_sample = on_sample
    task = await started(m)
    try:
        await wait_for(lambda: all(n.samples_seen >= 2 for n in m.fleet), 15, "2 nodes up", m)
        listener, = await asyncio.to_thread(iperf3_servers, [node2])
        client = node1.popen(["iperf3", "-c", node2.address, "-t", str(SECONDS), "-b", "300M", "-J"],
                             stdout=subprocess.PIPE)
        out, _ = await asyncio.to_thread(client.communicate, timeout=SECONDS + 20)
    finally:
        await m.close()
        task.cancel()
    report = json.loads(out)
    assert "error" not in report, report["error"]
    iperf = report["end"]["sum_sent"]["bits_per_second"]
    busy = [r for r in rates if r > iperf / 10]  # the intervals the flow ran in (not its start or end)
    assert len(busy) >= 3, f"node2 never carried the flow as node1's peer: {rates}; node1's readings {[(round(r.mono_s - readings[0].mono_s, 1), r.sockets) for r in readings]}"
    seen = statistics.median(busy)
    assert iperf / 2 < seen < iperf * 2, (seen, iperf, rates)
    flows = during[-1]
    assert "node2" in flows.get("node1", {}), flows
    assert pair_matrix(flows)[("node1", "node2")].bytes_per_s > iperf / 16, flows
