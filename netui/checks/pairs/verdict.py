"""The verdict of a pair bandwidth test: which pairs fail, which nodes the failures point
to, each node's summary as a sender and as a receiver, and the verdict in words.

Pure: no I/O, no clock. The rules, as docs/checks.md says them:

- **The pass mark.** ``threshold_gbps`` when given; else ``threshold_percent`` % of the
  slower end's link speed when both ends' speeds are known (a software device's nominal
  speed is not one); else, when the sorted rates have a gap at least ``WIDE_GAP`` wide, the
  middle of that gap (checks/pairs/verdict_split.py: no one measurement moves it past the
  gap); else the same share of what
  the *best pairs* reach: the 90th percentile of the measured pairs. Never the median of
  the pairs: with two slow nodes of four, half the pairs are slow, and the median is a
  slow pair. When the pairs near the best rate scatter more than that share allows
  (iperf3 held back by CPU does), the mark is lowered to their own scatter (3.5 robust
  standard deviations below their centre), never below half of the best rate.
- **Blame.** Each node is summed up as a sender and as a receiver (its tests, how many
  fail, their median). A node is a suspect *as a sender* when every one of its sends
  fails and one of those went to a node that receives well from someone else (and the
  same way round for receiving): a slow pair between two nodes that are fine elsewhere
  blames the path, not a node. A failing pair ``CLEARS_OWN`` times faster than its node's
  other failing ones shows the node well that way too. So 1, 2 or half of the nodes slow
  are all named, and a node that could not run the tool is never a suspect: its pairs were
  not tested.
- **Inconclusive.** With no absolute pass mark (no threshold, link speeds unknown) the
  pairs can only be compared with each other: when none is slower than the rest, every
  pair may be equally slow, and the verdict says it cannot tell instead of passing.
  When pairs could not be tested, a pass of the others is inconclusive too.
- **The fabric** (with a topology, checks/pairs/verdict_fabric.py). In-leaf pairs and cross-switch
  pairs are compared separately: the best pairs are the best in-leaf pairs when the pairs as a
  whole (mostly cross-switch in a wide fabric) reach less than those would need. An uplink or
  switch whose every pair fails while the nodes at both ends pass elsewhere (or run above a
  ``FABRIC_GAP`` gap in the rates, whatever the mark) is named, and the pairs through it
  blame no node.
- **Confirmed** (checks/pairs/verdict_confirm.py): before a failing verdict is final (one
  naming a node or a link, or a few failing pairs naming no one), the pairs that decide it are
  rerun alone and it is judged again on them.
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from netui import checks
from netui.checks.pairs.model import Pair, PairResult, _pct
from netui.checks.pairs.verdict_split import FABRIC_GAP, WIDE_GAP, RateSplit, cleared_by_own, split_rates
from netui.model import units

if TYPE_CHECKING:  # the topology and the fabric's rules load only when a topology is given
    from netui.checks.pairs.verdict_fabric import FabricSuspect
    from netui.model.topology import Topology

PASS, FAIL, INCONCLUSIVE = checks.PASS, checks.FAIL, checks.INCONCLUSIVE

# failed runs that say a node could not run the tool at all (it could not be reached or
# started, or has no RDMA device): its pairs were not tested, which blames nobody
CANNOT_RUN = frozenset({"unavailable", "no-device"})

BEST_PERCENTILE = 90  # "the best pairs": this nearest-rank percentile of the measured pairs
# the mark may be lowered to this many robust σ below the best pairs' rate: Iglewicz and
# Hoaglin's 3.5 below the centre of a normal group whose 90th percentile that rate is
# (3.5 + 1.28 ≈ 4.8), so that a healthy pair at the low end of a noisy group still passes
SCATTER_Z = 4.8
LOWEST_SHARE_OF_BEST = 0.5  # ... never below this share of the best pairs' rate
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution × this = its standard deviation
# outliers: |x − centre| / (1.4826 · MAD) above this (Iglewicz and Hoaglin's 3.5) ...
OUTLIER_Z = 3.5
# a node's own failures name it when their median is below this share of what the pairs of the
# nodes no failure points at reach (iperf3 pairs held back by CPU scatter by ±20 %)
OWN_SHARE_OF_CLEAR = 0.8
# ... with the spread never taken below this share of the centre, so that near-identical
# results (MAD ≈ 0) do not make every small wobble an outlier
OUTLIER_MIN_SPREAD = 0.05

# a pass below this many times an absolute mark (a threshold, 90 % of link speed) is marginal:
# its retest may fail. Against the best pairs, a pass below their share of the best rate is
MARGIN = 1.05

SENDING, RECEIVING, BOTH_WAYS = "sending", "receiving", "sending and receiving"


@dataclass(frozen=True)
class NodeSummary:
    """One node across its pairs: as a sender (out) and as a receiver (in). Gbit/s; the
    medians are over the runs that measured a rate (None when none did). ``suspect`` is
    "", "sending", "receiving" or "sending and receiving"."""

    node: str
    sends: int = 0
    sends_failing: int = 0
    out_median_gbps: float | None = None
    receives: int = 0
    receives_failing: int = 0
    in_median_gbps: float | None = None
    suspect: str = ""


@dataclass(frozen=True)
class Verdict:
    """The judgement of a set of pair results.

    ``status``: "pass", "fail" or "inconclusive" (see the module's rules). ``results``
    are the tested pairs, failing first (the slowest first), then the others by name;
    ``untested`` the pairs whose nodes could not run the tool. ``required_gbps`` maps each
    judged pair to the Gbit/s it needed (None for failed runs); ``expected_gbps`` is the
    best pairs' rate when some pair was judged against it; ``outliers`` the results far
    from the best pairs either way, pass or fail; ``suspects`` the nodes the failures
    point to, most failing tests first; ``nodes`` each node's summary; ``fabric`` the uplinks
    or switches the failures point to (only with a topology; their pairs blame no node).
    """

    status: str
    failing: list[PairResult]
    suspects: list[str]
    text: str
    results: list[PairResult] = field(default_factory=list)
    outliers: list[PairResult] = field(default_factory=list)
    median_gbps: float | None = None
    expected_gbps: float | None = None
    required_gbps: dict[Pair, float | None] = field(default_factory=dict)
    nodes: dict[str, NodeSummary] = field(default_factory=dict)
    untested: list[PairResult] = field(default_factory=list)
    fabric: list[FabricSuspect] = field(default_factory=list)
    # the results that clear a node only narrowly: passes near their mark or below the best
    # pairs' share, and failing pairs that clear a node all the same (far faster than its others,
    # or above a gap in the rates): what a retest confirms before the verdict blames (verdict_confirm)
    marginal: list[PairResult] = field(default_factory=list)
    # with retests (checks/pairs/verdict_confirm.py): pair → the matrix's result its retest replaced
    retested: dict[Pair, PairResult] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def tested(self) -> frozenset[str]:
        """The nodes of the pairs judged (``results``; not those of ``untested``)."""
        return frozenset(n for r in self.results for n in r.pair)

    @property
    def inconclusive(self) -> bool:
        return self.status == INCONCLUSIVE

    def matrix(self, nodes: Sequence[str]) -> list[list[float | None]]:
        """Gbit/s with row = sender, column = receiver, in the order of ``nodes``.

        None where no result (the diagonal, pairs not tested, failed runs). When a pair
        was tested more than once, the last result counts.
        """
        index = {node: i for i, node in enumerate(nodes)}
        grid: list[list[float | None]] = [[None] * len(nodes) for _ in nodes]
        for r in self.results:
            i, j = index.get(r.sender), index.get(r.receiver)
            if i is not None and j is not None and i != j:
                grid[i][j] = r.gbps if r.ok else None
        return grid


def _speed(link_speed_mbps: Mapping[str, int | None], node: str) -> float | None:
    """Mbit/s, or None when unknown (missing, None, or the -1/0 of a link that is down)."""
    speed = link_speed_mbps.get(node)
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not speed > 0:
        return None
    return speed


def _measured(r: PairResult) -> bool:
    return r.ok and r.gbps is not None and math.isfinite(r.gbps)


@dataclass(frozen=True)
class BestPairs:
    """What the best pairs reach, and the pass mark taken from it (Gbit/s)."""

    rate_gbps: float  # the 90th percentile of the measured pairs
    mark_gbps: float  # the pass mark: the share of the rate, or lowered by the scatter
    scatter_gbps: float  # the robust σ of the pairs within a factor two of the rate
    widened: bool  # the mark was lowered by the scatter


def best_pairs(measured_gbps: Sequence[float], share: float) -> BestPairs | None:
    """The best pairs' rate and the mark ``share`` × it, lowered (never below half the
    rate) to ``SCATTER_Z`` robust σ below it when the pairs within a factor two of it
    scatter more; None without a measured pair."""
    ordered = sorted(measured_gbps)
    if not ordered:
        return None
    rate = ordered[max(0, math.ceil(BEST_PERCENTILE / 100 * len(ordered)) - 1)]
    near = [v for v in ordered if v >= LOWEST_SHARE_OF_BEST * rate]
    centre = statistics.median(near)
    scatter = MAD_TO_SIGMA * statistics.median(abs(v - centre) for v in near)
    mark = share * rate
    floor = max(rate - SCATTER_Z * scatter, LOWEST_SHARE_OF_BEST * rate)
    widened = floor < mark
    return BestPairs(rate, min(mark, floor), scatter, widened)


def _outliers(measured: list[PairResult], centre: float | None) -> list[PairResult]:
    if centre is None or len(measured) < 3:
        return []
    mad = statistics.median(abs(r.gbps - centre) for r in measured)
    spread = max(MAD_TO_SIGMA * mad, OUTLIER_MIN_SPREAD * centre)
    if spread <= 0:
        return []
    return [r for r in measured if abs(r.gbps - centre) / spread > OUTLIER_Z]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def natural(name: str) -> list:
    """Sort key: "node2" before "node10"."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def node_summaries(results: list[PairResult], failing: list[PairResult],
                   cleared: tuple[set[str], set[str]] = (set(), set())) -> dict[str, NodeSummary]:
    """Each node (in natural name order) with its sends and receives, how many fail, their
    median Gbit/s and whether the
    failures point at it (module docstring: a suspect as a sender when every send fails
    and one went to a node that receives well elsewhere; the same for receiving).
    ``cleared``: nodes that send well and receive well by a failing pair of their own far
    faster than their others (``cleared_by_own``)."""
    failed = {id(r) for r in failing}
    passing = [r for r in results if id(r) not in failed]
    sends_well = {r.sender for r in passing} | cleared[0]
    receives_well = {r.receiver for r in passing} | cleared[1]
    out: dict[str, NodeSummary] = {}
    for node in sorted({n for r in results for n in r.pair}, key=natural):
        sends = [r for r in results if r.sender == node]
        receives = [r for r in results if r.receiver == node]
        by_send = bool(sends) and node not in sends_well and any(r.receiver in receives_well for r in sends)
        by_receive = bool(receives) and node not in receives_well and any(r.sender in sends_well for r in receives)
        suspect = BOTH_WAYS if by_send and by_receive else SENDING if by_send else RECEIVING if by_receive else ""
        out[node] = NodeSummary(
            node,
            sends=len(sends), sends_failing=sum(id(r) in failed for r in sends),
            out_median_gbps=_median([r.gbps for r in sends if _measured(r)]),
            receives=len(receives), receives_failing=sum(id(r) in failed for r in receives),
            in_median_gbps=_median([r.gbps for r in receives if _measured(r)]),
            suspect=suspect,
        )
    return out


