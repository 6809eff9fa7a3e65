"""The fabric's part of a pair-test verdict: an uplink or a switch the failing pairs point to.

Pure: no I/O. ``judge`` (checks/pairs/verdict.py) asks for it when a topology is known. The rules,
as docs/topology.md says them:

- **Candidates.** Every way a tested pair can cross the tree: a switch's uplink going up (the
  traffic leaving the switch's subtree), coming down (entering it), either way, and every
  switch above the leaves. A candidate's pairs are the tested pairs whose path goes through it.
- **Named when the pattern says so.** A candidate is a suspect when *every* one of its pairs
  fails, clearly (their median below ``OWN_SHARE_OF_CLEAR`` of what the passing pairs outside it
  reach, or no number at all), and the nodes at both ends are fine elsewhere: at least two of
  its senders, and at least half of them on every leaf, pass a send that does not go through it,
  and the same of its receivers. A leaf whose nodes are all slow fails inside the leaf too, so its nodes are named,
  not its uplink; a leaf with one node cannot tell its node from its uplink, and names the node.
- **What the evidence can tell apart.** Candidates with the very same pairs cannot be told
  apart (two leaves: leaf1's uplink, the spine and leaf2's uplink carry the same cross-leaf
  pairs): they are named together, as the path. A candidate whose pairs all belong to a larger
  suspect is not named on its own (three leaves with every cross-leaf pair slow: the spine,
  not each uplink).

The pairs a fabric suspect explains are taken out before the nodes are judged: they blame no
node; a node slow on its own is still named from its other pairs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from netui.checks.pairs.model import Pair, PairResult
from netui.model import units
from netui.model.topology import Topology

UP, DOWN, BOTH = "up", "down", "both"
UPLINK, SWITCH, PATH = "uplink", "switch", "path"


@dataclass(frozen=True)
class FabricSuspect:
    """A part of the fabric the failing pairs point to.

    ``kind``: "uplink" (one switch's uplink: ``uplinks`` holds that switch, ``direction`` is
    "up" for the traffic leaving it, "down" for the traffic entering it, "both"), "switch"
    (``switches`` holds it) or "path" (parts the tests cannot tell apart: ``uplinks`` and
    ``switches`` hold them all). ``name`` is the link or path in words ("leaf1↔spine1",
    "leaf1→spine1→leaf2"). ``pairs`` are the failing pairs it explains (every pair through
    it); Gbit/s: their median, lowest and highest; ``in_leaf_gbps`` the median of the passing
    pairs within a leaf, ``elsewhere_gbps`` of the passing cross-switch pairs not through it.
    """

    kind: str
    name: str
    uplinks: tuple[str, ...]
    switches: tuple[str, ...]
    direction: str
    pairs: tuple[Pair, ...]
    median_gbps: float | None
    low_gbps: float | None
    high_gbps: float | None
    in_leaf_gbps: float | None
    elsewhere_gbps: float | None

    @property
    def blame(self) -> str:
        """Who to suspect, in words: "leaf1's uplink", "spine1 (or every uplink to it)",
        "the path leaf1↔spine1↔leaf2 (leaf1's uplink, spine1 or leaf2's uplink)"."""
        if self.kind == UPLINK:
            way = {UP: f" (from {self.uplinks[0]} up)", DOWN: f" (into {self.uplinks[0]})"}.get(self.direction, "")
            return f"{self.uplinks[0]}'s uplink{way}"
        if self.kind == SWITCH:
            return f"{self.switches[0]} (or every uplink to it)"
        parts = [f"{u}'s uplink" for u in self.uplinks] + list(self.switches)
        either = ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]
        return f"the path {self.name} ({either})"

    @property
    def text(self) -> str:
        """"all 16 pairs crossing leaf1↔spine1 run at 0.191 Gbit/s, in-leaf pairs at 9.40 Gbit/s
        — suspect leaf1's uplink"."""
        n = len(self.pairs)
        if self.median_gbps is None:
            rate = "fail to run"
        elif self.low_gbps is not None and self.high_gbps is not None and self.high_gbps > 1.25 * self.low_gbps:
            rate = f"run at {units.gbps(self.low_gbps)}–{units.gbps(self.high_gbps)} (median {units.gbps(self.median_gbps)})"
        else:
            rate = f"run at {units.gbps(self.median_gbps)}"
        through = f"crossing {self.name}" if self.kind != SWITCH else f"through {self.name}"
        healthy = []
        if self.in_leaf_gbps is not None:
            healthy.append(f"in-leaf pairs at {units.gbps(self.in_leaf_gbps)}")
        if self.elsewhere_gbps is not None:
            healthy.append(f"other cross-switch pairs at {units.gbps(self.elsewhere_gbps)}")
        return (f"{'the pair' if n == 1 else f'all {n} pairs'} {through} {rate}"
                + (", " + ", ".join(healthy) if healthy else "") + f" — suspect {self.blame}")


