"""Each leaf's sums and its uplink's traffic bounds, from nodes fed real samples (tests/synth)."""

from __future__ import annotations

import pytest

from netui.model.health import Level
from netui.model.leafload import Bound, leaf_loads
from netui.model.node import Node, NodeState
from netui.model.topology import Attachment, Switch, Topology
from tests.synth import node_sample

TOPO = Topology([Switch("spine1"), Switch("leaf1", "spine1", uplink_gbps=0.2), Switch("leaf2", "spine1", 0.2),
                 Switch("leaf3", "spine1")],
                [*(Attachment(f"n{i}", "leaf1") for i in (1, 2, 3, 4)),
                 *(Attachment(f"n{i}", "leaf2") for i in (5, 6, 7, 8)), Attachment("n9", "leaf3")])


def node(name: str, rx_bps: float, tx_bps: float, *, drops: int = 0) -> Node:
    n = Node(name, history_s=60, interval_s=1)
    for step in (1, 2):
        n.observe(node_sample(step, rx_bps=rx_bps, tx_bps=tx_bps, drops_per_s=drops))
    return n


def mbit(bytes_per_s: float) -> float:
    return bytes_per_s * 8 / 1e6


def test_leaf1_sending_to_leaf2_fills_its_uplink():
    """The lab's simple case: each node of leaf1 sends 50 Mbit/s to one of leaf2 (its uplink
    shaped to 200 Mbit/s), ACKs come back at 2 %."""
    nodes = ([node(f"n{i}", 1e6, 50e6) for i in (1, 2, 3, 4)] + [node(f"n{i}", 50e6, 1e6) for i in (5, 6, 7, 8)])
    one, two = leaf_loads(nodes, TOPO)

    assert (one.leaf, one.nodes, one.up, one.known) == ("leaf1", ("n1", "n2", "n3", "n4"), 4, 4)
    assert mbit(one.tx_bytes_per_s) == pytest.approx(200) and mbit(one.rx_bytes_per_s) == pytest.approx(4)
    low, high = one.leaving.share(one.capacity_bytes_per_s)
    assert low == pytest.approx(0.979) and high == pytest.approx(1.0)  # near 100 % (less 5 % of the ACKs: SKEW)
    assert one.entering.share(one.capacity_bytes_per_s)[1] == pytest.approx(0.02)
    assert one.uplink_level == Level.WARNING and one.level == Level.WARNING
    low, high = two.entering.share(two.capacity_bytes_per_s)
    assert (low, high) == (pytest.approx(0.979), pytest.approx(1.0))


def test_counters_read_a_little_apart_inside_a_leaf_raise_no_uplink():
    """Two nodes of leaf2 exchange 10 Gbit/s inside the leaf, the sender's count 3 % ahead of
    the receiver's (their samples are read at different moments): the uplink is not "certainly
    past 100 %", and its share is never shown above 100 % (the lab showed ↑119–5584 %)."""
    nodes = [node("n5", 1e6, 10.3e9 / 8), node("n6", 10e9 / 8, 1e6)]
    [two] = leaf_loads(nodes, TOPO)
    low, high = two.leaving.share(two.capacity_bytes_per_s)
    assert low == 0.0 and high == 1.0
    assert two.uplink_level == Level.OK and two.level == Level.OK


def test_traffic_inside_a_leaf_leaves_the_uplink_bound_open():
    """Nodes that send and receive as much: it may all stay in the leaf or all cross it —
    the low bound is 0, the high bound all of it, and the level is not raised on a guess."""
    nodes = [node(f"n{i}", 100e6, 100e6) for i in (1, 2, 3, 4)]
    [one] = leaf_loads(nodes, TOPO)
    assert one.leaving == Bound(0.0, pytest.approx(50e6))
    assert one.uplink_level == Level.OK


def test_leaves_in_tree_order_then_the_unplaced():
    nodes = [node("x1", 1e6, 1e6), node("n9", 1e6, 1e6), node("n5", 1e6, 1e6), node("n1", 1e6, 1e6)]
    loads = leaf_loads(nodes, TOPO)
    assert [(l.leaf, l.nodes) for l in loads] == [("leaf1", ("n1",)), ("leaf2", ("n5",)), ("leaf3", ("n9",)),
                                                 ("", ("x1",))]
    assert loads[2].uplink_gbps is None and loads[2].leaving is not None  # no capacity: bytes only
    assert loads[3].leaving is None and loads[3].uplink_gbps is None


def test_unknown_rates_and_down_nodes():
    fresh = Node("n2", history_s=60, interval_s=1)  # no sample yet: rates unknown
    down = node("n3", 1e6, 1e6)
    down.fail(NodeState.DOWN, "connection refused")
    [one] = leaf_loads([node("n1", 8e6, 8e6), fresh, down], TOPO)
    assert one.up == 1 and one.known >= 1
    assert one.level == Level.CRITICAL  # the worst node's
    assert leaf_loads([fresh], TOPO)[0].leaving is None


def test_sums_of_drops_and_a_custom_lookup():
    nodes = [node("gpu-a", 1e6, 1e6, drops=3), node("gpu-b", 1e6, 1e6, drops=4)]
    [one] = leaf_loads(nodes, TOPO, leaf_of=lambda name: "leaf2")
    assert one.leaf == "leaf2" and one.drops_per_s == pytest.approx(7)
