"""A node as netui knows it: connection state, last sample, rates, summary, health, history.

No I/O here: collectors hand samples to ``Node.observe``; transports report failures with
``Node.fail``. Everything the UI and the JSON output show about a node comes from this.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from operator import add

from netui.model import units
from netui.model.health import DEFAULT_THRESHOLDS, HEALTHY, Finding, Health, Level, Threshold, assess
from netui.model.history import RateRing, Ring, capacity_for
from netui.model.rates import NodeRates, node_rates
from netui.model.samples import SOFTWARE_KINDS, InterfaceSample, NodeSample

HIDDEN_KINDS = SOFTWARE_KINDS


class NodeState(str, Enum):
    CONNECTING = "connecting"
    UP = "up"
    STALE = "stale"
    DOWN = "down"
    AUTH_FAILED = "auth failed"
    HOST_KEY_UNKNOWN = "host key unknown"
    HOST_KEY_CHANGED = "host key changed"
    UNSUPPORTED = "unsupported"
    PARSE_ERROR = "parse error"

    @property
    def healthy(self) -> bool:
        return self is NodeState.UP


def is_hidden(iface: InterfaceSample) -> bool:
    """Loopback and software devices (veth, bridges, docker, ifb, ...) are hidden by default."""
    return iface.kind in HIDDEN_KINDS or (iface.kind is None and iface.name == "lo")


def data_plane(interfaces: dict[str, InterfaceSample]) -> list[str]:
    """Names of the interfaces that carry the node's traffic, as the summary counts them.

    The non-hidden ones; when a node has none (a container or a lab node with only a veth),
    every interface but loopback.
    """
    names = [n for n, s in interfaces.items() if not is_hidden(s)]
    if not names:
        names = [n for n, s in interfaces.items() if s.kind != "loopback" and n != "lo"]
    return sorted(names)


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """One row of the cluster grid: the node's data-plane totals for the last interval."""

    rx_bytes_per_s: float | None = None
    tx_bytes_per_s: float | None = None
    drops_per_s: float | None = None
    errors_per_s: float | None = None
    retrans_segs_per_s: float | None = None
    retrans_ratio: float | None = None
    hottest_cpu: int | None = None
    hottest_softirq_percent: float | None = None
    net_rx_per_s: float | None = None
    softnet_drops_per_s: float | None = None
    time_squeeze_per_s: float | None = None
    max_link_percent: float | None = None


def _sum(values) -> float | None:
    """Sum of the known values; None when none is known."""
    total = None
    for v in values:
        if v is not None:
            total = v if total is None else total + v
    return total


def _sum_col(values: tuple) -> float | None:
    """``_sum`` of a column, in C when every value is known (the common case)."""
    if values and None not in values:
        return sum(values)
    return _sum(values)


