"""The shift pattern of a matrix both ways (mpiGraph's): every ordered pair in N−1 rounds,
every node sending to one peer and receiving from another in each round; and where it is the
default (a matrix both ways, in ``netui bench`` and in the app's dialog alike)."""

from __future__ import annotations

from collections import Counter
from itertools import permutations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netui.checks.pairs.model import PortAllocator, shift_rounds
from netui.checks.pairs.runner import plan_rounds
from netui.checks.pairs.tools import BIDIR, BOTH_WAYS, ONE_WAY, PAIRS, SHIFT, PairSettings, default_direction


def names(n: int) -> list[str]:
    return [f"n{i:02d}" for i in range(1, n + 1)]


@given(st.integers(min_value=2, max_value=33))
def test_every_ordered_pair_exactly_once_in_n_minus_1_rounds(n):
    nodes = names(n)
    rounds = shift_rounds(nodes)

    assert len(rounds) == n - 1
    assert Counter(p for r in rounds for p in r) == Counter(permutations(nodes, 2))
    for r in rounds:
        assert len(r) == n  # N flows a round
        # each node sends once and receives once
        assert Counter(a for a, _ in r) == Counter(nodes)
        assert Counter(b for _, b in r) == Counter(nodes)
        assert all(a != b for a, b in r)


@pytest.mark.parametrize("n", [3, 5, 7])
def test_odd_counts_need_no_sit_out(n):
    rounds = shift_rounds(names(n))
    assert len(rounds) == n - 1 and all(len(r) == n for r in rounds)


def test_round_k_sends_to_i_plus_k_and_receives_from_i_minus_k():
    nodes = ["a", "b", "c", "d", "e", "f"]
    rounds = shift_rounds(nodes)
    for k, r in enumerate(rounds, start=1):
        for i, node in enumerate(nodes):
            assert (node, nodes[(i + k) % 6]) in r
            assert (nodes[(i - k) % 6], node) in r
    # both directions of a pair come at distance k and N−k
    assert ("a", "b") in rounds[0] and ("b", "a") in rounds[4]


def test_degenerate_inputs():
    assert shift_rounds([]) == [] and shift_rounds(["solo"]) == []
    assert shift_rounds(["a", "a", "b"]) == [[("a", "b"), ("b", "a")]]


def test_a_node_two_tests_a_round_never_share_a_port():
    """In a shift round a node is the server of one test and the client of another: each test
    takes its port on both of its nodes, so the node's two ports differ, as do the ports of
    the servers on one node."""
    for r in shift_rounds(names(6)):
        ports = PortAllocator(5201, 200)
        held: dict[str, list[int]] = {}
        for a, b in r:
            port = ports.acquire(a, b)
            held.setdefault(a, []).append(port)
            held.setdefault(b, []).append(port)
        assert all(len(p) == 2 and len(set(p)) == 2 for p in held.values())


def test_six_nodes_both_ways_run_five_rounds_shift_and_ten_as_pairs():
    nodes = names(6)
    shift = plan_rounds(nodes, matrix=True, direction=BOTH_WAYS, one_by_one=False, pattern=SHIFT)
    pairs = plan_rounds(nodes, matrix=True, direction=BOTH_WAYS, one_by_one=False, pattern=PAIRS)
    assert len(shift) == 5 and len(pairs) == 10
    assert Counter(p for r in shift for p in r) == Counter(p for r in pairs for p in r)
    alone = plan_rounds(nodes, matrix=True, direction=BOTH_WAYS, one_by_one=True, pattern=SHIFT)
    assert len(alone) == 30 and all(len(r) == 1 for r in alone)


def test_the_pattern_applies_to_a_matrix_both_ways_only():
    nodes = names(4)
    for direction in (ONE_WAY, BIDIR):
        assert plan_rounds(nodes, matrix=True, direction=direction, one_by_one=False, pattern=SHIFT) == \
            plan_rounds(nodes, matrix=True, direction=direction, one_by_one=False, pattern=PAIRS)
    assert PairSettings(direction=BOTH_WAYS).pattern_used(True) == SHIFT
    assert PairSettings(direction=BOTH_WAYS, pattern=PAIRS).pattern_used(True) == PAIRS
    assert PairSettings(direction=ONE_WAY).pattern_used(True) == PAIRS
    assert PairSettings(direction=BOTH_WAYS).pattern_used(False) == PAIRS
    # a single pair both ways stays two one-way tests
    assert plan_rounds(["a", "b"], matrix=False, direction=BOTH_WAYS, one_by_one=False,
                       pattern=SHIFT) == [[("a", "b")], [("b", "a")]]


def test_one_default_for_the_app_and_the_cli():
    from netui.cli.bench import _pair_settings, build_parser

    assert PairSettings().pattern == SHIFT and PairSettings().confirm
    assert default_direction(True) == BOTH_WAYS and default_direction(False) == ONE_WAY
    matrix = _pair_settings(build_parser().parse_args(["iperf3", "--matrix"]))
    assert (matrix.direction, matrix.pattern, matrix.confirm) == (BOTH_WAYS, SHIFT, True)
    pair = _pair_settings(build_parser().parse_args(["iperf3"]))
    assert pair.direction == ONE_WAY
    old = _pair_settings(build_parser().parse_args(["iperf3", "--matrix", "--pattern", "pairs", "--no-confirm"]))
    assert (old.pattern, old.confirm) == (PAIRS, False)
    with pytest.raises(ValueError, match="pattern must be one of shift, pairs"):
        PairSettings(pattern="ring").check()
