"""The two-tier lab (tests/lab/fabric.py) and netui's LLDP reading on it.

leaf1 holds node1, node2 (swp1, swp2); leaf2 holds node3, node4; both leaves hang off one
spine. lldpd runs in every switch and node. Every wait is bounded and ends on the event it
waits for; every iperf3 run is 2 s. ~30 s for the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from netui.collectors.lldp import STATE_NOT_RUNNING, STATE_OK
from tests.lab import Lab, LabNode
from tests.lab.watch import iperf_bits_per_s, monitor_for, run_until

pytestmark = pytest.mark.lab

LLDP_WAIT_S = 15  # lldpd sends every second; neighbours show within ~2 s


def wait_for_lldp_neighbour(node: LabNode, switch: str, timeout_s: float = LLDP_WAIT_S) -> None:
    """Until the node's own lldpctl (the plain one, as netui runs it) hears `switch`."""
    deadline = time.monotonic() + timeout_s
    while True:
        out = node.exec(["lldpctl", "-f", "json0"], timeout_s=10).stdout
        if f'"{switch}"' in out:
            return
        assert time.monotonic() < deadline, f"{node.name} hears no {switch} in {timeout_s} s: {out}"
        time.sleep(0.2)


def spine_port_bytes(lab: Lab, port: str) -> int:
    """Bytes the spine received on `port` (from leaf `port`'s uplink)."""
    out = json.loads(lab.nodes[0].exec(["ip", "-n", lab.switch("spine").namespace, "-j", "-s",
                                        "link", "show", "dev", port]).stdout)
    return out[0]["stats64"]["rx"]["bytes"]


def test_the_fabric_is_two_leaves_under_a_spine(two_tier_lab):
    lab = two_tier_lab
    assert [s.name for s in lab.switches] == ["leaf1", "leaf2", "spine"]
    assert [(n.name, n.leaf, n.port) for n in lab.nodes] == [
        ("node1", 1, 1), ("node2", 1, 2), ("node3", 2, 1), ("node4", 2, 2)]
    assert [n.name for n in lab.leaf_nodes("leaf2")] == ["node3", "node4"]
    # still reached over SSH from the host, each node under its own name
    for node in lab.nodes:
        assert lab.ssh(node, "hostname", check=True).stdout.strip() == node.name


def test_nodes_on_different_leaves_reach_each_other_through_the_spine(two_tier_lab):
    lab = two_tier_lab
    node1, node2, node3 = lab.node(1), lab.node(2), lab.node(3)
    before = spine_port_bytes(lab, "swp1")
    node1.exec(["ping", "-c", "3", "-i", "0.2", "-s", "1000", "-W", "2", node3.address], check=True)
    crossed = spine_port_bytes(lab, "swp1") - before
    assert crossed >= 3 * 1000  # the three pings went up leaf1's uplink into the spine
    before = spine_port_bytes(lab, "swp1")
    node1.exec(["ping", "-c", "3", "-i", "0.2", "-s", "1000", "-W", "2", node2.address], check=True)
    assert spine_port_bytes(lab, "swp1") - before < 3 * 1000  # in-leaf: stays in leaf1


async def test_netui_reads_each_nodes_leaf_and_port_over_its_connection(two_tier_lab):
    lab = two_tier_lab
    for node in lab.nodes:
        wait_for_lldp_neighbour(node, f"leaf{node.leaf}")
    monitor = monitor_for(lab)
    try:
        await run_until(monitor, lambda: all(n.lldp_state == STATE_OK for n in monitor.fleet),
                        20, "LLDP read on every node")
        for node in lab.nodes:
            fleet_node = monitor.fleet[node.name]
            assert [(n.interface, n.switch, n.port) for n in fleet_node.lldp] == [
                ("eth0", f"leaf{node.leaf}", f"swp{node.port}")]
            assert fleet_node.lldp[0].chassis_id  # the leaf bridge's MAC
        # without a topology file, LLDP alone places every node on its leaf
        topology = monitor.fleet.topology
        assert topology is not None
        assert {n.name: (topology.leaf_of(n.name), topology.port_of(n.name)) for n in lab.nodes} == {
            n.name: (f"leaf{n.leaf}", f"swp{n.port}") for n in lab.nodes}
        assert monitor.fleet.topology_source == "LLDP (4 nodes)"
        # once per connection: no second read until asked
        assert not monitor.lldp.pending()
        await monitor.tick()
        assert not monitor.lldp.pending()
        monitor.fleet["node2"].set_lldp((), "not read")
        monitor.lldp.refresh(["node2"])
        await run_until(monitor, lambda: monitor.fleet["node2"].lldp_state == STATE_OK, 10,
                        "node2 read again")
        assert monitor.fleet["node2"].lldp[0].switch == "leaf1"
    finally:
        await monitor.close()


