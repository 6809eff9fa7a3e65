"""The mesh's judgement, indexed for a fleet of thousands (model/mesh_index.py), names exactly
what a straightforward reading of its rules names: on seeded random fleets, with and without a
topology, nodes down, readings ageing out and a prober restarting, judged again and again on
one window as a monitor judges it tick after tick. The reference below walks every pair for
every candidate, as the rules are written in model/mesh.py's ``judge`` docstring."""

from __future__ import annotations

import itertools
import random

import pytest

from netui.model.mesh import (ABOVE, LOSS_FLOOR, LOSS_MARK, LOSS_RATIO, MAX_PARTS, MIN_LOST, MIN_PROBES, NODE,
                              PAIR, PATH, UPLINK, Counts, MeshSuspect, MeshWindow, NodeMesh, PairMesh, _quantile,
                              _surprising, judge)
from netui.model.topology import Attachment, Switch, Topology
from netui.model.units import name_key


def reference_pairs(readings, latest, window_s=60.0):
    rows = {}
    for prober, target, mono_s, answered, lost, rtts in readings:
        if mono_s > latest[prober] - window_s:
            rows.setdefault((prober, target), []).append((answered, lost, rtts))
    out = {}
    for (a, b), rs in rows.items():
        rtts = [t for r in rs for t in r[2]]
        lost = sum(r[1] for r in rs)
        out[(a, b)] = PairMesh(a, b, Counts(sum(r[0] for r in rs) + lost, lost), _quantile(rtts, 0.5),
                               _quantile(rtts, 0.99))
    return out


def reference_nodes(pairs):
    out = {}
    for n in {n for k in pairs for n in k}:
        theirs = [p for k, p in pairs.items() if n in k]
        lost_by = {}
        for p in theirs:
            other = p.target if p.prober == n else p.prober
            lost_by[other] = lost_by.get(other, 0) + p.counts.lost
        own = [p.p99_us for p in theirs if p.prober == n and p.p99_us is not None]
        out[n] = NodeMesh(n, sum((p.counts for p in theirs), Counts()), len(lost_by),
                          sum(1 for v in lost_by.values() if v), max(own) if own else None)
    return out


