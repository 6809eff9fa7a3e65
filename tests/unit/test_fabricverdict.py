"""The pair-test verdict with a topology: an uplink or a switch named when the pattern says so,
and no node blamed for the pairs it explains.

The matrices are synthetic: leaves of four nodes under one spine, every pair tested both ways
(as ``netui bench --matrix`` does), healthy pairs at 9.4 Gb/s (or scattered ±20 %), pairs
through a shaped uplink at the rate tbf leaves them.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.checks.pairs.verdict_fabric import BOTH, DOWN, PATH, SWITCH, UP, UPLINK
from netui.checks.pairs.model import PairResult, all_pairs_rounds
from netui.checks.pairs.verdict import FAIL, INCONCLUSIVE, PASS, SENDING, judge
from netui.model.topology import Attachment, Switch, Topology

SHAPED = 0.191


def fabric(leaves: int, per_leaf: int = 4, spine: str = "spine1") -> tuple[Topology, list[str]]:
    """``leaves`` leaf switches under one spine, ``per_leaf`` nodes each: n1..n4 on leaf1,
    n5..n8 on leaf2…"""
    switches = [Switch(spine)] + [Switch(f"leaf{i}", parent=spine, uplink_gbps=100) for i in range(1, leaves + 1)]
    nodes = [f"n{i}" for i in range(1, leaves * per_leaf + 1)]
    attached = [Attachment(n, f"leaf{i // per_leaf + 1}") for i, n in enumerate(nodes)]
    return Topology(switches, attached), nodes


def matrix(nodes, gbps_of, *, directed=True) -> list[PairResult]:
    return [PairResult(a, b, "iperf3", gbps_of(a, b), True)
            for r in all_pairs_rounds(nodes, directed=directed) for a, b in r]


def leaf(topo: Topology, node: str) -> str:
    return topo.leaf_of(node) or ""


def through(topo, up: set[str] = frozenset(), down: set[str] = frozenset(), slow=SHAPED, healthy=None):
    """Pairs leaving a leaf in ``up`` or entering a leaf in ``down`` (across the spine) are slow."""
    def gbps(a, b):
        la, lb = leaf(topo, a), leaf(topo, b)
        if la != lb and (la in up or lb in down):
            return slow
        return healthy(a, b) if healthy else 9.4
    return gbps


def noisy(seed: int, spread: float = 0.2):
    rng = random.Random(seed)
    return lambda a, b: 10.0 * (1 + rng.uniform(-spread, spread))


# --- two leaves ------------------------------------------------------------------------------


def test_two_leaves_every_cross_pair_slow_names_the_path_not_nodes():
    topo, nodes = fabric(2)
    v = judge(matrix(nodes, through(topo, up={"leaf1", "leaf2"})), topology=topo)

    assert v.status == FAIL
    assert v.suspects == [] and all(not s.suspect for s in v.nodes.values())
    [f] = v.fabric
    assert f.kind == PATH
    assert f.name == "leaf1↔spine1↔leaf2"
    assert set(f.uplinks) == {"leaf1", "leaf2"} and f.switches == ("spine1",)
    assert len(f.pairs) == 32
    assert v.text.startswith("all 32 pairs crossing leaf1↔spine1↔leaf2 run at 191 Mb/s, in-leaf pairs at "
                             "9.4 Gb/s — suspect the path leaf1↔spine1↔leaf2 (leaf1's uplink, leaf2's uplink "
                             "or spine1)")
    assert "Not explained" not in v.text


def test_two_leaves_one_way_shaped_names_the_way_from_leaf1():
    """tbf on leaf1's end of its uplink: only the traffic leaving leaf1 is slow."""
    topo, nodes = fabric(2)
    v = judge(matrix(nodes, through(topo, up={"leaf1"})), topology=topo)

    assert v.suspects == []
    [f] = v.fabric
    assert f.kind == PATH and f.name == "leaf1→spine1→leaf2"
    assert len(f.pairs) == 16
    assert all(leaf(topo, a) == "leaf1" for a, _ in f.pairs)
    assert v.text.startswith("all 16 pairs crossing leaf1→spine1→leaf2 run at 191 Mb/s")


