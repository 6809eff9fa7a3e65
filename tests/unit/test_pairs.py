"""Pair scheduling, port allocation and the verdict of a bandwidth matrix."""

from __future__ import annotations

from collections import Counter
from itertools import combinations, permutations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netui.checks.pairs.parse_iperf3 import parse_iperf3
from netui.checks.pairs.parse_perftest import parse_perftest
from netui.checks.pairs.model import (
    PairResult,
    PortAllocator,
    PortsExhausted,
    all_pairs_rounds,
    one_at_a_time,
)

NODES4 = ["node1", "node2", "node3", "node4"]


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


@pytest.mark.slow
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


# --- results ---------------------------------------------------------------------------------


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


def test_ports_something_else_listens_on_are_never_handed_out():
    ports = PortAllocator(base=5201, span=5)
    ports.reserve("node2", {5201, 5202, 22})  # a user's iperf3 -s, and another listener
    assert ports.busy("node2", 5201) and not ports.busy("node1", 5201)
    assert ports.acquire("node1", "node2") == 5203  # free on both ends
    assert ports.acquire("node1", "node3") == 5204
    assert ports.acquire("node3", "node4") == 5205
    assert ports.acquire("node3", "node4") == 5201  # wraps: 5201 is busy on node2 only
    got = []
    with pytest.raises(PortsExhausted):
        for _ in range(5):
            got.append(ports.acquire("node2", "node5"))
    assert got == [5204, 5205]  # 5201 and 5202 busy there, 5203 this test's own: released or not,
    ports.release(5203, "node1", "node2")  # a released port comes back; a busy one never does
    assert ports.acquire("node2", "node5") == 5203
