"""The probe mesh's readings (docs/protocol.md#mesh): what one node's probes of its peers
settled in one frame. Pure: no I/O; collectors/mesh.py builds them from a frame's "mesh" field.

RTTs are measured on the prober's own monotonic clock (the answer echoes the time the probe
left): no two nodes' clocks are ever compared. The window that keeps them over the last minute
is model/mesh_window.py's; where their losses point, ``judge`` here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, overload

from netui.model.health import ABOVE_ZERO, Level, Threshold
from netui.model.mesh_index import ANSWERED, UNANSWERED_PROBES, Evidence, Key, PairIndex
from netui.model.topology import Topology
from netui.model.units import name_key

if TYPE_CHECKING:
    from netui.model.mesh_window import KEEP_ALL_PAIRS, MeshWindow


class MeshPeerReading(NamedTuple):
    """One peer's probes that settled in a frame: ``answered`` (their RTTs in µs, at most the
    sampler's cap of them listed) and ``lost`` (no answer within the sampler's timeout). A
    tuple (a frame of a 1,024-node fleet's mesh holds some 20 of them, ~20,000 a second)."""

    address: str
    port: int
    answered: int
    lost: int
    rtts_us: tuple[int, ...] = ()


class MeshRows(Sequence[MeshPeerReading]):
    """A frame's readings as the sampler packs them (docs/protocol.md#mesh): the "mesh" field's
    ``data``, its ``rows`` rows from ``start`` on, checked by the decoder. The window takes them
    from the bytes (model/mesh_window.py: ~20,000 rows a second at 1,024 nodes); read as a
    sequence they are MeshPeerReadings, made once, when first asked for (``read``: a function
    of no argument that makes them, the decoder's)."""

    __slots__ = ("data", "start", "rows", "_read", "_readings")

    def __init__(self, data: bytes, start: int, count: int, read: Callable[[], tuple[MeshPeerReading, ...]]) -> None:
        self.data, self.start, self.rows = data, start, count
        self._read: Callable[[], tuple[MeshPeerReading, ...]] | None = read
        self._readings: tuple[MeshPeerReading, ...] | None = None

    def readings(self) -> tuple[MeshPeerReading, ...]:
        if self._readings is None:
            assert self._read is not None
            self._readings, self._read = self._read(), None
        return self._readings

    def __len__(self) -> int:
        return self.rows

    @overload
    def __getitem__(self, i: int) -> MeshPeerReading: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[MeshPeerReading, ...]: ...

    def __getitem__(self, i):
        return self.readings()[i]

    def __iter__(self) -> Iterator[MeshPeerReading]:
        return iter(self.readings())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (MeshRows, tuple, list)):
            return self.readings() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.readings())

    def __repr__(self) -> str:
        return repr(self.readings())


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
    readings: Sequence[MeshPeerReading] = ()  # a tuple, or (decoded from a frame) MeshRows
    address: str | None = None  # where its peers reach it (its SSH session's address); None: unknown


# --- how hard the mesh probes ------------------------------------------------------------------

# on by default for a fleet of up to this many nodes: beyond, its window's memory and the first
# minute's steering grow with the pairs (2,048 nodes: some 170 MB more and a slow start), and
# --mesh on or config.toml's mesh turns it on
DEFAULT_MESH_NODES = 1024
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
MESH_QUIET_S = 5.0  # a window that names nothing is judged this often (model/fleet.py update_mesh) …
MESH_QUIET_PAIRS = 20_000  # … once it holds this many pairs (~140 nodes): a smaller one, every tick
MIN_PROBES = 20  # a pair with fewer settled probes in the window shows "few probes", not a loss
# a part of the network is named lossy when the probes through it lose at least LOSS_MARK and
# MIN_LOST of them, LOSS_RATIO times what the probes elsewhere lose (never under LOSS_FLOOR)
LOSS_MARK = 0.005
MIN_LOST = 8
# a part already named stays named while half that stands (a window whose losses hover at the
# mark must not name and unname it tick after tick; it still goes once its losses age out)
MIN_LOST_HELD = MIN_LOST // 2
LOSS_RATIO = 5.0
LOSS_FLOOR = 0.001
# a loss figure's level (the grid's Loss column, the mesh screen's cells): any probe lost is
# careful, what the judgement calls losing (LOSS_MARK) a warning, 1 % critical (as retransmits)
LOSS_LEVELS = Threshold(ABOVE_ZERO, LOSS_MARK, 0.01)

