"""Latency between nodes: one result per (sender, receiver), and the verdict.

Pure: no I/O, no clock. The runner (checks/latency/runner.py) parses ping or fping output
(checks/latency/parse_ping.py) and turns it into ``LatencyResult``s here; ``judge_latency`` words the
verdict the way the bandwidth verdict does (``checks.pairs.model``), naming a suspect node.

RTTs are milliseconds, round trip, as the tools print them. Percentiles are nearest-rank
over the replies (the p99 of 20 replies is the slowest one: say so rather than interpolate).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from netui import checks
from netui.checks.pairs.model import Pair, _names, _pct
from netui.model.text import safe_fields

# An RTT is an outlier only when it is also this much above the baseline: on a quiet fabric
# RTTs of 20-60 µs wobble by tens of µs, and 5× 20 µs is still nothing to chase.
RTT_MIN_EXCESS_MS = 0.2

PASS, FAIL, UNTESTED = checks.PASS, checks.FAIL, checks.UNTESTED


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``; None when there are none."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class LatencyResult:
    """Probes from ``sender`` to ``receiver`` (round trip). Milliseconds; None when unknown.

    ``ok`` False: the probes could not be sent or counted (``error`` holds the tool's words);
    a run where nothing came back is ``ok`` True with 100 % loss and fails in the verdict.
    ``rtt_*`` come from the replies' RTTs; without per-reply RTTs (``ping -q``) avg, min
    and max come from the tool's summary and p50/p99 stay None.
    """

    sender: str
    receiver: str
    tool: str  # "fping", "ping", "busybox ping"
    ok: bool
    sent: int = 0
    received: int = 0
    loss_percent: float | None = None
    rtt_avg_ms: float | None = None
    rtt_p50_ms: float | None = None
    rtt_p99_ms: float | None = None
    rtt_min_ms: float | None = None
    rtt_max_ms: float | None = None
    error: str | None = None
    kind: str | None = None

    def __post_init__(self) -> None:
        safe_fields(self)  # a tool's words, or a report read back from a file: shown, never obeyed
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def pair(self) -> Pair:
        return (self.sender, self.receiver)

    @property
    def measured(self) -> bool:
        """Whether there is an RTT to show."""
        return self.ok and self.rtt_avg_ms is not None

    @property
    def typical_ms(self) -> float | None:
        """The RTT the verdict judges: the median reply (one slow reply in 20 -- a busy
        CPU, a scheduling hiccup -- moves the average, not the median); the average when
        there are no per-reply RTTs."""
        if not self.ok:
            return None
        return self.rtt_p50_ms if self.rtt_p50_ms is not None else self.rtt_avg_ms

    @classmethod
    def of(cls, sender: str, receiver: str, parsed: Any) -> LatencyResult:
        """From a parsed ``PingOutput`` (checks/latency/parse_ping.py)."""
        if not parsed.counted:
            return cls(sender, receiver, parsed.tool, False, error=parsed.error or "no result", kind=parsed.kind)
        rtts = list(parsed.rtts_ms)
        if rtts:
            avg, low, high = sum(rtts) / len(rtts), min(rtts), max(rtts)
            p50, p99 = percentile(rtts, 50), percentile(rtts, 99)
        else:
            avg, low, high = parsed.summary_avg_ms, parsed.summary_min_ms, parsed.summary_max_ms
            p50 = p99 = None
        sent = parsed.sent or 0
        received = parsed.received if parsed.received is not None else len(rtts)
        loss = parsed.loss_percent
        if loss is None and sent:
            loss = 100.0 * (sent - received) / sent
        return cls(sender, receiver, parsed.tool, True, sent, received, loss, avg, p50, p99, low, high,
                   error=parsed.error, kind=parsed.kind)

    @classmethod
    def failed(cls, sender: str, receiver: str, tool: str, error: str, kind: str = "error") -> LatencyResult:
        return cls(sender, receiver, tool, False, error=error, kind=kind)


@dataclass(frozen=True)
class LatencyVerdict:
    """The judgement of a set of latency results.

    ``baseline_ms``: the typical RTT the outlier rule compares with (see ``judge_latency``);
    ``limit_ms``: the RTT above which a pair fails (None: no pair measured);
    ``reasons``: why each failing pair fails, in words; ``status``: "pass", "fail", or
    "untested" when no pair could be tested; ``untested``: the results whose probes could not
    be sent (kind "unavailable"), never judged and never blamed.
    """

    passed: bool
    failing: list[LatencyResult]
    suspects: list[str]
    text: str
    results: list[LatencyResult] = field(default_factory=list)
    outliers: list[LatencyResult] = field(default_factory=list)
    baseline_ms: float | None = None
    limit_ms: float | None = None
    reasons: dict[Pair, str] = field(default_factory=dict)
    status: str = "fail"
    untested: list[LatencyResult] = field(default_factory=list)
    untested_note: str = ""  # the end of ``text`` that counts the pairs not tested ("Not tested: 3 pairs (…)")

    @property
    def tested(self) -> frozenset[str]:
        """The nodes of the pairs judged (of ``results``, those not ``untested``)."""
        untested = {id(r) for r in self.untested}
        return frozenset(n for r in self.results if id(r) not in untested for n in r.pair)

    def matrix(self, nodes: Sequence[str]) -> list[list[float | None]]:
        """Average RTT (ms), row = sender, column = receiver; None where not measured."""
        index = {node: i for i, node in enumerate(nodes)}
        grid: list[list[float | None]] = [[None] * len(nodes) for _ in nodes]
        for r in self.results:
            i, j = index.get(r.sender), index.get(r.receiver)
            if i is not None and j is not None and i != j:
                grid[i][j] = r.rtt_avg_ms if r.measured else None
        return grid


def rtt_text(ms: float | None) -> str:
    """An RTT for people: "48 µs", "312 µs", "1.25 ms", "52.1 ms"; "—" when unknown."""
    if ms is None:
        return "—"
    if ms < 1.0:
        return f"{ms * 1000:.0f} µs"
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"


def baseline_rtt_ms(results: Iterable[LatencyResult]) -> float | None:
    """The median over nodes of each node's best (lowest) typical RTT, sent or received.

    Robust to one bad node even in small clusters: the bad node is in half of a 4-node
    matrix's pairs (a plain median would land between good and bad), but every other node
    has a good pair, so the bad node's best is the only high one.
    """
    best: dict[str, float] = {}
    for r in results:
        if r.typical_ms is not None:
            for node in r.pair:
                best[node] = min(best.get(node, math.inf), r.typical_ms)
    return statistics.median(best.values()) if best else None


# a result whose probes could not be sent at all (no ping or fping on the sender, the node
# unreachable over its connection): the pair is untested, and says nothing about the network
UNTESTED_KINDS = frozenset({"unavailable"})


def is_untested(r: LatencyResult) -> bool:
    """Whether ``r``'s probes could not be sent at all: a pair not tested, never a failure
    (known as soon as the result comes, before any verdict)."""
    return not r.ok and r.kind in UNTESTED_KINDS


def _suspects(failing: list[LatencyResult], passing: list[LatencyResult]) -> list[tuple[str, int]]:
    """Nodes that explain the failing pairs, with how many failing pairs each is in.

    Evidence, not a count: a node with a clean result (no loss, its RTT within the limit) is
    *cleared* -- a round trip to or from it came back whole, so its link works. The failing
    pairs' nodes that no clean result cleared are the suspects. When no result is clean there is
    nothing to compare with (every pair failing is a cause common to them all, or N-1 bad nodes
    of N, which the data cannot tell apart): no suspect. Failing pairs between two cleared nodes
    (an intermittent fault that let one pair through, or a path) are then covered greedily,
    a node counting only when it is in at least two of them (one pair cannot tell its ends
    apart); ties go to the node in more failing pairs overall, then to name order.
    """
    pairs = [frozenset(r.pair) for r in failing]
    if not pairs:
        return []
    cleared = {node for r in passing for node in r.pair}
    if not cleared:
        return []
    total = {node: sum(node in p for p in pairs) for p in pairs for node in p}
    chosen = sorted(((node, count) for node, count in total.items() if node not in cleared),
                    key=lambda nc: (-nc[1], nc[0]))
    named = {node for node, _ in chosen}
    left = [p for p in pairs if not p & named]
    while left:
        cover = {node: sum(node in p for p in left) for p in left for node in p}
        node = min(cover, key=lambda n: (-cover[n], -total[n], n))
        if cover[node] < 2:
            break
        chosen.append((node, total[node]))
        left = [p for p in left if node not in p]
    return chosen


def _implicated(suspects: list[tuple[str, int]], k: int) -> str:
    """"gpu02 and gpu03 are each in 3 of 4 failing pairs", or one clause per suspect when their
    counts differ."""
    nodes = [node for node, _ in suspects]
    counts = {count for _, count in suspects}
    if len(suspects) > 1 and len(counts) == 1:
        return f"{_names(nodes)} are each in {counts.pop()} of {k} failing pairs"
    return ", ".join(f"{node} is in {count} of {k} failing pairs" for node, count in suspects)


def judge_latency(results: Iterable[LatencyResult], *, max_loss_percent: float = 0.0, rtt_factor: float = 5.0,
                  threshold_ms: float | None = None) -> LatencyVerdict:
    """Pass or fail each pair, find outliers and suspects, and word the verdict.

    A pair fails when its probes could not run, when its loss is above
    ``max_loss_percent`` (default: any loss fails), or when its typical (median) RTT is
    above the limit: ``threshold_ms`` when given, else ``rtt_factor`` × the baseline (the median
    node's best RTT, ``baseline_rtt_ms``) and at least ``RTT_MIN_EXCESS_MS`` above it —
    an RTT outlier. Suspects are the failing pairs' nodes that no clean result clears
    (``_suspects``), counting each unordered pair once: both directions of one bad pair do not
    make a suspect. Pairs whose probes could not be sent (``UNTESTED_KINDS``) are not judged.
    """
    results = list(results)
    not_run = [r for r in results if is_untested(r)]
    tested = [r for r in results if not is_untested(r)]
    baseline = baseline_rtt_ms(tested)
    if threshold_ms is not None:
        limit = threshold_ms
        rule_rtt = f"RTT ≤ {rtt_text(threshold_ms)}"
    elif baseline is not None:
        limit = max(rtt_factor * baseline, baseline + RTT_MIN_EXCESS_MS)
        rule_rtt = f"RTT ≤ {_pct(rtt_factor)}× the typical {rtt_text(baseline)}"
    else:
        limit = None
        rule_rtt = "no RTT measured"
    rule = f"loss ≤ {_pct(max_loss_percent)} %, {rule_rtt}"

    failing: list[LatencyResult] = []
    outliers: list[LatencyResult] = []
    reasons: dict[Pair, str] = {}
    for r in tested:
        why = []
        if not r.ok:
            why.append(f"did not run ({r.error or 'no result'})")
        else:
            if r.loss_percent is not None and r.loss_percent > max_loss_percent:
                why.append(f"{_pct(round(r.loss_percent, 1))} % loss")
            typical = r.typical_ms
            if typical is not None and limit is not None and typical > limit:
                outliers.append(r)
                # the matrix shows the average: say which RTT failed when it is the median
                why.append(f"{'median ' if r.rtt_p50_ms is not None else ''}RTT {rtt_text(typical)}")
        if why:
            failing.append(r)
            reasons[r.pair] = ", ".join(why)

    unordered = list({frozenset(r.pair): r for r in failing}.values())
    failed = {id(r) for r in failing}
    suspects = _suspects(unordered, [r for r in tested if id(r) not in failed])
    n = len({frozenset(r.pair) for r in tested})  # a pair is two nodes, tested one way or both
    if not tested:
        text = "no pair was tested" + (f": {_untested_why(not_run)}" if not_run else "")
        status = UNTESTED
    elif not failing:
        text = f"{'the pair passes' if n == 1 else f'all {n} pairs pass'} ({rule})"
        status = PASS
    else:
        text = _failure_text(failing, unordered, suspects, n, rule, reasons)
        status = FAIL
    note = ""
    if not_run and tested:
        note = f"Not tested: {_untested_text(not_run)}"
        text += f". {note}"
    return LatencyVerdict(passed=status == PASS, failing=failing,
                          suspects=[node for node, _ in suspects], text=text, results=results, outliers=outliers,
                          baseline_ms=baseline, limit_ms=limit, reasons=reasons, status=status, untested=not_run,
                          untested_note=note)


def _untested_text(untested: list[LatencyResult]) -> str:
    """"3 pairs (node4: neither fping nor ping)": how many, and why, once per reason."""
    k = len({frozenset(r.pair) for r in untested})
    return f"{k} {'pair' if k == 1 else 'pairs'} ({_untested_why(untested)})"


def _untested_why(untested: list[LatencyResult]) -> str:
    return "; ".join(dict.fromkeys(r.error or "could not run" for r in untested))


def _listing(failing: list[LatencyResult], reasons: dict[Pair, str], limit: int = 6) -> str:
    words = [f"{r.sender}→{r.receiver} {reasons[r.pair]}" for r in failing[:limit]]
    if len(failing) > limit:
        words.append(f"… {len(failing) - limit} more")
    return ", ".join(words)


def _failure_text(failing: list[LatencyResult], unordered: list[LatencyResult], suspects: list[tuple[str, int]],
                  n: int, rule: str, reasons: dict[Pair, str]) -> str:
    k = len(unordered)
    listing = f"{k} of {n} pairs {'fails' if k == 1 else 'fail'} (need {rule}): " + _listing(failing, reasons)
    if not suspects:
        if len(unordered) == 1:
            return listing + ". One failing pair cannot tell which end is at fault"
        if k == n:
            return (listing + f". {'Both' if n == 2 else f'All {n}'} pairs fail alike, so no node can be singled out: "
                    "the cause is common to them (the network between them, a firewall, the tool), or on every node")
        return listing + ". No node is common to the failing pairs — suspect the paths between them"
    nodes = [node for node, _ in suspects]
    implicated = _implicated(suspects, k)
    theirs = [r for r in failing if r.sender in nodes or r.receiver in nodes]
    if all(not r.ok for r in theirs):
        blame = f"suspect {_names(nodes)} (the probes did not run: {theirs[0].error or 'failed'})"
    else:
        what = []
        if any(r.ok and r.loss_percent for r in theirs):
            what.append("loss")
        if any("RTT" in reasons[r.pair] for r in theirs):
            what.append("high RTT")
        kind = " and ".join(what) or "failures"
        blame = (f"suspect {nodes[0]}'s link ({kind})" if len(nodes) == 1
                 else f"suspect the links of {_names(nodes)} ({kind})")
    sentences = [f"{implicated} — {blame}", listing]
    unexplained = [r for r in failing if r.sender not in nodes and r.receiver not in nodes]
    if unexplained:
        sentences.append("Not explained by the suspects: " + _listing(unexplained, reasons))
    return ". ".join(sentences)
