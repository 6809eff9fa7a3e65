"""The probe mesh's pairs pooled, kept as they change (model/mesh.py's window and judgement).

A fleet of 1,024 nodes at the default rate keeps some 600,000 ordered pairs in its window, each
with a probe or two: a judgement that walked them all every tick would cost the monitor
seconds. ``PairIndex`` keeps each node's pairs and their pooled counts (both ways, per peer, per
two leaves when given a topology) as each pair's counts change; ``Evidence`` is one
judgement's view of it: the nodes that are down taken out, and then each part the judgement
names, without a copy of the pairs. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator

from netui.model.topology import Topology

Key = tuple[str, str]  # an ordered pair: (prober, target)


class PairIndex:
    """Every ordered pair's (probes, lost), and pooled: per node (the pairs it probes and those
    that probe it), per node and peer (pairs and lost both ways), per two leaves of
    ``topology`` (``leaf_sums``; a leaf's own pairs under (leaf, leaf)), and the whole."""

    def __init__(self) -> None:
        self.counts: dict[Key, tuple[int, int]] = {}
        self.by_node: dict[str, set[Key]] = {}
        self.node_sums: dict[str, list[int]] = {}  # [probes, lost]
        # node → peer → lost × 4 + pairs (its 1 or 2 pairs with the peer: one int, no list, a pair)
        self.peers: dict[str, dict[str, int]] = {}
        self.lossy_peers: dict[str, int] = {}  # node → its peers with a lost probe
        self.lossy: set[Key] = set()  # pairs with a lost probe
        self.sums = [0, 0]
        self.topology: Topology | None = None
        self.leaf: dict[str, str | None] = {}  # node → its leaf in ``topology``
        self.leaf_sums: dict[Key, list[int]] = {}

    def use(self, topology: Topology | None) -> None:
        """Pool by the leaves of ``topology`` from now on (a pass over the pairs when it changed)."""
        if topology is self.topology:
            return
        self.topology, self.leaf, self.leaf_sums = topology, {}, {}
        if topology is not None:
            for key, (probes, lost) in self.counts.items():
                self._leaves_add(key, probes, lost)

    def leaf_of(self, node: str) -> str | None:
        leaf = self.leaf.get(node, "")
        if leaf == "":
            leaf = self.leaf[node] = self.topology.leaf_of(node) if self.topology is not None else None
        return leaf

    def _leaves_add(self, key: Key, probes: int, lost: int) -> None:
        a, b = self.leaf_of(key[0]), self.leaf_of(key[1])
        if a is None or b is None:
            return
        two = (a, b) if a <= b else (b, a)
        sums = self.leaf_sums.get(two)
        if sums is None:
            sums = self.leaf_sums[two] = [0, 0]
        sums[0] += probes
        sums[1] += lost

    def put(self, key: Key, probes: int, lost: int) -> None:
        """Pair ``key`` now has ``probes`` settled, ``lost`` of them lost."""
        old = self.counts.get(key)
        dp, dl = (probes, lost) if old is None else (probes - old[0], lost - old[1])
        self.counts[key] = (probes, lost)
        self._change(key, dp, dl, +1 if old is None else 0)
        if lost:
            self.lossy.add(key)
        else:
            self.lossy.discard(key)

    def remove(self, key: Key) -> None:
        """Pair ``key`` has no settled probe left."""
        old = self.counts.pop(key, None)
        if old is None:
            return
        self.lossy.discard(key)
        self._change(key, -old[0], -old[1], -1)

    def _change(self, key: Key, dp: int, dl: int, born: int) -> None:
        self.sums[0] += dp
        self.sums[1] += dl
        a, b = key
        for node, other in ((a, b), (b, a)):
            mine = self.by_node.get(node)
            if mine is None:
                mine = self.by_node[node] = set()
                self.node_sums[node], self.peers[node], self.lossy_peers[node] = [0, 0], {}, 0
            s = self.node_sums[node]
            s[0] += dp
            s[1] += dl
            theirs = self.peers[node]
            was = theirs.get(other, 0)
            now = theirs[other] = was + 4 * dl + born
            if (was >= 4) != (now >= 4):
                self.lossy_peers[node] += 1 if now >= 4 else -1
            if born > 0:
                mine.add(key)
            elif born < 0:
                mine.discard(key)
                if not now & 3:
                    del theirs[other]
                if not mine:
                    for d in (self.by_node, self.node_sums, self.peers, self.lossy_peers):
                        del d[node]
        if self.topology is not None:
            self._leaves_add(key, dp, dl)


class Evidence:
    """One judgement's pairs: ``index``'s but those of the nodes ``out`` (down: not judged),
    and those ``take`` has taken out since (a part named explains them)."""

    def __init__(self, index: PairIndex, out: Iterable[str] = ()) -> None:
        self.index = index
        self.removed: set[Key] = set()
        self.out = set(out)
        self._node_delta: dict[str, list[int]] = {}  # [probes, lost, pairs] taken out
        self._leaf_delta: dict[Key, list[int]] = {}
        self.sums = list(index.sums)
        for node in self.out:
            self.take(index.by_node.get(node, ()))
        self.judged = self.sums[0], self.sums[1]  # the judged pairs pooled, before any part is named
        # each leaf's nodes that have a pair to judge
        self.leaves: dict[str, set[str]] = {}
        if index.topology is not None:
            for node in self.nodes():
                leaf = index.leaf_of(node)
                if leaf is not None:
                    self.leaves.setdefault(leaf, set()).add(node)

    def __contains__(self, key: Key) -> bool:
        return key in self.index.counts and key not in self.removed

    def __bool__(self) -> bool:
        return len(self.index.counts) > len(self.removed)

    def lost(self, key: Key) -> int:
        return self.index.counts[key][1]

    def nodes(self) -> Iterator[str]:
        """The nodes with a pair left."""
        delta = self._node_delta
        for node, mine in self.index.by_node.items():
            if node not in self.out and len(mine) > delta.get(node, (0, 0, 0))[2]:
                yield node

    def node_sums(self, node: str) -> tuple[int, int]:
        s, d = self.index.node_sums.get(node, (0, 0)), self._node_delta.get(node, (0, 0))
        return s[0] - d[0], s[1] - d[1]

    def pairs_of(self, node: str) -> set[Key]:
        removed = self.removed
        return {k for k in self.index.by_node.get(node, ()) if k not in removed}

    def lossy(self) -> set[Key]:
        return self.index.lossy - self.removed

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
        index = self.index
        for key in keys:
            c = index.counts.get(key)
            if c is None or key in self.removed:
                continue
            self.removed.add(key)
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
                    two = (a, b) if a <= b else (b, a)
                    ld = self._leaf_delta.get(two)
                    if ld is None:
                        ld = self._leaf_delta[two] = [0, 0]
                    ld[0] += probes
                    ld[1] += lost


def own_p99(node: str, index: PairIndex, p99_of: Callable[[Key], float | None],
            out: Container[str] = ()) -> tuple[float, Key] | None:
    """The highest RTT p99 of ``node``'s own probes (of peers not in ``out``) and its pair."""
    best: tuple[float, Key] | None = None
    for key in index.by_node.get(node, ()):
        if key[0] == node and key[1] not in out:
            p99 = p99_of(key)
            if p99 is not None and (best is None or p99 > best[0]):
                best = (p99, key)
    return best