def _explains(summary: NodeSummary, r: PairResult) -> bool:
    """Whether ``summary``'s node, as the suspect it is, explains the failing result ``r``."""
    if not summary.suspect:
        return False
    return ((r.sender == summary.node and summary.suspect != RECEIVING)
            or (r.receiver == summary.node and summary.suspect != SENDING))


def _blamed(s: NodeSummary) -> int:
    """How many failing tests a suspect is blamed for: those of the way it is suspect in."""
    return ((s.sends_failing if s.suspect != RECEIVING else 0)
            + (s.receives_failing if s.suspect != SENDING else 0))


def _left_to_explain(failing: list[PairResult], nodes: dict[str, NodeSummary],
                     sends_well: set[str], receives_well: set[str]) -> dict[str, NodeSummary]:
    """Suspects for the failing pairs no suspect explains, where the tests could not clear a
    node (a one-way matrix tests each node in fewer ways). A node is counted in a failing
    pair only in a way it passed no test in (as a sender when none of its sends passed).
    The nodes in the most such pairs are named when they are in at least two and some
    other node of those pairs is in fewer: when every node of them is in as many, no node
    stands out (the paths between them may)."""
    nodes = dict(nodes)
    while True:
        left = [r for r in failing if not any(_explains(nodes[n], r) for n in r.pair)]
        count: dict[str, int] = {}
        for r in left:
            for n in r.pair:
                count.setdefault(n, 0)
            if r.sender not in sends_well:
                count[r.sender] += 1
            if r.receiver not in receives_well:
                count[r.receiver] += 1
        most = max(count.values(), default=0)
        leaders = [n for n, c in count.items() if c == most]
        if most < 2 or len(leaders) == len(count):
            return nodes
        for node in leaders:
            was = nodes[node].suspect
            sends = was in (SENDING, BOTH_WAYS) or (
                node not in sends_well and any(r.sender == node for r in left))
            receives = was in (RECEIVING, BOTH_WAYS) or (
                node not in receives_well and any(r.receiver == node for r in left))
            nodes[node] = dataclasses.replace(
                nodes[node], suspect=BOTH_WAYS if sends and receives else SENDING if sends else RECEIVING)


