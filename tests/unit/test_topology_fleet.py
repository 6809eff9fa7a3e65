"""Where the fleet places its nodes: a topology file completed by the nodes' LLDP neighbours,
nodes watched by an address or an alias found by the host name they report."""

from __future__ import annotations

from netui.collectors.lldp import LldpNeighbour
from netui.collectors.topology_files import parse_topology_toml
from netui.model.fleet import Fleet
from netui.model.samples import InterfaceCounters, InterfaceSample, NodeSample
from tests.testdata import data_text


def _sample(hostname: str, speeds: dict[str, int]) -> NodeSample:
    zero = InterfaceCounters(*([0] * 16))
    ifaces = {name: InterfaceSample(name, zero, 1500, "up", True, mbps, i + 2, "physical")
              for i, (name, mbps) in enumerate(speeds.items())}
    return NodeSample(wall_s=1.0, mono_s=1.0, boot_id="b", interfaces=ifaces, hostname=hostname)


def _n(interface: str, switch: str, port: str) -> LldpNeighbour:
    return LldpNeighbour(interface, switch, port, port, "aa:bb:cc:dd:ee:ff")


def test_the_file_places_a_node_watched_by_address_and_lldp_names_its_fqdn_switch():
    fleet = Fleet(["10.0.0.1", "node2.cluster"])
    fleet.topology = parse_topology_toml(data_text("topology/two-leaves.toml"), "two-leaves.toml")
    fleet["10.0.0.1"].observe(_sample("node1", {"eno1": 1000, "ens1f0": 100000}))
    fleet["node2.cluster"].observe(_sample("node2.cluster", {"eth0": 25000}))
    fleet.set_lldp("10.0.0.1", [_n("eno1", "mgmt-sw", "ge-0/0/1"), _n("ens1f0", "leaf1", "swp9")], "ok")
    fleet.set_lldp("node2.cluster", [_n("eth0", "leaf1.example.com", "swp2")], "ok")
    p1 = fleet.placement("10.0.0.1")
    assert (p1.switch, p1.port) == ("leaf1", "swp1")  # the file's leaf and port
    p2 = fleet.placement("node2.cluster")
    assert (p2.switch, p2.port, p2.port_source) == ("leaf1", "swp2", "lldp eth0")
    notes = fleet.topology.notes
    assert [n for n in notes if "node1" in n and "eno1→mgmt-sw" in n and "placed on leaf1" in n]
    assert "mgmt-sw" not in fleet.topology.switches  # LLDP placed nobody there
    assert len(fleet.topology.nodes) == 8  # no node twice


def test_the_file_disagreeing_with_lldp_is_noted_for_an_alias_too():
    fleet = Fleet(["10.0.0.5"])
    fleet.topology = parse_topology_toml(data_text("topology/two-leaves.toml"), "two-leaves.toml")
    fleet["10.0.0.5"].observe(_sample("node5", {"eth0": 25000}))
    fleet.set_lldp("10.0.0.5", [_n("eth0", "LEAF1", "swp5")], "ok")
    p = fleet.placement("10.0.0.5")
    assert (p.switch, p.port) == ("leaf2", "swp1")
    assert [n for n in fleet.topology.notes if "node5" in n and "leaf2" in n and "LEAF1" in n]


def test_without_a_file_lldp_places_by_the_fastest_nic():
    fleet = Fleet(["gpu1"])
    fleet["gpu1"].observe(_sample("gpu1", {"eno1": 1000, "ens1f0": 200000}))
    fleet.set_lldp("gpu1", [_n("eno1", "mgmt-sw", "ge1"), _n("ens1f0", "leaf3", "swp3")], "ok")
    assert fleet.placement("gpu1").switch == "leaf3"
