"""Pair scheduling, port allocation and the verdict of a bandwidth matrix."""

from __future__ import annotations

from collections import Counter
from itertools import combinations, permutations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netui.collectors.iperf3 import parse_iperf3
from netui.collectors.perftest import parse_perftest
from netui.model.pairs import (
    PairResult,
    PortAllocator,
    PortsExhausted,
    all_pairs_rounds,
    judge,
    one_at_a_time,
)

NODES4 = ["node1", "node2", "node3", "node4"]
SPEEDS_10G = {node: 10_000 for node in NODES4}


def names(n: int) -> list[str]:
    return [f"n{i:02d}" for i in range(1, n + 1)]


# --- rounds ----------------------------------------------------------------------------------


@given(st.integers(min_value=2, max_value=40))
def test_every_pair_exactly_once_in_disjoint_rounds(n):
    nodes = names(n)
    rounds = all_pairs_rounds(nodes)

    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    tested = [frozenset(pair) for round_pairs in rounds for pair in round_pairs]
    assert Counter(tested) == Counter(frozenset(p) for p in combinations(nodes, 2))
    for round_pairs in rounds:
        busy = [node for pair in round_pairs for node in pair]
        assert len(busy) == len(set(busy))  # never two tests on one node in a round
        assert len(round_pairs) == n // 2  # and every round as full as it can be


@given(st.integers(min_value=2, max_value=40))
def test_directed_rounds_cover_every_direction_once(n):
    nodes = names(n)
    rounds = all_pairs_rounds(nodes, directed=True)

    assert len(rounds) == 2 * (n - 1 if n % 2 == 0 else n)
    tested = [pair for round_pairs in rounds for pair in round_pairs]
    assert Counter(tested) == Counter(permutations(nodes, 2))
    for round_pairs in rounds:
        busy = [node for pair in round_pairs for node in pair]
        assert len(busy) == len(set(busy))


@given(st.integers(min_value=2, max_value=40))
def test_senders_are_balanced(n):
    sends = Counter(sender for r in all_pairs_rounds(names(n)) for sender, _ in r)
    counts = [sends.get(node, 0) for node in names(n)]
    assert max(counts) - min(counts) <= 1


def test_four_nodes_take_three_rounds_of_two():
    rounds = all_pairs_rounds(NODES4)
    assert [len(r) for r in rounds] == [2, 2, 2]
    assert rounds == all_pairs_rounds(NODES4)  # deterministic


def test_odd_count_sits_one_node_out_each_round():
    rounds = all_pairs_rounds(["a", "b", "c"])
    assert len(rounds) == 3
    sitting_out = [({"a", "b", "c"} - {n for p in r for n in p}).pop() for r in rounds]
    assert sorted(sitting_out) == ["a", "b", "c"]


def test_degenerate_inputs():
    assert all_pairs_rounds([]) == []
    assert all_pairs_rounds(["solo"]) == []
    assert all_pairs_rounds(["a", "a", "b"]) == [[("a", "b")]]  # duplicates dropped


def test_one_at_a_time_keeps_order_one_pair_per_round():
    rounds = all_pairs_rounds(NODES4)
    single = one_at_a_time(rounds)

    assert len(single) == 6
    assert all(len(r) == 1 for r in single)
    assert [r[0] for r in single] == [p for r in rounds for p in r]


# --- ports -----------------------------------------------------------------------------------


def test_concurrent_tests_on_a_node_get_different_ports():
    ports = PortAllocator(base=5201, span=200)
    p1 = ports.acquire("node1", "node2")
    p2 = ports.acquire("node2", "node3")  # node2 is in both
    p3 = ports.acquire("node3", "node4")

    assert p1 == 5201
    assert p2 != p1
    assert p3 not in (p2,)
    assert ports.in_use("node2") == {p1, p2}


def test_a_released_port_is_not_reused_at_once_and_is_deterministic():
    def run():
        ports = PortAllocator(base=6000, span=3)
        got = [ports.acquire("a", "b")]
        ports.release(got[0], "a", "b")
        got.append(ports.acquire("a", "b"))
        got.append(ports.acquire("a", "b"))
        got.append(ports.acquire("c", "d"))
        return got

    assert run() == run() == [6000, 6001, 6002, 6000]