def _on_own_evidence(tested: list[PairResult], failing: list[PairResult], nodes: dict[str, NodeSummary],
                     required: Mapping[Pair, float | None]) -> dict[str, NodeSummary]:
    """Each suspect keeps a way (sending, receiving) only on failing tests of its own: those
    no other suspect explains. One far below what it needed (under half, or a run that gave no
    number) names it; so do two or more whose median is clearly below what the pairs of the
    nodes nothing points at reach (``OWN_SHARE_OF_CLEAR``). Mild failures within the healthy
    pairs' scatter do not: with 1 or 2 slow senders of 4, a good receiver's only informative
    tests are one or two healthy pairs at the low end of a noisy group. Repeated until no
    suspect changes."""
    def decisive(r: PairResult) -> bool:
        need = required.get(r.pair)
        return not _measured(r) or (need is not None and r.gbps < LOWEST_SHARE_OF_BEST * need)

    nodes = dict(nodes)
    for _ in range(len(nodes) + 1):
        changed = False
        for name, s in list(nodes.items()):
            if not s.suspect:
                continue
            # what the tests no suspect explains reach (this node's left out): failures
            # of its own name it only when they are clearly below that, not within its scatter
            clear = [r.gbps for r in tested if _measured(r) and name not in r.pair
                     and not any(_explains(nodes[n], r) for n in r.pair)]
            reference = statistics.median(clear) if clear else None
            ways = []
            for way, mine in ((SENDING, lambda r: r.sender == name), (RECEIVING, lambda r: r.receiver == name)):
                if s.suspect not in (way, BOTH_WAYS):
                    continue
                own = [r for r in failing if mine(r) and not any(
                    other != name and _explains(nodes[other], r) for other in r.pair)]
                numbers = [r.gbps for r in own if _measured(r)]
                clearly_below = (reference is None or not numbers
                                 or statistics.median(numbers) < OWN_SHARE_OF_CLEAR * reference)
                if any(decisive(r) for r in own) or (len(own) >= 2 and clearly_below):
                    ways.append(way)
            suspect = BOTH_WAYS if len(ways) == 2 else ways[0] if ways else ""
            if suspect != s.suspect:
                nodes[name] = dataclasses.replace(s, suspect=suspect)
                changed = True
        if not changed:
            break
    return nodes


