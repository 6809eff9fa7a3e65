"""The short plank of the barrel: which node is holding the cluster back, in words.

Data-parallel training waits for the slowest all-reduce, so what matters is not whether a
node is busy but whether it is *unlike its peers*. While the cluster is busy (median
throughput above a floor), a node is a straggler when its throughput (host stack, or RDMA
where the fleet has it) is far below the median, or when its retransmits, drops, softirq
load, pause frames or CNPs are far above it. "Far" is robust:
median and MAD (median absolute deviation), so one bad node cannot hide itself by
dragging the mean, and a fleet that is uniformly slow flags nobody.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

from netui.model import units
from netui.model.health import DEFAULT_THRESHOLDS, Level
from netui.model.node import Node, NodeState

# how bad an excess is in itself, to order stragglers (a slow link is at least a warning)
_METRIC_THRESHOLD = {"retrans": "retrans_ratio", "drops": "drops_per_s", "softirq": "softirq_percent",
                     "pause": "pause_per_s"}

MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution × this = its standard deviation


@dataclass(frozen=True)
class StragglerRules:
    """When a node counts as a straggler. Units: bytes/s, ratios 0..1, percent."""

    busy_floor_bytes_per_s: float = 12.5e6  # 100 Mbit/s median RX+TX: the cluster is working
    min_nodes: int = 3  # fewer peers cannot say who is odd
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
    # RX and TX are judged apart only when the cluster's traffic is two-way (an all-reduce:
    # every node sends about what it receives); with one-way flows (a parameter server, an
    # iperf3 pair) a receiver's low TX says nothing, and only RX+TX is compared
    symmetric_ratio: float = 0.5


@dataclass(frozen=True)
class Straggler:
    node: str
    # "rx", "tx", "total", "rdma_rx", "rdma_tx", "retrans", "drops", "softirq", "pause", "cnp"
    metric: str
    value: float
    median: float
    reason: str  # "node07: RX 11 Gb/s vs cluster median 92 Gb/s (12 %)"


def _retrans_ratio(n: Node, min_out_segs_per_s: float) -> float | None:
    """The node's retransmit ratio, or None while it sends too few segments to tell."""
    tcp = n.rates.tcp if n.rates is not None else None
    if tcp is None or tcp.out_segs_per_s is None or tcp.out_segs_per_s < min_out_segs_per_s:
        return None
    return n.summary.retrans_ratio


def _spread(values: list[float], mid: float) -> float:
    """Robust standard deviation, never below 5 % of the median (a near-identical fleet
    must not flag a node for a 1 % difference)."""
    mad = median(abs(v - mid) for v in values) * MAD_TO_SIGMA
    return max(mad, abs(mid) * 0.05, 1e-12)


def find_stragglers(nodes: Iterable[Node], rules: StragglerRules | None = None) -> list[Straggler]:
    """Stragglers among the nodes that are up, worst first; [] while the cluster is idle."""
    rules = rules or StragglerRules()
    up = [n for n in nodes if n.state is NodeState.UP and n.rates is not None]
    if len(up) < rules.min_nodes:
        return []
    found: list[tuple[tuple, Straggler]] = []

    def severity(metric: str, value: float, z: float, fraction: float | None = None) -> tuple:
        """Order: the worst level first; then slow links (the lowest share of the median
        first, a slow TX before the RX it starves), then excesses by distance."""
        t = _METRIC_THRESHOLD.get(metric)
        level = DEFAULT_THRESHOLDS[t].level(value) if t else Level.WARNING
        if fraction is not None:
            return (-int(level), 0, round(fraction, 2), metric != "tx")
        return (-int(level), 1, -min(z, 1e6), 0)

    def low(metric: str, label: str, column: list) -> None:
        values = [v for v in column if v is not None]
        if len(values) < rules.min_nodes:
            return
        mid = median(values)
        spread = _spread(values, mid)
        for n, v in zip(up, column):
            if v is None:
                continue
            z = (mid - v) / spread
            fraction = v / mid if mid else 1.0
            if fraction < rules.far_fraction or (z >= rules.robust_z and fraction < rules.slow_fraction):
                reason = (f"{n.name}: {label} {units.bits_per_s(v)} vs cluster median "
                          f"{units.bits_per_s(mid)} ({fraction * 100:.0f} %)")
                found.append((severity(metric, v, z, fraction), Straggler(n.name, metric, v, mid, reason)))

    def high(metric: str, label: str, column: list, floor: float, show) -> None:
        values = [v for v in column if v is not None]
        if len(values) < rules.min_nodes or max(values) < floor:  # none can be flagged (the usual)
            return
        mid = median(values)
        spread = _spread(values, mid)
        for n, v in zip(up, column):
            if v is None or v < floor:  # far above a clean fleet, but still harmless
                continue
            z = (v - mid) / spread
            if z >= rules.robust_z:
                reason = f"{n.name}: {label} {show(v)} vs cluster median {show(mid)}"
                found.append((severity(metric, v, z), Straggler(n.name, metric, v, mid, reason)))

    # each metric as a column over ``up`` (one pass over the nodes' summaries each)
    sums = [n.summary for n in up]
    floor = rules.busy_floor_bytes_per_s
    rdma_rx = [s.rdma_rx_bytes_per_s for s in sums]
    rdma_busy = [rx + (s.rdma_tx_bytes_per_s or 0.0) for rx, s in zip(rdma_rx, sums) if rx is not None]
    if len(rdma_busy) >= rules.min_nodes and median(rdma_busy) >= floor:
        low("rdma_rx", "RDMA RX", rdma_rx)
        low("rdma_tx", "RDMA TX", [s.rdma_tx_bytes_per_s for s in sums])
    rx = [s.rx_bytes_per_s for s in sums]
    tx = [s.tx_bytes_per_s for s in sums]
    if median((a or 0.0) + (b or 0.0) for a, b in zip(rx, tx)) >= floor:
        balance = [min(a or 0.0, b or 0.0) / max(a or 0.0, b or 0.0, 1e-9) for a, b in zip(rx, tx)]
        balance.sort()
        if balance[(3 * (len(balance) - 1)) // 4] >= rules.symmetric_ratio:
            low("rx", "RX", rx)
            low("tx", "TX", tx)
        else:
            low("total", "RX+TX", [None if a is None and b is None else (a or 0.0) + (b or 0.0) for a, b in zip(rx, tx)])
    high("retrans", "TCP retransmits", [_retrans_ratio(n, rules.min_out_segs_per_s) for n in up],
         rules.min_retrans_ratio, units.ratio_percent)
    high("drops", "drops", [s.drops_per_s for s in sums], rules.min_drops_per_s, lambda v: f"{units.per_s(v)}/s")
    high("softirq", "softirq", [s.hottest_softirq_percent for s in sums], rules.min_softirq_percent,
         lambda v: units.percent(v))
    high("pause", "pause frames", [s.pause_per_s for s in sums], rules.min_pause_per_s,
         lambda v: f"{units.per_s(v)}/s")
    high("cnp", "CNPs", [s.cnp_per_s for s in sums], rules.min_cnp_per_s, lambda v: f"{units.per_s(v)}/s")
    found.sort(key=lambda sz: sz[0])
    # one line per node: its strongest reason
    seen: set[str] = set()
    out = []
    for _, s in found:
        if s.node not in seen:
            seen.add(s.node)
            out.append(s)
    return out
