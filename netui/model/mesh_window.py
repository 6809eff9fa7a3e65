"""The probe mesh's window (model/mesh.py): what each ordered pair's probes settled over the
last minute, kept for a fleet of thousands, and judged (model/mesh.py ``_judge`` over
model/mesh_index.py's pooled figures). Pure: no I/O.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import repeat
from operator import itemgetter

from netui.model.mesh import (MESH_QUIET_PAIRS, MIN_PROBES, WINDOW_S, Counts, Heard, MeshPeerReading, MeshRows,
                              MeshVerdict, NodeMesh, PairMesh, _judge, _quantile)
from netui.model.mesh_index import (ANSWERED, IN_HEARD, IN_LOST, IN_UNANSWERED, OUT_HEARD, OUT_LOST, OUT_UNANSWERED,
                                   UNANSWERED_PROBES, Evidence, Key, PairIndex, own_p99)
from netui.model.topology import Topology
from netui.speedups import mesh_targets, pool_readings, pool_rows, put_frame

Row = tuple[float, tuple[int, ...]]  # a kept pair's reading: (prober's mono_s, RTTs µs)
Frame = list  # a prober's frame: [mono_s, array of (target number, answered, lost) …, highest RTT µs of pairs not kept]

_REMAKE = PairMesh("", "", Counts(), None, None)  # a pair whose figures are to be made again

# a window of fewer pairs than this (among fewer than ~141 probers) keeps every pair's figures
# (a small fleet: each reaches MIN_PROBES); a larger one keeps them only for the pairs that lost
# a probe or have MIN_PROBES
KEEP_ALL_PAIRS = MESH_QUIET_PAIRS
MAX_PENDING = 8192  # frames added and not yet read, at most (a tick of 8,192 nodes)
# the nodes on one UDP port that ``_places`` compares one by one (each sampler's port is its
# own, chosen by its kernel: a few share one); more are found through a dict by their address
FEW_ON_A_PORT = 4
NOWHERE_KEPT = 4096  # peers that no node answers at, kept in ``MeshWindow._places``'s table at most (beyond 4 a node)
_NONE_KEPT: dict[int, list] = {}
_HIGHEST = itemgetter(2)  # a frame's highest RTT of the pairs not kept
_ENDPOINT = itemgetter(0, 1)  # a reading's peer: (address, port)
_BITS = bytes.maketrans(bytes(range(256)), b"0" * 255 + b"1")  # a ``heard`` byte → "1" when answered


class Endpoints(Mapping[tuple[str, int], str]):
    """Where each node answers probes: (address, port) → node, changed by ``put`` and ``drop``
    only, each change counted in ``version`` — so a window given it (``add_readings``) keeps
    what it made of it (the frame's rows' peers numbered, in C) until it changes."""

    def __init__(self) -> None:
        self._nodes: dict[tuple[str, int], str] = {}
        self.version = 0

    def put(self, endpoint: tuple[str, int], node: str) -> None:
        self._nodes[endpoint] = node
        self.version += 1

    def drop(self, endpoint: tuple[str, int]) -> None:
        if self._nodes.pop(endpoint, None) is not None:
            self.version += 1

    def get(self, endpoint, default=None):  # (the dict's own: a reading at a time on the general path)
        return self._nodes.get(endpoint, default)

    def __getitem__(self, endpoint: tuple[str, int]) -> str:
        return self._nodes[endpoint]

    def __iter__(self):
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)


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

    fused = True  # the common path in one call (speedups.put_frame); False: the general path only (the tests')

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
        # a packed row's peer: at a port, the (address key, its node's number, …) of its peers, or a
        # dict {address key: number} of them
        # (speedups.mesh_targets; -1: no node answers there), made of ``_at_of`` as it was at
        # ``_at_version`` and of the numbers in use
        self._at: list[tuple | dict | None] = [None] * 65536
        self._at_of: Endpoints | None = None
        self._at_version = -1
        self._nowhere = 0  # peers in ``_at`` that no node answers at (-1): a bad sampler's can be many

    @property
    def pair_count(self) -> int:
        """How many ordered pairs have a reading in the window."""
        if self._pending:
            self._flush()
        return self._index.pair_count

    def add(self, prober: str, target: str, mono_s: float, answered: int, lost: int,
            rtts_us: tuple[int, ...] = ()) -> None:
        """One frame's reading of ``prober``'s probes of ``target``."""
        self.add_readings(prober, mono_s, (MeshPeerReading(target, 0, answered, lost, rtts_us),), {(target, 0): target})

    def add_readings(self, prober: str, mono_s: float, readings: Sequence[MeshPeerReading],
                     target_of: Mapping[tuple[str, int], str]) -> None:
        """One frame of ``prober``'s: the readings of each peer whose probes settled, the peer
        named by ``target_of`` now (its address and port → the node; a reading of an address no
        node answers on, or of the prober itself, is passed by).

        The readings go into the window's figures at its next read (``pair_count``, ``pairs``,
        ``judge``): a tick's frames in one pass, while the tables are in the CPU's caches
        (frame by frame, between a thousand nodes' other work, each reading cost twice as much)."""
        self.seen(prober, mono_s)
        if not readings:
            return  # (its old readings leave at the next read: ``_prune``)
        if type(readings) is MeshRows and isinstance(target_of, Endpoints):
            # the rows as packed: each peer numbered in C by what ``_at`` made of ``target_of``
            self._pending.append((prober, mono_s, readings, self._places(readings, target_of)))
        else:
            self._pending.append((prober, mono_s, readings,
                                  list(map(target_of.get, map(_ENDPOINT, readings), repeat("")))))
        if len(self._pending) >= MAX_PENDING:  # (a caller that never reads: the frames wait no longer)
            self._flush()

    def _places(self, rows: MeshRows, target_of: Endpoints) -> tuple[array, dict[int, str] | None]:
        """Each of ``rows``' peers numbered (speedups.mesh_targets: -1 no node answers there, -2
        a node not numbered yet, named in the dict beside) and where its row starts."""
        if target_of is not self._at_of or target_of.version != self._at_version:
            self._forget_places()
            self._at_of, self._at_version = target_of, target_of.version
        at = self._at
        places, missing = mesh_targets(rows.data, rows.start, rows.rows, at)
        if missing is None:
            return places, None
        ids, names = self._index.ids, {}
        for k, port, key in missing:  # (a peer met first: its reading's text, once)
            r = rows[k]
            target = target_of.get((r.address, r.port), "")
            b = ids.get(target) if target else -1
            if b == -1:
                # (an address no node answers on is kept too, so it is not read again each frame;
                # a sampler that names ever new ones must not grow the table without end)
                self._nowhere += 1
                if self._nowhere > NOWHERE_KEPT + 4 * len(ids):
                    self._forget_places()
                    at = self._at
            if b is None:
                names[k] = target  # (numbered when its frame goes in, in the order it came)
            else:
                places[2 * k] = b
                peers = at[port]
                if isinstance(peers, dict):
                    peers[key] = b
                elif peers is None or len(peers) < 2 * FEW_ON_A_PORT:
                    at[port] = (*(peers or ()), key, b)
                else:  # (many nodes on one port: by their address, hashed)
                    at[port] = dict(zip(peers[::2], peers[1::2])) | {key: b}
        return places, names or None

    def _forget_places(self) -> None:
        """What ``_places`` knew of where the nodes answer is forgotten (it changed)."""
        if any(self._at):
            self._at = [None] * 65536
        self._nowhere = 0

    def _flush(self) -> None:
        """The frames added since the last read, into the figures, in the order they came."""
        pending, self._pending = self._pending, []
        if not (pending and self.fused and len(self._frames) ** 2 >= KEEP_ALL_PAIRS):
            for frame in pending:
                self._add(*frame)
            return
        # the common frame (rows as packed, of a prober numbered that keeps no pair's rows, in a
        # window too large to keep them all: ``_frames`` only grows here) in one C call
        # (speedups.put_frame): its prober's due frames aged out and its rows put in, up to a
        # frame that lost a probe or a row of another kind, which ``_add`` takes from there.
        # ~1,000 frames a tick on a 1,024-node fleet: the tables are looked up once.
        index, frames_of, kept_by, window_s, tops = self._index, self._frames, self._kept_by, self.window_s, self._top
        ids, heard, probes, alive, node_probes = index.ids, index.heard, index.probes, index.alive, index.node_probes
        sums_of, sums, leaf_rows, leaf_ix = index.sums_of, index.sums, index.leaf_rows, index.leaf_ix
        for frame in pending:
            prober, mono_s, rows, targets = frame
            a = ids.get(prober)
            if a is None or type(targets) is not tuple or (frames := frames_of.get(a)) is None or kept_by.get(a):
                # (a prober met first, readings not as packed, or keeping a pair's rows: the general path)
                self._add(*frame)
                continue
            at, pairs = put_frame(frames, mono_s - window_s, mono_s, rows.data, targets[0], a, heard[a], probes,
                                  alive, node_probes, sums_of, sums, tops, leaf_rows[leaf_ix[a]], leaf_ix, MIN_PROBES)
            index.pair_count += pairs
            if at != rows.rows:
                self._add(prober, mono_s, rows, targets, at)

    def _add(self, prober: str, mono_s: float, readings: Sequence[MeshPeerReading],
             targets: list[str] | tuple[array, dict[int, str] | None], at: int = 0) -> None:
        """One frame's ``readings`` into the figures: their ``targets`` named (``add_readings``),
        or (rows as packed) numbered and placed (``_places``); ``at``: where ``put_frame`` left it
        (-1: at a frame to age that lost a probe; 0: its frames aged, its frame made)."""
        index = self._index
        a = index.id_of(prober)
        frames = self._frames.get(a)
        if frames is None:
            frames = self._frames[a] = deque()
        if at <= 0:
            at = 0
            if frames and frames[0][0] <= mono_s - self.window_s:
                self._age(a, frames, mono_s - self.window_s)
            if frames and frames[-1][0] == mono_s:
                frame = frames[-1]
            else:
                frame = [mono_s, array("I"), 0]
                frames.append(frame)
        else:
            frame = frames[-1]  # (put_frame's, up to row ``at``)
        kept, keep_all = self._kept_by.get(a) or _NONE_KEPT, self._keep_all()
        heard, probes, sums_of, node_probes = index.heard[a], index.probes, index.sums_of, index.node_probes
        places: array | None = None  # (rows as packed: each one's number and offset, and the names of those -2)
        late: dict[int, str] = {}
        named: list[str] = []
        if isinstance(targets, tuple):
            places, late = targets[0], targets[1] or late
        else:
            named = targets
            if type(readings) is not tuple and type(readings) is not list:
                readings = list(readings)
        added: list[int] = []  # (of readings as tuples: their entries, for the frame's array at the end)
        extend = frame[1].extend if places is not None else added.extend
        end, total, pairs, highest = len(readings), 0, 0, frame[2]
        while True:
            if not keep_all:
                # the common reading (a known peer's probes answered, none lost, its pair not kept)
                # in one C pass (speedups.pool_rows from the packed rows, pool_readings from
                # readings): this runs ~20,000 times a second on a 1,024-node fleet; it stops at a
                # reading of another kind, taken here
                leaf_row = index.leaf_rows[index.leaf_ix[a]]
                if places is not None:
                    at, t, p, highest, entries = pool_rows(readings.data, places, at, a, heard, probes,  # type: ignore[attr-defined]
                                                           node_probes, sums_of, leaf_row, index.leaf_ix, kept,
                                                           MIN_PROBES, highest)
                    frame[1].frombytes(entries)
                else:
                    at, t, p, highest = pool_readings(readings, named, index.ids, at, a, heard, probes, node_probes,
                                                      sums_of, leaf_row, index.leaf_ix, kept, MIN_PROBES, highest,
                                                      added)
                total += t
                pairs += p
            if at >= end:
                break
            if places is not None:
                number = places[2 * at]
                target = late[at] if number == -2 else index.names[number] if number >= 0 else ""
            else:
                target = named[at]
            kept, highest = self._take(a, prober, mono_s, target, readings[at], kept, keep_all, highest, extend)
            at += 1
        if highest > frame[2]:
            self._raise(a, frame[2], highest)
            frame[2] = highest
        if added:
            frame[1].fromlist(added)
        node_probes[a] += total
        sums_of[a][1] += pairs
        index.sums[0] += total
        index.pair_count += pairs

    def _take(self, a: int, prober: str, mono_s: float, target: str, reading: MeshPeerReading, kept: dict[int, list],
              keep_all: bool, highest: int, extend: Callable[[Iterable[int]], None]) -> tuple[dict[int, list], int]:
        """One reading of prober ``a`` (``target``: its peer's name, "" for none) that the C pass
        left, into the figures, its entry given to ``extend``; the prober's kept pairs and the
        frame's highest RTT after it."""
        index = self._index
        _, _, answered, lost, rtts = reading
        b = index.ids.get(target)
        if b is None:
            if not target or target == prober:  # ("": an address no node answers on)
                return kept, highest
            b = index.id_of(target)
        elif b == a:
            return kept, highest
        n = answered + lost
        if not n:
            return kept, highest
        if index.heard[a][b] != ANSWERED and not index.hear(a, b, answered, lost):
            return kept, highest  # never answered: unanswered, not lost (kept apart in ``heard``)
        extend((b, answered, lost))
        index.change(a, b, n, lost)
        rows = kept.get(b)
        names = index.names
        # (a pair with a lost probe in the window is kept from that probe on: lost, not the table)
        if rows is None and (lost or index.probes[a][b] >= MIN_PROBES or keep_all):
            rows = self._keep((prober, names[b]), a, b)
            kept = self._kept_by[a]
        if rows is not None:
            rows.append((mono_s, rtts))
            self._remake.add((prober, names[b]))
        else:
            for t in rtts:
                if t > highest:
                    highest = t
        return kept, highest

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
        self._forget_places()  # (its number is retired)

    def _prune(self) -> None:
        """Readings older than the window on their prober's clock leave, oldest first (a
        prober's leave as it reports: what is left are those of the probers that stopped)."""
        since, latest, names = self.window_s, self._latest, self._index.names
        for a, frames in self._frames.items():
            if frames and frames[0][0] <= latest.get(names[a], float("-inf")) - since:
                self._age(a, frames, latest[names[a]] - since)

    def _age(self, a: int, frames: deque[Frame], since: float) -> None:
        """Prober ``a``'s readings of ``since`` or before leave."""
        index, tops = self._index, self._top
        kept, by_time = self._kept_by.get(a), None
        keep_all = kept is not None and self._keep_all()  # (as the window stood before these frames left)
        while frames and frames[0][0] <= since:
            _, entries, highest = frames.popleft()
            top = tops.get(a)
            if top is not None and highest and highest == top[0]:
                top[1] -= 1
                if not top[1]:
                    del tops[a]
            index.age_frame(a, entries)
            if kept:
                by_time = self._age_kept(a, entries, kept, frames, since, keep_all, by_time)

    def _age_kept(self, a: int, entries: array, kept: dict[int, list[Row]], frames: deque[Frame], since: float,
                  keep_all: bool, by_time: dict[float, Frame] | None) -> dict[float, Frame] | None:
        """The kept pairs among a frame's ``entries`` that left: their rows of ``since`` or before
        go, and the pair is no longer kept when it has none, or no longer needs its figures
        (``by_time``: the prober's frames by their time, made once an _age call needs them)."""
        index = self._index
        names, alive = index.names, index.alive
        prober = names[a]
        probes_of, lost_of = index.probes[a], index.lost[a]
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
                if by_time is None:  # (once a prober's frames age: a fleet growing past KEEP_ALL_PAIRS spills thousands)
                    by_time = {frame[0]: frame for frame in frames}
                self._spill(a, by_time, rows)
                self._unkeep(key)
            else:
                self._remake.add(key)
        return by_time

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

    def answered(self) -> tuple[list[str], dict[str, int]]:
        """Which ordered pairs were answered at least once (what a recording's header keeps,
        engine/recording/codec.py): the nodes, and for each prober answered by any, a bit set
        whose bit j says its probes of the j-th node were."""
        self._flush()
        index = self._index
        names, numbers = list(index.ids), list(index.ids.values())
        # the numbers in use, as runs of consecutive ones (a node restarted or gone leaves a
        # hole): a row's bytes are sliced a run at a time, in C, not read one by one
        runs, start = [], 0
        for k in range(1, len(numbers) + 1):
            if k == len(numbers) or numbers[k] != numbers[k - 1] + 1:
                runs.append(slice(numbers[start], numbers[k - 1] + 1))
                start = k
        whole = len(runs) == 1
        out = {}
        for name, i in index.ids.items():
            if index.silence[i][OUT_HEARD]:
                row = index.heard[i]
                ones = (row[runs[0]] if whole else b"".join(row[run] for run in runs)).translate(_BITS)
                out[name] = int(ones[::-1], 2)
        return names, out

    def hear(self, names: Sequence[str], answered: Mapping[str, int], nodes: Container[str]) -> None:
        """The pairs of ``answered`` (as ``answered`` gives them) were answered before the first
        reading here: a replay starts from what live mode knew when the recording began. Only
        the pairs of two ``nodes`` (the fleet's) are taken: another name is passed by, never
        numbered (a recording's header is its word, and each node numbered costs a row and a
        column of every pair table)."""
        self._flush()
        index = self._index
        columns = [(j, index.id_of(name)) for j, name in enumerate(names) if name in nodes]
        if not columns:
            return
        width = f"0{len(names)}b"
        for prober, bits in answered.items():
            if prober not in nodes:
                continue
            a = index.id_of(prober)
            ones, row = format(bits, width)[::-1], index.heard[a]  # ones[j]: bit j
            for j, b in columns:
                if ones[j] == "1" and b != a and row[b] != ANSWERED:
                    index.hear(a, b, 1, 0)

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

    def judge(self, topology: Topology | None = None, nodes: Iterable[str] | None = None,
              held: Collection[str] = ()) -> MeshVerdict:
        """The window's pairs, nodes and suspects (``judge``); ``nodes``: those to judge (the
        fleet's nodes that are up), every prober and target when None; ``held``: the names of
        the parts named now. Its cost grows with the pairs that changed and the pairs of the
        parts that lose, not with every pair."""
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
        meshes = self._node_meshes(evidence)
        # no node's probe ever answered: said once, of the fleet, and of no node
        none = bool(meshes) and not any(index.silence[index.ids[n]][OUT_HEARD] for n in meshes) \
            and sum(index.silence[index.ids[n]][OUT_LOST] for n in meshes) >= UNANSWERED_PROBES
        if none:
            meshes = {n: replace(m, answers_none=False, answered_none=False) for n, m in meshes.items()}
        verdict = _judge(evidence, pairs, meshes, topology, self.window_s, probed, held)
        if not (index.unanswered_pairs or none):
            return verdict
        # (``Heard.unanswered`` reads only the rows of the probers with an unanswered pair: a
        # copy of every row would be a megabyte a judgement at 1,024 nodes)
        heard = None
        if index.unanswered_pairs:
            silence, rows = index.silence, index.heard
            heard = Heard(dict(index.ids),
                          {n: bytes(rows[i]) for n, i in index.ids.items() if silence[i][OUT_UNANSWERED]})
        unanswered = sum(index.silence[index.ids[n]][OUT_UNANSWERED] for n in meshes)
        return replace(verdict, unanswered=unanswered, none_answered=none, heard=heard)

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
            found[node] = _node_mesh(node, Counts(*evidence.node_sums(node)), s[2] - d[0], s[3] - d[1], p99,
                                     index.silence[i])
        for node in index.silent_nodes():  # (a node none of whose pairs was ever answered has none above)
            if node not in found and node not in out:
                found[node] = _node_mesh(node, Counts(), 0, 0, None, index.silence[index.ids[node]])
        return found


_new_object = object.__new__


def _node_mesh(node: str, counts: Counts, peers: int, lossy_peers: int, p99_us: float | None,
               silence: list[int]) -> NodeMesh:
    """NodeMesh(node, counts, peers, lossy_peers, p99_us, *_silence(silence)), made without its
    __init__: a frozen dataclass's sets each field through object.__setattr__, a third of a
    1,024-node judgement's time (each node's made again every judgement)."""
    unanswered, answers_none, answered_none = _silence(silence)
    mesh = _new_object(NodeMesh)
    mesh.__dict__.update(node=node, counts=counts, peers=peers, lossy_peers=lossy_peers, p99_us=p99_us,
                         unanswered=unanswered, answers_none=answers_none, answered_none=answered_none)
    return mesh


def _silence(s: list[int]) -> tuple[int, bool, bool]:
    """A node's ``PairIndex.silence`` as NodeMesh's (unanswered, answers_none, answered_none)."""
    return (s[OUT_UNANSWERED] + s[IN_UNANSWERED],
            not s[IN_HEARD] and s[IN_LOST] >= UNANSWERED_PROBES,
            not s[OUT_HEARD] and s[OUT_LOST] >= UNANSWERED_PROBES)
