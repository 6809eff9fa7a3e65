"""The probe mesh's readings (docs/protocol.md#mesh): what one node's probes of its peers
settled in one frame. Pure: no I/O; collectors/mesh.py builds them from a frame's "mesh" field.

RTTs are measured on the prober's own monotonic clock (the answer echoes the time the probe
left): no two nodes' clocks are ever compared.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from netui.model.health import ABOVE_ZERO, Level, Threshold
from netui.model.topology import Topology
from netui.model.units import name_key


@dataclass(frozen=True)
class MeshPeerReading:
    """One peer's probes that settled in a frame: ``answered`` (their RTTs in µs, at most the
    sampler's cap of them listed) and ``lost`` (no answer within the sampler's timeout)."""

    address: str
    port: int
    answered: int
    lost: int
    rtts_us: tuple[int, ...] = ()


@dataclass(frozen=True)
class MeshSample:
    """A node's part of the mesh at one frame (``mono_s``: its CLOCK_MONOTONIC).

    ``available`` False: the node could not open its UDP socket (``error`` says why). ``port``:
    the UDP port it answers probes on; ``peers``: how many peers it has been given; ``answers``
    and ``refused``: probes it answered, and packets it dropped (no token, not from a listed
    peer, not a probe), counted since its sampler started; ``readings``: what settled since
    the frame before; ``address``: the address the node was reached at, which its peers probe.
    """

    mono_s: float
    available: bool = True
    error: str | None = None
    port: int = 0
    peers: int = 0
    answers: int = 0
    refused: int = 0
    readings: tuple[MeshPeerReading, ...] = ()
    address: str | None = None  # where its peers reach it (its SSH session's address); None: unknown


# --- how hard the mesh probes ------------------------------------------------------------------

DEFAULT_RATE = 20.0  # probes a node sends per second, at most (a 1,024-node fleet: each peer every 51 s)
DEFAULT_PERIOD_S = 2.0  # each peer probed at most once per this many seconds (a small fleet: 30 a minute)


@dataclass(frozen=True)
class MeshSettings:
    """``rate``: probes a node sends per second, at most; ``period_s``: each peer probed at
    most once per this many seconds. ``--mesh on`` takes the defaults, ``--mesh RATE`` a rate."""

    rate: float = DEFAULT_RATE
    period_s: float = DEFAULT_PERIOD_S


def parse_mesh_option(text: str) -> MeshSettings | None:
    """``--mesh off|on|RATE`` (and config.toml's ``mesh``): None for off; ValueError otherwise."""
    word = text.strip().lower()
    if word in ("off", "no", "false", "0"):
        return None
    if word in ("on", "yes", "true"):
        return MeshSettings()
    try:
        rate = float(word)
    except ValueError:
        raise ValueError(f"{text!r} is not off, on nor a rate") from None
    if not 0.1 <= rate <= 1000:
        raise ValueError(f"a mesh rate is 0.1 to 1000 probes a second, not {text!r}")
    return MeshSettings(rate=rate, period_s=min(DEFAULT_PERIOD_S, max(0.05, 1.0 / rate)))



# --- the window: per ordered pair, what settled over the last WINDOW_S -----------------------

WINDOW_S = 60.0  # what the mesh's figures are taken over
MIN_PROBES = 20  # a pair with fewer settled probes in the window shows "few probes", not a loss
# a part of the network is named lossy when the probes through it lose at least LOSS_MARK and
# MIN_LOST of them, LOSS_RATIO times what the probes elsewhere lose (never under LOSS_FLOOR)
LOSS_MARK = 0.005
MIN_LOST = 8
LOSS_RATIO = 5.0
LOSS_FLOOR = 0.001
# a loss figure's level (the grid's Loss column, the mesh screen's cells): any probe lost is
# careful, what the judgement calls losing (LOSS_MARK) a warning, 1 % critical (as retransmits)
LOSS_LEVELS = Threshold(ABOVE_ZERO, LOSS_MARK, 0.01)

NODE, PAIR, UPLINK, PATH, ABOVE = "node", "pair", "uplink", "path", "above"


@dataclass(frozen=True)
class Counts:
    """Settled probes and the lost among them; ``loss`` None when there were none."""

    probes: int = 0
    lost: int = 0

    @property
    def loss(self) -> float | None:
        return self.lost / self.probes if self.probes else None

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.probes + other.probes, self.lost + other.lost)