def judge(
    results: Iterable[PairResult],
    *,
    threshold_gbps: float | None = None,
    threshold_percent: float = 90.0,
    link_speed_mbps: Mapping[str, int | None] | None = None,
    topology: Topology | None = None,
    nominal_mbps: Mapping[str, tuple[int, str]] | None = None,
) -> Verdict:
    """Pass or fail each pair, sum each node up, name the suspects and word the verdict
    (the rules are in the module's docstring). ``link_speed_mbps``: Mbit/s as
    /sys/class/net/*/speed gives it; Gbit/s everywhere else. ``topology``: where the nodes
    sit (found by the names in the results); without it the fabric is not judged.
    ``nominal_mbps``: node → (Mbit/s, kind) of a software device's nominal speed (a veth's
    10000): never a pass mark, only said in the rule's words."""
    every = list(results)
    untested = [r for r in every if not r.ok and r.kind in CANNOT_RUN]
    tested = [r for r in every if not (not r.ok and r.kind in CANNOT_RUN)]
    speeds = link_speed_mbps or {}
    share = threshold_percent / 100.0
    measured = [r for r in tested if _measured(r)]
    median = statistics.median(r.gbps for r in measured) if measured else None
    best = best_pairs([r.gbps for r in measured], share)
    best_in_leaf = False
    split = split_rates([r.gbps for r in measured])
    wide = split if split is not None and split.ratio >= WIDE_GAP else None
    if wide is not None:
        # two groups far apart: what the fast group reaches is the best pairs' rate, and the
        # mark is the gap's middle, so one unlucky pair in the fast group still passes
        best = best_pairs([r.gbps for r in measured if r.gbps >= wide.high_gbps], share)
        assert best is not None
        best = dataclasses.replace(best, mark_gbps=wide.mark_gbps, widened=False)
    elif topology is not None and best is not None:
        # a wide fabric's pairs are mostly cross-switch: when those are slow, the best pairs
        # of all are slow ones, and the best in-leaf pairs are what a node reaches
        in_leaf = [r.gbps for r in measured if topology.same_leaf(r.sender, r.receiver)]
        leaf_best = best_pairs(in_leaf, share) if len(in_leaf) >= 2 else None
        if leaf_best is not None and best.rate_gbps < leaf_best.mark_gbps:
            best, best_in_leaf = leaf_best, True

    required: dict[Pair, float | None] = {}
    failing: list[PairResult] = []
    absolute = relative = 0
    for r in tested:
        need: float | None
        if threshold_gbps is not None:
            need = threshold_gbps
            absolute += 1
        else:
            a, b = _speed(speeds, r.sender), _speed(speeds, r.receiver)
            if a is not None and b is not None:
                need = share * min(a, b) / 1000.0
                absolute += 1
            else:
                need = None if best is None else best.mark_gbps
                relative += 1
        if not _measured(r):
            required[r.pair] = None
            failing.append(r)
            continue
        required[r.pair] = need
        if need is not None and r.gbps < need:
            failing.append(r)

    failing.sort(key=lambda r: (r.gbps if _measured(r) else -1.0, r.sender, r.receiver))
    failed_ids = {id(r) for r in failing}
    ordered = failing + sorted((r for r in tested if id(r) not in failed_ids), key=lambda r: (r.sender, r.receiver))
    fabric: list[FabricSuspect] = []
    passing_gbps = [r.gbps for r in tested if id(r) not in failed_ids and _measured(r) and r.gbps is not None]
    own_senders, own_receivers, own_clearing = cleared_by_own(
        failing, statistics.median(passing_gbps) if passing_gbps else None)
    healthy = {id(r) for r in tested if id(r) not in failed_ids} | own_clearing
    if topology is not None and failing:
        from netui.checks.pairs.verdict_fabric import fabric_suspects

        # healthy evidence for the fabric's rules: the pairs that pass, those above a gap in the
        # rates (whatever the mark), and a node's failing pairs far faster than its others
        if split is not None and split.ratio >= FABRIC_GAP:
            healthy |= {id(r) for r in measured if r.gbps >= split.high_gbps}
        fabric = fabric_suspects(tested, failing, topology, OWN_SHARE_OF_CLEAR, healthy=healthy)
    # the pairs a fabric suspect explains blame no node: the nodes are judged on the others
    explained = {pair for f in fabric for pair in f.pairs}
    judged = [r for r in tested if r.pair not in explained] if explained else tested
    judged_failing = [r for r in failing if r.pair not in explained] if explained else failing
    nodes = node_summaries(judged, judged_failing, (own_senders, own_receivers))
    if len(judged_failing) < len(judged):
        passing = [r for r in judged if id(r) not in failed_ids]
        nodes = _left_to_explain(judged_failing, nodes, {r.sender for r in passing} | own_senders,
                                 {r.receiver for r in passing} | own_receivers)
    nodes = _on_own_evidence(judged, judged_failing, nodes, required)
    if explained:  # each node's counts over all its pairs, its suspicion from the others
        blamed = {name: s.suspect for name, s in nodes.items()}
        nodes = {name: dataclasses.replace(s, suspect=blamed.get(name, ""))
                 for name, s in node_summaries(tested, failing, (own_senders, own_receivers)).items()}
    suspects = sorted((s for s in nodes.values() if s.suspect), key=lambda s: (-_blamed(s), natural(s.node)))
    centre = None
    if best is not None:
        centre = statistics.median(r.gbps for r in measured if r.gbps >= LOWEST_SHARE_OF_BEST * best.rate_gbps)
    # beside a wide gap, outliers are judged within the fast group (the slow one is failing)
    fast = [r for r in measured if r.gbps >= wide.high_gbps] if wide is not None else measured
    outliers = _outliers(fast, centre)
    floor = share * best.rate_gbps if best is not None and relative else None
    marginal = []
    for r in ordered:
        need = required.get(r.pair)
        if not _measured(r):
            continue
        if id(r) in failed_ids:
            if id(r) in healthy:  # failing, yet what clears its nodes
                marginal.append(r)
        elif (need is not None and r.gbps < MARGIN * need) or (floor is not None and r.gbps < floor):
            marginal.append(r)
    rule = _rule(threshold_gbps, threshold_percent, best, absolute, relative, len(tested), best_in_leaf,
                 wide, nominal_speed_words(nominal_mbps or {}))

    n = len(tested)
    if not tested:
        status = INCONCLUSIVE
        text = "no pair was tested" + (f": {_untested_words(untested)}" if untested else "")
    elif failing:
        status = FAIL
        text = _failure_text(failing, suspects, n, rule, fabric)
        # a milder fault beside a wide gap passes the gap's mark: said, when the healthy pairs
        # are tight enough to tell (an outlier against the best pairs), not blamed
        low = [r for r in outliers if wide is not None and id(r) not in failed_ids
               and centre is not None and r.gbps < centre]
        if low:
            text += (f". Passing, but low against the best pairs' {units.gbps(centre)}: "
                     + _listing(sorted(low, key=lambda r: r.gbps), limit=3))
    elif absolute == 0:
        status = INCONCLUSIVE
        nominal = nominal_speed_words(nominal_mbps or {})
        speeds = f"link speeds are only nominal ({nominal})" if nominal else "link speeds are unknown"
        if n == 1:
            text = (f"inconclusive: the pair ran at {units.gbps(tested[0].gbps)}, {speeds} and "
                    "there is no other pair to compare with (--threshold-gbps sets a pass mark)")
        else:
            text = (f"inconclusive: all {n} pairs are alike (the best at {units.gbps(best.rate_gbps)}) and "
                    f"{speeds}, so they may all be equally slow (--threshold-gbps sets a pass mark)")
    elif untested:
        status = INCONCLUSIVE
        text = (f"inconclusive: the {n} tested {'pair passes' if n == 1 else 'pairs pass'} ({rule}), "
                f"{len(untested)} could not be tested: {_untested_words(untested)}")
    else:
        status = PASS
        text = f"{'the pair passes' if n == 1 else f'all {n} pairs pass'} ({rule})"
        low = [r for r in outliers if centre is not None and r.gbps < centre]
        if low:
            shown = ", ".join(f"{r.sender}→{r.receiver} {units.gbps(r.gbps)}" for r in low[:3])
            text += f"; low outliers against the best pairs' {units.gbps(centre)}: {shown}"

    return Verdict(
        status=status,
        failing=failing,
        suspects=[s.node for s in suspects],
        text=text,
        results=ordered,
        outliers=outliers,
        median_gbps=median,
        expected_gbps=best.rate_gbps if best is not None and relative else None,
        required_gbps=required,
        nodes=nodes,
        untested=untested,
        fabric=fabric,
        marginal=marginal,
    )