def test_without_a_topology_the_same_matrix_blames_as_before():
    topo, nodes = fabric(2)
    results = matrix(nodes, through(topo, up={"leaf1", "leaf2"}))
    plain = judge(results)
    assert plain.fabric == []
    assert "uplink" not in plain.text and "spine1" not in plain.text
    # the verdict without a topology is exactly today's: the same text, suspects and marks
    again = judge(results, topology=None)
    assert (again.text, again.suspects, again.required_gbps) == (plain.text, plain.suspects, plain.required_gbps)


def test_all_healthy_passes_with_a_topology():
    topo, nodes = fabric(2)
    v = judge(matrix(nodes, lambda a, b: 9.4), topology=topo, threshold_gbps=9)
    assert v.status == PASS and v.fabric == [] and v.suspects == []
    assert judge(matrix(nodes, lambda a, b: 9.4), topology=topo).status == INCONCLUSIVE


# --- three leaves: one bad uplink -------------------------------------------------------------


def test_three_leaves_one_bad_uplink_is_named_by_itself():
    topo, nodes = fabric(3)
    v = judge(matrix(nodes, through(topo, up={"leaf1"}, down={"leaf1"})), topology=topo)

    assert v.status == FAIL
    assert v.suspects == []
    [f] = v.fabric
    assert (f.kind, f.uplinks, f.direction, f.name) == (UPLINK, ("leaf1",), BOTH, "leaf1↔spine1")
    assert len(f.pairs) == 64  # 4 nodes × 8 others × 2 ways
    assert v.text.startswith("all 64 pairs crossing leaf1↔spine1 run at 191 Mb/s, in-leaf pairs at 9.4 Gb/s, "
                             "other cross-switch pairs at 9.4 Gb/s — suspect leaf1's uplink")


def test_three_leaves_one_uplink_shaped_one_way():
    topo, nodes = fabric(3)
    v = judge(matrix(nodes, through(topo, down={"leaf3"})), topology=topo)

    [f] = v.fabric
    assert (f.kind, f.uplinks, f.direction, f.name) == (UPLINK, ("leaf3",), DOWN, "leaf3←spine1")
    assert "suspect leaf3's uplink (into leaf3)" in v.text
    assert v.suspects == []


def test_a_bad_uplink_and_a_slow_node_elsewhere_are_both_named():
    topo, nodes = fabric(3)
    base = through(topo, up={"leaf1"}, down={"leaf1"})
    v = judge(matrix(nodes, lambda a, b: SHAPED if a == "n6" else base(a, b)), topology=topo)

    assert [f.name for f in v.fabric] == ["leaf1↔spine1"]
    assert v.suspects == ["n6"]
    assert v.nodes["n6"].suspect == SENDING
    assert "suspect leaf1's uplink. suspect n6 sends slowly" in v.text
    assert "Not explained" not in v.text


def test_a_bad_uplink_and_a_slow_node_under_it_are_both_named():
    topo, nodes = fabric(3)
    base = through(topo, up={"leaf1"}, down={"leaf1"})
    v = judge(matrix(nodes, lambda a, b: 0.05 if a == "n2" else base(a, b)), topology=topo)

    assert [f.name for f in v.fabric] == ["leaf1↔spine1"]
    assert v.suspects == ["n2"] and v.nodes["n2"].suspect == SENDING


def test_every_cross_pair_slow_with_three_leaves_names_the_spine():
    topo, nodes = fabric(3)
    v = judge(matrix(nodes, through(topo, up={"leaf1", "leaf2", "leaf3"})), topology=topo)

    [f] = v.fabric
    assert (f.kind, f.name, len(f.pairs)) == (SWITCH, "spine1", 96)
    assert "all 96 pairs through spine1 run at 191 Mb/s, in-leaf pairs at 9.4 Gb/s — suspect spine1 " \
           "(or every uplink to it)" in v.text
    assert v.suspects == []