NODE, PAIR, UPLINK, PATH, ABOVE = "node", "pair", "uplink", "path", "above"


@dataclass(frozen=True, slots=True)  # slots: a 1,024-node window holds ~600,000 of each
class Counts:
    """Settled probes and the lost among them; ``loss`` None when there were none."""

    probes: int = 0
    lost: int = 0

    @property
    def loss(self) -> float | None:
        return self.lost / self.probes if self.probes else None

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.probes + other.probes, self.lost + other.lost)


class _Figure:
    """What a pair or a node reads from its ``counts``: ``enough`` when MIN_PROBES or more
    settled, and only then its ``loss`` (0..1; None: too few probes to be a figure)."""

    __slots__ = ()
    counts: Counts

    @property
    def enough(self) -> bool:
        return self.counts.probes >= MIN_PROBES

    @property
    def loss(self) -> float | None:
        return self.counts.loss if self.enough else None


@dataclass(frozen=True, slots=True)
class PairMesh(_Figure):
    """One ordered pair over the window: ``prober`` probed ``target``. RTTs in µs on the
    prober's clock (None: no answer in the window); ``enough`` False: fewer than MIN_PROBES
    settled, so its loss is not a figure to read."""

    prober: str
    target: str
    counts: Counts
    p50_us: float | None
    p99_us: float | None


@dataclass(frozen=True)
class NodeMesh(_Figure):
    """A node's pairs over the window, both ways (its probes and its peers' probes of it):
    their counts pooled, ``lossy_peers`` of ``peers`` lost at least one probe, RTT p99 of its
    own probes — of the pairs answered at least once. Its pairs never answered are not in
    those figures: ``unanswered`` counts those that lost UNANSWERED_PROBES or more, none
    answered, either way; ``answers_none``: of its peers' probes of it, UNANSWERED_PROBES or
    more lost and none ever answered (UDP to it blocked: its firewall?); ``answered_none``: the
    same of its own probes. Both False when no node's probes were ever answered (the mesh's
    ``none_answered``): that is said once, of the fleet."""

    node: str
    counts: Counts
    peers: int
    lossy_peers: int
    p99_us: float | None
    unanswered: int = 0
    answers_none: bool = False
    answered_none: bool = False

    @property
    def blocked(self) -> bool:
        """Its probes, or its peers' probes of it, never answered: UDP blocked at the node?"""
        return self.answers_none or self.answered_none


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
class Heard:
    """Which ordered pairs were ever answered, as of a judgement (model/mesh_index.py
    ``PairIndex.heard``, copied): ``rows``: a prober → a byte per target, by ``numbers`` (only
    the probers with an unanswered pair: the others have no pair to show as such)."""

    numbers: dict[str, int]
    rows: dict[str, bytes]

    def unanswered(self, prober: str, target: str) -> bool:
        row, i = self.rows.get(prober), self.numbers.get(target)
        if row is None or i is None or i >= len(row):
            return False
        return UNANSWERED_PROBES <= row[i] != ANSWERED


@dataclass(frozen=True)
class MeshVerdict:
    """The mesh over its window: the pairs' figures, every node, and the suspects, worst first.

    ``pairs``: every judged pair's figures in a window of fewer than KEEP_ALL_PAIRS pairs; in a
    larger one only those of the pairs that lost a probe or have MIN_PROBES (the others, a
    probe or two each and none lost, have no figure to read: their counts are in their nodes'
    and the suspects'). ``probed``: how many judged ordered pairs have a settled probe."""

    pairs: dict[tuple[str, str], PairMesh]
    nodes: dict[str, NodeMesh]
    suspects: tuple[MeshSuspect, ...]
    window_s: float
    probed: int = 0
    # the pairs never answered (none of them in ``pairs`` nor in any figure above: unanswered,
    # not lossy): how many lost UNANSWERED_PROBES or more; ``none_answered``: no node's probe
    # was ever answered, UNANSWERED_PROBES or more lost (UDP blocked between the nodes?);
    # ``heard``: which pairs, while any is unanswered
    unanswered: int = 0
    none_answered: bool = False
    heard: Heard | None = None

    def unanswered_pair(self, prober: str, target: str) -> bool:
        """Whether ``prober``'s probes of ``target`` lost UNANSWERED_PROBES or more, and none
        was ever answered."""
        return self.heard is not None and self.heard.unanswered(prober, target)

    @property
    def unkept(self) -> int:
        """The judged pairs with a probe whose figures are not in ``pairs`` (too few probes, none lost)."""
        return max(0, self.probed - len(self.pairs))

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