def nominal_speed_words(nominal_mbps: Mapping[str, tuple[int, str]]) -> str:
    """"veth 10G" (the software devices' nominal speeds, not a pass mark), or ""."""
    from netui.model.units import speed

    kinds = sorted({f"{kind} {speed(mbps)}" for mbps, kind in nominal_mbps.values() if mbps and mbps > 0})
    return ", ".join(kinds)


def _rule(threshold_gbps: float | None, threshold_percent: float, best: BestPairs | None,
          absolute: int, relative: int, n: int, in_leaf: bool = False, wide: RateSplit | None = None,
          nominal: str = "") -> str:
    pct = _pct(threshold_percent)
    whose = "the best in-leaf pairs'" if in_leaf else "the best pairs'"
    unknown = f"link speeds only nominal ({nominal})" if nominal else "link speeds unknown"
    if threshold_gbps is not None:
        return f"≥ {units.gbps(threshold_gbps)}"
    if relative == 0:
        return f"≥ {pct} % of link speed"
    if wide is not None:
        against = (f"the middle of a {wide.ratio:.0f}× gap in the rates, {units.gbps(wide.mark_gbps)} "
                   f"({wide.below} {'pair' if wide.below == 1 else 'pairs'} at ≤ {units.gbps(wide.low_gbps)}, "
                   f"{wide.above} at ≥ {units.gbps(wide.high_gbps)})")
        if absolute == 0:
            return f"≥ {against}; {unknown}"
        return f"≥ {pct} % of link speed; {relative} of {n} pairs with an unknown link speed against {against}"
    if best is None:
        against = "the best pairs (none measured)"
    elif best.widened:
        against = (f"{whose} {units.gbps(best.rate_gbps)}, lowered to {units.gbps(best.mark_gbps)} by "
                   "their scatter")
    else:
        against = f"{whose} {units.gbps(best.rate_gbps)}"
    if absolute == 0:
        return f"≥ {pct} % of {against}; {unknown}"
    return f"≥ {pct} % of link speed; {relative} of {n} pairs with an unknown link speed against {pct} % of {against}"


