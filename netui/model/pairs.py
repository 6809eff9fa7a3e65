"""Pairwise bandwidth tests: which pairs run together, on which ports, and the verdict.

Pure: no I/O, no clock. The runner (engine/) asks for rounds and ports, runs the tools,
turns each parsed result into a ``PairResult`` and asks ``judge`` for the ``Verdict``.

Scheduling is the circle method of round-robin tournaments: fix one node, rotate the
others one place per round; the two rows of the circle face each other. Every unordered
pair meets exactly once, in N−1 rounds for even N (N rounds for odd N, where the node
facing the empty seat sits the round out), and no node is in two tests of one round.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Pair = tuple[str, str]  # (sender, receiver)


# --- scheduling ------------------------------------------------------------------------------


def all_pairs_rounds(nodes: Sequence[str], *, directed: bool = False) -> list[list[Pair]]:
    """Rounds of disjoint ``(sender, receiver)`` pairs covering every pair of ``nodes``.

    Undirected: each unordered pair once, in N−1 rounds (N even) or N rounds (N odd);
    senders alternate so each node sends in about half of its tests. ``directed=True``
    adds every reverse direction as a second pass of the same rounds, reversed (2(N−1) or
    2N rounds). Both directions of a pair inside one round would put each node in two
    tests at once (client and server, TX and RX, two processes on its CPUs): that is a
    ``--bidir`` test, not two one-way ones. 2(N−1) is also the least possible: a round
    holds at most ⌊N/2⌋ tests and there are N(N−1) ordered pairs.

    Deterministic; node order is kept; duplicate names are dropped (first kept).
    """
    order = list(dict.fromkeys(nodes))
    if len(order) < 2:
        return []
    position = {node: i for i, node in enumerate(order)}
    seats: list[str | None] = order + ([None] if len(order) % 2 else [])
    n = len(seats)
    rounds: list[list[Pair]] = []
    for r in range(n - 1):
        # seat 0 stays, the others turn one place per round
        rest = seats[1:]
        ring = [seats[0]] + rest[len(rest) - r :] + rest[: len(rest) - r]
        round_pairs: list[Pair] = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is not None and b is not None:  # else: the sit-out seat of an odd count
                round_pairs.append(_oriented(a, b, position, len(order)))
        rounds.append(round_pairs)
    if directed:
        rounds += [[(b, a) for a, b in round_pairs] for round_pairs in rounds]
    return rounds


def _oriented(a: str, b: str, position: dict[str, int], count: int) -> Pair:
    """Who sends: node i sends to the next ⌊(N−1)/2⌋ nodes around the list, so every node
    sends in half of its tests (±1 for even N), not the first nodes in all of theirs."""
    i, j = position[a], position[b]
    d = (j - i) % count
    if d < count - d or (d == count - d and i < j):
        return (a, b)
    return (b, a)


def one_at_a_time(rounds: Iterable[Iterable[Pair]]) -> list[list[Pair]]:
    """Each pair its own round, in the same order (for nodes sharing an uplink)."""
    return [[pair] for round_pairs in rounds for pair in round_pairs]


class PortsExhausted(RuntimeError):
    """Every port of the allocator's range is in use on one of the nodes asked for."""


class PortAllocator:
    """Ports for concurrent tests: a port in use on a node is not handed out again for that
    node until released.

    A port is taken on every node given (both ends of a pair), so a node that is server in
    one test and client in another never meets the same port twice. The search starts
    after the last port handed out (wrapping to ``base``), so a port just released is not
    reused at once -- a server killed on timeout may not have let go of it yet.
    Deterministic: the same calls give the same ports.
    """

    def __init__(self, base: int = 5201, span: int = 200) -> None:
        if span < 1 or base < 1 or base + span - 1 > 65535:
            raise ValueError(f"bad port range {base}..{base + span - 1}")
        self.base = base
        self.span = span
        self._in_use: dict[str, set[int]] = {}
        self._next = 0  # offset where the next search starts

    def acquire(self, *nodes: str) -> int:
        """A port free on every one of ``nodes``, now marked in use on all of them."""
        for step in range(self.span):
            offset = (self._next + step) % self.span
            port = self.base + offset
            if all(port not in self._in_use.get(node, ()) for node in nodes):
                for node in nodes:
                    self._in_use.setdefault(node, set()).add(port)
                self._next = (offset + 1) % self.span
                return port
        last = self.base + self.span - 1
        raise PortsExhausted(f"no free port in {self.base}..{last} on {', '.join(nodes)}")

    def release(self, port: int, *nodes: str) -> None:
        """Give ``port`` back on ``nodes`` (a port not held is ignored)."""
        for node in nodes:
            self._in_use.get(node, set()).discard(port)

    def in_use(self, node: str) -> frozenset[int]:
        return frozenset(self._in_use.get(node, ()))


# --- results and verdict ---------------------------------------------------------------------


