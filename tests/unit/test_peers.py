"""Links slower than their peers': a NIC or RDMA port that trained down is a warning."""

from __future__ import annotations

from dataclasses import replace

from netui.model.fleet import Fleet
from netui.model.health import Level
from tests.synth import node_sample


def fleet_of(specs: dict[str, dict]) -> Fleet:
    fleet = Fleet(list(specs), history_s=10)
    for name, spec in specs.items():
        for k in range(2):
            s = node_sample(k, rx_bps=1e9, tx_bps=1e9, rdma=spec.get("rdma"))
            if "speed" in spec:
                eth0 = s.interfaces["eth0"]._replace(speed_mbps=spec["speed"])
                s = replace(s, interfaces=s.interfaces | {"eth0": eth0})
            if "rate" in spec and s.fabric:
                ports = {key: replace(p, rate_gbps=spec["rate"]) for key, p in s.fabric.ports.items()}
                s = replace(s, fabric=replace(s.fabric, ports=ports))
            fleet[name].observe(s)
    fleet.update_stragglers()
    return fleet


def test_a_nic_and_a_port_slower_than_their_peers_are_warnings_in_words():
    rdma = {"rx_bps": 1e9, "tx_bps": 1e9}
    fleet = fleet_of({
        "n1": {"rdma": rdma}, "n2": {"rdma": rdma, "speed": 25_000}, "n3": {"rdma": rdma, "rate": 50.0},
        "n4": {"rdma": rdma},
    })
    assert fleet["n2"].slow_links == ("eth0 at 25G, its peers at 100G",)
    assert fleet["n3"].slow_links == ("mlx5_0/1 at 50 Gb/s, its peers at 100 Gb/s",)
    assert fleet["n1"].slow_links == () and fleet["n1"].level is Level.OK
    assert fleet["n2"].level is Level.WARNING and fleet["n2"].reasons[0].startswith("eth0 at 25G")


def test_a_uniform_fleet_and_a_lone_node_flag_nothing():
    assert all(n.slow_links == () for n in fleet_of({"a": {}, "b": {}, "c": {}}))
    assert fleet_of({"a": {"speed": 1000}})["a"].slow_links == ()


def test_ports_of_other_kinds_on_the_same_node_are_not_peers(tmp_path):
    from tests.fabric_tree import RdmaTreeNode

    fleet = Fleet(["rdma01"], history_s=10)
    node = RdmaTreeNode(tmp_path / "sys")
    fleet["rdma01"].observe(node.sample(0))  # hfi1 100, mlx4 40 + 40, mlx5 25 Gb/s
    fleet.update_stragglers()
    assert fleet["rdma01"].slow_links == ()