def _untested_words(untested: list[PairResult]) -> str:
    reasons = list(dict.fromkeys(r.error or "could not run" for r in untested))
    return "; ".join(reasons[:3]) + (f"; … {len(reasons) - 3} more" if len(reasons) > 3 else "")


def _suspect_clause(s: NodeSummary, failing: list[PairResult]) -> str:
    theirs = [r for r in failing
              if (r.sender == s.node and s.suspect != RECEIVING) or (r.receiver == s.node and s.suspect != SENDING)]
    if theirs and all(not _measured(r) for r in theirs):
        return f"{s.node} (its tests did not run: {theirs[0].error or 'failed'})"

    def median_words(value: float | None) -> str:
        return "" if value is None else f", median {units.gbps(value)}"

    sends = f"{s.sends_failing} of {s.sends} sends fail{median_words(s.out_median_gbps)}"
    receives = f"{s.receives_failing} of {s.receives} receives fail{median_words(s.in_median_gbps)}"
    if s.suspect == SENDING:
        well = (f"; it receives at {units.gbps(s.in_median_gbps)}"
                if s.receives and s.in_median_gbps is not None and s.receives_failing == 0 else "")
        return f"{s.node} sends slowly ({sends}{well})"
    if s.suspect == RECEIVING:
        well = (f"; it sends at {units.gbps(s.out_median_gbps)}"
                if s.sends and s.out_median_gbps is not None and s.sends_failing == 0 else "")
        return f"{s.node} receives slowly ({receives}{well})"
    return f"{s.node} is slow both ways ({sends}; {receives})"