def _pair(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


def _pairs(a: tuple, b: tuple) -> list:
    """``_pair`` element by element."""
    if None in a or None in b:
        return list(map(_pair, a, b))
    return list(map(add, a, b))


def careful_bounds(thresholds: dict[str, Threshold] | None) -> dict[str, float]:
    """The lowest level that is not ok, per metric: findings below it are not even made."""
    merged = DEFAULT_THRESHOLDS if not thresholds else DEFAULT_THRESHOLDS | thresholds
    return {k: t.careful for k, t in merged.items()}


_DEFAULT_CAREFUL = careful_bounds(None)


def summarize(sample: NodeSample, rates: NodeRates | None,
              careful: dict[str, float] | None = None) -> tuple[NodeSummary, list[Finding]]:
    """The grid row, and the findings of one interval that cross a ``careful`` bound.

    Healthy metrics make no finding at all: at a thousand nodes a second, the common case
    must cost nothing.
    """
    if rates is None:
        return NodeSummary(), []
    careful = careful or _DEFAULT_CAREFUL
    findings: list[Finding] = []
    c_drops, c_errs, c_link = careful["drops_per_s"], careful["errors_per_s"], careful["link_percent"]
    rx = tx = drops_total = errs_total = link_max = None
    get = rates.interfaces.get
    rows = [r for r in map(get, data_plane(sample.interfaces)) if r is not None]
    if rows:
        _, rxs, txs, _, _, rxd, txd, rxe, txe, speeds = zip(*rows)
        rx, tx = _sum_col(rxs), _sum_col(txs)
        drops = _pairs(rxd, txd)
        errs = _pairs(rxe, txe)
        drops_total, errs_total = _sum_col(drops), _sum_col(errs)
        for r, d, e, speed in zip(rows, drops, errs, speeds):
            if d is not None and d >= c_drops:
                findings.append(("drops_per_s", d, f"{r.name} drops {units.per_s(d)}/s"))
            if e is not None and e >= c_errs:
                findings.append(("errors_per_s", e, f"{r.name} errors {units.per_s(e)}/s"))
            if speed:
                link = r.link_percent
                if link is not None:
                    link_max = link if link_max is None else max(link_max, link)
                    if link >= c_link:
                        findings.append(("link_percent", link, f"{r.name} at {units.percent(link)} of link speed"))
    summary = dict(rx_bytes_per_s=rx, tx_bytes_per_s=tx, drops_per_s=drops_total, errors_per_s=errs_total,
                   max_link_percent=link_max)
    if rates.tcp is not None:
        ratio = rates.tcp.retrans_ratio
        summary["retrans_segs_per_s"] = rates.tcp.retrans_segs_per_s
        summary["retrans_ratio"] = ratio
        if ratio is not None and ratio >= careful["retrans_ratio"]:
            findings.append(("retrans_ratio", ratio, f"TCP retransmits {units.ratio_percent(ratio)} of segments"))
    if rates.cpu is not None:
        hot = rates.cpu.hottest()
        if hot is not None:
            summary["hottest_cpu"], summary["hottest_softirq_percent"] = hot
            if hot[1] >= careful["softirq_percent"]:
                findings.append(("softirq_percent", hot[1], f"CPU{hot[0]} {hot[1]:.0f}% in softirq"))
        summary["net_rx_per_s"] = _sum_col(rates.cpu.net_rx_per_s)
    if rates.softnet is not None:
        d = sum(rates.softnet.dropped_per_s)
        q = sum(rates.softnet.time_squeeze_per_s)
        summary["softnet_drops_per_s"], summary["time_squeeze_per_s"] = d, q
        if d >= careful["softnet_drops_per_s"]:
            findings.append(("softnet_drops_per_s", d, f"backlog drops {units.per_s(d)}/s"))
        if q >= careful["time_squeeze_per_s"]:
            findings.append(("time_squeeze_per_s", q, f"NET_RX squeezed {units.per_s(q)}/s"))
    return NodeSummary(**summary), findings


# Series kept per node (grid sparklines, node charts) and per interface.
NODE_SERIES = ("rx_bytes_per_s", "tx_bytes_per_s", "drops_per_s", "retrans_segs_per_s", "hottest_softirq_percent")


class Node:
    """Everything netui holds about one node. Mutated only by observe/fail/set_state."""

    def __init__(self, name: str, *, history_s: float = 900.0, interval_s: float = 1.0,
                 thresholds: dict[str, Threshold] | None = None) -> None:
        self.name = name
        self.state = NodeState.CONNECTING
        self.error: str | None = None
        self.sample: NodeSample | None = None
        self.rates: NodeRates | None = None
        self.summary = NodeSummary()
        self.health: Health = HEALTHY
        self.thresholds = thresholds
        self._careful = careful_bounds(thresholds)
        self.samples_seen = 0
        self.straggler = None  # a model.straggler.Straggler while the fleet says so
        self._capacity = capacity_for(history_s, interval_s)
        self.history: dict[str, Ring] = {k: Ring(self._capacity) for k in NODE_SERIES}
        self.iface_history: dict[str, tuple[RateRing, RateRing]] = {}  # RX, TX bytes/s

    def observe(self, sample: NodeSample) -> None:
        """Take a new sample: compute rates against the previous one, update everything."""
        prev = self.sample
        self.rates = node_rates(prev, sample)
        self.sample = sample
        self.samples_seen += 1
        self.summary, findings = summarize(sample, self.rates, self._careful)
        self.health = assess(findings, self.thresholds)
        if sample.problems and not sample.interfaces and sample.cpu is None:
            self.state, self.error = NodeState.PARSE_ERROR, "; ".join(sample.problems)
            self.health = Health(Level.CRITICAL, (f"parse error: {self.error}",))
        else:
            self.state = NodeState.UP
            self.error = "; ".join(sample.problems) or None
        for key, ring in self.history.items():
            ring.append(getattr(self.summary, key))
        if self.rates is not None:
            for name, r in self.rates.interfaces.items():
                rings = self.iface_history.get(name)
                if rings is None:
                    rings = self.iface_history[name] = (RateRing(self._capacity), RateRing(self._capacity))
                rings[0].append(r.rx_bytes_per_s)
                rings[1].append(r.tx_bytes_per_s)
            for gone in self.iface_history.keys() - self.rates.interfaces.keys():
                del self.iface_history[gone]

    def fail(self, state: NodeState, reason: str) -> None:
        """The transport reports a failure; the last sample stays for display, rates go."""
        self.state = state
        self.error = reason
        self.rates = None
        self.summary = NodeSummary()
        self.health = Health(Level.CRITICAL, (f"{state.value}: {reason}",))

    def set_state(self, state: NodeState, reason: str | None = None) -> None:
        self.state = state
        self.error = reason
        if state is NodeState.STALE:
            self.health = Health(Level.WARNING, (f"stale: {reason or 'no recent sample'}",))

    @property
    def level(self) -> Level:
        if self.state is NodeState.UP:
            if self.straggler is not None:  # unlike its peers: at least a warning
                return max(self.health.level, Level.WARNING)
            return self.health.level
        if self.state in (NodeState.CONNECTING,):
            return Level.OK
        if self.state is NodeState.STALE:
            return Level.WARNING
        return Level.CRITICAL
