"""The probe mesh's pairs pooled, kept as they change (model/mesh.py's window and judgement).

A fleet of 1,024 nodes at the default rate has a million ordered pairs in its window, each with
a probe or two: a judgement that walked them all would cost the monitor seconds, and an object
per pair a gigabyte. ``PairIndex`` numbers the nodes and keeps every ordered pair's (probes,
lost) in two flat tables of ints (a row per prober), pooled as they change: per node (the pairs
it probes and those that probe it), per two leaves when given a topology (and each leaf's own),
and the whole, with each node's count of peers and of lossy peers and the set of pairs that
lost a probe. ``Evidence`` is one judgement's view of it: the nodes that are down taken out,
and then each part the judgement names, without a copy of the pairs. Pure: no I/O.

Only the pairs whose probes were answered at least once, since the index began to count them,
are in those tables: a pair never answered is not losing probes but unanswered (UDP blocked
between the two nodes, a firewall, a sampler that cannot answer), and a firewall must never be
named a lossy link. ``heard`` keeps, per ordered pair, one byte: answered once (``ANSWERED``), or
how many probes it lost while never answered (up to ``SILENT_CAP``) — a megabyte at 1,024
nodes — with each node's sums of it beside (``silence``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Container, Iterable, Iterator
from operator import itemgetter

from netui.model.topology import Topology
from netui.speedups import pool_entries

Key = tuple[str, str]  # an ordered pair: (prober, target)

ANSWERED = 255  # heard[a][b]: a's probes of b were answered at least once
SILENT_CAP = 254  # else: how many it lost, counted up to this
UNANSWERED_PROBES = 20  # a pair (or a node's pairs pooled) lost this many and none answered, ever: unanswered
# silence[node]: [0] probes it lost of its never-answered pairs (each pair's up to SILENT_CAP), [1] its
# peers' probes of it lost so, [2] its pairs answered, [3] its peers' pairs to it answered, [4] its
# unanswered pairs (UNANSWERED_PROBES lost, none answered), [5] its peers' unanswered pairs to it
OUT_LOST, IN_LOST, OUT_HEARD, IN_HEARD, OUT_UNANSWERED, IN_UNANSWERED = range(6)


class _Counts:
    """``PairIndex.counts``: an ordered pair → (probes, lost), for the pairs with a probe."""

    __slots__ = ("_index",)

    def __init__(self, index: PairIndex) -> None:
        self._index = index

    def get(self, key: Key, default=None):
        ids = self._index.ids
        a, b = ids.get(key[0]), ids.get(key[1])
        if a is None or b is None:
            return default
        probes = self._index.probes[a][b]
        return (probes, self._index.lost[a][b]) if probes else default

    def __getitem__(self, key: Key) -> tuple[int, int]:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: Key) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return self._index.pair_count


class PairIndex:
    """Every ordered pair's (probes, lost), and pooled: per node (the pairs it probes and those
    that probe it), per node its peers and lossy peers (a peer: a pair either way; lossy: a
    lost probe either way), per two leaves of ``topology`` (``leaf_sums``; a leaf's own pairs
    under (leaf, leaf)), and the whole. A node is a number (``ids``); a node forgotten gets a
    new number, its old one kept only until its last reading in others' windows leaves
    (``change`` on a retired number moves the pair's counts, nothing pooled)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []
        self.alive: list[bool] = []
        self.probes: list[list[int]] = []  # [prober][target]
        self.lost: list[list[int]] = []
        self.node_probes = array("q")  # node → its pairs' probes, both ways (written in place, in C)
        self.sums_of: list[list[int]] = []  # node → [lost, pairs, peers, lossy peers] of its pairs
        self.lossy: set[Key] = set()  # pairs with a lost probe
        self.sums = [0, 0]
        self.pair_count = 0
        self.heard: list[bytearray] = []  # [prober][target]: ANSWERED, or probes lost while never answered
        self.silence: list[list[int]] = []  # node → its ``heard`` pooled (OUT_LOST … IN_UNANSWERED)
        self.answered_pairs = 0  # pairs answered at least once
        self.unanswered_pairs = 0  # pairs that lost UNANSWERED_PROBES, none answered
        self.counts = _Counts(self)
        self.topology: Topology | None = None
        self.leaf_names: list[str] = []
        self.leaf_ix: list[int] = []  # node → its leaf's number in ``leaf_names``, -1: none
        self.members: list[list[int]] = []  # leaf → its nodes' numbers
        self.leaf_rows: list[list[list[int]]] = [[[0, 0]]]  # leaf → other leaf → [probes, lost] (last: a sink)
        self.leaf_sums: dict[Key, list[int]] = {}  # (leaf, leaf) in order → the same lists

    # --- nodes ------------------------------------------------------------------------------
    def id_of(self, node: str) -> int:
        """``node``'s number (a new one for a node not seen, or forgotten)."""
        i = self.ids.get(node)
        if i is None:
            i = self.ids[node] = len(self.names)
            self.names.append(node)
            self.alive.append(True)
            for row in self.probes:
                row.append(0)
            for row in self.lost:
                row.append(0)
            for heard in self.heard:
                heard.append(0)
            self.probes.append([0] * (i + 1))
            self.lost.append([0] * (i + 1))
            self.heard.append(bytearray(i + 1))
            self.silence.append([0] * 6)
            self.node_probes.append(0)
            self.sums_of.append([0, 0, 0, 0])
            k = self._leaf_number(node)
            self.leaf_ix.append(k)
            if k >= 0:
                self.members[k].append(i)
        return i

    def retire(self, node: str) -> int | None:
        """``node``'s pairs out of every pooled figure, its number retired (the node restarted,
        or left): its next reading takes a new one. Its number, or None when not seen."""
        i = self.ids.pop(node, None)
        if i is None:
            return None
        for b, probes in enumerate(self.probes[i]):
            if probes:
                self.change(i, b, -probes, -self.lost[i][b])
        for a, row in enumerate(self.probes):
            if row[i]:
                self.change(a, i, -row[i], -self.lost[a][i])
        for b, value in enumerate(self.heard[i]):
            if value:
                self._unhear(i, b)
        for a, answered in enumerate(self.heard):
            if answered[i]:
                self._unhear(a, i)
        self.alive[i] = False  # (others' readings of it still to leave move its tables only)
        if self.leaf_ix[i] >= 0:
            self.members[self.leaf_ix[i]].remove(i)
            self.leaf_ix[i] = -1
        return i

    def pairs_of(self, node: str) -> list[Key]:
        """``node``'s ordered pairs with a probe, both ways (a walk of its row and column)."""
        i = self.ids.get(node)
        if i is None or not self.sums_of[i][1]:
            return []
        names, alive = self.names, self.alive
        out = [(node, names[b]) for b, p in enumerate(self.probes[i]) if p and alive[b]]
        out += [(names[a], node) for a, row in enumerate(self.probes) if row[i] and alive[a]]
        return out

    def nodes(self) -> Iterator[str]:
        """The nodes with a pair."""
        sums_of = self.sums_of
        for node, i in self.ids.items():
            if sums_of[i][1]:
                yield node

    def node_sums(self, node: str) -> tuple[int, int]:
        i = self.ids.get(node)
        if i is None:
            return 0, 0
        return self.node_probes[i], self.sums_of[i][0]

    # --- answered, ever ---------------------------------------------------------------------
    def hear(self, a: int, b: int, answered: int, lost: int) -> bool:
        """A reading of pair (``a``, ``b``), never answered before this one: True when it
        answers (from now on, this reading included, the pair's readings go into the tables);
        False when it does not (its lost probes counted in ``heard``, not in the tables)."""
        row = self.heard[a]
        was = row[b]
        sa, sb = self.silence[a], self.silence[b]
        if answered:
            row[b] = ANSWERED
            if was:
                self._unsilence(sa, sb, was)
            sa[OUT_HEARD] += 1
            sb[IN_HEARD] += 1
            self.answered_pairs += 1
            return True
        now = min(SILENT_CAP, was + lost)
        if now != was:
            row[b] = now
            sa[OUT_LOST] += now - was
            sb[IN_LOST] += now - was
            if was < UNANSWERED_PROBES <= now:
                sa[OUT_UNANSWERED] += 1
                sb[IN_UNANSWERED] += 1
                self.unanswered_pairs += 1
        return False

    def _unhear(self, a: int, b: int) -> None:
        """Pair (``a``, ``b``)'s ``heard`` out of its nodes' sums (one of them is retired)."""
        was = self.heard[a][b]
        self.heard[a][b] = 0
        sa, sb = self.silence[a], self.silence[b]
        if was == ANSWERED:
            sa[OUT_HEARD] -= 1
            sb[IN_HEARD] -= 1
            self.answered_pairs -= 1
            return
        self._unsilence(sa, sb, was)

    def _unsilence(self, sa: list[int], sb: list[int], was: int) -> None:
        """A silent pair's ``was`` (its ``heard`` byte: probes lost, never answered) out of its
        prober's and target's sums (``sa``, ``sb``) and the count of unanswered pairs."""
        sa[OUT_LOST] -= was
        sb[IN_LOST] -= was
        if was >= UNANSWERED_PROBES:
            sa[OUT_UNANSWERED] -= 1
            sb[IN_UNANSWERED] -= 1
            self.unanswered_pairs -= 1

    def silent_nodes(self) -> Iterator[str]:
        """The nodes in use with a probe lost on a pair never answered, either way."""
        silence, alive = self.silence, self.alive
        for node, i in self.ids.items():
            s = silence[i]
            if alive[i] and (s[OUT_LOST] or s[IN_LOST]):
                yield node

    # --- leaves -----------------------------------------------------------------------------
    def use(self, topology: Topology | None) -> None:
        """Pool by the leaves of ``topology`` from now on (a walk of the tables when it changed)."""
        if topology is self.topology:
            return
        self.topology = topology
        self.leaf_names, self.leaf_rows, self.leaf_sums, self.members = [], [[[0, 0]]], {}, []
        self.leaf_ix = [self._leaf_number(n) if self.alive[i] else -1 for i, n in enumerate(self.names)]
        for i, k in enumerate(self.leaf_ix):
            if k >= 0:
                self.members[k].append(i)
        if topology is None:
            return
        leaf_ix, rows, members = self.leaf_ix, self.leaf_rows, self.members
        for a, (prow, lrow) in enumerate(zip(self.probes, self.lost)):
            if leaf_ix[a] < 0:
                continue
            mine = rows[leaf_ix[a]]
            for k, them in enumerate(members):  # (sums in C: a million pairs take some 30 ms)
                s = mine[k]
                s[0] += sum(map(prow.__getitem__, them))
                s[1] += sum(map(lrow.__getitem__, them))

    def _leaf_number(self, node: str) -> int:
        leaf = self.topology.leaf_of(node) if self.topology is not None else None
        if leaf is None:
            return -1
        try:
            return self.leaf_names.index(leaf)
        except ValueError:
            pass
        k = len(self.leaf_names)
        self.leaf_names.append(leaf)
        sink = [0, 0]
        for j, row in enumerate(self.leaf_rows[:-1]):  # each leaf's row gets the new leaf, before its sink
            two = (leaf, self.leaf_names[j]) if leaf <= self.leaf_names[j] else (self.leaf_names[j], leaf)
            row.insert(k, self.leaf_sums.setdefault(two, [0, 0]))
        self.leaf_rows[-1].insert(k, sink)  # an unplaced prober's row: sinks only
        self.members.append([])
        self.leaf_sums[(leaf, leaf)] = own = [0, 0]
        mine = [self.leaf_rows[j][k] for j in range(k)] + [own, [0, 0]]
        self.leaf_rows.insert(k, mine)
        return k

    def cross_leaf_sums(self, node: str) -> tuple[int, int]:
        """The pooled (probes, lost) of ``node``'s pairs, both ways, to the nodes of the other
        leaves (a node of no leaf: none), summed from the tables in C."""
        i = self.ids.get(node)
        if i is None or self.leaf_ix[i] < 0:
            return 0, 0
        k = self.leaf_ix[i]
        others = [j for kk, them in enumerate(self.members) if kk != k for j in them]
        probes, lost, column = self.probes, self.lost, itemgetter(i)
        return (sum(map(probes[i].__getitem__, others)) + sum(map(column, map(probes.__getitem__, others))),
                sum(map(lost[i].__getitem__, others)) + sum(map(column, map(lost.__getitem__, others))))

    def leaf_of(self, node: str) -> str | None:
        i = self.ids.get(node)
        if i is not None:
            k = self.leaf_ix[i]
            return self.leaf_names[k] if k >= 0 else None
        return self.topology.leaf_of(node) if self.topology is not None else None

    # --- counts -----------------------------------------------------------------------------
    def put(self, key: Key, probes: int, lost: int) -> None:
        """Pair ``key`` now has ``probes`` settled, ``lost`` of them lost."""
        a, b = self.id_of(key[0]), self.id_of(key[1])
        self.change(a, b, probes - self.probes[a][b], lost - self.lost[a][b])

    def change(self, a: int, b: int, dp: int, dl: int) -> int:
        """Pair (``a``, ``b``) settled ``dp`` more probes, ``dl`` more lost (negative: aged
        out). Its probes before."""
        row = self.probes[a]
        old = row[b]
        now = row[b] = old + dp
        if dl:
            self.lost[a][b] += dl
        if self.alive[a] and self.alive[b]:
            self._pool(a, b, dp, dl, (not old) - (not now))
        return old

    def add_frame(self, a: int, entries: array, start: int = 0) -> None:
        """Prober ``a``'s readings ``entries[start:]`` — (target, answered, lost) flat, an
        array of 'I', every target a number in use — settled: ``change`` of each, in one pass."""
        self._frame(a, entries, start, 1)

    def age_frame(self, a: int, entries: array) -> None:
        """Prober ``a``'s readings ``entries`` (as ``add_frame``'s) left the window."""
        self._frame(a, entries, 0, -1)

    def _frame(self, a: int, entries: array, start: int, sign: int) -> None:
        # ``change`` and ``_pool`` for the common reading (no probe lost) in one C pass
        # (speedups.pool_entries), up to each lost one, which ``change`` takes
        tables = (self.probes, self.alive, self.node_probes, self.sums_of, self.leaf_rows[self.leaf_ix[a]],
                  self.leaf_ix)
        at, end = start, len(entries)
        total = pairs = 0
        while True:
            at, t, p = pool_entries(entries, at, sign, a, *tables)
            total += t
            pairs += p
            if at >= end:
                break
            b, answered, lost = entries[at:at + 3]
            self.change(a, b, sign * (answered + lost), sign * lost)
            at += 3
        self.node_probes[a] += total
        self.sums_of[a][1] += pairs
        self.sums[0] += total
        self.pair_count += pairs

    def _pool(self, a: int, b: int, dp: int, dl: int, born: int) -> None:
        """Pair (a, b)'s change into every pooled figure (``born`` +1: its first probe, -1: its last)."""
        sa, sb = self.sums_of[a], self.sums_of[b]
        self.node_probes[a] += dp
        self.node_probes[b] += dp
        self.sums[0] += dp
        ls = self.leaf_rows[self.leaf_ix[a]][self.leaf_ix[b]]
        ls[0] += dp
        if dl:
            sa[0] += dl
            sb[0] += dl
            self.sums[1] += dl
            ls[1] += dl
            lost = self.lost[a][b]
            if lost == dl or not lost:  # it lost its first probe, or its last lost one left
                key = (self.names[a], self.names[b])
                had = self.lost[b][a] and self.alive[b]
                if lost:
                    self.lossy.add(key)
                else:
                    self.lossy.discard(key)
                if not had:
                    step = 1 if lost else -1
                    sa[3] += step
                    sb[3] += step
        if born:
            sa[1] += born
            sb[1] += born
            self.pair_count += born
            if not self.probes[b][a]:  # the peers: a pair either way
                sa[2] += born
                sb[2] += born


class Evidence:
    """One judgement's pairs: ``index``'s but those of the nodes ``out`` (down: not judged),
    and those ``take`` has taken out since (a part named explains them)."""

    def __init__(self, index: PairIndex, out: Iterable[str] = ()) -> None:
        self.index = index
        self.removed: set[Key] = set()
        self.out = set(out)
        self._node_delta: dict[str, list[int]] = {}  # [probes, lost, pairs] taken out
        self._leaf_delta: dict[Key, list[int]] = {}
        self._cross_delta: dict[str, list[int]] = {}  # [probes, lost] of its pairs to other leaves taken out
        self.sums = list(index.sums)
        self.taken = 0  # pairs out of it
        self.peers_out: dict[str, list[int]] = {}  # node → [peers, lossy peers] among the nodes out
        self._take_out()
        self.judged = self.sums[0], self.sums[1]  # the judged pairs pooled, before any part is named
        # each leaf's nodes that have a pair to judge
        self.leaves: dict[str, set[str]] = {}
        if index.topology is not None:
            for node in self.nodes():
                leaf = index.leaf_of(node)
                if leaf is not None:
                    self.leaves.setdefault(leaf, set()).add(node)

    def _take_out(self) -> None:
        """The pairs of the nodes out leave the pooled figures: a walk of their rows and
        columns of the tables (no key made a pair: a node down has a thousand pairs)."""
        index, out = self.index, self.out
        names, alive, probes, lost, leaf_ix = index.names, index.alive, index.probes, index.lost, index.leaf_ix
        done: set[int] = set()
        for g in sorted(index.ids[n] for n in out if n in index.ids):
            done.add(g)
            gone = names[g]
            probes_g, lost_g = probes[g], lost[g]
            for o in range(len(names)):
                p1, p2 = probes_g[o], probes[o][g]
                if not (p1 or p2) or o in done or not alive[o]:
                    continue  # (the pair of two nodes out: once)
                p, lo, k = p1 + p2, lost_g[o] + lost[o][g], (p1 > 0) + (p2 > 0)
                self.sums[0] -= p
                self.sums[1] -= lo
                self.taken += k
                other = names[o]
                if other not in out:
                    less = self.peers_out.get(other)
                    if less is None:
                        less = self.peers_out[other] = [0, 0]
                    less[0] += 1
                    less[1] += lo > 0
                for node in (gone, other):
                    d = self._node_delta.get(node)
                    if d is None:
                        d = self._node_delta[node] = [0, 0, 0]
                    d[0] += p
                    d[1] += lo
                    d[2] += k
                if leaf_ix[g] >= 0 and leaf_ix[o] >= 0:
                    self._leaves_take(index.leaf_names[leaf_ix[g]], index.leaf_names[leaf_ix[o]], (gone, other), p, lo)

    def _leaves_take(self, a: str, b: str, key: Key, probes: int, lost: int) -> None:
        two = (a, b) if a <= b else (b, a)
        ld = self._leaf_delta.get(two)
        if ld is None:
            ld = self._leaf_delta[two] = [0, 0]
        ld[0] += probes
        ld[1] += lost
        if a != b:
            for node in key:
                cd = self._cross_delta.get(node)
                if cd is None:
                    cd = self._cross_delta[node] = [0, 0]
                cd[0] += probes
                cd[1] += lost

    def __contains__(self, key: Key) -> bool:
        out = self.out
        return key in self.index.counts and key not in self.removed and key[0] not in out and key[1] not in out

    def __bool__(self) -> bool:
        return self.index.pair_count > self.taken

    def lost(self, key: Key) -> int:
        return self.index.counts[key][1]

    def nodes(self) -> Iterator[str]:
        """The nodes with a pair left."""
        delta, sums_of = self._node_delta, self.index.sums_of
        for node, i in self.index.ids.items():
            if node not in self.out and sums_of[i][1] > delta.get(node, (0, 0, 0))[2]:
                yield node

    def nodes_that_lost(self, least: int) -> Iterator[str]:
        """``nodes()`` but those whose pairs lost fewer than ``least`` probes in the index (the
        pairs taken out only take lost probes away): every node that can lose ``least`` here,
        found by a look at its lost count, in ``nodes()``'s order."""
        delta, sums_of, out = self._node_delta, self.index.sums_of, self.out
        for node, i in self.index.ids.items():
            s = sums_of[i]
            if s[0] >= least and node not in out and s[1] > delta.get(node, (0, 0, 0))[2]:
                yield node

    def node_sums(self, node: str) -> tuple[int, int]:
        s, d = self.index.node_sums(node), self._node_delta.get(node, (0, 0))
        return s[0] - d[0], s[1] - d[1]

    def pairs_of(self, node: str) -> set[Key]:
        removed, out = self.removed, self.out
        mine = {k for k in self.index.pairs_of(node) if k not in removed}
        return {k for k in mine if k[0] not in out and k[1] not in out} if out else mine

    def lossy(self) -> set[Key]:
        out = self.out
        return {k for k in self.index.lossy - self.removed if k[0] not in out and k[1] not in out}

    def pooled(self, keys: Iterable[Key]) -> tuple[int, int]:
        """The pooled (probes, lost) of those of ``keys`` in the evidence."""
        index, removed = self.index, self.removed
        ids, table, lost_table = index.ids, index.probes, index.lost
        probes = lost = 0
        out = self.out
        for k in keys:
            a, b = ids.get(k[0]), ids.get(k[1])
            if a is None or b is None or k in removed or k[0] in out or k[1] in out:
                continue
            n = table[a][b]
            if n:
                probes += n
                lost += lost_table[a][b]
        return probes, lost

    def cross_leaf_sums(self, node: str) -> tuple[int, int]:
        """``node``'s pairs to the other leaves' nodes, pooled (``PairIndex.cross_leaf_sums``)."""
        s, d = self.index.cross_leaf_sums(node), self._cross_delta.get(node, (0, 0))
        return s[0] - d[0], s[1] - d[1]

    def leaf_sums(self, a: str, b: str) -> tuple[int, int]:
        """The pooled [probes, lost] of the pairs between leaves ``a`` and ``b`` (a leaf's own: a == b)."""
        two = (a, b) if a <= b else (b, a)
        s, d = self.index.leaf_sums.get(two, (0, 0)), self._leaf_delta.get(two, (0, 0))
        return s[0] - d[0], s[1] - d[1]

    def in_leaf_sums(self) -> tuple[int, int]:
        probes = lost = 0
        for (a, b) in self.index.leaf_sums:
            if a == b:
                p, lo = self.leaf_sums(a, a)
                probes, lost = probes + p, lost + lo
        return probes, lost

    def leaf_pairs(self, a: str, b: str) -> set[Key]:
        """The pairs between leaves ``a`` and ``b`` (a != b): a walk of ``a``'s nodes' pairs."""
        leaf_of = self.index.leaf_of
        return {k for n in self.leaves.get(a, ()) for k in self.pairs_of(n)
                if leaf_of(k[1] if k[0] == n else k[0]) == b}

    def take(self, keys: Iterable[Key]) -> None:
        """These pairs are out of the evidence."""
        index, out = self.index, self.out
        for key in keys:
            c = index.counts.get(key)
            if c is None or key in self.removed or key[0] in out or key[1] in out:
                continue
            self.removed.add(key)
            self.taken += 1
            probes, lost = c
            self.sums[0] -= probes
            self.sums[1] -= lost
            for node in key:
                d = self._node_delta.get(node)
                if d is None:
                    d = self._node_delta[node] = [0, 0, 0]
                d[0] += probes
                d[1] += lost
                d[2] += 1
            if index.topology is not None:
                a, b = index.leaf_of(key[0]), index.leaf_of(key[1])
                if a is not None and b is not None:
                    self._leaves_take(a, b, key, probes, lost)


def own_p99(node: str, keys: Iterable[Key], p99_of: Callable[[Key], float | None],
            out: Container[str] = ()) -> tuple[float, Key] | None:
    """The highest RTT p99 among ``keys`` of ``node``'s own probes (of peers not in ``out``) and its pair."""
    best: tuple[float, Key] | None = None
    for key in keys:
        if key[0] == node and key[1] not in out:
            p99 = p99_of(key)
            if p99 is not None and (best is None or p99 > best[0]):
                best = (p99, key)
    return best