def test_ports_run_out_loudly():
    ports = PortAllocator(base=7000, span=2)
    ports.acquire("x")
    ports.acquire("x")
    with pytest.raises(PortsExhausted):
        ports.acquire("x", "y")
    ports.release(7000, "x")
    assert ports.acquire("x") == 7000


@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("abcdef"), st.booleans()), max_size=200))
def test_no_port_is_ever_held_twice_on_a_node(ops):
    ports = PortAllocator(base=5201, span=50)
    held: list[tuple[int, tuple[str, str]]] = []
    for a, b, release in ops:
        if release and held:
            port, nodes = held.pop(0)
            ports.release(port, *nodes)
            continue
        try:
            port = ports.acquire(a, b)
        except PortsExhausted:
            continue
        for other_port, nodes in held:
            if other_port == port:
                assert not {a, b} & set(nodes)
        held.append((port, (a, b)))
        assert 5201 <= port < 5251


# --- verdicts --------------------------------------------------------------------------------


def result(sender: str, receiver: str, gbps: float | None, ok: bool = True, error: str | None = None) -> PairResult:
    return PairResult(sender, receiver, "iperf3", gbps, ok, error)


def matrix_results(gbps_of, nodes=NODES4, *, directed=False) -> list[PairResult]:
    return [result(a, b, gbps_of(a, b)) for r in all_pairs_rounds(nodes, directed=directed) for a, b in r]


def test_all_pass():
    v = judge(matrix_results(lambda a, b: 9.41), link_speed_mbps=SPEEDS_10G)

    assert v.passed
    assert v.failing == [] and v.suspects == []
    assert v.text == "all 6 pairs pass (≥ 90 % of link speed)"
    assert all(need == pytest.approx(9.0) for need in v.required_gbps.values())


def test_one_bad_node_is_named():
    results = matrix_results(lambda a, b: 0.19 if "node3" in (a, b) else 9.41)
    v = judge(results, link_speed_mbps=SPEEDS_10G)

    assert not v.passed
    assert v.suspects == ["node3"]
    assert {frozenset(r.pair) for r in v.failing} == {frozenset(("node3", n)) for n in ("node1", "node2", "node4")}
    assert v.text.startswith("node3 is in 3 of 3 failing pairs — suspect node3's link. 3 of 6 pairs fail")


def test_one_bad_node_in_a_directed_matrix_of_eight():
    nodes = names(8)
    results = matrix_results(lambda a, b: 2.0 if "n05" in (a, b) else 24.5, nodes, directed=True)
    v = judge(results, link_speed_mbps={n: 25_000 for n in nodes})

    assert v.suspects == ["n05"]
    assert v.text.startswith("n05 is in 14 of 14 failing pairs — suspect n05's link")


def test_two_bad_nodes_are_both_named():
    bad = {"node2", "node3"}
    v = judge(matrix_results(lambda a, b: 0.5 if bad & {a, b} else 9.4), link_speed_mbps=SPEEDS_10G)

    assert not v.passed
    assert sorted(v.suspects) == ["node2", "node3"]
    assert len(v.failing) == 5
    assert v.text.startswith(
        "node2 and node3 are each in 3 of 5 failing pairs — suspect the links of node2 and node3"
    )


def test_an_error_pair_fails_with_the_tools_words():
    results = matrix_results(lambda a, b: 9.4)
    bad = results[2]
    busy = "the server is busy running a test. try again later"
    results[2] = result(bad.sender, bad.receiver, None, ok=False, error=busy)
    v = judge(results, link_speed_mbps=SPEEDS_10G)

    assert not v.passed
    assert v.failing == [results[2]]
    assert v.suspects == []  # one failing pair cannot tell its ends apart
    assert "the server is busy running a test" in v.text
    assert "One failing pair cannot tell which end is at fault" in v.text
    assert v.required_gbps[bad.pair] is None
    assert v.matrix(NODES4)[NODES4.index(bad.sender)][NODES4.index(bad.receiver)] is None


