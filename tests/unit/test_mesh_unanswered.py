"""A pair whose probes were never answered is unanswered, not lossy (model/mesh_index.py
``heard``): UDP blocked between two nodes — a firewall everywhere, on one host, between two
racks — must never be named a lossy link, uplink or switch. It is out of the loss evidence and
out of the figures, counted and shown as its own state; a pair answered once that then goes
silent is a black hole, real loss, and still named."""

from __future__ import annotations

import random

import pytest

from netui.model.mesh import NODE, PAIR, UNANSWERED_PROBES
from netui.model.mesh_index import IN_HEARD, IN_LOST, IN_UNANSWERED, OUT_HEARD, OUT_LOST, OUT_UNANSWERED, SILENT_CAP
from netui.model.mesh_window import MeshWindow
from tests.unit.test_mesh_judge import LEAF, NODES, TOPO


def window(lost_of, *, frames: int = 60, per_frame: int = 5, seed: int = 1, nodes=NODES, w=None,
           start: int = 0) -> MeshWindow:
    """``frames`` frames of 1 s from ``start``; each prober settles ``per_frame`` probes of each
    peer a frame, each lost with probability ``lost_of(prober, target, t)`` (1.0: blocked)."""
    rng = random.Random(seed)
    w = w or MeshWindow(window_s=60.0)
    for t in range(start, start + frames):
        for a in nodes:
            for b in nodes:
                if a != b:
                    lost = sum(rng.random() < lost_of(a, b, t) for _ in range(per_frame))
                    w.add(a, b, 100.0 + t, per_frame - lost, lost, tuple(200 + rng.randrange(50)
                                                                         for _ in range(per_frame - lost)))
    return w


def named(v) -> list[tuple[str, str]]:
    return [(s.kind, s.name) for s in v.suspects]


@pytest.mark.parametrize("topology", [None, TOPO], ids=["flat", "tree"])
def test_udp_blocked_everywhere_is_one_fleet_state_and_names_nothing(topology):
    v = window(lambda a, b, t: 1.0).judge(topology)
    assert v.none_answered
    assert v.suspects == () and v.pairs == {} and v.probed == 0
    assert v.unanswered == len(NODES) * (len(NODES) - 1)
    # said once, of the fleet: no node is said blocked, and none has a loss figure
    assert set(v.nodes) == set(NODES)
    assert not any(m.blocked or m.loss is not None for m in v.nodes.values())
    assert all(v.unanswered_pair(a, b) for a in NODES for b in NODES if a != b)


def test_too_few_probes_never_answered_are_not_yet_a_state():
    v = window(lambda a, b, t: 1.0, frames=1, per_frame=3, nodes=NODES[:3]).judge(None)
    assert not v.none_answered and v.unanswered == 0 and v.suspects == ()


@pytest.mark.parametrize("topology", [None, TOPO], ids=["flat", "tree"])
def test_one_node_blocked_is_its_own_state_and_names_nothing(topology):
    v = window(lambda a, b, t: 1.0 if "node3" in (a, b) else 0.0).judge(topology)
    assert v.suspects == () and not v.none_answered
    node3 = v.nodes["node3"]
    assert node3.answers_none and node3.answered_none and node3.blocked
    assert node3.unanswered == 2 * (len(NODES) - 1) and node3.loss is None  # no loss figure: not a loss
    for n in NODES:
        if n != "node3":  # the others' figures: their answered pairs, clean
            m = v.nodes[n]
            assert not m.blocked and m.loss == 0.0 and m.peers == len(NODES) - 2 and m.unanswered == 2
    assert v.unanswered_pair("node1", "node3") and v.unanswered_pair("node3", "node1")
    assert not v.unanswered_pair("node1", "node2")
    assert not any("node3" in k for k in v.pairs)


def test_a_node_that_answers_no_probe_while_its_own_are_answered():
    """A stateful host firewall: the answers to its own probes pass, its peers' probes do not."""
    v = window(lambda a, b, t: 1.0 if b == "node3" else 0.0).judge(TOPO)
    node3 = v.nodes["node3"]
    assert node3.answers_none and not node3.answered_none and node3.loss == 0.0
    assert v.suspects == ()