@dataclass(frozen=True)
class _Way:
    """How one pair crosses the tree: the uplinks it climbs (sender's side), descends
    (receiver's side) and the switches above the leaves it passes."""

    up: tuple[str, ...]
    down: tuple[str, ...]
    switches: tuple[str, ...]
    top: str


def _way(topology: Topology, sender: str, receiver: str) -> _Way | None:
    """None when the pair stays in a leaf, a node is not placed or the trees are separate."""
    path = topology.path(sender, receiver)
    if path.leaf_a is None or path.leaf_b is None or path.same_leaf or path.top is None:
        return None
    up_a, up_b = topology.ancestry(path.leaf_a), topology.ancestry(path.leaf_b)
    i, j = up_a.index(path.top), up_b.index(path.top)
    return _Way(tuple(up_a[:i]), tuple(up_b[:j]), tuple(dict.fromkeys([*up_a[1:i + 1], *up_b[1:j]])), path.top)


def _measured(r: PairResult) -> bool:
    return r.ok and r.gbps is not None and r.gbps == r.gbps and abs(r.gbps) != float("inf")


def fabric_suspects(tested: Sequence[PairResult], failing: Sequence[PairResult], topology: Topology,
                    own_share: float, healthy: set[int] | None = None) -> list[FabricSuspect]:
    """The fabric suspects of a judged set of pairs (module docstring), the most pairs first.

    ``tested``: every tested result; ``failing``: those that failed their pass mark;
    ``own_share``: how far below the passing pairs outside a candidate its pairs must be;
    ``healthy``: the ids of the results that show their nodes fine (default: those that pass;
    the verdict adds the pairs above a wide gap in the rates, whatever the mark).
    """
    failed = {id(r) for r in failing}
    if healthy is None:
        healthy = {id(r) for r in tested if id(r) not in failed}
    ways: dict[int, _Way] = {}
    in_leaf: list[PairResult] = []
    candidates: dict[tuple[str, str], list[PairResult]] = {}
    for r in tested:
        w = _way(topology, r.sender, r.receiver)
        if w is None:
            if topology.path(r.sender, r.receiver).same_leaf:
                in_leaf.append(r)
            continue
        ways[id(r)] = w
        for u in w.up:
            candidates.setdefault((UP, u), []).append(r)
            candidates.setdefault((BOTH, u), []).append(r)
        for u in w.down:
            candidates.setdefault((DOWN, u), []).append(r)
            candidates.setdefault((BOTH, u), []).append(r)
        for s in w.switches:
            candidates.setdefault((SWITCH, s), []).append(r)
    if not ways:
        return []
    passing = [r for r in tested if id(r) in healthy]

    def qualifies(pairs: list[PairResult]) -> bool:
        if len(pairs) < 2 or any(id(r) not in failed for r in pairs):
            return False
        inside = {id(r) for r in pairs}
        outside = [r for r in passing if id(r) not in inside]
        for role in ("sender", "receiver"):
            ends = {getattr(r, role) for r in pairs}
            cleared = {getattr(r, role) for r in outside} & ends
            if len(cleared) < 2:
                return False
            # on every leaf: at least half of its nodes fine elsewhere (a leaf of one node cannot
            # tell its node from its uplink; a leaf of slow nodes fails inside the leaf too)
            per_leaf: dict[str | None, list[bool]] = {}
            for node in ends:
                per_leaf.setdefault(topology.leaf_of(node), []).append(node in cleared)
            if any(2 * sum(oks) < len(oks) or not any(oks) for oks in per_leaf.values()):
                return False
        numbers = [r.gbps for r in pairs if _measured(r)]
        reference = [r.gbps for r in outside if _measured(r)]
        if numbers and reference:
            return statistics.median(numbers) < own_share * statistics.median(reference)
        return not numbers

    groups: dict[frozenset[int], list[tuple[str, str]]] = {}
    members: dict[frozenset[int], list[PairResult]] = {}
    for key, pairs in candidates.items():
        if qualifies(pairs):
            ids = frozenset(id(r) for r in pairs)
            groups.setdefault(ids, []).append(key)
            members[ids] = pairs
    kept = [ids for ids in groups if not any(ids < other for other in groups)]
    rank = {s: i for i, s in enumerate(topology.tree_order())}
    found = [_suspect(groups[ids], members[ids], ways, in_leaf, passing, rank, topology) for ids in kept]
    return sorted(found, key=lambda f: (-len(f.pairs), f.name))


