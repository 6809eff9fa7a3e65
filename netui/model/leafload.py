"""Each leaf switch's share of the fleet: its nodes' traffic summed, its worst health, and how
loaded its uplink is — as far as host counters can tell (no I/O).

Host counters say how much a node sends and receives, not to whom. What a leaf's nodes send
either stays in the leaf (received by a node on the same leaf) or leaves through the leaf's
uplink; what stays in the leaf is received by the leaf's nodes, so it is at most what they
receive. Hence, for a leaf whose watched nodes send TX and receive RX (bytes/s):

    traffic leaving through the uplink   between  max(0, TX − RX)  and  TX
    traffic entering through the uplink  between  max(0, RX − TX)  and  RX

Counters of different nodes are read at slightly different moments, so a byte counted at its
sender and at its receiver on the same leaf land in intervals a little apart: the low bound
gives way by ``SKEW`` of the smaller side (ten nodes exchanging 10 Gbit/s inside a leaf never
read as a busy uplink), and a share of the uplink is never shown above 100 % on a guess.

Both ends are exact in the simple cases (every node of leaf1 sending to leaf2: leaving ≈ TX,
less the ACKs that come back) and honest in the others: the range is shown, never a guess
inside it. The bounds count the watched nodes only: traffic between a watched node and an
unwatched one on the same leaf looks like uplink traffic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from netui.model.health import Level
from netui.model.node import Node, NodeState
from netui.model.topology import Topology

if TYPE_CHECKING:  # fabric_suspects imports this module
    from netui.model.fabric_suspects import FabricSuspect

# the uplink's level, from the share of its capacity it certainly carries (the low bound)
UPLINK_CAREFUL = 0.7
UPLINK_WARNING = 0.9
SKEW = 0.05  # how far apart a sender's and a receiver's count of the same bytes may read


@dataclass(frozen=True, slots=True)
class Bound:
    """A rate known to lie between ``low`` and ``high`` (bytes/s)."""

    low: float
    high: float

    def share(self, capacity_bytes_per_s: float | None) -> tuple[float, float] | None:
        """(low, high) as shares of ``capacity_bytes_per_s``; None without a capacity. The
        uplink carries no more than its capacity: the high share stops at 1 (or at the low
        one, when the counters say more than the topology's speed allows)."""
        if not capacity_bytes_per_s or capacity_bytes_per_s <= 0:
            return None
        low = self.low / capacity_bytes_per_s
        return low, min(self.high / capacity_bytes_per_s, max(1.0, low))


@dataclass(frozen=True, slots=True)
class LeafLoad:
    """One leaf switch (``leaf``; "" gathers the nodes the topology does not place).

    ``nodes``: its watched nodes, in the order given; ``up``: how many of them are up; the
    sums (bytes/s, per second) are over the nodes whose rate is known (``known`` of them);
    ``level`` the worst of its nodes' levels and its uplink's; ``uplink_gbps`` the uplink's
    capacity when the topology gives it; ``leaving``/``entering`` the uplink's traffic
    bounds (module docstring), None for the unplaced nodes or when no rate is known.
    """

    leaf: str
    nodes: tuple[str, ...]
    up: int
    known: int
    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None
    drops_per_s: float | None
    errors_per_s: float | None
    retrans_segs_per_s: float | None
    level: Level
    uplink_gbps: float | None = None
    leaving: Bound | None = None
    entering: Bound | None = None
    # what names the leaf's uplink (or the leaf) the short plank (model/fabric_suspects.py),
    # in short: "uplink ↑97 % of 300 Mb/s, flows across at 29 %"; "" when nothing does
    suspect: str = ""
    suspect_short: str = ""  # the same in a few words: "full uplink ↑97 %"

    @property
    def capacity_bytes_per_s(self) -> float | None:
        return None if not self.uplink_gbps else self.uplink_gbps * 1e9 / 8

    @property
    def uplink_level(self) -> Level:
        """CAREFUL or WARNING when the uplink certainly carries ``UPLINK_CAREFUL`` or
        ``UPLINK_WARNING`` of its capacity one way (the low bound); OK otherwise or unknown."""
        worst = 0.0
        for b in (self.leaving, self.entering):
            share = b.share(self.capacity_bytes_per_s) if b is not None else None
            if share is not None:
                worst = max(worst, share[0])
        return Level.WARNING if worst >= UPLINK_WARNING else Level.CAREFUL if worst >= UPLINK_CAREFUL else Level.OK


def _sum(values: list[float | None]) -> float | None:
    """The sum of the known values; None when none is known."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def leaf_loads(nodes: Iterable[Node], topology: Topology,
               leaf_of: Callable[[str], str | None] | None = None) -> list[LeafLoad]:
    """A ``LeafLoad`` per leaf that has one of ``nodes``, leaves in tree order, then "" for the
    nodes the topology does not place. ``leaf_of(name)``: the leaf of a node (default: the
    topology's own lookup; the fleet passes one that also knows a node by the host name it
    reports)."""
    find = leaf_of or topology.leaf_of
    groups: dict[str, list[Node]] = {}
    for n in nodes:
        groups.setdefault(find(n.name) or "", []).append(n)
    rank = {s: i for i, s in enumerate(topology.tree_order())}
    out = []
    for leaf in sorted(groups, key=lambda s: (s == "", rank.get(s, len(rank)), s)):
        members = groups[leaf]
        summaries = [n.summary for n in members]  # a tick at 1,024 nodes walks them all: comprehensions
        rxs = [s.rx_bytes_per_s for s in summaries]
        txs = [s.tx_bytes_per_s for s in summaries]
        rx, tx = _sum(rxs), _sum(txs)
        drops = _sum([s.drops_per_s for s in summaries])
        errors = _sum([s.errors_per_s for s in summaries])
        retrans = _sum([s.retrans_segs_per_s for s in summaries])
        known = sum(1 for r, t in zip(rxs, txs) if r is not None and t is not None)
        up = sum(1 for n in members if n.state is NodeState.UP)
        level = Level(max(n.level for n in members))
        switch = topology.switches.get(leaf)
        leaving = entering = None
        if leaf and known:
            r, t = rx or 0.0, tx or 0.0
            skew = SKEW * min(t, r)
            leaving, entering = Bound(max(0.0, t - r - skew), t), Bound(max(0.0, r - t - skew), r)
        load = LeafLoad(leaf, tuple(n.name for n in members), up, known, rx, tx, drops, errors, retrans, level,
                        switch.uplink_gbps if switch is not None and switch.parent is not None else None,
                        leaving, entering)
        if load.uplink_level > level:
            load = replace(load, level=load.uplink_level)
        out.append(load)
    return out


def with_suspects(loads: list[LeafLoad], suspects: Iterable[FabricSuspect]) -> list[LeafLoad]:
    """``loads`` with what names each suspect leaf (``fabric_suspects.FabricSuspect``: its
    ``switch``, ``kind`` and ``headline``) in ``suspect``, each such leaf at WARNING at least."""
    by_leaf = {s.switch: s for s in suspects}
    out = []
    for load in loads:
        s = by_leaf.get(load.leaf)
        if s is not None:
            words = s.headline.split(": ", 1)[-1]
            load = replace(load, suspect=f"uplink {words}" if s.kind == "uplink" else words,
                           suspect_short=s.short, level=max(load.level, Level.WARNING))
        out.append(load)
    return out


__all__ = ["Bound", "LeafLoad", "SKEW", "UPLINK_CAREFUL", "UPLINK_WARNING", "leaf_loads", "with_suspects"]
