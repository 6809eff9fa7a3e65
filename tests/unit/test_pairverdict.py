"""The verdict of a bandwidth matrix: pass marks, per-node summaries, suspects, inconclusive.

The cases are the ones a fabric gives when more than one thing is broken: one, two or half
of the nodes slow, a node slow only as a sender, every node equally slow, nodes that could
not run the tool. "Shaped" below is what ``tc tbf`` on a node's own interface does: its
sends are capped, its receives are not.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.checks.pairs.model import PairResult, all_pairs_rounds
from netui.checks.pairs.verdict import BOTH_WAYS, FAIL, INCONCLUSIVE, PASS, RECEIVING, SENDING, best_pairs, judge

NODES4 = ["node1", "node2", "node3", "node4"]
SPEEDS_10G = {node: 10_000 for node in NODES4}
SHAPED_GBPS = 0.191  # tbf at 200 Mb/s, as iperf3 measures it


def names(n: int) -> list[str]:
    return [f"n{i:02d}" for i in range(1, n + 1)]


def result(sender: str, receiver: str, gbps: float | None, ok: bool = True, error: str | None = None,
           kind: str | None = None) -> PairResult:
    return PairResult(sender, receiver, "iperf3", gbps, ok, error, kind=kind)


def matrix_results(gbps_of, nodes=NODES4, *, directed=False) -> list[PairResult]:
    return [result(a, b, gbps_of(a, b)) for r in all_pairs_rounds(nodes, directed=directed) for a, b in r]


def shaped(senders: set[str], *, healthy=lambda a, b: 9.4, nodes=NODES4, directed=True) -> list[PairResult]:
    """A matrix where ``senders`` send at the shaped rate and every other pair is healthy."""
    return matrix_results(lambda a, b: SHAPED_GBPS if a in senders else healthy(a, b), nodes, directed=directed)


def noisy(seed: int, spread: float = 0.25):
    """Healthy pairs scattered ±``spread`` around 10 Gb/s (iperf3 held back by CPU)."""
    rng = random.Random(seed)
    return lambda a, b: 10.0 * (1 + rng.uniform(-spread, spread))


# --- link speeds known ----------------------------------------------------------------------


def test_all_pass_against_link_speed():
    v = judge(matrix_results(lambda a, b: 9.41), link_speed_mbps=SPEEDS_10G)

    assert v.status == PASS and v.passed
    assert v.failing == [] and v.suspects == []
    assert v.text == "all 6 pairs pass (≥ 90 % of link speed)"
    assert all(need == pytest.approx(9.0) for need in v.required_gbps.values())


def test_one_bad_node_is_named_both_ways():
    results = matrix_results(lambda a, b: 0.19 if "node3" in (a, b) else 9.41)
    v = judge(results, link_speed_mbps=SPEEDS_10G)

    assert v.status == FAIL
    assert v.suspects == ["node3"]
    assert v.nodes["node3"].suspect == BOTH_WAYS
    assert {frozenset(r.pair) for r in v.failing} == {frozenset(("node3", n)) for n in ("node1", "node2", "node4")}
    assert v.text.startswith("suspect node3 is slow both ways")
    assert "3 of 6 pairs fail (need ≥ 90 % of link speed)" in v.text
    assert "Not explained" not in v.text


def test_one_bad_node_in_a_directed_matrix_of_eight():
    nodes = names(8)
    results = matrix_results(lambda a, b: 2.0 if "n05" in (a, b) else 24.5, nodes, directed=True)
    v = judge(results, link_speed_mbps={n: 25_000 for n in nodes})

    assert v.suspects == ["n05"]
    s = v.nodes["n05"]
    assert (s.sends, s.sends_failing, s.receives, s.receives_failing) == (7, 7, 7, 7)
    assert s.out_median_gbps == s.in_median_gbps == 2.0
    assert v.text.startswith("suspect n05 is slow both ways (7 of 7 sends fail, median 2 Gb/s; "
                             "7 of 7 receives fail, median 2 Gb/s)")


def test_two_bad_nodes_are_both_named():
    bad = {"node2", "node3"}
    v = judge(matrix_results(lambda a, b: 0.5 if bad & {a, b} else 9.4), link_speed_mbps=SPEEDS_10G)

    assert not v.passed
    assert sorted(v.suspects) == ["node2", "node3"]
    assert len(v.failing) == 5


def test_every_pair_failing_names_no_node():
    """Every node equally slow against a known link speed: the test fails, and no node is
    more to blame than another (the old greedy cover named node1 and node2 here)."""
    v = judge(shaped(set(NODES4)), link_speed_mbps=SPEEDS_10G)

    assert v.status == FAIL
    assert v.suspects == []
    assert "Every pair fails and no node stands out" in v.text


def test_slower_end_sets_the_bar():
    speeds = {"a": 100_000, "b": 25_000, "c": 100_000}
    v = judge([result("a", "b", 23.0), result("b", "c", 23.0)], link_speed_mbps=speeds)

    assert v.passed  # 23 ≥ 90 % of 25 Gb/s, although far below 90 % of 100
    assert v.required_gbps[("a", "b")] == pytest.approx(22.5)
    assert not judge([result("a", "b", 20.0)], link_speed_mbps=speeds).passed


def test_one_pair_against_link_speed():
    v = judge([result("node1", "node2", 9.41)], link_speed_mbps=SPEEDS_10G)
    assert v.text == "the pair passes (≥ 90 % of link speed)"


# --- link speeds unknown: the best pairs -----------------------------------------------------


def test_two_shaped_nodes_of_four_are_named_where_the_median_said_all_pass():
    """The issue's lab: node3 and node4 shaped, both directions tested. Half the pairs are
    slow, so the median of the pairs was a slow pair and every pair 'passed'."""
    v = judge(shaped({"node3", "node4"}))

    assert v.status == FAIL
    assert v.suspects == ["node3", "node4"]
    assert {n: v.nodes[n].suspect for n in NODES4} == {"node1": "", "node2": "", "node3": SENDING,
                                                      "node4": SENDING}
    assert v.expected_gbps == pytest.approx(9.4)
    assert v.text.startswith("suspect node3 sends slowly (3 of 3 sends fail, median 191 Mb/s); "
                             "node4 sends slowly")
    # the pairs fall in two groups 49× apart: the mark is the gap's middle, not 90 % of the best
    assert ("need ≥ the middle of a 49× gap in the rates, 1.34 Gb/s (6 pairs at ≤ 191 Mb/s, 6 at ≥ 9.4 Gb/s); "
            "link speeds unknown") in v.text
    assert "Not explained" not in v.text


def test_the_one_way_matrix_of_the_issue_names_both_slow_nodes():
    """acc3 and acc4 slow both ways, six one-way pairs: five are slow and the healthy one was
    called the outlier. A one-way matrix cannot clear acc4 by a passing pair; it is in every
    failing pair left, so it is named too."""
    nodes = ["acc1", "acc2", "acc3", "acc4"]
    v = judge(matrix_results(lambda a, b: SHAPED_GBPS if {a, b} & {"acc3", "acc4"} else 9.4, nodes))

    assert v.status == FAIL
    assert sorted(v.suspects) == ["acc3", "acc4"]
    assert len(v.failing) == 5
    assert "Not explained" not in v.text
    assert [r.pair for r in v.outliers if r.pair == ("acc1", "acc2")] == []


@pytest.mark.parametrize("seed", range(5))
def test_one_shaped_sender_of_four_is_named_among_noisy_pairs(seed):
    v = judge(shaped({"node2"}, healthy=noisy(seed)))

    assert v.status == FAIL
    assert v.suspects == ["node2"]
    assert v.nodes["node2"].suspect == SENDING  # its receives pass
    assert v.nodes["node2"].receives_failing == 0
    assert {r.pair for r in v.failing} == {("node2", n) for n in ("node1", "node3", "node4")}


@pytest.mark.parametrize("seed", range(5))
def test_three_shaped_of_six_are_all_named(seed):
    nodes = names(6)
    bad = {"n02", "n04", "n05"}
    v = judge(shaped(bad, healthy=noisy(seed), nodes=nodes))

    assert v.status == FAIL
    assert sorted(v.suspects) == sorted(bad)
    assert all(v.nodes[n].suspect == SENDING for n in bad)
    assert len(v.failing) == 15  # each of the three sends to five


def test_a_node_slow_only_as_a_receiver():
    v = judge(matrix_results(lambda a, b: SHAPED_GBPS if b == "node4" else 9.4, directed=True))

    assert v.suspects == ["node4"]
    assert v.nodes["node4"].suspect == RECEIVING
    assert "node4 receives slowly (3 of 3 receives fail, median 191 Mb/s; it sends at 9.4 Gb/s)" in v.text


def test_every_node_equally_shaped_is_inconclusive():
    v = judge(shaped(set(NODES4)))

    assert v.status == INCONCLUSIVE
    assert not v.passed and v.suspects == []
    assert v.text.startswith("inconclusive: all 12 pairs are alike (the best at 191 Mb/s) and link speeds are "
                             "unknown, so they may all be equally slow")


def test_a_healthy_fleet_without_link_speeds_is_inconclusive_until_given_a_pass_mark():
    results = matrix_results(lambda a, b: 18.4)
    assert judge(results).status == INCONCLUSIVE
    v = judge(results, threshold_gbps=15)
    assert v.status == PASS
    assert v.text == "all 6 pairs pass (≥ 15 Gb/s)"


def test_one_pair_with_unknown_link_speeds_is_inconclusive_and_says_why():
    v = judge([result("node1", "node2", 14.2)])
    assert v.status == INCONCLUSIVE
    assert v.text == ("inconclusive: the pair ran at 14.2 Gb/s, link speeds are unknown and there is no other "
                      "pair to compare with (--threshold-gbps sets a pass mark)")
    v = judge([result("node1", "node2", 14.2)], threshold_gbps=20)
    assert v.status == FAIL and "≥ 20 Gb/s" in v.text


def test_partly_known_link_speeds_mix_both_rules():
    results = matrix_results(lambda a, b: 9.4)
    v = judge(results, link_speed_mbps={"node1": 10_000, "node2": 10_000, "node3": None})

    assert v.passed
    assert "pairs with an unknown link speed against 90 % of the best pairs' 9.4 Gb/s" in v.text
    assert v.required_gbps[("node1", "node2")] == pytest.approx(9.0)


def test_the_pass_mark_widens_to_the_best_pairs_scatter_but_not_below_half():
    tight = best_pairs([9.9, 10.0, 10.0, 10.1, 10.0, 9.95], 0.9)
    assert tight.rate_gbps == 10.1 and not tight.widened
    assert tight.mark_gbps == pytest.approx(9.09)
    scattered = best_pairs([7.9, 8.5, 9.2, 10.3, 10.4, 10.8, 10.9, 13.4, 0.19, 0.19], 0.9)
    assert scattered.widened
    assert 0.5 * scattered.rate_gbps <= scattered.mark_gbps < 7.9  # the lab's slowest healthy pair passes
    wild = best_pairs([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.9)
    assert wild.mark_gbps == pytest.approx(0.5 * wild.rate_gbps)


def test_a_degraded_majority_is_not_the_baseline():
    """Five of eight nodes degraded to 65 %: most pairs are slow, and a baseline from the
    median would be a degraded pair."""
    nodes = names(8)
    bad = set(nodes[:5])
    v = judge(matrix_results(lambda a, b: 63.7 if a in bad else 98.0, nodes, directed=True))

    assert v.expected_gbps == pytest.approx(98.0)
    assert sorted(v.suspects) == sorted(bad)


# --- tests that could not run --------------------------------------------------------------


def test_nodes_that_cannot_run_the_tool_are_not_suspects():
    """node4 has no RDMA device: its pairs were not tested, which blames nobody, and the
    others' pass says nothing about node4: inconclusive."""
    results = [
        result(a, b, None, ok=False, error="no RDMA device on node4", kind="unavailable")
        if "node4" in (a, b) else result(a, b, 90.0)
        for r in all_pairs_rounds(NODES4)
        for a, b in r
    ]
    v = judge(results, threshold_gbps=80)

    assert v.suspects == []
    assert v.status == INCONCLUSIVE
    assert len(v.untested) == 3 and all("node4" in r.pair for r in v.untested)
    assert v.text == ("inconclusive: the 3 tested pairs pass (≥ 80 Gb/s), 3 could not be tested: "
                      "no RDMA device on node4")
    assert "node4" not in v.nodes