def test_two_bad_uplinks_of_four_are_named_each():
    topo, nodes = fabric(4)
    v = judge(matrix(nodes, through(topo, up={"leaf1", "leaf3"}, down={"leaf1", "leaf3"})), topology=topo)

    assert sorted(f.name for f in v.fabric) == ["leaf1↔spine1", "leaf3↔spine1"]
    assert v.suspects == []


# --- what the evidence cannot tell: nodes stay the suspects ------------------------------------


def test_a_leaf_of_slow_nodes_names_the_nodes_not_the_uplink():
    """Every node on leaf1 shaped as a sender (tbf on each node): their sends fail inside the
    leaf too, so the uplink is not what is slow."""
    topo, nodes = fabric(2)
    v = judge(matrix(nodes, lambda a, b: SHAPED if leaf(topo, a) == "leaf1" else 9.4), topology=topo)

    assert v.fabric == []
    assert v.suspects == ["n1", "n2", "n3", "n4"]


def test_one_slow_node_is_a_node_with_a_topology():
    topo, nodes = fabric(2)
    v = judge(matrix(nodes, lambda a, b: SHAPED if "n3" in (a, b) else 9.4), topology=topo)
    assert v.fabric == [] and v.suspects == ["n3"]


def test_a_leaf_of_one_node_names_the_node():
    """One node on a leaf: its node and its uplink carry the same pairs; the node is named."""
    switches = [Switch("spine1"), Switch("leaf1", parent="spine1"), Switch("leaf2", parent="spine1")]
    topo = Topology(switches, [Attachment("a", "leaf1")] + [Attachment(n, "leaf2") for n in ("b", "c", "d")])
    v = judge(matrix(["a", "b", "c", "d"], lambda x, y: SHAPED if "a" in (x, y) else 9.4), topology=topo)
    assert v.fabric == [] and v.suspects == ["a"]


def test_unplaced_nodes_are_judged_as_today():
    topo, _ = fabric(2)
    others = ["x1", "x2", "x3", "x4"]
    results = matrix(others, lambda a, b: SHAPED if a == "x2" else 9.4)
    v = judge(results, topology=topo)
    assert v.fabric == [] and v.text == judge(results).text


def test_the_best_pairs_are_in_leaf_ones_when_cross_pairs_are_most():
    """Eight leaves of two: 16 of 240 pairs are in a leaf. With every cross-leaf pair slow, the
    90th percentile of all pairs is a slow one; the in-leaf pairs set the mark: with their rates
    49× above the others', the pairs split at that gap (the in-leaf pairs are the fast group)."""
    topo, nodes = fabric(8, per_leaf=2)
    v = judge(matrix(nodes, through(topo, up={f"leaf{i}" for i in range(1, 9)})), topology=topo)
    assert v.status == FAIL
    assert [f.kind for f in v.fabric] == [SWITCH]
    assert "the middle of a 49× gap in the rates, 1.34 Gb/s (224 pairs at ≤ 191 Mb/s, 16 at ≥ 9.4 Gb/s)" in v.text
    # the in-leaf pairs 49× faster: without a topology the cross pairs fail too, and no node is
    # to blame (the rule before the gap split said "inconclusive", with 224 of 240 pairs alike)
    plain = judge(matrix(nodes, through(topo, up={f"leaf{i}" for i in range(1, 9)})))
    assert plain.status == FAIL and plain.suspects == []
    assert "suspect the paths between them" in plain.text


def test_a_path_with_link_speeds_known():
    topo, nodes = fabric(3)
    v = judge(matrix(nodes, through(topo, up={"leaf2"}, down={"leaf2"}, slow=2.0)), topology=topo,
              link_speed_mbps={n: 10_000 for n in nodes})
    assert [f.name for f in v.fabric] == ["leaf2↔spine1"] and v.suspects == []


