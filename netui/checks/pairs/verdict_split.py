"""Two groups far apart: where the pairs' rates split, and the nodes their own pairs clear.

Pure: no I/O. ``judge`` (checks/pairs/verdict.py) uses them so that one unlucky measurement
cannot move the pass mark far, nor make a node a suspect: the mark sits in the middle of a wide
gap in the sorted rates, and a failing pair far faster than its node's other failing ones shows
the node is fine that way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from netui.checks.pairs.model import PairResult

# the pairs split in two groups where the largest gap in their rates (sorted, as a ratio) is at
# least this wide: the pass mark is then that gap's middle (its geometric mean), which no one
# measurement on either side can move past the gap. A busy CPU scatters healthy iperf3 pairs by
# up to 4× (4.9 to 19 Gbit/s on a loaded host); a shaped link or a bad port is 10-50× below
WIDE_GAP = 4.0
# a failing pair this many times faster than the node's own failing ones below it is evidence
# that the node is fine that way (the slow ones lie elsewhere: a path, an uplink)
CLEARS_OWN = WIDE_GAP
# with a topology, a gap at least this wide puts the pairs above it on the healthy side for the
# fabric's rules whatever the pass mark (an in-leaf pair held back by a busy CPU still clears its
# nodes of the slow pairs through their uplink)
FABRIC_GAP = 2.5


def _measured(r: PairResult) -> bool:
    return r.ok and r.gbps is not None and math.isfinite(r.gbps)


@dataclass(frozen=True)
class RateSplit:
    """The largest gap in the pairs' rates (Gbit/s): the fastest pair below it, the slowest
    above it, their ratio, how many pairs sit on each side, and the mark in its middle."""

    low_gbps: float
    high_gbps: float
    ratio: float
    below: int
    above: int

    @property
    def mark_gbps(self) -> float:
        return math.sqrt(self.low_gbps * self.high_gbps)


def split_rates(measured_gbps: Sequence[float]) -> RateSplit | None:
    """Where the sorted rates have their largest gap (as a ratio); None with fewer than two
    rates. The ratio of a zero rate is taken against 1 kbit/s."""
    ordered = sorted(max(v, 1e-6) for v in measured_gbps)
    if len(ordered) < 2:
        return None
    best_i, best_ratio = 0, 0.0
    for i in range(len(ordered) - 1):
        ratio = ordered[i + 1] / ordered[i]
        if ratio > best_ratio:
            best_i, best_ratio = i, ratio
    return RateSplit(ordered[best_i], ordered[best_i + 1], best_ratio, best_i + 1, len(ordered) - best_i - 1)


def cleared_by_own(failing: Sequence[PairResult],
                   healthy_gbps: float | None = None) -> tuple[set[str], set[str], set[int]]:
    """Nodes a failing pair of their own clears: one that runs at least ``CLEARS_OWN`` times
    faster than the node's failing pairs below it (the way it was tested: as a sender, as a
    receiver) and, given ``healthy_gbps`` (what the passing pairs reach: their median), is
    nearer to it than to those slow pairs (above their geometric mean): a pair that is fast
    only beside its node's slowest, still far from the healthy ones, clears nothing (TCP
    flows through one shaped link share it unevenly, 15 and 68 Mb/s under a 150 Mb/s cap).
    Returns the nodes cleared as senders, as receivers, and the ids of the pairs that clear
    them."""
    senders: set[str] = set()
    receivers: set[str] = set()
    clearing: set[int] = set()
    for role, out in (("sender", senders), ("receiver", receivers)):
        by_node: dict[str, list[tuple[float, PairResult]]] = {}
        for r in failing:
            if _measured(r) and r.gbps is not None:
                by_node.setdefault(getattr(r, role), []).append((r.gbps, r))
        for node, rs in by_node.items():
            rs = sorted(rs, key=lambda gr: gr[0])
            for (lower, _), (upper, _) in zip(rs, rs[1:]):
                low = max(lower, 1e-6)
                near_healthy = healthy_gbps is None or upper >= math.sqrt(low * max(healthy_gbps, low))
                if upper >= CLEARS_OWN * low and near_healthy:
                    out.add(node)
                    clearing.update(id(r) for g, r in rs if g >= upper)
                    break
    return senders, receivers, clearing


__all__ = ["CLEARS_OWN", "FABRIC_GAP", "WIDE_GAP", "RateSplit", "cleared_by_own", "split_rates"]
