"""The probe mesh's readings (docs/protocol.md#mesh): what one node's probes of its peers
settled in one frame. Pure: no I/O; collectors/mesh.py builds them from a frame's "mesh" field.

RTTs are measured on the prober's own monotonic clock (the answer echoes the time the probe
left): no two nodes' clocks are ever compared.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

from netui.model.health import ABOVE_ZERO, Level, Threshold
from netui.model.mesh_index import Evidence, Key, PairIndex, own_p99
from netui.model.topology import Topology
from netui.model.units import name_key


class MeshPeerReading(NamedTuple):
    """One peer's probes that settled in a frame: ``answered`` (their RTTs in µs, at most the
    sampler's cap of them listed) and ``lost`` (no answer within the sampler's timeout). A
    tuple (a frame of a 1,024-node fleet's mesh holds some 20 of them, ~20,000 a second)."""

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
MESH_QUIET_S = 5.0  # a window that names nothing is judged this often (model/fleet.py update_mesh) …
MESH_QUIET_PAIRS = 20_000  # … once it holds this many pairs (~140 nodes): a smaller one, every tick
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


@dataclass(frozen=True, slots=True)
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


Row = tuple[float, tuple[int, ...]]  # a kept pair's reading: (prober's mono_s, RTTs µs)
Frame = list  # a prober's frame: [mono_s, array of (target number, answered, lost) …, highest RTT µs of pairs not kept]

_REMAKE = PairMesh("", "", Counts(), None, None)  # a pair whose figures are to be made again

# a window of fewer pairs than this (among fewer than ~141 probers) keeps every pair's figures
# (a small fleet: each reaches MIN_PROBES); a larger one keeps them only for the pairs that lost
# a probe or have MIN_PROBES
KEEP_ALL_PAIRS = MESH_QUIET_PAIRS
MAX_PENDING = 8192  # frames added and not yet read, at most (a tick of 8,192 nodes)
_NONE_KEPT: dict[int, list] = {}
_HIGHEST = itemgetter(2)  # a frame's highest RTT of the pairs not kept
_ENDPOINT = itemgetter(0, 1)  # a reading's peer: (address, port)


class MeshWindow:
    """What each ordered pair's probes settled over the last ``window_s``: readings are added
    as the probers report them (``add_readings``), dropped when older than the window on the
    prober's own clock.

    Kept for a fleet of thousands judged every tick: every pair's counts, pooled per node and
    per leaf (model/mesh_index.py), follow its readings as they come and go; readings leave in
    the order their prober sent them (a queue of frames per prober, a flat array each), never by
    a scan of every pair. A pair's own figures (``PairMesh``: its RTTs' p50 and p99) are kept
    only where they can matter — every pair in a window of fewer than KEEP_ALL_PAIRS, else the
    pairs that lost a probe in the window or have MIN_PROBES — and made again only when they
    changed. Of the other pairs (a probe or two and no loss: no figure to read) the window keeps
    their counts and, for their prober's RTT p99, the highest RTT of each frame."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._index = PairIndex()
        self._frames: dict[int, deque[Frame]] = {}  # prober's number → its frames, oldest first
        self._rows: dict[Key, list[Row]] = {}  # the kept pairs' readings
        self._kept_by: dict[int, dict[int, list[Row]]] = {}  # the same, prober's number → target's → rows
        self._kept_of: dict[str, set[Key]] = {}  # node → its kept pairs, both ways
        self._made: dict[Key, PairMesh] = {}  # each kept pair's figures, in the order the pairs came
        self._remake: set[Key] = set()  # kept pairs whose rows changed since their figures were made
        self._own: dict[str, tuple[float, Key] | None] = {}  # node → its kept probes' highest p99 and that pair (absent: to find)
        self._latest: dict[str, float] = {}  # prober -> its latest frame's mono_s
        self._pending: list[tuple] = []  # frames added, not yet in the figures: (prober, mono_s, readings, targets)
        self._top: dict[int, list[int]] = {}  # prober's number → [its frames' highest RTT, how many have it] (absent: to find)

    @property
    def pair_count(self) -> int:
        """How many ordered pairs have a reading in the window."""
        if self._pending:
            self._flush()
        return self._index.pair_count

    def add(self, prober: str, target: str, mono_s: float, answered: int, lost: int,
            rtts_us: tuple[int, ...] = ()) -> None:
        """One frame's reading of ``prober``'s probes of ``target``."""
        self.add_readings(prober, mono_s, ((target, 0, answered, lost, rtts_us),), {(target, 0): target})

    def add_readings(self, prober: str, mono_s: float, readings: Sequence[MeshPeerReading],
                     target_of: Mapping[tuple[str, int], str]) -> None:
        """One frame of ``prober``'s: the readings of each peer whose probes settled, the peer
        named by ``target_of`` now (its address and port → the node; a reading of an address no
        node answers on, or of the prober itself, is passed by).

        The readings go into the window's figures at its next read (``pair_count``, ``pairs``,
        ``judge``): a tick's frames in one pass, while the tables are in the CPU's caches
        (frame by frame, between a thousand nodes' other work, each reading cost twice as much)."""
        self.seen(prober, mono_s)
        self._pending.append((prober, mono_s, readings, list(map(target_of.get, map(_ENDPOINT, readings)))))
        if len(self._pending) >= MAX_PENDING:  # (a caller that never reads: the frames wait no longer)
            self._flush()

    def _flush(self) -> None:
        """The frames added since the last read, into the figures, in the order they came."""
        pending, self._pending = self._pending, []
        for frame in pending:
            self._add(*frame)

    def _add(self, prober: str, mono_s: float, readings: Sequence[MeshPeerReading],
             targets: list[str | None]) -> None:
        index = self._index
        a = index.id_of(prober)
        frames = self._frames.get(a)
        if frames is None:
            frames = self._frames[a] = deque()
        elif frames and frames[0][0] <= mono_s - self.window_s:
            self._age(a, frames, mono_s - self.window_s)
        if frames and frames[-1][0] == mono_s:
            frame = frames[-1]
        else:
            frame = [mono_s, array("I"), 0]
            frames.append(frame)
        highest = frame[2]
        ids, id_of, change, names = index.ids, index.id_of, index.change, index.names
        # PairIndex.add_frame's pooling, inline for the common reading (no probe lost): this
        # loop runs ~20,000 times a second on a 1,024-node fleet
        probes, sums_of, leaf_ix, node_probes = index.probes, index.sums_of, index.leaf_ix, index.node_probes
        row, sa, leaves = probes[a], sums_of[a], index.leaf_rows[index.leaf_ix[a]]
        kept, keep_all = self._kept_by.get(a) or _NONE_KEPT, self._keep_all()
        added: list[int] = []
        total = pairs = 0
        # each reading's peer: its number, looked up in C (None: a peer not numbered yet, or no node)
        numbers = list(map(ids.get, targets))
        for b, target, (_, _, answered, lost, rtts) in zip(numbers, targets, readings):
            if b is None:
                if target is None or target == prober:
                    continue
                b = id_of(target)
                leaves = index.leaf_rows[index.leaf_ix[a]]
            elif b == a:
                continue
            n = answered + lost
            if not n:
                continue
            added += (b, answered, lost)
            if lost:
                change(a, b, n, lost)
            else:
                old = row[b]
                row[b] = old + n
                node_probes[b] += n
                total += n
                leaves[leaf_ix[b]][0] += n
                if not old:
                    pairs += 1
                    sb = sums_of[b]
                    sb[1] += 1
                    if not probes[b][a]:
                        sa[2] += 1
                        sb[2] += 1
            rows = kept.get(b)
            # (a pair with a lost probe in the window is kept from that probe on: lost, not the table)
            if rows is None and (lost or row[b] >= MIN_PROBES or keep_all):
                rows = self._keep((prober, names[b]), a, b)
                kept = self._kept_by[a]
            if rows is not None:
                rows.append((mono_s, rtts))
                self._remake.add((prober, names[b]))
            else:
                for t in rtts:
                    if t > highest:
                        highest = t
        if highest > frame[2]:
            self._raise(a, frame[2], highest)
            frame[2] = highest
        frame[1].fromlist(added)
        node_probes[a] += total
        sa[1] += pairs
        index.sums[0] += total
        index.pair_count += pairs

    def _keep(self, key: Key, a: int, b: int) -> list[Row]:
        """Pair ``key``'s (numbers ``a``, ``b``) figures kept from now on (its readings before: its counts only)."""
        rows = self._rows[key] = []
        self._kept_by.setdefault(a, {})[b] = rows
        self._made[key] = _REMAKE
        for node in key:
            self._kept_of.setdefault(node, set()).add(key)
        return rows

    def _unkeep(self, key: Key) -> None:
        del self._rows[key], self._made[key]
        ids = self._index.ids
        self._kept_by[ids[key[0]]].pop(ids[key[1]], None)
        self._remake.discard(key)
        for node in key:
            mine = self._kept_of.get(node)
            if mine is not None:
                mine.discard(key)
        own = self._own.get(key[0])
        if own is not None and own[1] == key:
            del self._own[key[0]]

    def seen(self, prober: str, mono_s: float) -> None:
        """``prober`` reported at ``mono_s`` (with or without readings): its old ones age out."""
        if mono_s < self._latest.get(prober, float("-inf")):  # a restarted node's new clock
            self.forget(prober)
        self._latest[prober] = mono_s

    def forget(self, node: str) -> None:
        """Everything of ``node`` as a prober or a target (it restarted, it left the fleet)."""
        self._flush()  # (what came before goes in first)
        for key in list(self._kept_of.pop(node, ())):
            self._unkeep(key)
        number = self._index.retire(node)
        if number is not None:
            self._frames.pop(number, None)
            self._kept_by.pop(number, None)
            self._top.pop(number, None)
        self._latest.pop(node, None)
        self._own.pop(node, None)

    def _prune(self) -> None:
        """Readings older than the window on their prober's clock leave, oldest first (a
        prober's leave as it reports: what is left are those of the probers that stopped)."""
        since, latest, names = self.window_s, self._latest, self._index.names
        for a, frames in self._frames.items():
            if frames and frames[0][0] <= latest.get(names[a], float("-inf")) - since:
                self._age(a, frames, latest[names[a]] - since)

    def _age(self, a: int, frames: deque[Frame], since: float) -> None:
        """Prober ``a``'s readings of ``since`` or before leave."""
        index = self._index
        names, alive, rows_of = index.names, index.alive, self._rows
        prober = names[a]
        probes_of, lost_of = index.probes[a], index.lost[a]
        keep_all, at = self._keep_all(), None
        kept = self._kept_by.get(a)
        while frames and frames[0][0] <= since:
            _, entries, highest = frames.popleft()
            top = self._top.get(a)
            if top is not None and highest and highest == top[0]:
                top[1] -= 1
                if not top[1]:
                    del self._top[a]
            index.age_frame(a, entries)
            if not kept:
                continue
            for j in range(0, len(entries), 3):
                b = entries[j]
                rows = kept.get(b)
                if rows is None or not alive[b]:
                    continue
                key = (prober, names[b])
                old = 0
                while old < len(rows) and rows[old][0] <= since:
                    old += 1
                del rows[:old]
                if not rows:
                    self._unkeep(key)
                elif not (keep_all or lost_of[b] or probes_of[b] >= MIN_PROBES):
                    if at is None:  # (once a prober's frames age: a fleet growing past KEEP_ALL_PAIRS spills thousands)
                        at = {frame[0]: frame for frame in frames}
                    self._spill(a, at, rows)
                    self._unkeep(key)
                else:
                    self._remake.add(key)

    def _keep_all(self) -> bool:
        """Every pair's figures kept: a window of fewer than KEEP_ALL_PAIRS pairs, among fewer
        probers than would make that many (a large fleet coming up keeps none of them)."""
        return self._index.pair_count < KEEP_ALL_PAIRS and len(self._frames) ** 2 < KEEP_ALL_PAIRS

    def _spill(self, a: int, at: dict[float, Frame], rows: list[Row]) -> None:
        """A pair no longer kept: its RTTs left go to its prober's frames' highest (``at``: its
        frames by their time)."""
        for mono_s, rtts in rows:
            frame = at.get(mono_s)
            if frame is not None and rtts and max(rtts) > frame[2]:
                self._raise(a, frame[2], max(rtts))
                frame[2] = max(rtts)

    def _raise(self, a: int, old: int, new: int) -> None:
        """A frame of prober ``a`` has a new highest RTT (``new`` > ``old``): its frames' highest follows."""
        top = self._top.get(a)
        if top is not None:
            if new > top[0]:
                top[0], top[1] = new, 1
            elif new == top[0]:
                top[1] += 1

    def _highest(self, a: int) -> int:
        """The highest RTT of prober ``a``'s frames (0: none), kept as they come and go."""
        top = self._top.get(a)
        if top is None:
            frames = self._frames.get(a, ())
            value = max(map(_HIGHEST, frames), default=0)
            top = self._top[a] = [value, sum(1 for f in frames if f[2] == value) if value else 0]
        return top[0]

    def pairs(self) -> dict[tuple[str, str], PairMesh]:
        """The figures of every kept pair with a settled probe in the window (a new dict each
        call): every pair in a window of fewer than KEEP_ALL_PAIRS pairs, else those that lost a
        probe or have MIN_PROBES."""
        self._flush()
        self._prune()
        made, own, counts = self._made, self._own, self._index.counts
        for key in self._remake:
            probes, lost = counts[key]
            rtts = [t for r in self._rows[key] for t in r[1]]
            p = made[key] = PairMesh(key[0], key[1], Counts(probes, lost), _quantile(rtts, 0.5), _quantile(rtts, 0.99))
            prober = key[0]
            if prober in own:  # the prober's highest p99, kept as its pairs' change
                best = own[prober]
                if best is not None and best[1] == key and (p.p99_us is None or p.p99_us < best[0]):
                    del own[prober]
                elif p.p99_us is not None and (best is None or p.p99_us > best[0]):
                    own[prober] = (p.p99_us, key)
        self._remake.clear()
        return dict(made)

    def judge(self, topology: Topology | None = None, nodes: Iterable[str] | None = None) -> MeshVerdict:
        """The window's pairs, nodes and suspects (``judge``); ``nodes``: those to judge (the
        fleet's nodes that are up), every prober and target when None. Its cost grows with
        the pairs that changed and the pairs of the parts that lose, not with every pair."""
        pairs = self.pairs()
        index = self._index
        index.use(topology)
        out: set[str] = set()
        if nodes is not None:
            keep = set(nodes)
            out = {n for n in index.nodes() if n not in keep}
            if out:
                pairs = {k: p for k, p in pairs.items() if k[0] not in out and k[1] not in out}
        evidence = Evidence(index, out)
        probed = index.pair_count - evidence.taken
        return _judge(evidence, pairs, self._node_meshes(evidence), topology, self.window_s, probed)

    def _node_meshes(self, evidence: Evidence) -> dict[str, NodeMesh]:
        """Each judged node's pairs pooled (``_nodes``), from the index: the nodes out taken off."""
        index, out, made, own = self._index, evidence.out, self._made, self._own
        found = {}
        for node in evidence.nodes():
            i = index.ids[node]
            if node not in own:
                own[node] = own_p99(node, self._kept_of.get(node, ()), lambda k: made[k].p99_us)
            best = own[node]
            if best is not None and best[1][1] in out:
                best = own_p99(node, self._kept_of.get(node, ()), lambda k: made[k].p99_us, out)
            p99 = None if best is None else best[0]
            highest = self._highest(i)  # its pairs not kept: a probe or two, p99 their highest
            if highest and (p99 is None or highest > p99):
                p99 = float(highest)
            d = evidence.peers_out.get(node) or (0, 0)
            s = index.sums_of[i]
            found[node] = NodeMesh(node, Counts(*evidence.node_sums(node)), s[2] - d[0], s[3] - d[1], p99)
        return found


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


def _losing(probes: int, lost: int) -> bool:
    """Losing on its own: at least MIN_LOST probes lost, and LOSS_MARK of them."""
    return probes > 0 and lost >= MIN_LOST and lost / probes >= LOSS_MARK


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
    with no settled probe take no part. (``MeshWindow.judge`` judges its window the same way
    without this pass over every pair.)"""
    index = PairIndex()
    index.use(topology)
    for key, p in pairs.items():
        index.put(key, p.counts.probes, p.counts.lost)
    return _judge(Evidence(index), pairs, _nodes(pairs), topology, window_s)


def _judge(ev: Evidence, pairs: dict[Key, PairMesh], node_meshes: dict[str, NodeMesh],
           topology: Topology | None, window_s: float, probed: int | None = None) -> MeshVerdict:
    """``judge`` over ``ev``, the judged pairs indexed: a candidate part is looked at pair by
    pair only when its pooled counts lose."""
    suspects: list[MeshSuspect] = []
    counts = ev.index.counts

    def pooled(keys: Iterable[Key]) -> Counts:
        return Counts(*ev.pooled(keys))

    def losing(inside: set[Key]) -> bool:
        c = pooled(inside)
        return _losing(c.probes, c.lost)

    def ends(inside: Iterable[Key]) -> set[str]:
        return {n for k in inside for n in k}

    def spread(inside: set[Key], among: set[str]) -> bool:
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
        return _losing(whole.probes - without.probes, whole.lost - without.lost)

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
            if not others or not all(_losing(*ev.leaf_sums(leaf, other)) for other in others):
                continue
            towards = [ev.leaf_pairs(leaf, other) for other in others]
            if all(spread(t, mine) and spread(t, ends(t) - mine) for t in towards):
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
        for node in list(ev.nodes()):
            if not _losing(*ev.node_sums(node)):
                continue
            inside = ev.pairs_of(node)
            if spread(inside, ends(inside) - {node}) and not contradicted(node, inside) \
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
            if losing(inside) and clean_elsewhere(a, inside) and clean_elsewhere(b, inside):
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