def _nodes(pairs: dict[tuple[str, str], PairMesh]) -> dict[str, NodeMesh]:
    """Each node's pairs pooled, in one pass over the pairs."""
    counts: dict[str, list[int]] = {}  # node → [probes, lost]
    peers: dict[str, dict[str, int]] = {}  # node → other end → lost, both ways
    own: dict[str, float] = {}  # node → the highest RTT p99 of its own probes
    for (prober, target), p in pairs.items():
        probes, lost = p.counts.probes, p.counts.lost
        for node, other in ((prober, target), (target, prober)):
            c = counts.get(node)
            if c is None:
                c = counts[node] = [0, 0]
                peers[node] = {}
            c[0] += probes
            c[1] += lost
            theirs = peers[node]
            theirs[other] = theirs.get(other, 0) + lost
        if p.p99_us is not None and p.p99_us > own.get(prober, float("-inf")):
            own[prober] = p.p99_us
    return {node: NodeMesh(node, Counts(c[0], c[1]), len(peers[node]),
                           sum(1 for lost in peers[node].values() if lost), own.get(node))
            for node, c in counts.items()}


def _losing(probes: int, lost: int, least: int = MIN_LOST) -> bool:
    """Losing on its own: at least ``least`` probes lost (MIN_LOST; MIN_LOST_HELD for a part
    already named), and LOSS_MARK of them."""
    return probes > 0 and lost >= least and lost / probes >= LOSS_MARK


