"""The fabric on the two-tier lab (tests/lab/fabric.py: node1, node2 on leaf1; node3, node4 on
leaf2; a spine) with leaf1's uplink shaped to 200 Mbit/s by tbf:

- `netui bench iperf3 --matrix --topology FILE` names the path through leaf1's uplink, no
  node, and exits 1 (with two leaves the evidence cannot tell leaf1's uplink from the spine or
  leaf2's uplink: the verdict names the path, leaf1's uplink in it);
- the grouped grid's uplink bound: leaf1's nodes sending to leaf2's read near 100 % of the
  uplink leaving leaf1;
- with three leaves (the pairs between leaf2 and leaf3 at full speed), leaf1's uplink alone.

Every iperf3 run is bounded; traffic only between the lab's namespaces (198.18.0.0/15).
~40 s for the file.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from netui.model.leafload import leaf_loads
from tests.lab.watch import iperf3_servers, monitor_for, run_until, topology_file

pytestmark = pytest.mark.lab

UPLINK = "200mbit"
UPLINK_GBPS = 0.2


def test_bench_matrix_names_the_shaped_uplink_not_nodes(two_tier_lab, tmp_path):
    lab = two_tier_lab
    lab.shape_uplink("leaf1", UPLINK)
    result = subprocess.run(
        [sys.executable, "-m", "netui", "bench", "iperf3", lab.host_pattern(), "--matrix", "--json",
         "-F", str(lab.ssh_config), "--duration", "2", "--threshold-gbps", "1",
         "--topology", topology_file(tmp_path, lab, UPLINK_GBPS)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr
    doc = json.loads(result.stdout)
    verdict = doc["verdict"]
    assert verdict["suspects"] == [], verdict["text"]
    [fabric] = verdict["fabric"]
    assert "leaf1" in fabric["uplinks"] and fabric["pairs"] == 8  # 2 × 2 cross-leaf pairs, both ways
    assert fabric["name"] == "leaf1↔spine↔leaf2"
    assert "leaf1's uplink" in verdict["text"] and "suspect node" not in verdict["text"]
    assert fabric["median_gbps"] < 0.25 and fabric["in_leaf_gbps"] > 1
    assert doc["topology"]["leaves"] == {"node1": "leaf1", "node2": "leaf1", "node3": "leaf2", "node4": "leaf2"}
    assert all(n["suspect"] is None for n in verdict["nodes"])


async def test_leaf1_sending_to_leaf2_fills_leaf1s_uplink(two_tier_lab, tmp_path):
    from netui.collectors.topology_files import read_topology_file

    lab = two_tier_lab
    await asyncio.to_thread(lab.shape_uplink, "leaf1", UPLINK)  # pyroute2 runs its own event loop
    monitor = monitor_for(lab)
    monitor.fleet.topology = read_topology_file(topology_file(tmp_path, lab, UPLINK_GBPS))
    monitor.fleet.topology_source = "fabric.toml"
    flows = []
    try:
        await run_until(monitor, lambda: all(n.samples_seen >= 2 for n in monitor.fleet), 20, "every node sampled")
        flows += await asyncio.to_thread(iperf3_servers, [lab.node(3), lab.node(4)])
        for client, server in ((lab.node(1), lab.node(3)), (lab.node(2), lab.node(4))):
            flows.append(client.popen(["iperf3", "-c", server.address, "-t", "8"]))
        # past tbf's first burst, two samples into the flows
        seen = {n.name: n.samples_seen for n in monitor.fleet}
        await run_until(monitor, lambda: all(n.samples_seen >= seen[n.name] + 6 for n in monitor.fleet), 20,
                        "three seconds of samples during the flows")
        loads = {load.leaf: load for load in leaf_loads(monitor.fleet, monitor.fleet.topology)}
        one, two = loads["leaf1"], loads["leaf2"]
        low, high = one.leaving.share(one.capacity_bytes_per_s)
        print(f"leaf1 uplink leaving {low:.0%}–{high:.0%}, leaf2 entering "
              f"{two.entering.share(two.capacity_bytes_per_s)}")
        assert 0.8 <= low <= high <= 1.2  # near 100 %, both bounds
        assert high - low < 0.1  # the ACKs coming back are all that separates them
        in_low, in_high = two.entering.share(two.capacity_bytes_per_s)
        assert 0.8 <= in_low <= in_high <= 1.2
    finally:
        for p in flows:
            p.kill()
            p.wait(timeout=10)
        await monitor.close()


def test_with_three_leaves_the_shaped_uplink_is_named_alone(make_lab, tmp_path):
    """Three leaves of two nodes, leaf1's uplink shaped: the pairs between leaf2 and leaf3 cross
    the spine at full speed, so the evidence singles out leaf1's uplink — named alone, with its
    16 pairs (leaf1's 2 nodes × the other 4, both ways), and no node."""
    lab = make_lab(leaves=3, nodes_per_leaf=2)
    lab.shape_uplink("leaf1", UPLINK)
    result = subprocess.run(
        [sys.executable, "-m", "netui", "bench", "iperf3", lab.host_pattern(), "--matrix", "--json",
         "-F", str(lab.ssh_config), "--duration", "2", "--threshold-gbps", "1",
         "--topology", topology_file(tmp_path, lab, UPLINK_GBPS)],
        capture_output=True, text=True, timeout=240)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr
    verdict = json.loads(result.stdout)["verdict"]
    assert verdict["suspects"] == [], verdict["text"]
    [fabric] = verdict["fabric"]
    assert fabric["name"] == "leaf1↔spine" and fabric["pairs"] == 16, fabric
    assert "leaf1's uplink" in verdict["text"] and "leaf2" not in fabric["name"]
    assert fabric["median_gbps"] < 0.25 and fabric["in_leaf_gbps"] > 1
    assert all(n["suspect"] is None for n in verdict["nodes"])