@dataclass(frozen=True)
class PairResult:
    """One one-way test between two nodes. ``gbps`` is Gbit/s (10^9 bit/s) of goodput.

    ``ok`` False means the run failed (``error`` holds the tool's words); a run that ran
    but was slow is ``ok`` True and fails only in the verdict. ``counters`` holds what the
    runner measured on both ends during the test (deltas, e.g. ``{"node1.retrans": 12}``).
    """

    sender: str
    receiver: str
    tool: str  # "iperf3", "ib_write_bw"
    gbps: float | None
    ok: bool
    error: str | None = None
    retransmits: int | None = None
    kind: str | None = None  # the parser's failure kind ("refused", "no-device", ...)
    counters: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def pair(self) -> Pair:
        return (self.sender, self.receiver)

    @classmethod
    def of(cls, sender: str, receiver: str, tool: str, measured: Any) -> PairResult:
        """From a parsed ``Iperf3Result`` or ``PerftestResult`` (anything with ``ok``,
        ``error``, ``gbps`` and optionally ``kind`` and ``retransmits``)."""
        return cls(
            sender,
            receiver,
            tool,
            gbps=measured.gbps,
            ok=bool(measured.ok),
            error=measured.error,
            retransmits=getattr(measured, "retransmits", None),
            kind=getattr(measured, "kind", None),
        )


# robust outliers: |x − median| / (1.4826 · MAD) above this (Iglewicz and Hoaglin's 3.5)
OUTLIER_Z = 3.5
# ... with the spread never taken below this share of the median, so that near-identical
# results (MAD ≈ 0) do not make every small wobble an outlier
OUTLIER_MIN_SPREAD = 0.05


@dataclass(frozen=True)
class Verdict:
    """The judgement of a set of pair results.

    ``required_gbps`` maps each judged pair to the Gbit/s it needed (None for failed runs);
    ``outliers`` are the results far from the median (either way), pass or fail;
    ``suspects`` the nodes the failures point to, most implicated first.
    """

    passed: bool
    failing: list[PairResult]
    suspects: list[str]
    text: str
    results: list[PairResult] = field(default_factory=list)
    outliers: list[PairResult] = field(default_factory=list)
    median_gbps: float | None = None
    required_gbps: dict[Pair, float | None] = field(default_factory=dict)

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


def _fmt(gbps: float) -> str:
    return f"{gbps:#.3g}" if gbps < 10 else f"{gbps:.1f}"


def _pct(value: float) -> str:
    return f"{value:g}"


def _speed(link_speed_mbps: Mapping[str, int | None], node: str) -> float | None:
    """Mbit/s, or None when unknown (missing, None, or the -1/0 of a link that is down)."""
    speed = link_speed_mbps.get(node)
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not speed > 0:
        return None
    return speed


def _outliers(results: list[PairResult], median: float | None) -> list[PairResult]:
    measured = [r for r in results if r.ok and r.gbps is not None]
    if median is None or len(measured) < 3:
        return []
    mad = statistics.median(abs(r.gbps - median) for r in measured)
    spread = max(1.4826 * mad, OUTLIER_MIN_SPREAD * median)
    if spread <= 0:
        return []
    return [r for r in measured if abs(r.gbps - median) / spread > OUTLIER_Z]


def _suspects(failing: list[PairResult]) -> list[tuple[str, int]]:
    """Nodes that explain the failing pairs, with how many failing pairs each is in.

    Greedy cover: take the node in the most not-yet-explained failing pairs, as long as it
    explains at least two (one failing pair cannot tell its ends apart); ties go to the
    node in more failing pairs overall, then to name order.
    """
    pairs = [frozenset(r.pair) for r in failing]
    total = {node: sum(node in p for p in pairs) for p in pairs for node in p}
    left = list(pairs)
    chosen: list[tuple[str, int]] = []
    while left:
        cover = {node: sum(node in p for p in left) for p in left for node in p}
        node = min(cover, key=lambda n: (-cover[n], -total[n], n))
        if cover[node] < 2:
            break
        chosen.append((node, total[node]))
        left = [p for p in left if node not in p]
    return chosen


def _names(nodes: list[str]) -> str:
    return nodes[0] if len(nodes) == 1 else ", ".join(nodes[:-1]) + " and " + nodes[-1]


def _implicated(suspects: list[tuple[str, int]], k: int) -> str:
    """"gpu02 and gpu03 are each in 3 of 4 failing pairs", or one clause per suspect when their
    counts differ. Shared with the latency verdict (model/latency.py)."""
    nodes = [node for node, _ in suspects]
    counts = {count for _, count in suspects}
    if len(suspects) > 1 and len(counts) == 1:
        return f"{_names(nodes)} are each in {counts.pop()} of {k} failing pairs"
    return ", ".join(f"{node} is in {count} of {k} failing pairs" for node, count in suspects)