@dataclass(frozen=True)
class PairMesh:
    """One ordered pair over the window: ``prober`` probed ``target``. RTTs in µs on the
    prober's clock (None: no answer in the window); ``enough`` False: fewer than MIN_PROBES
    settled, so its loss is not a figure to read."""

    prober: str
    target: str
    counts: Counts
    p50_us: float | None
    p99_us: float | None

    @property
    def enough(self) -> bool:
        return self.counts.probes >= MIN_PROBES

    @property
    def loss(self) -> float | None:
        return self.counts.loss if self.enough else None


@dataclass(frozen=True)
class NodeMesh:
    """A node's pairs over the window, both ways (its probes and its peers' probes of it):
    their counts pooled, ``lossy_peers`` of ``peers`` lost at least one probe, RTT p99 of its
    own probes."""

    node: str
    counts: Counts
    peers: int
    lossy_peers: int
    p99_us: float | None

    @property
    def enough(self) -> bool:
        """Its pairs settled MIN_PROBES probes or more between them: a loss figure to read."""
        return self.counts.probes >= MIN_PROBES

    @property
    def loss(self) -> float | None:
        """Its pairs' pooled loss (0..1), None with fewer than MIN_PROBES probes."""
        return self.counts.loss if self.enough else None


@dataclass(frozen=True)
class MeshSuspect:
    """A part of the network the mesh's losses point at: ``kind`` NODE (a node's link:
    ``name`` "node3 link"), PAIR (the path between two nodes, "node1↔node3"), UPLINK (a
    leaf's uplink, "leaf2 uplink"), PATH (between two leaves, whose uplinks and the switch
    above carry the same pairs: "leaf1↔leaf2") or ABOVE (every uplink to a switch above the
    leaves: "spine"). ``nodes``: the nodes whose probes it explains; ``through``: the pooled probes
    through it, ``elsewhere``: those of the other pairs."""

    kind: str
    name: str
    nodes: tuple[str, ...]
    through: Counts
    elsewhere: Counts
    pairs: frozenset[tuple[str, str]] = frozenset()  # the ordered pairs it explains

    @property
    def text(self) -> str:
        loss = self.through.loss or 0.0
        other = self.elsewhere.loss
        tail = f", elsewhere {_percent(other)}" if other is not None else ""
        return f"{self.name}: {_percent(loss)} of {self.through.probes} probes lost{tail}"


@dataclass(frozen=True)
class MeshVerdict:
    """The mesh over its window: every pair, every node, and the suspects, worst first."""

    pairs: dict[tuple[str, str], PairMesh]
    nodes: dict[str, NodeMesh]
    suspects: tuple[MeshSuspect, ...]
    window_s: float

    def suspect_of(self, node: str) -> MeshSuspect | None:
        """The suspect that explains ``node``'s losses (its own link first), or None."""
        return next((s for s in self.suspects if node in s.nodes), None)


def loss_level(loss: float | None) -> Level | None:
    """A loss figure's level (``LOSS_LEVELS``); None without a figure."""
    return None if loss is None else LOSS_LEVELS.level(loss)


def _percent(ratio: float | None) -> str:
    if ratio is None:
        return "—"
    value = 100.0 * ratio
    return f"{value:.1f}%" if value < 10 else f"{value:.0f}%"