def judge(pairs: dict[tuple[str, str], PairMesh], topology: Topology | None = None,
          window_s: float = WINDOW_S, held: Collection[str] = ()) -> MeshVerdict:
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
    with no settled probe take no part. ``held``: the names of the parts named now (HeldMesh),
    which lose on their own from MIN_LOST_HELD probes lost. (``MeshWindow.judge`` judges its
    window the same way without this pass over every pair.)"""
    index = PairIndex()
    index.use(topology)
    for key, p in pairs.items():
        index.put(key, p.counts.probes, p.counts.lost)
    return _judge(Evidence(index), pairs, _nodes(pairs), topology, window_s, held=held)


def _judge(ev: Evidence, pairs: dict[Key, PairMesh], node_meshes: dict[str, NodeMesh],
           topology: Topology | None, window_s: float, probed: int | None = None,
           held: Collection[str] = ()) -> MeshVerdict:
    """``judge`` over ``ev``, the judged pairs indexed: a candidate part is looked at pair by
    pair only when its pooled counts lose."""
    suspects: list[MeshSuspect] = []
    counts = ev.index.counts

    def least(*labels: str) -> int:
        """How many lost probes make a part lose on its own: fewer for a part named now."""
        return MIN_LOST_HELD if any(label in held for label in labels) else MIN_LOST

    def pooled(keys: Iterable[Key]) -> Counts:
        return Counts(*ev.pooled(keys))

    def losing(inside: set[Key], at_least: int = MIN_LOST) -> bool:
        c = pooled(inside)
        return _losing(c.probes, c.lost, at_least)

    def ends(inside: Iterable[Key]) -> set[str]:
        return {n for k in inside for n in k}

    def spread(inside: set[Key], among: set[str], at_least: int = MIN_LOST) -> bool:
        """Still losing without the node of ``among`` that lost the most."""
        lost: dict[str, int] = {}
        for k in inside:
            for n in k:
                if n in among:
                    lost[n] = lost.get(n, 0) + counts[k][1]
        if not lost:
            return False
        top = max(lost, key=lambda n: (lost[n], n))
        whole = pooled(inside)
        without = pooled(k for k in inside if top in k)
        return _losing(whole.probes - without.probes, whole.lost - without.lost, at_least)

    def name(kind: str, label: str, inside: set[Key], nodes: Iterable[str], quiet: Counts) -> None:
        suspects.append(MeshSuspect(kind, label, tuple(sorted(set(nodes), key=name_key)), pooled(inside), quiet,
                                    frozenset(k for k in inside if k in ev)))
        ev.take(inside)

    leaves = ev.leaves
    if topology is not None and len(leaves) >= 3:
        quiet = Counts(*ev.in_leaf_sums())
        mark = LOSS_RATIO * max(quiet.loss or 0.0, LOSS_FLOOR)
        names = sorted(leaves, key=name_key)
        between: list[set[Key]] = []
        for i, a in enumerate(names):  # every two leaves' pairs lose, not because of one node
            for b in names[i + 1:]:
                probes, lost = ev.leaf_sums(a, b)
                if not (quiet.probes >= 2 * MIN_PROBES and _losing(probes, lost) and lost / probes >= mark):
                    break
                inside = ev.leaf_pairs(a, b)
                if not spread(inside, ends(inside)):
                    break
                between.append(inside)
            else:
                continue
            break
        else:
            every = set().union(*between)
            # the switch above two leaves is the same for every pair between them
            tops = sorted({t for inside in between if (t := topology.path(*next(iter(inside))).top) is not None},
                          key=name_key)
            name(ABOVE, ", ".join(tops) or "above the leaves", every, ends(every), quiet)

    def uplinks() -> list[tuple[str, str, set[Key], set[str]]]:
        found: dict[frozenset[Key], list[str]] = {}
        for leaf in sorted(leaves, key=name_key):
            # an uplink loses toward every other leaf, not because of one node at either end
            mine = leaves[leaf]
            others = [other for other in leaves if other != leaf]
            # (two leaves: the uplink is named as their path, "leaf1↔leaf2")
            labels = [f"{leaf} uplink"] + (["↔".join(sorted((leaf, *others), key=name_key))] if len(others) == 1 else [])
            fewest = least(*labels)
            if not others or not all(_losing(*ev.leaf_sums(leaf, other), fewest) for other in others):
                continue
            towards = [ev.leaf_pairs(leaf, other) for other in others]
            if all(spread(t, mine, fewest) and spread(t, ends(t) - mine, fewest) for t in towards):
                found.setdefault(frozenset(set().union(*towards)), []).append(leaf)
        out = []
        for inside, named_leaves in found.items():
            # two leaves: their uplinks carry the same pairs, and so does the switch above them
            label = f"{named_leaves[0]} uplink" if len(named_leaves) == 1 else "↔".join(named_leaves)
            out.append((UPLINK if len(named_leaves) == 1 else PATH, label, set(inside),
                        set().union(*(leaves[x] for x in named_leaves))))
        return out

    def contradicted(node: str, inside: set[Key]) -> bool:
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

    def mates_quiet(node: str, inside: set[Key]) -> bool:
        """With a topology, a node's link and its leaf's uplink lose on the same cross-leaf
        pairs: the link is the node's only when its leaf-mates' pairs to the other leaves are
        shown quiet — probed enough to have lost 8 at the node's loss, and lost under a
        quarter of that. Until then neither is named (a leaf of one node: the node)."""
        if topology is None:
            return True
        leaf = topology.leaf_of(node)
        if leaf is None:
            return True
        mates = {n for n in ev.nodes() if n != node and topology.leaf_of(n) == leaf}
        if not mates:
            return True
        loss = pooled(inside).loss or 0.0
        # their pairs to the other leaves (none of them with the node: it is on their leaf)
        probes = lost = 0
        for mate in mates:
            p, lo = ev.cross_leaf_sums(mate)
            probes, lost = probes + p, lost + lo
        c = Counts(probes, lost)
        return c.probes * loss >= 8 and c.lost < c.probes * loss / 4

    def nodes() -> list[tuple[str, str, set[Key], set[str]]]:
        out = []
        for node in list(ev.nodes_that_lost(MIN_LOST_HELD)):  # (fewer lost: none loses on its own)
            fewest = least(f"{node} link")
            if not _losing(*ev.node_sums(node), fewest):
                continue
            inside = ev.pairs_of(node)
            if spread(inside, ends(inside) - {node}, fewest) and not contradicted(node, inside) \
                    and mates_quiet(node, inside):
                out.append((NODE, f"{node} link", inside, {node}))
        return out

    def clean_elsewhere(node: str, inside: set[Key]) -> bool:
        """``node``'s other pairs, probed enough, lose so much less that ``inside``'s losses
        would be a fluke at their rate: the loss is not the node's own."""
        here = pooled(inside)
        probes, lost = ev.node_sums(node)
        c = Counts(probes - here.probes, lost - here.lost)  # its pairs but these
        # enough of them that, at the pair's loss, they would have lost 20
        return c.probes * (here.loss or 0.0) >= 20 and _surprising(here.lost, here.probes, c.loss or 0.0)

    def paths() -> list[tuple[str, str, set[Key], set[str]]]:
        out = []
        # a path that loses MIN_LOST probes or more has a pair that lost one
        for a, b in {tuple(sorted(k, key=name_key)) for k in ev.lossy()}:
            inside = {k for k in ((a, b), (b, a)) if k in ev}
            # the path between two nodes only when both are shown fine with their other peers
            if losing(inside, least(f"{a}↔{b}")) and clean_elsewhere(a, inside) and clean_elsewhere(b, inside):
                out.append((PAIR, f"{a}↔{b}", inside, {a, b}))
        return out

    # the widest part first (an uplink's nodes lose too, a lossy node's pairs too): each level's
    # candidates against the pairs none of them touches; after a part is named, from the top again
    while ev:
        for level in (uplinks, nodes, paths):
            candidates = level()
            if not candidates:
                continue  # nothing loses
            near = pooled(set().union(*(c[2] for c in candidates)))
            quiet = Counts(ev.sums[0] - near.probes, ev.sums[1] - near.lost)
            if quiet.probes < 2 * MIN_PROBES:
                continue  # everything loses: no quiet pair to tell a part from
            mark = LOSS_RATIO * max(quiet.loss or 0.0, LOSS_FLOOR)
            through = [pooled(c[2]) for c in candidates]
            standing = [(t, c) for t, c in zip(through, candidates)
                        if (t.loss or 0.0) >= mark and _surprising(t.lost, t.probes, quiet.loss or 0.0)]
            if standing:
                _, (kind, label, inside, names_) = max(standing, key=lambda tc: ((tc[0].loss or 0.0), tc[1][1]))
                name(kind, label, inside, names_, quiet)
                break
        else:
            break
    if not _consistent(suspects, Counts(*ev.judged)):
        suspects = []  # losses in several places that the parts named do not explain together
    order = {ABOVE: 0, UPLINK: 1, PATH: 1, NODE: 2, PAIR: 3}
    suspects.sort(key=lambda x: (order[x.kind], x.name))
    return MeshVerdict(pairs, node_meshes, tuple(suspects), window_s, len(pairs) if probed is None else probed)


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


def _consistent(suspects: list[MeshSuspect], everything: Counts) -> bool:
    """The parts named explain the losses together, or nothing is named (a wrong name is worse
    than none): at most MAX_PARTS of them, the path between two nodes only as the one
    explanation, and each part losing LOSS_RATIO times what every pair outside all of them
    loses (``everything``: the judged pairs pooled), with such pairs enough to tell."""
    if len(suspects) <= 1:
        return True
    if len(suspects) > MAX_PARTS or any(x.kind == PAIR for x in suspects):
        return False
    # the parts' pairs never overlap: a part named takes its pairs out of the evidence
    quiet = Counts(everything.probes - sum(x.through.probes for x in suspects),
                   everything.lost - sum(x.through.lost for x in suspects))
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


def __getattr__(name: str):
    """``MeshWindow`` and ``KEEP_ALL_PAIRS`` live in model/mesh_window.py (which imports this
    module): still importable from here."""
    if name in ("MeshWindow", "KEEP_ALL_PAIRS"):
        from netui.model import mesh_window
        return getattr(mesh_window, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