def test_nothing_tested_is_inconclusive_with_the_reasons():
    results = [result(a, b, None, ok=False, error=f"no RDMA device on {b}", kind="no-device")
               for r in all_pairs_rounds(NODES4) for a, b in r]
    v = judge(results)
    assert v.status == INCONCLUSIVE and v.suspects == []
    assert v.text.startswith("no pair was tested: no RDMA device on")


def test_a_node_whose_tests_fail_to_run_is_named_with_the_reason():
    """A tool that ran and failed (the server refused) is a failure of that node, unlike a
    node that cannot run the tool at all."""
    results = [
        result(a, b, None, ok=False, error="unable to connect to server: Connection refused", kind="refused")
        if b == "node4" else result(a, b, 90.0)
        for r in all_pairs_rounds(NODES4, directed=True)
        for a, b in r
    ]
    v = judge(results, threshold_gbps=80)

    assert v.suspects == ["node4"]
    assert v.nodes["node4"].suspect == RECEIVING
    assert "suspect node4 (its tests did not run: unable to connect to server: Connection refused)" in v.text


def test_an_error_pair_fails_with_the_tools_words():
    results = matrix_results(lambda a, b: 9.4)
    bad = results[2]
    busy = "the server is busy running a test. try again later"
    results[2] = result(bad.sender, bad.receiver, None, ok=False, error=busy, kind="busy")
    v = judge(results, link_speed_mbps=SPEEDS_10G)

    assert not v.passed
    assert v.failing == [results[2]]
    assert v.suspects == []
    assert "the server is busy running a test" in v.text
    assert "One failing pair cannot tell which end is at fault" in v.text
    assert v.required_gbps[bad.pair] is None
    assert v.matrix(NODES4)[NODES4.index(bad.sender)][NODES4.index(bad.receiver)] is None