@pytest.mark.parametrize("leaves", [{"leaf2"}, {"leaf2", "leaf3"}], ids=["leaf2-to-all", "leaf2-to-leaf3"])
def test_a_racks_pairs_blocked_both_ways_are_not_an_uplink(leaves):
    def blocked(a, b, t):
        if leaves == {"leaf2"}:
            return 1.0 if (LEAF[a] == "leaf2") != (LEAF[b] == "leaf2") else 0.0
        return 1.0 if {LEAF[a], LEAF[b]} == leaves else 0.0

    v = window(blocked).judge(TOPO)
    assert v.suspects == () and not v.none_answered
    assert not any(m.blocked for m in v.nodes.values())  # each node has answered peers
    assert v.unanswered_pair("node3", "node1") == (leaves == {"leaf2"})
    assert v.unanswered_pair("node3", "node5") and v.unanswered_pair("node5", "node3")
    assert all(p.loss == 0.0 for p in v.pairs.values())


def test_an_answered_node_that_goes_silent_is_a_black_hole_and_named():
    w = window(lambda a, b, t: 0.0, frames=20)
    v = window(lambda a, b, t: 1.0 if "node3" in (a, b) else 0.0, frames=20, start=20, w=w).judge(TOPO)
    assert named(v) == [(NODE, "node3 link")]
    assert not v.nodes["node3"].blocked and v.nodes["node3"].loss > 0.3


def test_an_answered_pair_that_goes_silent_is_named_its_path():
    w = window(lambda a, b, t: 0.0, frames=20)
    v = window(lambda a, b, t: 1.0 if {a, b} == {"node1", "node5"} else 0.0, frames=40, start=20, w=w).judge(TOPO)
    assert named(v) == [(PAIR, "node1↔node5")]
    assert v.unanswered == 0 and v.pairs[("node1", "node5")].loss > 0.6


def test_a_lossy_pair_answered_at_last_counts_from_its_first_answer():
    """Half its probes lost: answered within a few, then every loss after is evidence."""
    v = window(lambda a, b, t: 0.5 if "node3" in (a, b) else 0.0).judge(TOPO)
    assert named(v) == [(NODE, "node3 link")] and v.unanswered == 0 and not v.nodes["node3"].blocked


def silence_from_bytes(w: MeshWindow) -> dict[str, list[int]]:
    index = w._index
    out = {}
    for node, i in index.ids.items():
        s = [0] * 6
        for b, value in enumerate(index.heard[i]):
            if index.alive[b] and value:
                s[OUT_HEARD if value == 255 else OUT_LOST] += 1 if value == 255 else value
                s[OUT_UNANSWERED] += UNANSWERED_PROBES <= value < 255
        for a, row in enumerate(index.heard):
            if index.alive[a] and row[i]:
                s[IN_HEARD if row[i] == 255 else IN_LOST] += 1 if row[i] == 255 else row[i]
                s[IN_UNANSWERED] += UNANSWERED_PROBES <= row[i] < 255
        out[node] = s
    return out


def test_the_answered_table_stays_consistent_as_nodes_restart_and_is_capped():
    w = window(lambda a, b, t: 1.0 if "node3" in (a, b) or (a, b) == ("node1", "node2") else 0.0, frames=80)
    index = w._index
    assert w.pair_count  # (the frames go into the tables at a read)
    assert max(v for row in index.heard for v in row if v != 255) == SILENT_CAP  # a byte a pair
    w.seen("node3", 1.0)  # its clock went back: a new boot, its pairs start afresh
    w.seen("node1", 2.0)
    assert {n: index.silence[i] for n, i in index.ids.items()} == silence_from_bytes(w)
    assert index.unanswered_pairs == sum(s[OUT_UNANSWERED] for s in silence_from_bytes(w).values())
    assert index.answered_pairs == sum(s[OUT_HEARD] for s in silence_from_bytes(w).values())