def reference_suspects(pairs, topo):  # noqa: C901 — the rules, one after the other
    left, found = dict(pairs), []

    def pooled(keys):
        return sum((left[k].counts for k in keys if k in left), Counts())

    def losing(keys):
        c = pooled(keys)
        return c.probes > 0 and c.lost >= MIN_LOST and c.lost / c.probes >= LOSS_MARK

    def ends(keys):
        return {n for k in keys for n in k}

    def spread(keys, among):
        lost = {}
        for k in keys:
            for n in k:
                if n in among:
                    lost[n] = lost.get(n, 0) + left[k].counts.lost
        top = max(lost, key=lambda n: (lost[n], n)) if lost else None
        return top is not None and losing({k for k in keys if top not in k})

    def mark(quiet):
        return LOSS_RATIO * max(quiet.loss or 0.0, LOSS_FLOOR)

    def name(kind, label, keys, nodes, quiet):
        found.append(MeshSuspect(kind, label, tuple(sorted(set(nodes), key=name_key)), pooled(keys), quiet,
                                 frozenset(k for k in keys if k in left)))
        for k in keys:
            left.pop(k, None)

    def leaf(n):
        return topo.leaf_of(n) if topo is not None else None

    leaves = {}
    for n in ends(left):
        if leaf(n) is not None:
            leaves.setdefault(leaf(n), set()).add(n)

    def between(a, b):
        return {k for k in left if {leaf(k[0]), leaf(k[1])} == {a, b}}

    if len(leaves) >= 3:
        quiet = pooled({k for k in left if topo.same_leaf(*k)})
        groups = [between(a, b) for a, b in itertools.combinations(sorted(leaves, key=name_key), 2)]
        if quiet.probes >= 2 * MIN_PROBES and all(g and losing(g) and spread(g, ends(g))
                                                  and pooled(g).loss >= mark(quiet) for g in groups):
            every = set().union(*groups)
            tops = sorted({topo.path(*k).top for k in every} - {None}, key=name_key)
            name(ABOVE, ", ".join(tops) or "above the leaves", every, ends(every), quiet)

    def uplinks():
        up = {}
        for lf in sorted(leaves, key=name_key):
            towards = [between(lf, o) for o in leaves if o != lf]
            if towards and all(t and losing(t) and spread(t, leaves[lf]) and spread(t, ends(t) - leaves[lf])
                               for t in towards):
                up.setdefault(frozenset().union(*towards), []).append(lf)
        return [(UPLINK, f"{ls[0]} uplink", set(ks), leaves[ls[0]]) if len(ls) == 1 else
                (PATH, "↔".join(ls), set(ks), set().union(*(leaves[x] for x in ls))) for ks, ls in up.items()]

    def contradicted(n, keys):
        if topo is None:
            return False
        loss = pooled(keys).loss or 0.0
        same = {k for k in keys if topo.same_leaf(*k)}
        return any(c.probes * loss >= 8 and c.lost < c.probes * loss / 4 for c in (pooled(same), pooled(keys - same)))

    def mates_quiet(n, keys):
        leaf = topo.leaf_of(n) if topo is not None else None
        mates = {m for m in ends(left) if m != n and leaf is not None and topo.leaf_of(m) == leaf}
        if not mates:
            return True
        loss = pooled(keys).loss or 0.0
        c = pooled(k for k in left if n not in k and any(m in k for m in mates)
                   and topo.leaf_of(k[0]) is not None and topo.leaf_of(k[1]) is not None
                   and not topo.same_leaf(*k))
        return c.probes * loss >= 8 and c.lost < c.probes * loss / 4

    def nodes():
        out = []
        for n in ends(left):
            keys = {k for k in left if n in k}
            if losing(keys) and spread(keys, ends(keys) - {n}) and not contradicted(n, keys) and mates_quiet(n, keys):
                out.append((NODE, f"{n} link", keys, {n}))
        return out

    def clean(n, keys):
        c, here = pooled(k for k in left if n in k and k not in keys), pooled(keys)
        return c.probes * (here.loss or 0.0) >= 20 and _surprising(here.lost, here.probes, c.loss or 0.0)

    def paths():
        out = []
        for a, b in {tuple(sorted(k, key=name_key)) for k in left}:
            keys = {k for k in ((a, b), (b, a)) if k in left}
            if losing(keys) and clean(a, keys) and clean(b, keys):
                out.append((PAIR, f"{a}↔{b}", keys, {a, b}))
        return out

    while left:
        for level in (uplinks, nodes, paths):
            cands = level()
            quiet = pooled(k for k in left if not any(k in c[2] for c in cands))
            if not cands or quiet.probes < 2 * MIN_PROBES:
                continue
            standing = [c for c in cands if (pooled(c[2]).loss or 0.0) >= mark(quiet)
                        and _surprising(pooled(c[2]).lost, pooled(c[2]).probes, quiet.loss or 0.0)]
            if standing:
                name(*max(standing, key=lambda c: (pooled(c[2]).loss or 0.0, c[1])), quiet)
                break
        else:
            break
    quiet = sum((p.counts for k, p in pairs.items() if not any(k in s.pairs for s in found)), Counts())
    if len(found) > 1 and (len(found) > MAX_PARTS or any(s.kind == PAIR for s in found)
                           or quiet.probes < 2 * MIN_PROBES or any((s.through.loss or 0.0) < mark(quiet) for s in found)):
        found = []
    order = {ABOVE: 0, UPLINK: 1, PATH: 1, NODE: 2, PAIR: 3}
    return tuple(sorted(found, key=lambda s: (order[s.kind], s.name)))