# --- order, outliers, matrix ---------------------------------------------------------------


def test_results_come_failing_first_the_slowest_first():
    values = {("node1", "node2"): 9.4, ("node2", "node3"): 3.0, ("node3", "node4"): 1.0}
    results = [result(a, b, g) for (a, b), g in values.items()]
    v = judge(results, threshold_gbps=5)
    assert [r.pair for r in v.results] == [("node3", "node4"), ("node2", "node3"), ("node1", "node2")]


def test_outliers_against_the_best_pairs_are_reported_even_when_all_pass():
    results = matrix_results(lambda a, b: 9.6 if (a, b) != ("node2", "node4") else 7.0)
    v = judge(results, threshold_gbps=5)

    assert v.passed
    assert [r.pair for r in v.outliers] == [("node2", "node4")]
    assert v.text == (
        "all 6 pairs pass (≥ 5 Gb/s); low outliers against the best pairs' 9.6 Gb/s: node2→node4 7 Gb/s"
    )


def test_small_wobble_is_not_an_outlier():
    values = iter([9.40, 9.41, 9.39, 9.42, 9.38, 9.40])
    v = judge(matrix_results(lambda a, b: next(values)))
    assert v.outliers == []


def test_no_results():
    v = judge([])
    assert not v.passed
    assert v.text == "no pair was tested"


