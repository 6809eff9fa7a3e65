"""The short plank of the barrel: which node is holding the cluster back, in words.

Data-parallel training waits for the slowest all-reduce, so what matters is not whether a
node is busy but whether it is *unlike its busy peers*. The rules, as the README says them:

- **Only busy nodes are compared, only while the cluster is busy.** A node whose RX+TX is
  below the idle floor (10 Mbit/s) is idle and never a straggler: in a synchronous job a
  stalled node stalls everyone, so a node at 0 while the others move data is not in their
  traffic. The cluster is busy when at least ``min_nodes`` nodes are busy and their median
  RX+TX reaches the busy floor (100 Mbit/s); an idle fleet flags nobody. The host stack and
  RDMA are judged apart, each by its own totals.
- **Slow.** A node is a straggler when its throughput is below 25 % of the busy nodes'
  median, or below 50 % and 3.5 robust standard deviations (median and MAD) under it: one
  bad node cannot hide itself by dragging the mean, and a fleet uniformly slow flags nobody.
  While most busy nodes send and receive data (each direction at least ``symmetric_ratio``
  of the other; an all-reduce, a ring), TX is compared with TX and RX with RX. Otherwise the
  traffic is one-way (iperf3 pairs, a parameter server): a receiver's TX is only its ACKs,
  so each node's directions that carry data (a sender's TX, a receiver's RX) are compared
  with the median of all of them.
- **Excess.** Retransmits, drops, softirq load, pause frames or CNPs far above the busy
  nodes' median (3.5 robust σ) and bad in themselves. Retransmits count without the spurious
  ones, those the receivers' D-SACKs report as data they already had: they lost nothing.
- **Order.** The worst level first; a slow sender before the receivers it starves (the
  cause first), then excesses. One line per node: its throughput when that is low (what
  makes it a straggler), with its other findings after "also".
- **Tests.** The suspects a finished test names are stragglers too (the pair test's: metric
  "pairs", checks/pairs/verdict_stragglers.py), until a later test of that node clears them
  or the user does (``model.fleet``).

This is one interval's judgement. What the fleet shows is held over intervals, and the nodes
slowed only by a straggler are its victims rather than stragglers (``model.blame``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from itertools import repeat
from operator import attrgetter, sub
from statistics import median
from netui.model import units
from netui.model.health import DEFAULT_THRESHOLDS, Level
from netui.model.node import Node, NodeState
from netui.model.rates import TcpRates

# how bad an excess is in itself, to order stragglers (a slow link is at least a warning)
_METRIC_THRESHOLD = {"retrans": "retrans_ratio", "drops": "drops_per_s", "softirq": "softirq_percent",
                     "pause": "pause_per_s"}

MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution × this = its standard deviation
_SENDS, _RECEIVES, _EXCESS = 0, 1, 2  # the order of findings at one level
_NAMED_IDLE = 3  # idle nodes named in a reason; more are counted


@dataclass(frozen=True)
class StragglerRules:
    """When a node counts as a straggler. Units: bytes/s, ratios 0..1, percent."""

    busy_floor_bytes_per_s: float = 12.5e6  # 100 Mbit/s: the busy nodes' median RX+TX when the cluster works
    idle_floor_bytes_per_s: float = 1.25e6  # 10 Mbit/s RX+TX: below it a node is idle, never compared
    min_nodes: int = 3  # fewer busy peers cannot say who is odd
    robust_z: float = 3.5  # how many (robust) standard deviations from the median
    slow_fraction: float = 0.5  # and throughput below this fraction of the median
    far_fraction: float = 0.25  # below this fraction of the median: a straggler whatever the spread
    # (a 4-node lab has too few peers for a robust z to reach 3.5; a node at 9 % of the
    # median is the short plank all the same)
    # an excess is only worth saying when it is also bad in absolute terms
    min_retrans_ratio: float = 0.001
    min_out_segs_per_s: float = 100.0  # a ratio over fewer segments is noise (1 of 2 is 50 %)
    min_drops_per_s: float = 1.0
    min_softirq_percent: float = 50.0
    min_pause_per_s: float = 1.0
    min_cnp_per_s: float = 1.0
    # a node's smaller direction carries data (not only the ACKs of the larger one) when it is
    # at least this share of the larger: ACKs take ~2 % of the data they acknowledge (a
    # 66-byte ACK per two 1448-byte segments), far less with GRO. While at least half of the
    # busy nodes carry data both ways, RX and TX are judged apart (a ring at 3 Gbit/s with
    # one node's TX capped to 191 Mbit/s: that node is at 6 %)
    symmetric_ratio: float = 0.05
    # the hold (model/blame.py): a node becomes a straggler once it has been one in
    # ``flag_intervals`` of the last ``window_intervals`` intervals, and stops after
    # ``clear_intervals`` clean intervals in a row: a one-interval blip never shows, a real
    # cause shows within three intervals (two, when none misses), whatever rule names it
    flag_intervals: int = 2
    window_intervals: int = 3
    clear_intervals: int = 3
    # the wait for flows (model/blame.py): a node flagged for retransmits alone does not become
    # a straggler while a node its retransmits may go to, itself flagged (or its frame late),
    # has flows not read yet that may make it that node's victim; at most this many intervals
    # in a row (a node with over 128 sockets reads a new flow's rates up to 10 s after it opened)
    unread_intervals: int = 10
    # the victim rule: a node slow only in one direction, while another is slow both ways (or
    # on its own link), is that node's victim, "slowed by …", not a straggler
    victims: bool = True


# every metric a Straggler carries: each has its short words in the grid (ui/why.py)
METRICS = ("rx", "tx", "rdma_rx", "rdma_tx", "retrans", "drops", "softirq", "pause", "cnp", "pairs")
# each metric's value and median as a Straggler holds them: throughput in bytes per second
# (the JSON document gives it in bits, as every other rate there), retransmits as the ratio of
# segments, softirq as the percent of one CPU, the others as events per second
THROUGHPUT = frozenset(("rx", "tx", "rdma_rx", "rdma_tx", "pairs"))
METRIC_UNITS = {m: "bytes/s" for m in THROUGHPUT} | {"retrans": "ratio", "softirq": "percent",
                                                     "drops": "per_s", "pause": "per_s", "cnp": "per_s"}


@dataclass(frozen=True)
class Straggler:
    node: str
    metric: str  # one of METRICS
    value: float  # bytes/s for throughput and pairs; the metric's own unit for an excess
    median: float  # what it was compared with, in the same unit
    # "node3: TX 191 Mb/s, 6 % of the busy nodes' median 3.1 Gb/s (flagged below 25 %; all 4 busy)"
    reason: str
    # the numbers in short, for a status line: "node3: TX 191 Mb/s, 6 % of median 3.1 Gb/s"
    headline: str = ""
    # every throughput direction found slow this interval ("tx", "rx", "rdma_tx", "rdma_rx"),
    # and whether the traffic was two-way (TX judged with TX, RX with RX)
    slow: tuple[str, ...] = ()
    two_way: bool = False
    # a victim: the nodes whose slowness makes this one slow (model/blame.py); () for a straggler
    slowed_by: tuple[str, ...] = ()

    @property
    def cause(self) -> str | None:
        """"slowed by acc3" (or "slowed by acc3 or acc7") for a victim, None for a straggler."""
        if not self.slowed_by:
            return None
        named = " or ".join(self.slowed_by[:3]) + (" …" if len(self.slowed_by) > 3 else "")
        return f"slowed by {named}"

    @property
    def both_ways(self) -> bool:
        """Slow in both directions of one plane (host or RDMA), as a node on a slow link is."""
        slow = self.slow
        return ("tx" in slow and "rx" in slow) or ("rdma_tx" in slow and "rdma_rx" in slow)


@dataclass(frozen=True)
class _Finding:
    key: tuple  # sort key: the worst first
    straggler: Straggler
    short: str  # the finding without the node's name, for "also …"
    throughput: bool


def _spread(values: list[float], mid: float) -> float:
    """Robust standard deviation, never below 5 % of the median (a near-identical fleet
    must not flag a node for a 1 % difference)."""
    mad = median(list(map(abs, map(sub, values, repeat(mid))))) * MAD_TO_SIGMA  # (|v - mid|, in C)
    return max(mad, abs(mid) * 0.05, 1e-12)


def _pct(fraction: float) -> str:
    """"6 %", "0.9 %": a tenth under one percent (rounded as shown: 0.996 % is "1 %", not "1.0 %")."""
    value = fraction * 100
    return f"{value:.0f} %" if round(value, 1) >= 1 or value == 0 else f"{value:.1f} %"


def _who(busy: int, idle: list[str]) -> str:
    """Which nodes were compared, in words: "all 4 busy", "4 busy; node5, node6 idle, not compared"."""
    if not idle:
        return f"all {busy} busy"
    named = ", ".join(idle) if len(idle) <= _NAMED_IDLE else f"{len(idle)} nodes"
    return f"{busy} busy; {named} idle, not compared"


# the host stack and RDMA, each judged by its own totals: (prefix, RX of a summary, TX of it)
_PLANES = (("RDMA ", attrgetter("rdma_rx_bytes_per_s"), attrgetter("rdma_tx_bytes_per_s")),
           ("", attrgetter("rx_bytes_per_s"), attrgetter("tx_bytes_per_s")))


def find_stragglers(nodes: Iterable[Node], rules: StragglerRules | None = None) -> list[Straggler]:
    """Stragglers among the nodes that are up, worst first, one per node (the module's
    rules); [] while the cluster is idle. Throughput values are bytes/s."""
    rules = rules or StragglerRules()
    up_state = NodeState.UP  # read once: an Enum member read is slow on CPython 3.11
    up = [n for n in nodes if n.state is up_state and n.rates is not None]
    findings: list[_Finding] = []
    judged: dict[str, Node] = {}  # the nodes busy in a busy plane, in the order of ``up``
    sums = [n.summary for n in up]
    floor = rules.idle_floor_bytes_per_s
    # (every tick over the whole fleet: each plane's columns read in C, one list of totals,
    # and the busy nodes by position; a plane no node has, RDMA on most, ends at its columns)
    for prefix, rx_of, tx_of in _PLANES:
        rxs, txs = list(map(rx_of, sums)), list(map(tx_of, sums))
        if rxs.count(None) == len(rxs) and txs.count(None) == len(txs):
            continue
        totals = [(rx or 0.0) + (tx or 0.0) for rx, tx in zip(rxs, txs)]
        # (a node with no figure in this plane, RDMA on a host without it, is not in it: even
        # where a configuration sets the idle floor to 0)
        at = [i for i, total in enumerate(totals) if total >= floor and (rxs[i] is not None or txs[i] is not None)]
        if len(at) < rules.min_nodes or median([totals[i] for i in at]) < rules.busy_floor_bytes_per_s:
            continue
        busy = [(up[i], rxs[i], txs[i]) for i in at]
        judged.update((n.name, n) for n, _, _ in busy)
        idle = [up[i].name for i, total in enumerate(totals)
                if total < floor and (rxs[i] is not None or txs[i] is not None)]
        findings += _slow(prefix, busy, idle, rules)
    if not judged:
        return []
    peers = [n for n in up if n.name in judged]
    idle = [n.name for n in up if n.name not in judged]
    if len(peers) >= rules.min_nodes:
        findings += _excesses(peers, idle, rules)
    return _one_per_node(findings)


def _slow(prefix: str, busy: list[tuple[Node, float | None, float | None]], idle: list[str],
          rules: StragglerRules) -> list[_Finding]:
    """Throughput findings of one plane (host, or RDMA with ``prefix`` "RDMA ") over its busy
    nodes: TX with TX and RX with RX when the traffic is two-way, else every direction that
    carries data with all of them. An unknown rate (None: a counter went back) is not compared."""
    metric = "rdma_" if prefix else ""
    r = rules.symmetric_ratio  # min(rx, tx) >= r × max(rx, tx), both ways (r <= 1: one test each way)
    both_ways = len([1 for _, rx, tx in busy if (rx or 0.0) >= r * (tx or 0.0) and (tx or 0.0) >= r * (rx or 0.0)])
    who = _who(len(busy), idle)
    two_way = 2 * both_ways >= len(busy)
    if two_way:
        groups = [[(n, "tx", tx) for n, _, tx in busy if tx is not None],
                  [(n, "rx", rx) for n, rx, _ in busy if rx is not None]]
        median_words, how = "the busy nodes' median", ""
    else:
        pool = [(n, d, v) for n, rx, tx in busy for d, v in (("tx", tx), ("rx", rx))
                if v is not None and v > 0 and v >= rules.symmetric_ratio * max(rx or 0.0, tx or 0.0)]
        groups = [pool]
        median_words, how = "the busy nodes' median flow", "one-way traffic; "
    out: list[_Finding] = []
    for group in groups:
        values = [v for _, _, v in group]
        if len(values) < rules.min_nodes:
            continue
        mid = median(values)
        if mid <= 0:
            continue
        spread = _spread(values, mid)
        # only a value under the larger fraction of the median can be flagged: the rest (the
        # whole fleet, usually) are passed over in one comprehension, with some slack for
        # rounding; the test below is the exact one
        under = max(rules.far_fraction, rules.slow_fraction) * mid * (1 + 1e-9)
        for n, direction, v in [row for row in group if row[2] < under]:
            fraction = v / mid
            z = (mid - v) / spread
            if fraction < rules.far_fraction:
                rule = f"flagged below {_pct(rules.far_fraction)}"
            elif fraction < rules.slow_fraction and z >= rules.robust_z:
                rule = f"flagged: below {_pct(rules.slow_fraction)} and {z:.1f} σ under it"
            else:
                continue
            label = f"{prefix}{direction.upper()}"
            short = f"{label} {units.bits_per_s(v)}, {_pct(fraction)} of {median_words} {units.bits_per_s(mid)}"
            reason = f"{n.name}: {short} ({how}{rule}; {who})"
            headline = f"{n.name}: {label} {units.bits_per_s(v)}, {_pct(fraction)} of median {units.bits_per_s(mid)}"
            order = _SENDS if direction == "tx" else _RECEIVES
            out.append(_Finding((-int(Level.WARNING), order, round(fraction, 3), n.name),
                                Straggler(n.name, metric + direction, v, mid, reason, headline,
                                          (metric + direction,), two_way),
                                f"{label} {units.bits_per_s(v)} ({_pct(fraction)})", True))
    # a starved receiver: its slow senders are named first, and in its reason
    senders = [f.straggler.node for f in out if f.key[1] == _SENDS]
    if senders:
        cause = f"; {', '.join(senders[:2])}{' …' if len(senders) > 2 else ''} sending slowly may starve it"
        out = [f if f.key[1] == _SENDS or f.straggler.node in senders else
               _Finding(f.key, _with_reason(f.straggler, f.straggler.reason + cause), f.short, True) for f in out]
    return out


def _with_reason(s: Straggler, reason: str) -> Straggler:
    return replace(s, reason=reason)


def _excesses(peers: list[Node], idle: list[str], rules: StragglerRules) -> list[_Finding]:
    """Retransmits, drops, softirq, pause frames and CNPs far above the busy nodes' median."""
    who = _who(len(peers), idle)
    out: list[_Finding] = []

    def high(metric: str, label: str, column: list, floor: float, show, note=None) -> None:
        # note: the i-th peer → what its reason adds (read only for a node flagged)
        values = [v for v in column if v is not None]
        if len(values) < rules.min_nodes or max(values) < floor:  # none can be flagged (the usual)
            return
        mid = median(values)
        spread = _spread(values, mid)
        # only a value at the floor (under it: far above a clean fleet, but still harmless)
        # and near robust_z σ above the median can be flagged: the others are passed over in
        # one comprehension, with some slack for rounding; the test below is the exact one
        bar = mid + rules.robust_z * spread
        cut = max(floor, bar - abs(bar) * 1e-9)
        flagged = [i for i, v in enumerate(column) if v is not None and v >= cut]
        if not flagged:
            return
        # (the words of the median and the rule, once for every node flagged by them)
        median_words = show(mid)
        rule_words = f"vs the busy nodes' median {median_words} (flagged {rules.robust_z:g} σ above it; {who})"
        t = _METRIC_THRESHOLD.get(metric)
        for i in flagged:
            n, v = peers[i], column[i]
            if v < floor:
                continue
            z = (v - mid) / spread
            if z >= rules.robust_z:
                level = DEFAULT_THRESHOLDS[t].level(v) if t else Level.WARNING
                short = f"{label} {show(v)}"
                reason = f"{n.name}: {short} {rule_words}{note(i) if note else ''}"
                headline = f"{n.name}: {short} vs median {median_words}"
                out.append(_Finding((-int(level), _EXCESS, -min(z, 1e6), n.name),
                                    Straggler(n.name, metric, v, mid, reason, headline), short, False))

    sums = [n.summary for n in peers]
    least = rules.min_out_segs_per_s  # a ratio over fewer segments a second is not judged
    # a retransmit whose original the receiver already had (its D-SACK says so: veth and
    # multipath fabrics reorder) lost nothing: only the others say that a node's sending loses
    # (a ratio less its spurious retransmits is at most the ratio itself: where no node's reaches
    # the floor, as in a healthy fleet, no node's rates are looked at)
    floor = rules.min_retrans_ratio
    if any(r is not None and r >= floor for r in [s.retrans_ratio for s in sums]):
        tcps = [None if n.rates is None or n.rates.tcp is None or n.rates.tcp.out_segs_per_s is None
                or n.rates.tcp.out_segs_per_s < least else n.rates.tcp for n in peers]
        high("retrans", "TCP retransmits", [None if t is None else t.lost_ratio for t in tcps],
             floor, units.ratio_percent, lambda i: _spurious_words(tcps[i]))
    high("drops", "drops", [s.drops_per_s for s in sums], rules.min_drops_per_s, lambda v: f"{units.per_s(v)}/s")
    high("softirq", "softirq", [s.hottest_softirq_percent for s in sums], rules.min_softirq_percent,
         lambda v: units.percent(v))
    high("pause", "pause frames", [s.pause_per_s for s in sums], rules.min_pause_per_s,
         lambda v: f"{units.per_s(v)}/s")
    high("cnp", "CNPs", [s.cnp_per_s for s in sums], rules.min_cnp_per_s, lambda v: f"{units.per_s(v)}/s")
    return out