def _failure_text(failing: list[PairResult], suspects: list[NodeSummary], n: int, rule: str,
                  fabric: Sequence[FabricSuspect] = ()) -> str:
    k = len(failing)
    listing = f"{k} of {n} pairs {'fails' if k == 1 else 'fail'} (need {rule}): " + _listing(failing)
    if fabric:
        explained = {pair for f in fabric for pair in f.pairs}
        sentences = ["; ".join(f.text for f in fabric)]
        if suspects:
            sentences.append("suspect " + "; ".join(_suspect_clause(s, failing) for s in suspects))
        sentences.append(listing)
        unexplained = [r for r in failing if r.pair not in explained and not any(_explains(s, r) for s in suspects)]
        if unexplained:
            sentences.append("Not explained by the suspects: " + _listing(unexplained))
        return ". ".join(sentences)
    if not suspects:
        if k == 1:
            return listing + ". One failing pair cannot tell which end is at fault"
        if k == n:
            return (listing + ". Every pair fails and no node stands out — suspect what they all share "
                    "(a switch, an uplink, a setting on every node)")
        return listing + ". No node is to blame for the failing pairs — suspect the paths between them"
    blame = "suspect " + "; ".join(_suspect_clause(s, failing) for s in suspects)
    sentences = [blame, listing]
    unexplained = [r for r in failing if not any(_explains(s, r) for s in suspects)]
    if unexplained:
        sentences.append("Not explained by the suspects: " + _listing(unexplained))
    return ". ".join(sentences)


def _listing(results: list[PairResult], limit: int = 6) -> str:
    words = []
    for r in results[:limit]:
        if not _measured(r):
            words.append(f"{r.sender}→{r.receiver} failed ({r.error or 'no result'})")
        else:
            words.append(f"{r.sender}→{r.receiver} {units.gbps(r.gbps)}")
    if len(results) > limit:
        words.append(f"… {len(results) - limit} more")
    return ", ".join(words)