def test_matrix_rows_are_senders_columns_receivers():
    results = [result("node1", "node2", 9.0), result("node2", "node1", 8.0), result("node3", "node1", 7.0)]
    grid = judge(results).matrix(["node1", "node2", "node3"])

    assert grid == [
        [None, 9.0, None],
        [8.0, None, None],
        [7.0, None, None],
    ]


# --- properties ----------------------------------------------------------------------------


# Derandomized: the same 200 examples every run. With 4 nodes and ±20 % uniform scatter, about
# 1 draw in 1,000 is ambiguous (2 or 3 healthy pairs near +20 % and the rest near -20 %: a node
# whose tests all sit 30 % below the best pairs looks slow) and a random run would fail now and
# then; the draws CI found are the regression tests below.
@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True)
@given(n=st.integers(min_value=4, max_value=10), data=st.data())
def test_slow_senders_up_to_half_are_named_exactly(n, data):
    """Any set of up to half the nodes capped as senders, healthy pairs scattered ±20 %:
    the suspects are exactly those nodes, each as a sender (a healthy pair at the low end of
    the scatter may still fall below the mark: the text lists it as not explained)."""
    nodes = names(n)
    bad = set(data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=n // 2, unique=True)))
    seed = data.draw(st.integers(0, 10_000))
    v = judge(shaped(bad, healthy=noisy(seed, 0.2), nodes=nodes))

    assert v.status == FAIL
    assert sorted(v.suspects) == sorted(bad)
    assert all(v.nodes[b].suspect == SENDING for b in bad)


@pytest.mark.parametrize("bad, seed", [({"n01", "n02"}, 2055), ({"n01"}, 430)])
def test_a_good_receiver_whose_only_informative_tests_are_mild_failures_is_not_named(bad, seed):
    """Draws that named a healthy node: with 1 or 2 slow senders of 4, a good receiver's only
    tests from good senders are healthy pairs at the low end of the scatter (84 % of the best
    pairs), below the mark but within what the other healthy pairs reach."""
    v = judge(shaped(bad, healthy=noisy(seed, 0.2), nodes=names(4)))
    assert v.status == FAIL and sorted(v.suspects) == sorted(bad)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=2, max_value=10), data=st.data())
def test_a_node_that_passes_a_test_each_way_is_never_a_suspect(n, data):
    nodes = names(n)
    values = data.draw(st.lists(st.floats(0.01, 100), min_size=n * (n - 1), max_size=n * (n - 1)))
    it = iter(values)
    v = judge(matrix_results(lambda a, b: next(it), nodes, directed=True))
    failed = {id(r) for r in v.failing}
    for node in v.suspects:
        s = v.nodes[node]
        if s.suspect == SENDING:
            assert all(id(r) in failed for r in v.results if r.sender == node)
        if s.suspect == RECEIVING:
            assert all(id(r) in failed for r in v.results if r.receiver == node)