def test_a_large_window_never_answered_keeps_no_pair_and_a_byte_a_pair():
    """A fleet of 200 behind a firewall, a probe or two a pair (a fleet of a thousand at the
    default rate): one fleet state, no pair's figures kept, nothing named."""
    nodes = [f"node{i:03d}" for i in range(200)]
    w = MeshWindow(window_s=60.0)
    target_of = {(n, 7000): n for n in nodes}
    from netui.model.mesh import MeshPeerReading
    for t in range(4):
        for i, a in enumerate(nodes):
            readings = [MeshPeerReading(b, 7000, 0, 1) for j, b in enumerate(nodes) if b != a and j % 4 == (i + t) % 4]
            w.add_readings(a, 100.0 + t, readings, target_of)
    v = w.judge(None)
    assert v.none_answered and v.suspects == () and v.pairs == {} and w.pair_count == 0
    assert not w._rows and v.unanswered == 0  # (a probe a pair: not yet a pair's state)
    assert sum(len(row) for row in w._index.heard) == len(nodes) ** 2


def test_a_verdict_copies_the_answered_table_of_the_probers_with_an_unanswered_pair_only():
    """(a copy of every row is a megabyte a judgement at 1,024 nodes, four at 2,048)"""
    w = window(lambda a, b, t: 1.0 if (a, b) in (("node1", "node2"), ("node4", "node2")) else 0.0)
    v = w.judge(None)
    assert v.unanswered == 2 and set(v.heard.rows) == {"node1", "node4"}
    index = w._index
    for a in NODES:
        for b in NODES:
            was = index.heard[index.ids[a]][index.ids[b]]
            assert v.unanswered_pair(a, b) == (UNANSWERED_PROBES <= was < 255) == ((a, b) in (("node1", "node2"),
                                                                                               ("node4", "node2")))


def test_what_a_recording_keeps_as_answered_follows_restarts_and_nodes_that_join():
    """``MeshWindow.answered`` (each recording file's header) over a numbering with holes: two
    nodes restart (their pairs start afresh, under new numbers) and a node joins after them."""
    before = {("node1", "node2"), ("node2", "node5"), ("node6", "node4")}  # blocked, then
    after = {("node2", "node1"), ("node4", "node6"), ("node3", "node5"), ("node0", "node2")}  # blocked since
    w = window(lambda a, b, t: 1.0 if (a, b) in before else 0.0, frames=30)
    w.seen("node3", 1.0)  # a new boot: its clock went back
    w.seen("node1", 2.0)
    nodes = NODES + ["node0"]
    window(lambda a, b, t: 1.0 if (a, b) in after else 0.0, frames=5, start=30, nodes=nodes, w=w)
    restarted = {"node1", "node3"}
    expected = {(a, b) for a in nodes for b in nodes if a != b and (a, b) not in after} \
        | {(a, b) for a in NODES for b in NODES if a != b and (a, b) not in before and not restarted & {a, b}}

    names, answered = w.answered()

    assert names == list(w._index.ids) and sorted(names) == sorted(nodes)
    assert [w._index.ids[n] for n in names] != list(range(len(names)))  # (holes: the test's point)
    assert {(p, names[j]) for p, bits in answered.items() for j in range(len(names)) if bits >> j & 1} == expected
    assert all(bits < 1 << len(names) for bits in answered.values())


def test_the_reading_that_brings_a_pairs_first_answer_counts_its_lost_probes_as_loss():
    """A frame's reading does not say which of its probes came first: the probes lost in
    the readings before the first answer are not loss, those lost in that reading are."""
    w = MeshWindow(window_s=60.0)
    for t in range(3):
        w.add("node1", "node2", 100.0 + t, 0, 5)  # never answered: unanswered, not loss
    w.add("node1", "node2", 103.0, 2, 3, (200, 210))
    w.add("node1", "node2", 104.0, 5, 0, (200,) * 5)
    counts = w.judge(None).pairs[("node1", "node2")].counts
    assert (counts.probes, counts.lost) == (10, 3)