def test_uplink_shaped_with_rates_that_vary_by_round():
    """A shaped uplink shared by the round's concurrent cross pairs: 50 to 190 Mb/s."""
    topo, nodes = fabric(3)
    rng = random.Random(7)

    def gbps(a, b):
        crossing = leaf(topo, a) != leaf(topo, b) and "leaf1" in (leaf(topo, a), leaf(topo, b))
        return rng.choice([0.048, 0.064, 0.095, 0.191]) if crossing else 9.4

    v = judge(matrix(nodes, gbps), topology=topo)
    [f] = v.fabric
    assert f.name == "leaf1↔spine1"
    assert "run at 48 Mb/s–191 Mb/s (median 64 Mb/s)" in v.text


# --- scatter ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_a_bad_uplink_among_noisy_pairs(seed):
    topo, nodes = fabric(3)
    v = judge(matrix(nodes, through(topo, up={"leaf2"}, down={"leaf2"}, healthy=noisy(seed))), topology=topo)
    assert [f.name for f in v.fabric] == ["leaf2↔spine1"]
    assert v.suspects == []


@pytest.mark.slow  # property runs: the full run
@settings(max_examples=150, deadline=None, derandomize=True)
@given(leaves=st.integers(2, 4), per_leaf=st.integers(2, 4), data=st.data())
def test_noisy_healthy_fabric_names_no_uplink(leaves, per_leaf, data):
    """Healthy pairs scattered ±20 % name no part of the fabric, whatever fails by chance."""
    topo, nodes = fabric(leaves, per_leaf)
    seed = data.draw(st.integers(0, 10_000))
    v = judge(matrix(nodes, noisy(seed)), topology=topo)
    assert v.fabric == []


@pytest.mark.slow  # property runs: the full run
@settings(max_examples=150, deadline=None, derandomize=True)
@given(leaves=st.integers(2, 3), data=st.data())
def test_slow_senders_with_a_topology_are_named_exactly(leaves, data):
    """The property of the flat verdict holds with a topology: any set of up to half the nodes
    capped as senders, healthy pairs ±20 %: those nodes are the suspects, each as a sender, and
    no uplink is named — unless the capped nodes fill a leaf... which names the nodes too."""
    topo, nodes = fabric(leaves)
    bad = set(data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=len(nodes) // 2, unique=True)))
    healthy = noisy(data.draw(st.integers(0, 10_000)))
    v = judge(matrix(nodes, lambda a, b: SHAPED if a in bad else healthy(a, b)), topology=topo)
    assert v.status == FAIL
    assert v.fabric == []
    assert sorted(v.suspects) == sorted(bad)
    assert all(v.nodes[b].suspect == SENDING for b in bad)


@pytest.mark.slow  # property runs: the full run
@settings(max_examples=100, deadline=None, derandomize=True)
@given(data=st.data())
def test_a_bad_uplink_plus_slow_senders_elsewhere(data):
    """Three leaves, leaf1's uplink shaped both ways, up to two capped senders on the other
    leaves, healthy pairs ±20 %: the uplink and exactly those nodes."""
    topo, nodes = fabric(3)
    bad = set(data.draw(st.lists(st.sampled_from(nodes[4:]), min_size=0, max_size=2, unique=True)))
    base = through(topo, up={"leaf1"}, down={"leaf1"}, healthy=noisy(data.draw(st.integers(0, 10_000))))
    v = judge(matrix(nodes, lambda a, b: 0.05 if a in bad else base(a, b)), topology=topo)
    assert [f.name for f in v.fabric] == ["leaf1↔spine1"]
    assert sorted(v.suspects) == sorted(bad)


def test_up_and_down_named_apart():
    topo, nodes = fabric(3)
    v = judge(matrix(nodes, through(topo, up={"leaf1"})), topology=topo)
    [f] = v.fabric
    assert (f.direction, f.name) == (UP, "leaf1→spine1")
    assert "suspect leaf1's uplink (from leaf1 up)" in v.text