def _quantile(values: list[int], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


class MeshWindow:
    """What each ordered pair's probes settled over the last ``window_s``: readings are added
    as the probers report them (``add``), dropped when older than the window on the prober's
    own clock. Aggregates only: per frame and pair, counts and the few RTTs it listed."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        # (prober, target) -> [(prober's mono_s, answered, lost, RTTs µs)]
        self._pairs: dict[tuple[str, str], list[tuple[float, int, int, tuple[int, ...]]]] = {}
        self._latest: dict[str, float] = {}  # prober -> its latest frame's mono_s

    def add(self, prober: str, target: str, mono_s: float, answered: int, lost: int,
            rtts_us: tuple[int, ...] = ()) -> None:
        """One frame's reading of ``prober``'s probes of ``target``."""
        self._pairs.setdefault((prober, target), []).append((mono_s, answered, lost, rtts_us))
        self.seen(prober, mono_s)

    def seen(self, prober: str, mono_s: float) -> None:
        """``prober`` reported at ``mono_s`` (with or without readings): its old ones age out."""
        if mono_s < self._latest.get(prober, float("-inf")):  # a restarted node's new clock
            self.forget(prober)
        self._latest[prober] = mono_s

    def forget(self, node: str) -> None:
        """Everything of ``node`` as a prober or a target (it restarted, it left the fleet)."""
        self._pairs = {k: v for k, v in self._pairs.items() if node not in k}
        self._latest.pop(node, None)

    def _prune(self) -> None:
        for key in list(self._pairs):
            since = self._latest.get(key[0], float("-inf")) - self.window_s
            rows = [r for r in self._pairs[key] if r[0] > since]
            if rows:
                self._pairs[key] = rows
            else:
                del self._pairs[key]

    def pairs(self) -> dict[tuple[str, str], PairMesh]:
        """Every ordered pair with a settled probe in the window."""
        self._prune()
        out = {}
        for (prober, target), rows in self._pairs.items():
            answered = sum(r[1] for r in rows)
            lost = sum(r[2] for r in rows)
            rtts = [t for r in rows for t in r[3]]
            out[(prober, target)] = PairMesh(prober, target, Counts(answered + lost, lost),
                                             _quantile(rtts, 0.5), _quantile(rtts, 0.99))
        return out

    def judge(self, topology: Topology | None = None, nodes: Iterable[str] | None = None) -> MeshVerdict:
        """The window's pairs, nodes and suspects (``judge``); ``nodes``: those to judge (the
        fleet's nodes that are up), every prober and target when None."""
        pairs = self.pairs()
        if nodes is not None:
            keep = set(nodes)
            pairs = {k: p for k, p in pairs.items() if k[0] in keep and k[1] in keep}
        return judge(pairs, topology, self.window_s)


def _nodes(pairs: dict[tuple[str, str], PairMesh]) -> dict[str, NodeMesh]:
    by_node: dict[str, list[PairMesh]] = {}
    for p in pairs.values():
        by_node.setdefault(p.prober, []).append(p)
        by_node.setdefault(p.target, []).append(p)
    out = {}
    for node, theirs in by_node.items():
        counts = sum((p.counts for p in theirs), Counts())
        peers: dict[str, int] = {}
        for p in theirs:
            other = p.target if p.prober == node else p.prober
            peers[other] = peers.get(other, 0) + p.counts.lost
        own = [p.p99_us for p in theirs if p.prober == node and p.p99_us is not None]
        out[node] = NodeMesh(node, counts, len(peers), sum(1 for lost in peers.values() if lost),
                             max(own) if own else None)
    return out


def _pooled(pairs: Iterable[PairMesh]) -> Counts:
    return sum((p.counts for p in pairs), Counts())


def _stands_out(through: Counts, elsewhere: Counts) -> bool:
    loss = through.loss
    if loss is None or through.lost < MIN_LOST or loss < LOSS_MARK:
        return False
    return loss >= LOSS_RATIO * max(elsewhere.loss or 0.0, LOSS_FLOOR)


def judge(pairs: dict[tuple[str, str], PairMesh], topology: Topology | None = None,
          window_s: float = WINDOW_S) -> MeshVerdict:
    """Where the window's losses point, Pingmesh's way (docs/mesh.md):

    - **above**: with a topology of three leaves or more, the pairs between every two leaves
      lose, not because of one node, while the pairs within the leaves do not: the switch
      above them ("spine");
    - then, one at a time, the lossiest of: a leaf's **uplink** (its pairs to the other leaves),
      a **node**'s link (its pairs), the **pair** between two nodes — each one losing on its
      own (at least MIN_LOST probes and LOSS_MARK of them lost) and not because of one node at
      the far end (without the node that lost most, the rest still lose), LOSS_RATIO times the
      loss of the pairs that no losing part touches. The part named takes the pairs it
      explains out of the evidence, and the next one is looked for among the rest.

    A fleet that loses everywhere names nothing: there is no quiet pair to compare with. Pairs
    with no settled probe take no part."""
    left = dict(pairs)
    suspects: list[MeshSuspect] = []

    def pooled(keys: Iterable[tuple[str, str]]) -> Counts:
        return _pooled(left[k] for k in keys if k in left)

    def losing(inside: set[tuple[str, str]]) -> bool:
        c = pooled(inside)
        loss = c.loss
        return loss is not None and c.lost >= MIN_LOST and loss >= LOSS_MARK

    def spread(inside: set[tuple[str, str]], among: set[str]) -> bool:
        """Still losing without the node of ``among`` that lost the most."""
        lost: dict[str, int] = {}
        for k in inside:
            for n in k:
                if n in among:
                    lost[n] = lost.get(n, 0) + left[k].counts.lost
        if not lost:
            return False
        top = max(lost, key=lambda n: (lost[n], n))
        return losing({k for k in inside if top not in k})

    def name(kind: str, label: str, inside: set[tuple[str, str]], nodes: Iterable[str], quiet: Counts) -> None:
        suspects.append(MeshSuspect(kind, label, tuple(sorted(set(nodes), key=name_key)), pooled(inside), quiet,
                                    frozenset(k for k in inside if k in left)))
        for k in inside:
            left.pop(k, None)

    leaves: dict[str, set[str]] = {}
    if topology is not None:
        for node in {n for k in left for n in k}:
            leaf = topology.leaf_of(node)
            if leaf is not None:
                leaves.setdefault(leaf, set()).add(node)
    if topology is not None and len(leaves) >= 3:
        in_leaf = {k for k in left if topology.same_leaf(*k)}
        quiet = pooled(in_leaf)
        between = []
        names = sorted(leaves, key=name_key)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                between.append({k for k in left if {topology.leaf_of(k[0]), topology.leaf_of(k[1])} == {a, b}})
        if quiet.probes >= 2 * MIN_PROBES and all(
                inside and losing(inside) and spread(inside, {n for k in inside for n in k})
                and (pooled(inside).loss or 0.0) >= LOSS_RATIO * max(quiet.loss or 0.0, LOSS_FLOOR)
                for inside in between):
            every = set().union(*between)
            tops = sorted({t for k in every if (t := topology.path(*k).top) is not None}, key=name_key)
            name(ABOVE, ", ".join(tops) or "above the leaves", every, (n for k in every for n in k), quiet)

    def uplinks() -> list[tuple[str, str, set[tuple[str, str]], set[str]]]:
        found: dict[frozenset[tuple[str, str]], list[str]] = {}
        for leaf in sorted(leaves, key=name_key):
            # an uplink loses toward every other leaf, not because of one node at either end
            mine = leaves[leaf]
            towards = [{k for k in left if (k[0] in mine and k[1] in other) or (k[1] in mine and k[0] in other)}
                       for other_leaf, other in leaves.items() if other_leaf != leaf]
            if towards and all(t and losing(t) and spread(t, mine) and spread(t, {n for k in t for n in k} - mine)
                               for t in towards):
                found.setdefault(frozenset(set().union(*towards)), []).append(leaf)
        out = []
        for inside, named_leaves in found.items():
            # two leaves: their uplinks carry the same pairs, and so does the switch above them
            label = f"{named_leaves[0]} uplink" if len(named_leaves) == 1 else "↔".join(named_leaves)
            out.append((UPLINK if len(named_leaves) == 1 else PATH, label, set(inside),
                        set().union(*(leaves[x] for x in named_leaves))))
        return out

    def contradicted(node: str, inside: set[tuple[str, str]]) -> bool:
        """A node's link loses on all its pairs: its in-leaf pairs, or its cross-leaf ones, far
        quieter than the rest (a quarter of the losses its loss predicts, of 8 or more) say
        the loss is further up."""
        if topology is None:
            return False
        loss = pooled(inside).loss or 0.0
        same = {k for k in inside if topology.same_leaf(*k)}
        for group in (same, inside - same):
            c = pooled(group)
            if c.probes * loss >= 8 and c.lost < c.probes * loss / 4:
                return True
        return False

    def nodes() -> list[tuple[str, str, set[tuple[str, str]], set[str]]]:
        out = []
        for node in {n for k in left for n in k}:
            inside = {k for k in left if node in k}
            if losing(inside) and spread(inside, {n for k in inside for n in k} - {node}) \
                    and not contradicted(node, inside):
                out.append((NODE, f"{node} link", inside, {node}))
        return out

    def clean_elsewhere(node: str, inside: set[tuple[str, str]]) -> bool:
        """``node``'s other pairs, probed enough, lose so much less that ``inside``'s losses
        would be a fluke at their rate: the loss is not the node's own."""
        c = pooled(k for k in left if node in k and k not in inside)
        here = pooled(inside)
        # enough of them that, at the pair's loss, they would have lost 20
        return c.probes * (here.loss or 0.0) >= 20 and _surprising(here.lost, here.probes, c.loss or 0.0)

    def paths() -> list[tuple[str, str, set[tuple[str, str]], set[str]]]:
        out = []
        for a, b in {tuple(sorted(k, key=name_key)) for k in left}:
            inside = {k for k in ((a, b), (b, a)) if k in left}
            # the path between two nodes only when both are shown fine with their other peers
            if losing(inside) and clean_elsewhere(a, inside) and clean_elsewhere(b, inside):
                out.append((PAIR, f"{a}↔{b}", inside, {a, b}))
        return out

    # the widest part first (an uplink's nodes lose too, a lossy node's pairs too): each level's
    # candidates against the pairs none of them touches; after a part is named, from the top again
    while left:
        for level in (uplinks, nodes, paths):
            candidates = level()
            touched = set().union(*(c[2] for c in candidates)) if candidates else set()
            quiet = pooled(k for k in left if k not in touched)
            if not candidates or quiet.probes < 2 * MIN_PROBES:
                continue  # nothing loses, or everything does: no quiet pair to tell a part from
            mark = LOSS_RATIO * max(quiet.loss or 0.0, LOSS_FLOOR)
            standing = [c for c in candidates if (pooled(c[2]).loss or 0.0) >= mark
                        and _surprising(pooled(c[2]).lost, pooled(c[2]).probes, quiet.loss or 0.0)]
            if standing:
                kind, label, inside, names_ = max(standing, key=lambda c: ((pooled(c[2]).loss or 0.0), c[1]))
                name(kind, label, inside, names_, quiet)
                break
        else:
            break
    if not _consistent(suspects, pairs):
        suspects = []  # losses in several places that the parts named do not explain together
    order = {ABOVE: 0, UPLINK: 1, PATH: 1, NODE: 2, PAIR: 3}
    suspects.sort(key=lambda x: (order[x.kind], x.name))
    return MeshVerdict(pairs, _nodes(pairs), tuple(suspects), window_s)


# how unlikely a part's losses must be at the rate of the pairs it is compared with (a
# Poisson tail): many parts are judged every tick, and a wrong name is worse than none
UNLIKELY = 1e-6


def _surprising(lost: int, probes: int, rate: float) -> bool:
    """Whether ``lost`` of ``probes`` is beyond chance (P < UNLIKELY) at a loss ``rate``
    (never taken under LOSS_FLOOR)."""
    expected = probes * max(rate, LOSS_FLOOR)
    if lost <= expected:
        return False
    # P(X >= lost) for X ~ Poisson(expected), summed in log space from the tail's first term
    term = math.exp(-expected + lost * math.log(expected) - math.lgamma(lost + 1))
    total, k = term, lost
    while term > total * 1e-12 and k < lost + 10_000:
        k += 1
        term *= expected / k
        total += term
    return total < UNLIKELY


MAX_PARTS = 2  # more parts than this losing at once is not a fault localized, whatever the order


def _consistent(suspects: list[MeshSuspect], pairs: dict[tuple[str, str], PairMesh]) -> bool:
    """The parts named explain the losses together, or nothing is named (a wrong name is worse
    than none): at most MAX_PARTS of them, the path between two nodes only as the one
    explanation, and each part losing LOSS_RATIO times what every pair outside all of them
    loses, with such pairs enough to tell."""
    if len(suspects) <= 1:
        return True
    if len(suspects) > MAX_PARTS or any(x.kind == PAIR for x in suspects):
        return False
    explained = {k for x in suspects for k in x.pairs}
    quiet = _pooled(p for k, p in pairs.items() if k not in explained)
    if quiet.probes < 2 * MIN_PROBES:
        return False
    mark = LOSS_RATIO * max(quiet.loss or 0.0, LOSS_FLOOR)
    return all((x.through.loss or 0.0) >= mark for x in suspects)


class HeldMesh:
    """The mesh's suspects held as stragglers are: named once the judgement named them in
    ``flag`` of the last ``window`` judgements, cleared after ``clear`` in a row without them
    (a name that one unlucky second of probes brings, or takes, does not show)."""

    def __init__(self, flag: int = 2, window: int = 3, clear: int = 3) -> None:
        self.flag, self.window, self.clear = flag, window, clear
        self._seen: dict[str, list[bool]] = {}
        self._clean: dict[str, int] = {}
        self._last: dict[str, MeshSuspect] = {}
        self._held: list[str] = []  # in the order they were first held

    def update(self, found: Iterable[MeshSuspect]) -> tuple[MeshSuspect, ...]:
        now = {s.name: s for s in found}
        for name in set(self._seen) | set(now):
            seen = self._seen.setdefault(name, [])
            seen.append(name in now)
            del seen[:-self.window]
            if name in now:
                self._last[name], self._clean[name] = now[name], 0
            else:
                self._clean[name] = self._clean.get(name, 0) + 1
            if name not in self._held and sum(seen) >= self.flag:
                self._held.append(name)
            elif name in self._held and self._clean[name] >= self.clear:
                self._held.remove(name)
            if name not in self._held and not any(seen):
                for d in (self._seen, self._clean, self._last):
                    d.pop(name, None)
        return tuple(self._last[name] for name in self._held)