def judge(
    results: Iterable[PairResult],
    *,
    threshold_gbps: float | None = None,
    threshold_percent: float = 90.0,
    link_speed_mbps: Mapping[str, int | None] | None = None,
) -> Verdict:
    """Pass or fail each pair, find outliers and suspects, and word the verdict.

    A pair passes when its run succeeded and its Gbit/s is ≥ ``threshold_gbps`` when
    given; otherwise ≥ ``threshold_percent`` % of the slower end's link speed
    (``link_speed_mbps``, Mbit/s as /sys/class/net/*/speed gives it); when either end's
    speed is unknown, ≥ ``threshold_percent`` % of the median of all measured pairs (the
    text says so). The median rule needs the bad pairs to be fewer than half: with three
    nodes and one bad, give link speeds or an absolute threshold. Failed runs fail.
    """
    results = list(results)
    speeds = link_speed_mbps or {}
    share = threshold_percent / 100.0
    measured = [r.gbps for r in results if r.ok and r.gbps is not None]
    median = statistics.median(measured) if measured else None

    required: dict[Pair, float | None] = {}
    failing: list[PairResult] = []
    by_speed = by_median = 0
    for r in results:
        need: float | None
        if threshold_gbps is not None:
            need = threshold_gbps
        else:
            a, b = _speed(speeds, r.sender), _speed(speeds, r.receiver)
            if a is not None and b is not None:
                need = share * min(a, b) / 1000.0
                by_speed += 1
            else:
                need = None if median is None else share * median
                by_median += 1
        if not r.ok or r.gbps is None:
            required[r.pair] = None
            failing.append(r)
            continue
        required[r.pair] = need
        if need is not None and r.gbps < need:
            failing.append(r)

    outliers = _outliers(results, median)
    suspects = _suspects(failing)

    if threshold_gbps is not None:
        rule = f"≥ {_pct(threshold_gbps)} Gbit/s"
    elif by_median == 0:
        rule = f"≥ {_pct(threshold_percent)} % of link speed"
    else:
        median_words = "no pair measured" if median is None else f"the median {_fmt(median)} Gbit/s"
        if by_speed == 0 and len(results) == 1:  # the median of one pair is that pair
            rule = "link speeds unknown and no other pair to compare with: --threshold-gbps sets a pass mark"
        elif by_speed == 0:
            rule = f"≥ {_pct(threshold_percent)} % of {median_words}; link speeds unknown"
        else:
            rule = (
                f"≥ {_pct(threshold_percent)} % of link speed; {by_median} pairs with an unknown "
                f"link speed against {_pct(threshold_percent)} % of {median_words}"
            )

    n = len(results)
    if not results:
        text = "no pair was tested"
    elif not failing:
        text = f"{'the pair passes' if n == 1 else f'all {n} pairs pass'} ({rule})"
        low = [r for r in outliers if r.gbps is not None and median is not None and r.gbps < median]
        if low:
            shown = ", ".join(f"{r.sender}→{r.receiver} {_fmt(r.gbps)} Gbit/s" for r in low[:3])
            text += f"; low outliers against the median {_fmt(median)} Gbit/s: {shown}"
    else:
        text = _failure_text(failing, suspects, n, rule)

    return Verdict(
        passed=bool(results) and not failing,
        failing=failing,
        suspects=[node for node, _ in suspects],
        text=text,
        results=results,
        outliers=outliers,
        median_gbps=median,
        required_gbps=required,
    )


def _failure_text(failing: list[PairResult], suspects: list[tuple[str, int]], n: int, rule: str) -> str:
    k = len(failing)
    listing = f"{k} of {n} pairs {'fails' if k == 1 else 'fail'} (need {rule}): " + _listing(failing)
    if not suspects:
        if k == 1:
            return listing + ". One failing pair cannot tell which end is at fault"
        return listing + ". No node is common to the failing pairs — suspect the paths between them"
    nodes = [node for node, _ in suspects]
    implicated = _implicated(suspects, k)
    theirs = [r for r in failing if r.sender in nodes or r.receiver in nodes]
    if all(not r.ok or r.gbps is None for r in theirs):
        blame = f"suspect {_names(nodes)} (the tests did not run: {theirs[0].error or 'failed'})"
    elif len(nodes) == 1:
        blame = f"suspect {nodes[0]}'s link"
    else:
        blame = f"suspect the links of {_names(nodes)}"
    sentences = [f"{implicated} — {blame}", listing]
    unexplained = [r for r in failing if r.sender not in nodes and r.receiver not in nodes]
    if unexplained:
        sentences.append("Not explained by the suspects: " + _listing(unexplained))
    return ". ".join(sentences)


def _listing(results: list[PairResult], limit: int = 6) -> str:
    words = []
    for r in results[:limit]:
        if not r.ok or r.gbps is None:
            words.append(f"{r.sender}→{r.receiver} failed ({r.error or 'no result'})")
        else:
            words.append(f"{r.sender}→{r.receiver} {_fmt(r.gbps)} Gbit/s")
    if len(results) > limit:
        words.append(f"… {len(results) - limit} more")
    return ", ".join(words)