def _spurious_words(tcp: TcpRates | None) -> str:
    """What a retransmit finding adds when D-SACKs showed some retransmits spurious (the
    reason then says why its ratio is below the node's Retr%), else ""."""
    if tcp is None or not tcp.out_segs_per_s or tcp.spurious_segs_per_s <= 0:
        return ""
    spurious = tcp.spurious_segs_per_s / tcp.out_segs_per_s
    return f"; {units.ratio_percent(spurious)} more were spurious (D-SACK), not counted"


def _one_per_node(findings: list[_Finding]) -> list[Straggler]:
    """One straggler per node: its throughput finding when it has one (what makes it the
    short plank), else its worst; the others after "also". Nodes ordered by their worst."""
    by_node: dict[str, list[_Finding]] = {}
    for f in sorted(findings, key=lambda f: f.key):
        by_node.setdefault(f.straggler.node, []).append(f)
    out = []
    for node_findings in by_node.values():  # in the order of each node's worst finding
        lead = next((f for f in node_findings if f.throughput), node_findings[0])
        rest = [f.short for f in node_findings if f is not lead]
        s = lead.straggler
        slow = tuple(f.straggler.metric for f in node_findings if f.throughput)
        if len(slow) > 1:
            s = replace(s, slow=slow, two_way=all(f.straggler.two_way for f in node_findings if f.throughput))
        out.append(_with_reason(s, s.reason + "; also " + ", ".join(rest)) if rest else s)
    return out