async def test_a_node_whose_lldpd_is_gone_says_so_and_stays_up(two_tier_lab):
    lab = two_tier_lab
    node = lab.node(4)
    node.stop_lldpd()
    monitor = monitor_for(lab, ["node4"])
    try:
        await run_until(monitor, lambda: monitor.fleet["node4"].lldp_state not in ("not read", "reading"),
                        20, "LLDP read on node4")
        fleet_node = monitor.fleet["node4"]
        assert (fleet_node.lldp, fleet_node.lldp_state) == ((), STATE_NOT_RUNNING)
        assert fleet_node.state.value == "up" and fleet_node.error is None
    finally:
        await monitor.close()
    # heal() (after this test) starts it again; the next test module sees it back


def test_a_shaped_uplink_slows_cross_leaf_traffic_only(two_tier_lab):
    lab = two_tier_lab
    lab.shape_uplink("leaf1", "200mbit")
    assert lab.shaped_uplinks == {"leaf1"}
    node1, node2, node3 = lab.node(1), lab.node(2), lab.node(3)
    cross = iperf_bits_per_s(node1, node3)
    inside = iperf_bits_per_s(node1, node2)
    back = iperf_bits_per_s(node3, node1)  # into leaf1: the spine's end of the link is shaped too
    print(f"leaf1→leaf2 {cross / 1e9:.2f} Gbit/s, leaf2→leaf1 {back / 1e9:.2f} Gbit/s, "
          f"in leaf1 {inside / 1e9:.2f} Gbit/s")
    assert cross < 250e6 and back < 250e6  # tbf at 200 Mbit/s, some burst
    assert inside > 4 * cross
    lab.clear_uplink("leaf1")
    assert iperf_bits_per_s(node1, node3) > 2 * cross


def test_shaping_an_uplink_the_lab_does_not_have_is_refused(two_tier_lab):
    with pytest.raises(KeyError):
        two_tier_lab.shape_uplink("leaf3", "100mbit")
    with pytest.raises(ValueError):
        two_tier_lab.shape_uplink("leaf1", "fast")
    assert two_tier_lab.shaped_uplinks == frozenset()


async def test_lldpd_comes_back_after_heal_and_netui_sees_it(two_tier_lab):
    node = two_tier_lab.node(4)  # its lldpd was stopped by a test above; heal() restarted it
    assert node.lldpd_running and "lldpd_stopped" not in node.faults
    wait_for_lldp_neighbour(node, "leaf2")
    monitor = monitor_for(two_tier_lab, ["node4"])
    try:
        await run_until(monitor, lambda: monitor.fleet["node4"].lldp_state == STATE_OK, 20,
                        "LLDP read on node4")
        assert monitor.fleet["node4"].lldp[0].switch == "leaf2"
    finally:
        await monitor.close()


def test_closing_leaves_nothing_behind(make_lab):
    from tests.lab import fabric, network

    lab = make_lab(leaves=2, nodes_per_leaf=1)
    assert len(fabric.switch_namespaces(lab.name) + network.lab_namespaces(lab.name)) == 5
    pids = [p for each in [*lab.nodes, *lab.switches] for p in each.tracked_processes()]
    assert len(pids) == 2 * 2 + 3  # sshd and lldpd per node, lldpd per switch
    lab.close()
    assert fabric.switch_namespaces(lab.name) == []
    assert network.lab_namespaces(lab.name) == [] and network.lab_links(lab.name) == []
    assert all(p.poll() is not None for p in pids)