def _suspect(keys: list[tuple[str, str]], pairs: list[PairResult], ways: dict[int, _Way],
             in_leaf: list[PairResult], passing: list[PairResult], rank: dict[str, int],
             topology: Topology) -> FabricSuspect:
    by_uplink: dict[str, set[str]] = {}
    switches: list[str] = []
    for kind, name in keys:
        if kind == SWITCH:
            switches.append(name)
        else:
            by_uplink.setdefault(name, set()).add(kind)
    # the way a group is named: "both" when it is among the keys, else the one direction
    uplinks = sorted(by_uplink, key=lambda s: rank.get(s, len(rank)))
    direction = ""
    if len(uplinks) == 1 and not switches:
        kinds = by_uplink[uplinks[0]]
        direction = BOTH if BOTH in kinds or kinds == {UP, DOWN} else next(iter(kinds))
        kind = UPLINK
    elif len(switches) == 1 and not uplinks:
        kind = SWITCH
    else:
        kind = PATH
    switches.sort(key=lambda s: rank.get(s, len(rank)))
    inside = {id(r) for r in pairs}
    numbers = [r.gbps for r in pairs if _measured(r)]
    passing_ids = {id(r) for r in passing}
    elsewhere = [r.gbps for r in passing if id(r) in ways and id(r) not in inside and _measured(r)]
    in_leaf_ok = [r.gbps for r in in_leaf if id(r) in passing_ids and _measured(r)]
    return FabricSuspect(
        kind=kind, name=_name(kind, uplinks, switches, direction, pairs, ways, by_uplink, topology),
        uplinks=tuple(uplinks), switches=tuple(switches), direction=direction,
        pairs=tuple(r.pair for r in pairs),
        median_gbps=statistics.median(numbers) if numbers else None,
        low_gbps=min(numbers, default=None), high_gbps=max(numbers, default=None),
        in_leaf_gbps=statistics.median(in_leaf_ok) if in_leaf_ok else None,
        elsewhere_gbps=statistics.median(elsewhere) if elsewhere else None,
    )


def _name(kind: str, uplinks: list[str], switches: list[str], direction: str, pairs: list[PairResult],
          ways: dict[int, _Way], by_uplink: dict[str, set[str]], topology: Topology) -> str:
    """"leaf1↔spine1" (an uplink; → or ← for one direction), "spine1", or a path through the
    parts: "leaf1↔spine1↔leaf2" (→ when every pair goes one way)."""
    if kind == UPLINK:
        parent = topology.switches[uplinks[0]].parent or "?"
        arrow = {UP: "→", DOWN: "←"}.get(direction, "↔")
        return f"{uplinks[0]}{arrow}{parent}"
    if kind == SWITCH:
        return switches[0]
    # a path: the sender's side climbing to the top, then the receiver's side, as the first
    # pair crosses it, kept to the parts named
    rank = {s: i for i, s in enumerate(topology.tree_order())}
    first_pair = min(pairs, key=lambda r: (rank.get(ways[id(r)].up[0] if ways[id(r)].up else "", 0),
                                           rank.get(ways[id(r)].down[0] if ways[id(r)].down else "", 0)))
    w = ways[id(first_pair)]
    named = set(uplinks) | set(switches)
    one_way = bool(by_uplink) and all(BOTH not in kinds for kinds in by_uplink.values())
    chain = [*w.up, w.top, *reversed(w.down)]
    first = next((i for i, s in enumerate(chain) if s in named), 0)
    last = max((i for i, s in enumerate(chain) if s in named), default=len(chain) - 1)
    # an uplink named on the climbing side reaches its parent; on the descending side it comes from it
    last = min(len(chain) - 1, last + (1 if chain[last] in w.up else 0))
    if chain[first] in w.down:
        first = max(0, first - 1)
    return ("→" if one_way else "↔").join(chain[first:last + 1])


__all__ = ["BOTH", "DOWN", "FabricSuspect", "PATH", "SWITCH", "UP", "UPLINK", "fabric_suspects"]