def random_fleet(rng):
    """Nodes on leaves (some unplaced, or no topology), and a loss per ordered pair from faults
    drawn at random: nodes' links, paths, uplinks, the spine, noise everywhere."""
    nodes = [f"node{i}" for i in range(1, rng.randint(5, 13))]
    n_leaves = rng.randint(1, 4)
    leaf = {n: f"leaf{1 + i * n_leaves // len(nodes)}" for i, n in enumerate(nodes) if rng.random() > 0.1}
    topo = None if rng.random() < 0.25 else Topology(
        [Switch("spine")] + [Switch(f"leaf{k}", parent="spine") for k in range(1, n_leaves + 1)],
        [Attachment(n, lf) for n, lf in leaf.items()])
    faults = []
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
        kind, rate = rng.choice(["node", "pair", "uplink", "spine", "noise"]), rng.choice([0.01, 0.02, 0.05, 0.2])
        a, b = rng.sample(nodes, 2)
        up = rng.choice(sorted(set(leaf.values())))
        faults.append({
            "node": lambda x, y, a=a: a in (x, y),
            "pair": lambda x, y, a=a, b=b: {x, y} == {a, b},
            "uplink": lambda x, y, up=up: (leaf.get(x) == up) != (leaf.get(y) == up),
            "spine": lambda x, y: leaf.get(x) != leaf.get(y),
            "noise": lambda x, y: True,
        }[kind])
        faults[-1] = (faults[-1], rate if kind != "noise" else rate / 20)

    def loss(x, y):
        return max([rate for hit, rate in faults if hit(x, y)], default=0.0)
    return nodes, topo, loss


@pytest.mark.parametrize("seed", range(40))
def test_the_indexed_judgement_names_what_the_rules_name(seed):
    rng = random.Random(seed)
    nodes, topo, loss = random_fleet(rng)
    w, readings, latest = MeshWindow(), [], {}
    heard = set()  # the pairs answered once: a pair's readings count from its first answer on
    per_frame, sparse = rng.randint(1, 6), rng.choice([1.0, 1.0, 0.5, 0.1])
    restart = rng.choice([None, rng.choice(nodes)])
    for t in range(rng.randint(30, 100)):
        for a in nodes:
            mono = 1000.0 + t
            if a == restart and t == 50:  # a new boot: its clock starts again, its readings go
                w.seen(a, 5.0)
                readings = [r for r in readings if a not in r[:2]]
                heard = {k for k in heard if a not in k}
            if a == restart and t >= 50:
                mono = 5.0 + t
            w.seen(a, mono)
            latest[a] = mono
            for b in nodes:
                if a == b or rng.random() > sparse:
                    continue
                lost = sum(rng.random() < loss(a, b) for _ in range(per_frame))
                rtts = tuple(200 + rng.randrange(90) for _ in range(min(3, per_frame - lost)))
                w.add(a, b, mono, per_frame - lost, lost, rtts)
                if lost < per_frame:
                    heard.add((a, b))
                if (a, b) in heard:
                    readings.append((a, b, mono, per_frame - lost, lost, rtts))
        if t % 7 == 6:  # judged as the monitor judges: the same window, tick after tick
            up = [n for n in nodes if rng.random() > 0.15] if rng.random() < 0.4 else None
            v = w.judge(topo, up)
            pairs = reference_pairs(readings, latest)
            if up is not None:
                pairs = {k: p for k, p in pairs.items() if k[0] in up and k[1] in up}
            assert v.pairs == pairs
            assert v.nodes == reference_nodes(pairs)
            assert v.suspects == reference_suspects(pairs, topo)
            assert judge(pairs, topo).suspects == v.suspects


@pytest.mark.slow
def test_the_random_fleets_name_parts_of_every_kind():
    """The fleets above are worth comparing on: their judgements name every kind of part."""
    kinds = set()
    for seed in range(120):
        rng = random.Random(seed)
        nodes, topo, loss = random_fleet(rng)
        pairs = {(a, b): PairMesh(a, b, Counts(300, sum(rng.random() < loss(a, b) for _ in range(300))), None, None)
                 for a in nodes for b in nodes if a != b}
        found = judge(pairs, topo).suspects
        assert found == reference_suspects(pairs, topo)
        kinds |= {s.kind for s in found}
    assert kinds == {NODE, PAIR, UPLINK, PATH, ABOVE}