def test_a_lab_that_fails_while_starting_is_removed(make_lab, monkeypatch):
    import re

    from pyroute2 import netns

    from tests.lab import lldp
    from tests.lab.pytest_plugin import _run_token

    monkeypatch.setattr(lldp, "argv", lambda directory, interfaces: ["/nonexistent/lldpd"])
    with pytest.raises(Exception, match="lldpd exited"):
        make_lab(leaves=1, nodes_per_leaf=1)
    mine = re.compile(rf"^netui-m[0-9a-z]{_run_token(4)}-")  # make_lab's names in this run
    assert [ns for ns in netns.listnetns() if mine.match(ns)] == []


def test_the_lab_command_builds_shapes_and_removes_a_fabric(two_tier_lab):
    import subprocess
    import sys

    from tests.lab import fabric
    from tests.lab.pytest_plugin import _run_token

    name = f"c{_run_token(5)}"

    def lab_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tests.lab", *args, "--name", name],
                              capture_output=True, text=True, timeout=60)

    try:
        up = lab_cli("up", "--leaves", "2", "--nodes-per-leaf", "1", "--shape-uplink", "leaf1=100mbit")
        assert up.returncode == 0, up.stderr
        assert "leaf1: node1 (swp1); uplink shaped to 100mbit" in up.stdout
        assert "leaf2: node2 (swp1); uplink unshaped" in up.stdout
        qdisc = subprocess.run(["tc", "-n", fabric.leaf_namespace(name, 1), "qdisc", "show", "dev", "uplink"],
                               capture_output=True, text=True, timeout=10).stdout
        assert "tbf" in qdisc and "100Mbit" in qdisc
        status = lab_cli("status")
        assert status.returncode == 0 and "spine" in status.stdout, status.stdout
        assert lab_cli("shape", "leaf1=off").returncode == 0
        qdisc = subprocess.run(["tc", "-n", fabric.leaf_namespace(name, 1), "qdisc", "show", "dev", "uplink"],
                               capture_output=True, text=True, timeout=10).stdout
        assert "tbf" not in qdisc
    finally:
        down = lab_cli("down")
    assert down.returncode == 0 and "removed" in down.stdout
    assert fabric.switch_namespaces(name) == []
    # the fixture's own two-tier lab is still up: the stand-in for lldpd's socket stays for it
    assert two_tier_lab.node(1).exec(["lldpctl", "-f", "json0"]).returncode == 0


def test_the_snapshot_says_where_each_node_is_cabled(two_tier_lab, tmp_path):
    """`netui snapshot --json` waits for the LLDP reads: each node's leaf and port, from LLDP
    alone, or from a topology file completed by LLDP's ports."""
    lab = two_tier_lab
    for node in lab.nodes:
        wait_for_lldp_neighbour(node, f"leaf{node.leaf}")
    argv = [sys.executable, "-m", "netui", "snapshot", "--json", "-F", str(lab.ssh_config), "node[1-4]"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["topology_source"] == "LLDP (4 nodes)"
    for n, node in zip(doc["nodes"], lab.nodes):
        assert n["lldp"]["state"] == STATE_OK
        assert n["switch"] == {"leaf": f"leaf{node.leaf}", "port": f"swp{node.port}",
                               "leaf_source": "lldp eth0", "port_source": "lldp eth0"}
    # a file that knows the switches but not the ports: LLDP adds the ports
    topo = tmp_path / "fabric.toml"
    topo.write_text('[switches.spine]\n[switches.leaf1]\nuplink = "spine"\nnodes = "node[1-2]"\n'
                    '[switches.leaf2]\nuplink = "spine"\nnodes = "node[3-4]"\n')
    result = subprocess.run([*argv, "--topology", str(topo)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["topology_source"].endswith(" + LLDP (4 nodes)"), doc["topology_source"]
    for n, node in zip(doc["nodes"], lab.nodes):
        assert (n["switch"]["leaf"], n["switch"]["port"], n["switch"]["port_source"]) == (
            f"leaf{node.leaf}", f"swp{node.port}", "lldp eth0")
        assert n["switch"]["leaf_source"].startswith(str(topo.name)) or "fabric.toml" in n["switch"]["leaf_source"]
