"""The topology model: leaves, paths, tree order, LLDP merge, and the ring order check."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from netui.model.topology import Attachment, Switch, Topology, merge, ring_check, ring_hops, topology_order


@dataclass(frozen=True)
class Neighbour:  # the shape of collectors/lldp.py's LldpNeighbour
    interface: str
    switch: str | None
    port: str | None
    port_descr: str | None = None
    chassis_id: str | None = None


def two_tier(leaves: int = 2, per_leaf: int = 4) -> Topology:
    """spine ← leaf1..leafN, node1.. on them in order."""
    switches = [Switch("spine")] + [Switch(f"leaf{i + 1}", "spine", 100.0) for i in range(leaves)]
    nodes = [Attachment(f"node{i * per_leaf + j + 1}", f"leaf{i + 1}")
             for i in range(leaves) for j in range(per_leaf)]
    return Topology(switches, nodes)


def three_tier() -> Topology:
    """core ← pod1 (leaf1, leaf2), pod2 (leaf3, leaf4); two nodes per leaf, n1..n8."""
    sw = [Switch("core"), Switch("pod1", "core"), Switch("pod2", "core"),
          Switch("leaf1", "pod1"), Switch("leaf2", "pod1"), Switch("leaf3", "pod2"), Switch("leaf4", "pod2")]
    nodes = [Attachment(f"n{i + 1}", f"leaf{i // 2 + 1}") for i in range(8)]
    return Topology(sw, nodes)


def test_leaf_port_and_same_leaf():
    t = Topology([Switch("leaf1")], [Attachment("gpu1", "leaf1", "swp3")])
    assert t.leaf_of("gpu1") == "leaf1" and t.port_of("gpu1") == "swp3"
    assert t.leaf_of("GPU1") == "leaf1"  # host names without regard to case
    assert t.leaf_of("gpu1.cluster.example") == "leaf1"  # a full name finds the short one
    assert t.leaf_of("10.0.0.1") is None and t.leaf_of("gpu9") is None and t.port_of("gpu9") is None
    topo = two_tier()
    assert topo.same_leaf("node1", "node4") and not topo.same_leaf("node4", "node5")
    assert not topo.same_leaf("node1", "ghost")


def test_paths_name_the_uplinks_crossed():
    t = three_tier()
    p = t.path("n1", "n2")
    assert p.same_leaf and p.top == "leaf1" and p.uplinks == ()
    p = t.path("n1", "n3")
    assert not p.same_leaf and p.top == "pod1" and p.uplinks == ("leaf1", "leaf2")
    p = t.path("n1", "n8")
    assert p.top == "core" and p.uplinks == ("leaf1", "pod1", "leaf4", "pod2")
    assert t.level("core") == 2 and t.level("pod2") == 1 and t.level("leaf3") == 0
    p = t.path("n1", "nowhere")
    assert not p.placed and p.top is None
    separate = Topology([Switch("a"), Switch("b")], [Attachment("x", "a"), Attachment("y", "b")])
    assert separate.path("x", "y").top is None and separate.path("x", "y").uplinks == ("a", "b")


def test_leaves_in_tree_order_not_definition_order():
    t = Topology([Switch("leafB", "spine2"), Switch("leafA", "spine1"), Switch("spine1"), Switch("spine2"),
                  Switch("leafC", "spine1")],
                 [Attachment("c", "leafC"), Attachment("b", "leafB"), Attachment("a", "leafA")])
    # roots in the order defined, each followed by its children in the order defined
    assert t.tree_order() == ["spine1", "leafA", "leafC", "spine2", "leafB"]
    assert t.leaves() == ["leafA", "leafC", "leafB"]


def test_a_loop_of_uplinks_is_refused():
    with pytest.raises(ValueError, match="loop"):
        Topology([Switch("a", "b"), Switch("b", "a")])


# --- the ring order check ------------------------------------------------------------------------


def test_a_topology_ordered_ring_crosses_each_leaf_boundary_once():
    topo = two_tier()
    check = ring_check(topo, [f"node{i}" for i in range(1, 9)])
    assert len(check.hops) == 8  # the wrap-around node8 → node1 included
    assert check.cross_switch == 2 == check.minimum
    assert check.crossing == {"spine": 2}
    assert not check.worse_than_minimum
    assert check.better == check.order


def test_an_interleaved_ring_crosses_on_every_hop():
    topo = two_tier()
    order = ["node1", "node5", "node2", "node6", "node3", "node7", "node4", "node8"]
    check = ring_check(topo, order)
    assert check.cross_switch == 8 and check.minimum == 2 and check.worse_than_minimum
    # each leaf contiguous, the given order kept inside a leaf, leaves in tree order
    assert check.better == ("node1", "node2", "node3", "node4", "node5", "node6", "node7", "node8")
    assert ring_check(topo, check.better).cross_switch == 2


@pytest.mark.parametrize("seed", range(20))
def test_shuffled_orders_never_beat_the_minimum_and_the_better_order_reaches_it(seed):
    rng = random.Random(seed)
    topo = two_tier(leaves=rng.randint(1, 5), per_leaf=rng.randint(1, 6))
    names = [a.node for a in topo.nodes]
    rng.shuffle(names)
    check = ring_check(topo, names)
    leaves = len(topo.leaves())
    assert check.minimum == (leaves if leaves > 1 and len(names) > 1 else 0)
    assert check.cross_switch >= check.minimum
    # counted by hand: boundaries between neighbours of the ring
    by_hand = sum(topo.leaf_of(names[i]) != topo.leaf_of(names[(i + 1) % len(names)]) for i in range(len(names)))
    assert check.cross_switch == (by_hand if len(names) > 1 else 0)
    again = ring_check(topo, check.better)
    assert again.cross_switch == check.minimum and not again.worse_than_minimum
    assert sorted(check.better) == sorted(names)
    for leaf in topo.leaves():  # the given relative order kept within each leaf
        assert [n for n in check.better if topo.leaf_of(n) == leaf] == [n for n in names if topo.leaf_of(n) == leaf]


def test_higher_tiers_count_too():
    t = three_tier()
    # leaves contiguous, but leaf1, leaf3, leaf2, leaf4: every leaf boundary climbs to the core
    order = ["n1", "n2", "n5", "n6", "n3", "n4", "n7", "n8"]
    check = ring_check(t, order)
    assert check.cross_switch == 4 == check.minimum  # as few leaf crossings as possible...
    assert check.crossing == {"core": 4}
    assert check.minimum_crossing == {"pod1": 1, "pod2": 1, "core": 2}
    assert check.worse_than_minimum  # ...but twice the core crossings needed
    assert check.better == ("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8")


def test_unplaced_nodes_are_listed_left_out_of_the_ring_and_put_last():
    topo = two_tier()
    order = ["ghost1", "node5", "node1", "ghost2", "node6", "node2"]
    check = ring_check(topo, order)
    assert check.unplaced == ("ghost1", "ghost2")
    assert len(check.hops) == 4  # node5 node1 node6 node2
    assert check.cross_switch == 4 and check.minimum == 2
    assert check.better == ("node1", "node2", "node5", "node6", "ghost1", "ghost2")


def test_tiny_and_repeated_orders():
    topo = two_tier()
    assert ring_check(topo, []).cross_switch == 0 and ring_check(topo, []).better == ()
    one = ring_check(topo, ["node1"])
    assert one.hops == () and one.minimum == 0 and not one.worse_than_minimum
    two = ring_check(topo, ["node1", "node5"])
    assert two.cross_switch == 2 == two.minimum  # a ring of two: there and back
    assert ring_check(topo, ["node1", "node2", "node1"]).order == ("node1", "node2")
    assert ring_check(Topology(), ["a", "b"]).unplaced == ("a", "b")
    assert ring_hops(topo, ["node1"]) == ()
    assert topology_order(topo, ["x", "node5", "node1"]) == ["node1", "node5", "x"]


# --- LLDP ------------------------------------------------------------------------------------------


def test_from_neighbours_places_each_node_on_its_first_named_switch():
    topo = Topology.from_neighbours({
        "node1": [Neighbour("eth0", "leaf1", "swp1", "to node1", "aa:bb")],
        "node2": [Neighbour("eth9", None, None), Neighbour("eth1", "leaf1", "swp2"), Neighbour("eth2", "leaf9", "x")],
        "node3": [Neighbour("eth0", None, None)],
        "node4": [],
    })
    assert topo.leaf_of("node1") == "leaf1" and topo.port_of("node1") == "swp1"
    assert topo.leaf_of("node2") == "leaf1" and topo.port_of("node2") == "swp2"
    assert topo.attachment("node2").source == "lldp eth1"
    assert topo.leaf_of("node3") is None and topo.leaf_of("node4") is None
    assert list(topo.switches) == ["leaf1"] and topo.switches["leaf1"].parent is None


def test_merge_file_wins_for_the_tree_lldp_fills_in_leaf_and_port():
    file = Topology([Switch("spine", source="t.conf:3"), Switch("leaf1", "spine", source="t.conf:1"),
                     Switch("leaf2", "spine", source="t.conf:2")],
                    [Attachment("node1", "leaf1", source="t.conf:1"),
                     Attachment("node2", "leaf1", "swp7", source="t.conf:1", port_source="t.conf:9"),
                     Attachment("node3", "leaf2", source="t.conf:2")])
    lldp = Topology.from_neighbours({
        "node1": [Neighbour("eth0", "leaf1", "swp1")],  # same leaf: gives the port
        "node2": [Neighbour("eth0", "leaf1", "swp2")],  # the file's port stands
        "node3": [Neighbour("eth0", "leaf1", "swp3")],  # another leaf: the file wins, a note says so
        "node4": [Neighbour("eth0", "leaf2", "swp4")],  # not in the file: LLDP places it
        "node5": [Neighbour("eth0", "leaf7", "swp5")],  # on a switch the file does not know
    })
    m = merge(file, lldp)
    a1 = m.attachment("node1")
    assert (a1.switch, a1.port, a1.source, a1.port_source) == ("leaf1", "swp1", "t.conf:1", "lldp eth0")
    assert m.port_of("node2") == "swp7" and m.attachment("node2").port_source == "t.conf:9"
    assert m.leaf_of("node3") == "leaf2" and m.port_of("node3") is None
    assert any("node3" in n and "leaf2" in n and "leaf1" in n for n in m.notes)
    a4 = m.attachment("node4")
    assert (a4.switch, a4.port, a4.source) == ("leaf2", "swp4", "lldp eth0")
    assert m.switches["leaf2"].parent == "spine"  # the file's tree
    assert m.leaf_of("node5") == "leaf7" and m.switches["leaf7"].source == "lldp"
    assert m.leaves() == ["leaf1", "leaf2", "leaf7"]
    assert m.path("node4", "node1").top == "spine"
    assert m.path("node5", "node1").top is None


def test_a_large_fabric_is_checked_at_once():
    """4,096 nodes on 128 leaves under 8 spines and a core: the check and the order are linear."""
    switches = [Switch("core")] + [Switch(f"spine{i}", "core") for i in range(8)]
    switches += [Switch(f"leaf{i}", f"spine{i % 8}") for i in range(128)]
    nodes = [Attachment(f"n{i:05d}", f"leaf{i // 32}") for i in range(4096)]
    topo = Topology(switches, nodes)
    order = [a.node for a in nodes]
    random.Random(7).shuffle(order)
    check = ring_check(topo, order)
    assert check.minimum == 128 and check.cross_switch > 3000
    assert ring_check(topo, check.better).cross_switch == 128
    assert len(topo.nodes_on("leaf5")) == 32


# --- names as LLDP and the fleet spell them --------------------------------------------------------


def test_a_short_name_finds_the_one_full_name_and_not_one_of_several():
    t = Topology([Switch("leaf1")], [Attachment("node1.cluster", "leaf1", "swp1"), Attachment("a.x", "leaf1"),
                                     Attachment("a.y", "leaf1")])
    assert t.leaf_of("node1") == "leaf1" and t.port_of("NODE1") == "swp1"
    assert t.leaf_of("node1.cluster") == "leaf1"
    assert t.leaf_of("a") is None  # a.x or a.y: not a guess


def test_lldp_switch_names_match_the_files_by_case_and_short_name():
    t = Topology([Switch("spine"), Switch("leaf1", "spine"), Switch("leaf2.dc", "spine"), Switch("x.a"),
                  Switch("x.b")])
    assert t.switch_named("leaf1") == "leaf1"
    assert t.switch_named("LEAF1") == "leaf1"
    assert t.switch_named("leaf1.example.com") == "leaf1"
    assert t.switch_named("Leaf2") == "leaf2.dc"
    assert t.switch_named("x") is None and t.switch_named("leaf9") is None


def test_merge_takes_lldps_fqdn_and_upper_case_switch_names_as_the_files():
    file = Topology([Switch("spine"), Switch("leaf1", "spine"), Switch("leaf2", "spine")],
                    [Attachment("node1", "leaf1", source="t:1"), Attachment("node2", "leaf2", source="t:2")])
    lldp = Topology.from_neighbours({
        "node1.cluster": [Neighbour("eth0", "LEAF1", "swp1")],
        "node2": [Neighbour("eth0", "leaf2.example.com", "swp2")],
        "node3": [Neighbour("eth0", "Leaf2.example.com", "swp3")],  # not in the file: on the file's leaf2
        "node4": [Neighbour("eth0", "leaf9", "swp4")],  # a switch the file lacks: a note
    })
    m = merge(file, lldp)
    assert (m.leaf_of("node1"), m.port_of("node1")) == ("leaf1", "swp1")
    assert (m.leaf_of("node2"), m.port_of("node2")) == ("leaf2", "swp2")
    assert m.leaf_of("node3") == "leaf2" and m.path("node3", "node1").top == "spine"
    assert set(m.switches) == {"spine", "leaf1", "leaf2", "leaf9"}
    assert [n for n in m.notes if "leaf9" in n and "node4" in n]
    assert not [n for n in m.notes if "node1" in n or "node2" in n]


def test_merge_finds_a_files_full_name_by_lldps_short_one():
    file = Topology([Switch("leaf1"), Switch("leaf2")], [Attachment("node1.cluster", "leaf1", source="t:1")])
    m = merge(file, Topology.from_neighbours({"node1": [Neighbour("eth0", "leaf2", "swp2")]}))
    assert m.leaf_of("node1.cluster") == "leaf1" and len(m.nodes) == 1
    assert [n for n in m.notes if "node1.cluster" in n and "leaf2" in n]


def test_a_node_on_several_switches_is_placed_on_the_files_then_by_its_fastest_nic():
    mgmt_first = [Neighbour("eno1", "mgmt-sw", "ge1"), Neighbour("ens1f0", "leaf1", "swp1")]
    file = Topology([Switch("leaf1"), Switch("leaf2")], [])
    by_file = Topology.from_neighbours({"n1": mgmt_first}, known=file)
    assert (by_file.leaf_of("n1"), by_file.port_of("n1")) == ("leaf1", "swp1")
    (note,) = by_file.notes
    assert "n1" in note and "eno1→mgmt-sw" in note and "ens1f0→leaf1" in note and "placed on leaf1" in note
    assert not note.startswith("rail")
    bonded = [Neighbour("eno1", "mgmt-sw", "ge1"), Neighbour("eth0", "leaf1", "swp1"),
              Neighbour("eth1", "LEAF1", "swp2")]
    (note,) = Topology.from_neighbours({"n1": bonded}, known=file).notes
    assert note.startswith("n1: ") and "placed on leaf1 (the only one the topology file has)" in note
    by_speed = Topology.from_neighbours({"n1": mgmt_first}, ranking={"n1": ["ens1f0", "eno1"]})
    assert by_speed.leaf_of("n1") == "leaf1" and "fastest" in by_speed.notes[0]
    # rail-optimised: each NIC on its own leaf, both in the file; the fastest wins
    rails = [Neighbour("eth0", "leaf1", "p1"), Neighbour("eth1", "leaf2", "p1")]
    t = Topology.from_neighbours({"n1": rails}, known=file, ranking={"n1": ["eth1", "eth0"]})
    assert t.leaf_of("n1") == "leaf2" and t.notes[0].startswith("rail-optimised? n1: eth0→leaf1, eth1→leaf2")
    assert Topology.from_neighbours({"n1": rails}).leaf_of("n1") == "leaf1"  # nothing to go by: the first
    # one switch on every NIC: no note
    one = [Neighbour("eth0", "leaf1", "a"), Neighbour("eth1", "leaf1", "b")]
    assert Topology.from_neighbours({"n1": one}).notes == ()


def test_deep_chains_are_linear_and_never_recurse():
    n = 5000
    switches = [Switch("s0")] + [Switch(f"s{i}", f"s{i - 1}") for i in range(1, n)]
    t = Topology(switches, [Attachment("a", f"s{n - 1}"), Attachment("b", "s0")])
    assert t.level("s0") == n - 1 and t.level(f"s{n - 1}") == 0
    assert t.path("a", "b").top == "s0" and len(t.tree_order()) == n
    with pytest.raises(ValueError, match="loop"):
        Topology([Switch("a", "c"), Switch("b", "a"), Switch("c", "b")])


def test_the_topology_document_walks_the_tree_once_not_once_per_switch():
    from netui.engine.topologydoc import topology_document

    class Counted(Topology):
        walks = 0

        def tree_order(self):
            Counted.walks += 1
            return super().tree_order()

    leaves = 3000
    t = Counted([Switch("spine")] + [Switch(f"leaf{i}", "spine") for i in range(leaves)] + [Switch("lone", "gone")],
                [Attachment(f"n{i}", f"leaf{i}") for i in range(leaves)])
    doc = topology_document(t, "x")
    assert len(doc["switches"]) == leaves + 2 and doc["switches"][-1]["name"] == "lone"
    assert doc["switches"][0]["level"] == 1
    assert Counted.walks <= 2


def test_a_host_spelled_twice_is_one_host_in_the_ring_and_the_hostfile():
    topo = two_tier()
    check = ring_check(topo, ["Node1", "node1.cluster", "node5", "NODE5", "ghost", "GHOST", "ghost.cluster"])
    assert check.order == ("Node1", "node5", "ghost")
    assert check.better == ("Node1", "node5", "ghost") and len(check.hops) == 2
    assert topology_order(topo, ["node2", "node1", "NODE2.cluster"]) == ["node2", "node1"]


def test_many_notes_are_cut_short_in_the_text_and_kept_whole_in_the_json():
    from netui.engine.topologydoc import NOTES_SHOWN, topology_document, topology_text

    rails = {f"n{i}": [Neighbour("eth0", "leaf1", "p1"), Neighbour("eth1", "leaf2", "p1")] for i in range(40)}
    t = Topology.from_neighbours(rails)
    assert len(t.notes) == 40
    text = topology_text(t, "LLDP")
    assert text.count("  note: rail-optimised? ") == NOTES_SHOWN and f"and {40 - NOTES_SHOWN:,} more notes" in text
    assert len(topology_document(t, "LLDP")["notes"]) == 40
