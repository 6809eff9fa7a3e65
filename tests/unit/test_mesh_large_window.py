"""A large fleet's mesh window (model/mesh_window.py, KEEP_ALL_PAIRS pairs or more): every pair's probes
still count in its nodes' figures and in the judgement, while only the pairs that lost a probe
or have MIN_PROBES keep figures of their own; the others are counted as pairs of too few
probes, never shown as 0 %."""

from __future__ import annotations

import random

from netui.model.mesh import MIN_PROBES, NODE, judge
from netui.model.mesh_window import KEEP_ALL_PAIRS, MeshWindow
from netui.model.topology import Attachment, Switch, Topology
from tests.unit.test_mesh_judge_index import reference_nodes, reference_pairs

NODES = [f"node{i:03d}" for i in range(150)]  # 22,350 ordered pairs
TOPO = Topology([Switch("spine")] + [Switch(f"leaf{k}", parent="spine") for k in range(5)],
                [Attachment(n, f"leaf{i // 30}") for i, n in enumerate(NODES)])


WINDOW_S = 5.0  # (a short window: the pairs kept while it filled, under KEEP_ALL_PAIRS, have left it)
ROUND = 4  # frames in which a node probes each peer once


def filled(lossy: str | None, seconds: int = 9, seed: int = 3):
    """Each node probes every peer once every ROUND frames (a probe or two a pair in the window,
    as a fleet of a thousand at the default rate); ``lossy``'s link loses a third of its
    probes. Node node000 probes node001 a few times every frame (a pair with MIN_PROBES)."""
    rng = random.Random(seed)
    w, readings, latest = MeshWindow(window_s=WINDOW_S), [], {}
    heard = set()  # a pair's readings count from its first answer on (before it: unanswered)
    for t in range(seconds):
        mono = 500.0 + t
        for i, a in enumerate(NODES):
            peers = [b for j, b in enumerate(NODES) if b != a and j % ROUND == (i + t) % ROUND]
            if a == "node000":
                peers += ["node001"] * (MIN_PROBES // ROUND + 1)
            frame = []
            for b in peers:
                lost = int(lossy in (a, b) and rng.random() < 0.33)
                rtts = () if lost else (100 + rng.randrange(400),)
                frame.append((b, 7000, 1 - lost, lost, rtts))
                if not lost:
                    heard.add((a, b))
                if (a, b) in heard:
                    readings.append((a, b, mono, 1 - lost, lost, rtts))
            w.add_readings(a, mono, frame, {(n, 7000): n for n in NODES})
            latest[a] = mono
    return w, reference_pairs(readings, latest, WINDOW_S)


def test_a_large_window_keeps_figures_only_where_they_can_be_read():
    w, pairs = filled("node042")
    assert w.pair_count == len(pairs) >= KEEP_ALL_PAIRS
    v = w.judge(TOPO)
    lossy_or_enough = {k: p for k, p in pairs.items() if p.counts.lost or p.enough}
    assert v.pairs.keys() == lossy_or_enough.keys() and 0 < len(v.pairs) < len(pairs) / 10
    for key, p in v.pairs.items():  # a lossy pair kept from its first lost probe: its counts always whole
        assert p.counts == pairs[key].counts
    assert v.pairs[("node000", "node001")] == pairs[("node000", "node001")]  # probed enough: kept from the start
    assert v.probed == len(pairs) and v.unkept == len(pairs) - len(v.pairs)
    # every pair's probes in its nodes' figures: counts, peers, lossy peers and RTT p99 as if all were kept
    assert v.nodes == reference_nodes(pairs)
    # and in the judgement: the same names as a judgement of every pair
    assert [(s.kind, s.name) for s in v.suspects] == [(NODE, "node042 link")]
    assert v.suspects == judge(pairs, TOPO).suspects


def test_a_clean_large_window_keeps_no_pair_of_few_probes():
    w, pairs = filled(None)
    v = w.judge(TOPO, NODES[:-3])  # three nodes down: their pairs out of every figure
    judged = {k: p for k, p in pairs.items() if k[0] in NODES[:-3] and k[1] in NODES[:-3]}
    assert list(v.pairs) == [("node000", "node001")]
    assert v.probed == len(judged)
    expected = reference_nodes(judged)
    assert {n: (m.counts, m.peers, m.lossy_peers) for n, m in v.nodes.items()} == \
        {n: (m.counts, m.peers, m.lossy_peers) for n, m in expected.items()}
    # a node's RTT p99 over its pairs of a probe or two is the highest RTT of each frame: it
    # takes in its probes of the nodes down (their pairs are not kept one by one)
    for n, m in v.nodes.items():
        assert m.p99_us == max(p.p99_us for k, p in pairs.items() if k[0] == n and p.p99_us is not None)
    assert any(m.p99_us != expected[n].p99_us for n, m in v.nodes.items())  # (the case arises here)
    assert v.suspects == ()