def test_a_node_whose_tests_cannot_run_is_named_with_the_reason():
    results = [
        result(a, b, None, ok=False, error="no RDMA device") if "node4" in (a, b) else result(a, b, 90.0)
        for r in all_pairs_rounds(NODES4)
        for a, b in r
    ]
    v = judge(results)

    assert v.suspects == ["node4"]
    assert "suspect node4 (the tests did not run: no RDMA device)" in v.text


def test_unknown_link_speed_uses_the_median_and_says_so():
    results = matrix_results(lambda a, b: 0.19 if "node3" in (a, b) else 18.4)
    v = judge(results)  # loopback, veths: no link speed

    assert v.median_gbps == pytest.approx((0.19 + 18.4) / 2)
    assert v.suspects == ["node3"]
    assert "of the median 9.29 Gbit/s; link speeds unknown" in v.text

    good = judge(matrix_results(lambda a, b: 18.4))
    assert good.passed
    assert good.text == "all 6 pairs pass (≥ 90 % of the median 18.4 Gbit/s; link speeds unknown)"


def test_one_pair_with_unknown_link_speeds_has_no_median_to_judge_by_and_says_so():
    v = judge([result("node1", "node2", 14.2)])  # the median of one pair is that pair
    assert v.passed
    assert v.text == ("the pair passes (link speeds unknown and no other pair to compare with: "
                      "--threshold-gbps sets a pass mark)")
    v = judge([result("node1", "node2", 14.2)], threshold_gbps=20)
    assert not v.passed and "≥ 20 Gbit/s" in v.text
    v = judge([result("node1", "node2", 9.41)], link_speed_mbps=SPEEDS_10G)
    assert v.text == "the pair passes (≥ 90 % of link speed)"


def test_partly_known_link_speeds_mix_both_rules():
    results = matrix_results(lambda a, b: 9.4)
    v = judge(results, link_speed_mbps={"node1": 10_000, "node2": 10_000, "node3": None})

    assert v.passed
    assert "pairs with an unknown link speed against 90 % of the median" in v.text
    assert v.required_gbps[("node1", "node2")] == pytest.approx(9.0)


def test_slower_end_sets_the_bar():
    speeds = {"a": 100_000, "b": 25_000, "c": 100_000}
    v = judge([result("a", "b", 23.0), result("b", "c", 23.0)], link_speed_mbps=speeds)

    assert v.passed  # 23 ≥ 90 % of 25 Gbit/s, although far below 90 % of 100
    assert v.required_gbps[("a", "b")] == pytest.approx(22.5)
    assert not judge([result("a", "b", 20.0)], link_speed_mbps=speeds).passed


def test_absolute_threshold():
    results = matrix_results(lambda a, b: 4.0 if (a, b) == ("node1", "node2") else 9.4)
    v = judge(results, threshold_gbps=5)

    assert [r.pair for r in v.failing] == [("node1", "node2")]
    assert "(need ≥ 5 Gbit/s)" in v.text


def test_outliers_against_the_median_are_reported_even_when_all_pass():
    results = matrix_results(lambda a, b: 9.6 if (a, b) != ("node2", "node4") else 7.0)
    v = judge(results, threshold_gbps=5)

    assert v.passed
    assert [r.pair for r in v.outliers] == [("node2", "node4")]
    assert v.text == (
        "all 6 pairs pass (≥ 5 Gbit/s); low outliers against the median 9.60 Gbit/s: node2→node4 7.00 Gbit/s"
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


def test_pair_result_from_parsed_tool_output():
    refused = "unable to connect to server: Connection refused"
    iperf = parse_iperf3('{"start": {}, "intervals": [], "end": {}, "error": "%s"}' % refused)
    r = PairResult.of("node1", "node2", "iperf3", iperf)
    assert (r.ok, r.gbps, r.kind, r.error) == (False, None, "refused", refused)

    rdma = parse_perftest("", " Did not detect devices \n Unable to find the Infiniband/RoCE device\n", 1)
    r = PairResult.of("node1", "node2", "ib_write_bw", rdma)
    assert (r.ok, r.kind, r.retransmits) == (False, "no-device", None)

    counted = PairResult("a", "b", "iperf3", 9.0, True, counters={"a.retrans": 3})
    assert counted == PairResult("a", "b", "iperf3", 9.0, True)  # counters are not identity
    assert counted.counters == {"a.retrans": 3}
