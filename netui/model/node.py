"""A node as netui knows it: connection state, last sample, rates, summary, health, history.

No I/O here: collectors hand samples to ``Node.observe``; transports report failures with
``Node.fail``. Everything the UI and the JSON output show about a node comes from this.
"""

from __future__ import annotations

import time as _time
from array import array
from collections.abc import Mapping
from dataclasses import replace
from enum import Enum
from operator import add, itemgetter
from typing import NamedTuple

from netui.model import units
from netui.model.flows import NodeFlows, flow_rates
from netui.model.fabric import (ROCE_LOSS_COUNTERS, FabricRates, FabricSample, PortKey, fabric_rates,
                                port_down, port_rates_health)
from netui.model.health import (DEFAULT_RULES, HEALTHY, Health, HealthRules, HeldHealth, Level, Reading, Threshold,
                                health_of, merged, rate)
from netui.model.history import IfaceHistory, NodeHistory, Ring, capacity_for, rows_after
from netui.model.limits import MAX_TIME_S, MIN_INTERVAL_S, U64_MAX
from netui.model.mesh import NODE as MESH_NODE, MeshSuspect, NodeMesh
from netui.model.rates import NodeRates, RatesTable, node_rates
from netui.speedups import column_stats, iface_totals
from netui.model.samples import (INTERFACE_COUNTER_NAMES, CounterMap, IfaceLayout, InterfaceSample, InterfaceTable,
                                 NodeSample, data_plane_rows, hidden)
from netui.model.text import safe_line

RETRYING = " (retrying in "  # how the collectors end a failure's reason while they wait to retry


def without_countdown(reason: str) -> str:
    """A failure's reason without the collector's "(retrying in N s)": in words that are
    written once and read later, a countdown never moves."""
    return reason.split(RETRYING, 1)[0]


LLDP_UNREAD = "not read"  # Node.lldp_state before the first read (collectors.lldp.STATE_UNREAD)


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
    IMPOSSIBLE = "impossible numbers"  # counters outside 0..2**64-1, a clock that hardly advanced: refused
    CONFIG_ERROR = "config error"  # the node's ssh_config cannot be used: never retried
    INTERNAL_ERROR = "internal error"  # netui's own bug judging this node's sample: that node's state, not the app's end

    # The categories of states, declared once (the sets below): every part of netui asks these.
    @property
    def healthy(self) -> bool:
        """Up: samples arrive."""
        return self is _UP

    @property
    def failed(self) -> bool:
        """A failure the transport reported (every state but up, connecting, stale): the node's
        rates are gone, its reason is in ``Node.error``, and no more waiting changes it (a
        retry may): a command that waits for nodes gives up on it."""
        return self in FAILED_STATES

    @property
    def reachable(self) -> bool:
        """Up or stale: connected, with a sample to show and a shell a check can use."""
        return self in REACHABLE_STATES

    @property
    def waiting(self) -> bool:
        """Connecting or stale: not failed, not up yet or not up any more (shown as a warning)."""
        return self in WAITING_STATES


# states and levels as module constants (a member read through its Enum class is several
# times slower than a global on CPython 3.11; these are read per node, per sample and tick)
_UP, _STALE, _CONNECTING = NodeState.UP, NodeState.STALE, NodeState.CONNECTING
LIVE_STATES = frozenset({_UP, _CONNECTING, _STALE})  # not failed: a state the transport sets as it is
FAILED_STATES = frozenset(NodeState) - LIVE_STATES
REACHABLE_STATES = frozenset({_UP, _STALE})
WAITING_STATES = frozenset({_CONNECTING, _STALE})
_IMPOSSIBLE, _PARSE_ERROR = NodeState.IMPOSSIBLE, NodeState.PARSE_ERROR
_OK, _WARNING, _CRITICAL = Level.OK, Level.WARNING, Level.CRITICAL


def is_hidden(iface: InterfaceSample) -> bool:
    """Loopback and software devices (veth, bridges, docker, ifb, ...) are hidden by default."""
    return hidden(iface.name, iface.kind)


def data_plane(interfaces: Mapping[str, InterfaceSample]) -> list[str]:
    """Names of the interfaces that carry the node's traffic, as the summary counts them,
    sorted (``samples.data_plane_rows``: the rule)."""
    if isinstance(interfaces, InterfaceTable):
        return list(interfaces.layout.data_plane_names)
    names = list(interfaces)
    return [names[i] for i in data_plane_rows(names, [s.kind for s in interfaces.values()])]


class NodeTotals(NamedTuple):
    """One row of the cluster grid: the node's data-plane totals for the last interval.

    A named tuple, not a dataclass: every node makes one per sample, and a frozen
    dataclass of 18 fields costs several times as much to build (bench_fleet)."""

    rx_bytes_per_s: float | None = None
    tx_bytes_per_s: float | None = None
    drops_per_s: float | None = None
    errors_per_s: float | None = None
    retrans_segs_per_s: float | None = None
    retrans_ratio: float | None = None  # ΔRetransSegs/ΔOutSegs, at most 1
    # whether the ratio counts for health: only over enough segments (HealthRules.retrans_min_segments)
    retrans_judged: bool | None = None
    hottest_cpu: int | None = None
    hottest_softirq_percent: float | None = None
    net_rx_per_s: float | None = None
    softnet_drops_per_s: float | None = None
    time_squeeze_per_s: float | None = None
    max_link_percent: float | None = None
    # the fabric (None when the node has no RDMA port, or the rate is unknown)
    rdma_rx_bytes_per_s: float | None = None
    rdma_tx_bytes_per_s: float | None = None
    rdma_errors_per_s: float | None = None  # IB error counters + xmit discards + RoCE loss counters
    cnp_per_s: float | None = None  # CNPs sent (np_cnp_sent) + handled (rp_cnp_handled)
    pause_per_s: float | None = None  # pause frames RX + TX on the RDMA netdevs (ethtool -S)


_NO_SUMMARY = NodeTotals()
_new_tuple = tuple.__new__
assert NodeTotals._fields[12:] == ("max_link_percent", "rdma_rx_bytes_per_s", "rdma_tx_bytes_per_s",
                                   "rdma_errors_per_s", "cnp_per_s", "pause_per_s")  # (summarize builds it so)


def _sum(values) -> float | None:
    """Sum of the known values; None when none is known."""
    total = None
    for v in values:
        if v is not None:
            total = v if total is None else total + v
    return total


def _sum_col(values: tuple) -> float | None:
    """``_sum`` of a column, in C when every value is known (the common case)."""
    if type(values) is array and values:  # a packed column holds no None
        return column_stats(values)[0] if values.typecode == "d" else sum(values)
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
    return {k: t.careful for k, t in merged(thresholds).items()}


_DEFAULT_CAREFUL = careful_bounds(None)
_CAREFUL_OF: dict[int, tuple[dict[str, Threshold], dict[str, float]]] = {}  # id(thresholds) → them, their bounds


def shared_careful_bounds(thresholds: dict[str, Threshold] | None) -> dict[str, float]:
    """``careful_bounds`` of ``thresholds``, one dict for every node given the same ones (a
    fleet's nodes share the configuration's: read at every sample, one dict stays in the
    CPU's caches where a thousand copies would not). Read only."""
    if thresholds is None:
        return _DEFAULT_CAREFUL
    known = _CAREFUL_OF.get(id(thresholds))
    if known is None or known[0] is not thresholds:
        if len(_CAREFUL_OF) >= 64:
            _CAREFUL_OF.clear()
        known = _CAREFUL_OF[id(thresholds)] = (thresholds, careful_bounds(thresholds))
    return known[1]


def summarize(sample: NodeSample, rates: NodeRates | None, careful: dict[str, float] | None = None,
              retrans_min_segments: int = DEFAULT_RULES.retrans_min_segments) -> tuple[NodeTotals, list[Reading]]:
    """The grid row, and the findings of one interval that cross a ``careful`` bound.

    Healthy metrics make no finding at all: at a thousand nodes a second, the common case
    must cost nothing. The TCP retransmit ratio makes one only over an interval in which the
    node sent at least ``retrans_min_segments`` segments (``retrans_judged``).
    """
    if rates is None:
        return _NO_SUMMARY, []
    careful = careful or _DEFAULT_CAREFUL
    findings: list[Reading] = []
    table = rates.interfaces
    if isinstance(table, RatesTable) and not table.unknown and table.layout is sample.interfaces.layout:
        rx, tx, drops, errors, link = _interface_totals(table, careful, findings)
    else:
        rx, tx, drops, errors, link = _interface_totals_by_row(sample, rates, careful, findings)
    retrans, ratio, judged, hot_cpu, hot_percent, net_rx, d, q = _host_totals(rates, careful, findings,
                                                                              retrans_min_segments)
    # (built as a tuple, its fabric columns None: a node's summary is made every second)
    return _new_tuple(NodeTotals, (rx, tx, drops, errors, retrans, ratio, judged, hot_cpu, hot_percent, net_rx, d, q,
                                   link, None, None, None, None, None)), findings


def _interface_totals(table: RatesTable, careful: dict[str, float], findings: list[Reading]) -> tuple:
    """The grid's interface columns (RX, TX, drops, errors, max link %) from a rates table
    with every rate known (the common case: sums and maxima over the data-plane rows,
    findings only past a careful bound)."""
    layout = table.layout
    rows = layout.data_plane
    if not rows:
        return None, None, None, None, None
    rx, tx, drops, errs, drops_max, errs_max, link_max = iface_totals(
        table.flat, layout.dp_rows, layout.link_idx, layout.link_speeds)
    names, v = layout.names, table.flat
    if drops_max >= careful["drops_per_s"]:
        for i in rows:
            d = v[i * 16 + 3] + v[i * 16 + 11]
            if d >= careful["drops_per_s"]:
                findings.append(("drops_per_s", d, f"{names[i]} drops {units.per_s(d)}/s"))
    if errs_max >= careful["errors_per_s"]:
        for i in rows:
            e = v[i * 16 + 2] + v[i * 16 + 10]
            if e >= careful["errors_per_s"]:
                findings.append(("errors_per_s", e, f"{names[i]} errors {units.per_s(e)}/s"))
    if link_max is not None and link_max >= careful["link_percent"]:
        for i, full in layout.link_rows:
            link = max(v[i * 16], v[i * 16 + 8]) / full * 100
            if link >= careful["link_percent"]:
                findings.append(("link_percent", link, f"{names[i]} at {units.percent(link)} of link speed"))
    return rx, tx, drops, errs, link_max


def _interface_totals_by_row(sample: NodeSample, rates: NodeRates, careful: dict[str, float],
                             findings: list[Reading]) -> tuple:
    """The grid's interface columns (as ``_interface_totals``), interface by interface
    (rates with unknowns in them)."""
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
    return rx, tx, drops_total, errs_total, link_max


def _host_totals(rates: NodeRates, careful: dict[str, float], findings: list[Reading],
                 retrans_min_segments: int) -> tuple:
    """The grid's TCP, softirq and softnet columns, in NodeTotals's order (retransmits/s,
    their ratio, whether it is judged, the hottest CPU and its softirq %, NET_RX/s, backlog
    drops/s, squeezes/s), and their findings."""
    retrans = ratio = judged = None
    if rates.tcp is not None:
        tcp = rates.tcp
        ratio = tcp.retrans_ratio
        retrans = tcp.retrans_segs_per_s
        if ratio is not None:
            # a ratio of a few segments is noise (3 of 2 on an idle node's SSH stream): shown, not judged
            judged = tcp.out_segs is not None and tcp.out_segs >= retrans_min_segments
            if judged and ratio >= careful["retrans_ratio"]:
                findings.append(("retrans_ratio", ratio, f"TCP retransmits {units.ratio_percent(ratio)} of segments"))
    # per CPU when the sample has the tables; else (or in the interval they start) the
    # remote sampler's sums
    sums = rates.cpu_sums
    hot = rates.hottest_cpu()
    if hot is not None:
        hot_cpu, hot_percent = hot
        if hot_percent >= careful["softirq_percent"]:
            findings.append(("softirq_percent", hot_percent, units.softirq(hot_percent, hot_cpu)))
    else:
        hot_cpu = hot_percent = None
    net_rx = _sum_col(rates.cpu.net_rx_per_s) if rates.cpu is not None else None
    if net_rx is None and sums is not None:
        net_rx = sums.net_rx_per_s
    if rates.softnet is not None:
        d = _sum_col(rates.softnet.dropped_per_s) or 0.0
        q = _sum_col(rates.softnet.time_squeeze_per_s) or 0.0
    elif sums is not None and sums.dropped_per_s is not None:
        d, q = sums.dropped_per_s, sums.time_squeeze_per_s or 0.0
    else:
        d = q = None
    if d is not None:
        if d >= careful["softnet_drops_per_s"]:
            findings.append(("softnet_drops_per_s", d, f"backlog drops {units.per_s(d)}/s"))
        if q >= careful["time_squeeze_per_s"]:
            findings.append(("time_squeeze_per_s", q, f"NET_RX squeezed {units.per_s(q)}/s"))
    return retrans, ratio, judged, hot_cpu, hot_percent, net_rx, d, q


def _bytes(bits: float | None) -> float | None:
    return None if bits is None else bits / 8


def fabric_summary(rates: FabricRates) -> dict[str, float | None]:
    """The grid's fabric columns from one interval's fabric rates (bytes/s, events/s)."""
    # hw_total: device-level hw_counters are shared by the HCA's ports, counted once
    loss = _sum(rates.hw_total(n) for n in ROCE_LOSS_COUNTERS) if rates.ports else None
    discards = _sum(r.discards_per_s for r in rates.ports.values()) if rates.ports else None
    return dict(
        rdma_rx_bytes_per_s=_bytes(rates.rx_bits_per_s) if rates.ports else None,
        rdma_tx_bytes_per_s=_bytes(rates.tx_bits_per_s) if rates.ports else None,
        rdma_errors_per_s=_sum((rates.errors_per_s, discards, loss)),
        cnp_per_s=_sum((rates.hw_total("np_cnp_sent"), rates.hw_total("rp_cnp_handled"))),
        pause_per_s=rates.pause_per_s,
    )


# an ethtool -S reading is carried to the samples between two readings (it runs every few
# seconds), but not for ever: a netdev that stopped answering is not shown with old counters
ETHTOOL_CARRY_S = 60.0


def carry_ethtool(prev: FabricSample | None, cur: FabricSample | None) -> FabricSample | None:
    """``cur`` with ``prev``'s ethtool reading when ``cur`` has none of its own."""
    if (cur is None or prev is None or cur.ethtool_mono_s is not None or prev.ethtool_mono_s is None
            or cur.boot_id != prev.boot_id or not 0 <= cur.mono_s - prev.ethtool_mono_s <= ETHTOOL_CARRY_S):
        return cur
    return replace(cur, pfc=prev.pfc, ethtool=prev.ethtool, ethtool_mono_s=prev.ethtool_mono_s)


_RX_TX = (0, 8)  # rx_bytes and tx_bytes in a row of InterfaceCounters

# Series kept per node (grid sparklines, node charts) and per interface.
NODE_SERIES = ("rx_bytes_per_s", "tx_bytes_per_s", "drops_per_s", "retrans_segs_per_s", "hottest_softirq_percent")
_node_row = itemgetter(*map(NodeTotals._fields.index, NODE_SERIES))  # a summary's NODE_SERIES, as a tuple


_PACKED = frozenset("QLIH")  # array typecodes of unsigned counters: in range by construction
_TCP_MIN = -(1 << 63)  # the Tcp pair holds MaxConn (-1), signed in the kernel
_SIGNED_OK = frozenset("QLIHq")  # array typecodes of the Tcp pair: within its range by construction
_CPU_COLUMNS = ("softirq", "total")
_SOFTIRQ_COLUMNS = ("net_rx", "net_tx")
_SOFTNET_COLUMNS = ("processed", "dropped", "time_squeeze")
_NOT_A_COUNTER = "is not a counter (0 to 2⁶⁴−1)"


def _bad_value(values, low: int = 0) -> object | None:
    """The first value of a counter column outside ``low``..2**64-1 (or not a number), or None."""
    if values is None or (type(values) is array and (values.typecode in _PACKED or
                                                     values.typecode == "q" and low == _TCP_MIN)):
        return None
    try:  # the common case, in C: every value an int in range (NaN is no counter a source makes)
        if not values or low <= min(values) and max(values) <= U64_MAX:
            return None
    except TypeError:
        pass
    for v in values:
        if not (type(v) is int or type(v) is float) or not low <= v <= U64_MAX:
            return v
    return None


def _is_packed(values) -> bool:
    """An array of unsigned integers (what the parsers make): in range by construction."""
    return type(values) is array and values.typecode in _PACKED


def _bad_column(part, columns: tuple[str, ...]) -> tuple[str, object] | None:
    """(column, value) of the first value of ``part``'s counter ``columns`` outside 64 bits."""
    for column in columns:
        values = getattr(part, column)
        if type(values) is array and values.typecode in _PACKED:  # (what the parsers make)
            continue
        bad = _bad_value(values)
        if bad is not None:
            return column, bad
    return None


def _shown(value: object) -> str:
    """A refused value in words: never a 300-digit number."""
    if type(value) is int and not -(10 ** 21) < value < 10 ** 21:
        return f"{float(value):.3g}" if abs(value) < 1e308 else f"a {len(str(abs(value)))}-digit number"
    return repr(value)[:40]


def refusal(prev: NodeSample | None, sample: NodeSample) -> tuple[NodeState, str] | None:
    """Why ``sample`` cannot be taken, as the node's state and its reason, or None.

    Clocks that are not times (NaN, infinite, beyond year 5138) are a parse error; counters
    outside 0..2**64-1 and a clock that advanced by less than MIN_INTERVAL_S since ``prev``
    are impossible numbers. Comparisons only, nothing allocated for a sample that is
    fine: packed u64 columns (what the parsers make) are in range by construction and are
    not looked at.
    """
    wall, mono = sample.wall_s, sample.mono_s
    if not -MAX_TIME_S <= wall <= MAX_TIME_S:  # (NaN too)
        return _PARSE_ERROR, f"node clock wall={_shown(wall)} is not a time"
    if not -MAX_TIME_S <= mono <= MAX_TIME_S:
        return _PARSE_ERROR, f"node clock mono={_shown(mono)} is not a time"
    table = sample.interfaces
    flat = table.flat
    if flat.typecode not in _PACKED:
        for i, v in enumerate(flat):
            if not 0 <= v <= U64_MAX:
                return _IMPOSSIBLE, f"{table.layout.names[i // 16]} {INTERFACE_COUNTER_NAMES[i % 16]} " \
                                    f"{_shown(v)} {_NOT_A_COUNTER}"
    tcp = sample.tcp
    if tcp is not None and not (type(tcp.tcp) is CounterMap and type(tcp.ext) is CounterMap and
                                tcp.tcp.values_.typecode in _SIGNED_OK and tcp.ext.values_.typecode in _PACKED):
        # (packed as the remote sampler's are: in range by construction)
        pair, ext = tcp.tcp, tcp.ext
        if type(pair) is CounterMap:
            bad = _bad_value(pair.values_, _TCP_MIN)
        else:  # a dict (/proc parsed here, node_exporter, a recording): min and max, in C
            values = pair.values()
            try:
                bad = None if not values or _TCP_MIN <= min(values) and max(values) <= U64_MAX else \
                    _bad_value(values, _TCP_MIN)
            except TypeError:
                bad = _bad_value(values, _TCP_MIN)
        if bad is None:
            bad = _bad_value(ext.values_ if type(ext) is CounterMap else ext.values())
        if bad is not None:
            return _IMPOSSIBLE, f"TCP counter {_shown(bad)} {_NOT_A_COUNTER}"
    cpu, softirqs, softnet = sample.cpu, sample.softirqs, sample.softnet
    found = None
    if cpu is not None and not (_is_packed(cpu.total) and _is_packed(cpu.softirq)):
        found = _bad_column(cpu, _CPU_COLUMNS)
    if found is None and softirqs is not None and not (_is_packed(softirqs.net_rx) and _is_packed(softirqs.net_tx)):
        found = _bad_column(softirqs, _SOFTIRQ_COLUMNS)
    if found is None and softnet is not None and not (_is_packed(softnet.processed) and _is_packed(softnet.dropped)
                                                      and _is_packed(softnet.time_squeeze)):
        found = _bad_column(softnet, _SOFTNET_COLUMNS)
    if found is not None:
        return _IMPOSSIBLE, f"CPU {found[0]} {_shown(found[1])} {_NOT_A_COUNTER}"
    # (the remote sampler's CPU sums are u64 as it packs them; one that is not makes an
    # unknown rate: model/rates.py)
    if prev is not None:
        dt = mono - prev.mono_s
        if 0 < dt < MIN_INTERVAL_S and (prev.boot_id is None or prev.boot_id == sample.boot_id):
            # (said without the advance itself: a reason that changed with every sample would be
            # a new state record in a recording each time)
            return _IMPOSSIBLE, (f"the node's clock advanced by less than {MIN_INTERVAL_S * 1000:g} ms between "
                                 "samples: no rate can be made of them")
    return None


class Node:
    """Everything netui holds about one node. Mutated only by observe/fail/set_state."""

    def __init__(self, name: str, *, history_s: float = 900.0, interval_s: float = 1.0,
                 thresholds: dict[str, Threshold] | None = None, rules: HealthRules = DEFAULT_RULES) -> None:
        self.name = name
        self.state = NodeState.CONNECTING
        self.error: str | None = None
        self.last_failure: tuple[NodeState, str] | None = None  # kept while a retry connects
        self.failed_at_s: float | None = None  # the wall clock of the last failure, when the transport said
        self.sample: NodeSample | None = None
        # of the sample, what the tick's pass over the fleet reads (model/peers.py
        # ``slower_links``): its interfaces' layout when in a table, and whether it has a
        # fabric part, kept here so that pass does not reach into a thousand samples
        self.iface_layout: IfaceLayout | None = None
        self.has_fabric = False
        self.rates: NodeRates | None = None
        self.summary = _NO_SUMMARY
        self.rules = rules
        self.held = HeldHealth(rules.hold_intervals)
        self.health: Health = HEALTHY  # what is shown: held, or the state the node is in
        self.interval_health: Health = HEALTHY  # the last interval's own judgement, not held
        self._rated: list | None = []  # the findings interval_health was made of (None: with ports down)
        self.thresholds = thresholds
        self._careful = shared_careful_bounds(thresholds)
        self.samples_seen = 0
        self.refused = 0  # samples refused for impossible numbers (``refusal``)
        self.straggler = None  # a model.straggler.Straggler while the fleet says so
        self.straggler_rank = 1 << 30  # its place among the fleet's stragglers (the first is 0)
        self.victim = None  # a Straggler with ``slowed_by``: slowed by a straggler (model/blame.py)
        self.slow_links: tuple[str, ...] = ()  # links slower than their peers' (model/peers.py), in words
        # the probe mesh (model/mesh.py), set by the fleet each tick: its pairs over the window
        # (None: the mesh is off, or the node is not up) and the held suspect that explains them
        self.mesh: NodeMesh | None = None
        self.mesh_suspect: MeshSuspect | None = None
        self.history_s = history_s
        self.interval_s = interval_s  # the interval the history is sized for (set_interval)
        self._capacity = capacity_for(history_s, interval_s)
        self._oversized = False  # a history table holds more rows than _capacity (set_interval)
        self._resize_due = False  # the interval changed: the history is sized at the next sample
        self.history = NodeHistory(self._capacity, NODE_SERIES)  # name → its column
        self.iface_history = IfaceHistory(self._capacity)  # name → (RX, TX) bytes/s
        self.fabric_rates: FabricRates | None = None
        self.flows: NodeFlows | None = None  # its TCP peers' rates (model/flows.py), None: no reading
        self._pfc_mono_s: float | None = None  # the ethtool reading the PFC rates end at
        # per RDMA port: RX and TX bytes/s (from port_rcv_data/port_xmit_data)
        self.port_history: dict[PortKey, tuple[Ring, Ring]] = {}
        # where the node is cabled: collectors.lldp.LldpNeighbour per NIC, as the node's lldpd
        # reports them (read once per connection, engine/lldp.py), and how that read went
        self.lldp: tuple = ()
        self.lldp_state = LLDP_UNREAD

    def frozen(self) -> Node:
        """A copy that later samples leave as it is (a paused display's frame): its values,
        health and histories as they are now. Costs a copy of its history buffers."""
        import copy

        twin = copy.copy(self)
        twin.history = copy.deepcopy(self.history)
        twin.iface_history = copy.deepcopy(self.iface_history)
        twin.port_history = copy.deepcopy(self.port_history)
        twin.held = copy.deepcopy(self.held)
        return twin

    def threshold(self, metric: str) -> Threshold:
        """The threshold this node judges ``metric`` by: the configured one or the default."""
        t = self.thresholds.get(metric) if self.thresholds else None
        return t if t is not None else merged(None)[metric]

    def observe(self, sample: NodeSample) -> bool:
        """Take a new sample: compute rates against the previous one, update everything.

        False when the sample is refused (``refusal``): the node's state and reason say why,
        its rates and summary go as on a failure, and the previous sample stays the one the
        next is compared with."""
        prev = self.sample
        refused = refusal(prev, sample)
        if refused is not None:
            self.fail(*refused)
            self.refused += 1
            return False
        if self._resize_due:  # the interval changed: sized before the first row at the new one
            self._fit_history()
        self.rates = node_rates(prev, sample)
        if sample.peers is not None or self.flows is not None:
            self.flows = flow_rates(prev.peers if prev else None, sample.peers, self.flows)
        if sample.fabric is not None:
            fabric = carry_ethtool(prev.fabric if prev else None, sample.fabric)
            if fabric is not sample.fabric:
                sample = replace(sample, fabric=fabric)
        self.sample = sample
        interfaces = sample.interfaces
        self.iface_layout = interfaces.layout if type(interfaces) is InterfaceTable else None
        self.has_fabric = sample.fabric is not None
        self.samples_seen += 1
        self.summary, findings = summarize(sample, self.rates, self._careful, self.rules.retrans_min_segments)
        rated = rate(findings, self.thresholds) if findings else []
        if sample.fabric is None and not self.port_history and self.fabric_rates is None:
            ports_down: list = []  # (no fabric, then or now: nothing of it to update)
        else:
            ports_down = self._observe_fabric(prev.fabric if prev else None, sample.fabric, rated)
        # levels are held (an idle node's one-interval blip is no alarm); a port that is
        # down is a state, shown at once
        if ports_down:
            self.interval_health = health_of(rated + ports_down)
            self.health = self.held.feed(rated, ports_down)
        else:
            if rated != self._rated:  # (the same findings in the same words as the interval before: its health)
                self.interval_health = health_of(rated) if rated else HEALTHY
            else:  # the same: the list before is kept, and this one let go now, while in the cache
                rated = self._rated
            self.health = self.held.feed(rated, (), self.interval_health)
        self._rated = rated if not ports_down else None
        if not sample.problems and sample.fabric is None:
            self.state, self.error = _UP, None
        elif sample.problems and not sample.interfaces and sample.cpu is None and sample.cpu_sums is None:
            self.state, self.error = NodeState.PARSE_ERROR, "; ".join(sample.problems)
            self.health = Health(Level.CRITICAL, (f"parse error: {self.error}",))
        else:
            self.state = _UP
            problems = sample.problems + (tuple(map(safe_line, sample.fabric.problems)) if sample.fabric else ())
            self.error = "; ".join(problems) or None
        t = sample.wall_s
        self.history.append(_node_row(self.summary), t)  # NODE_SERIES, written in C
        if self.rates is not None:
            table = self.rates.interfaces  # a RatesTable: RX and TX bytes/s of every interface
            self.iface_history.append_rates(table.layout.names, table.flat, 16, _RX_TX, t)
        if self._oversized:
            self._trim_history(t)
        return True

    # history ---------------------------------------------------------------------------------
    def _history_tables(self) -> list:
        """Every history ring or table of the node (each with capacity, times, resize)."""
        return [self.history.table, self.iface_history.table, *(r for pair in self.port_history.values() for r in pair)]

    def set_interval(self, interval_s: float) -> None:
        """Samples come every ``interval_s`` from now on: the history is sized to keep covering
        ``history_s`` seconds, at the next sample (a fleet's resizes spread over a tick
        instead of one pause). A shorter interval grows it; a longer one keeps the rows still
        within ``history_s`` of the newest, and shrinks as they age out."""
        self.interval_s = interval_s
        self._capacity = capacity_for(self.history_s, interval_s)
        self._resize_due = True

    def _fit_history(self) -> None:
        target, oversized = self._capacity, False
        for table in self._history_tables():
            if table.capacity <= target:
                size = target  # every row held fits
            else:
                times = table.times()
                size = max(target, rows_after(times, times[-1] - self.history_s) if times else 0)
            if size != table.capacity:
                table.resize(size)
            oversized = oversized or size > target
        self._oversized, self._resize_due = oversized, False

    def _trim_history(self, now: float) -> None:
        """While a table is larger than the interval needs, let it shrink once its oldest
        rows are a quarter of ``history_s`` past it (a few resizes, not one a sample)."""
        cutoff = now - 1.25 * self.history_s
        if any(table.capacity > self._capacity and table.oldest_t() < cutoff for table in self._history_tables()):
            self._fit_history()

    def _observe_fabric(self, prev: FabricSample | None, cur: FabricSample | None,
                        rated: list[tuple[Level, str]]) -> list[tuple[Level, str]]:
        """Fabric rates (PFC rates kept between two ethtool readings), the grid's fabric
        columns and per-port history. What the rates show wrong goes into ``rated``, in
        words; returns the ports that are down (a state, not held)."""
        if cur is None:
            self.fabric_rates = None
            self.port_history.clear()
            return []
        rates = fabric_rates(prev, cur)
        last = self.fabric_rates
        if rates is not None and rates.pfc_interval_s is not None:
            self._pfc_mono_s = cur.ethtool_mono_s
        elif (rates is not None and last is not None and last.pfc_interval_s and self._pfc_mono_s is not None
              and 0 <= cur.mono_s - self._pfc_mono_s <= ETHTOOL_CARRY_S):
            # between two readings the last PFC rates stay, as the reading itself is carried:
            # not for ever (ethtool that stopped answering shows no pause rate, not an old one)
            rates = replace(rates, pfc=last.pfc, pfc_interval_s=last.pfc_interval_s, ethtool_per_s=last.ethtool_per_s)
        self.fabric_rates = rates
        if rates is not None:
            self.summary = self.summary._replace(**fabric_summary(rates))
        down: list[tuple[Level, str]] = []
        for port in cur.ports.values():
            state = port_down(port, self.thresholds)
            if state is not None:
                down.append(state)
            for found in port_rates_health(rates, port, self.thresholds):
                if found not in rated:  # device-level findings are said once per HCA
                    rated.append(found)
        t = self.sample.wall_s  # the sample's, taken before this is called
        for key in cur.ports:
            rings = self.port_history.get(key)
            if rings is None:
                rings = self.port_history[key] = (Ring(self._capacity), Ring(self._capacity))
            r = rates.ports.get(key) if rates is not None else None
            rings[0].append(_bytes(r.rx_bits_per_s) if r else None, t)
            rings[1].append(_bytes(r.tx_bits_per_s) if r else None, t)
        for gone in self.port_history.keys() - cur.ports.keys():
            del self.port_history[gone]
        return down

    def fail(self, state: NodeState, reason: str, at_s: float | None = None) -> None:
        """The transport reports a failure; the last sample stays for display, rates go.
        ``reason`` (often a node's or a server's own words) is kept as model/text.py shows it;
        ``at_s``: when it failed (wall clock, seconds), where the caller knows."""
        reason = safe_line(reason)
        self.state = state
        self.error = reason
        self.last_failure = (state, reason)
        if at_s is not None:
            self.failed_at_s = at_s
        self.rates = None
        self.fabric_rates = None
        self.summary = _NO_SUMMARY
        self.health = Health(Level.CRITICAL, (f"{state.value}: {without_countdown(reason)}",))

    def failure_words(self) -> str:
        """What failed and when, for words written once and read later (a check's report, a
        snapshot): "failed at 16:13:21: connection refused" (local time), the reason without
        the collector's countdown; the last failure's while a retry connects; the state's
        name when no reason is known."""
        reason = self.error or (self.last_failure[1] if self.last_failure is not None else None)
        if reason is None:
            return self.state.value
        if self.failed_at_s is None:
            return without_countdown(reason)
        return f"failed at {_time.strftime('%H:%M:%S', _time.localtime(self.failed_at_s))}: {without_countdown(reason)}"

    def set_lldp(self, neighbours, state: str) -> None:
        """What the node's lldpd reported (a tuple of collectors.lldp.LldpNeighbour) and
        the state of that read ("ok", or why there is nothing: "no LLDP: …")."""
        self.lldp = tuple(neighbours)
        self.lldp_state = safe_line(state)

    def set_state(self, state: NodeState, reason: str | None = None) -> None:
        if reason is not None:
            reason = safe_line(reason)
        self.state = state
        self.error = reason
        if state is NodeState.STALE:
            self.health = Health(Level.WARNING, (f"stale: {reason or 'no recent sample'}",))

    @property
    def reasons(self) -> tuple[str, ...]:
        """Everything wrong with the node, in words: its straggler reason, its links slower
        than its peers', then its own health reasons (worst first)."""
        if self.straggler is not None:
            lead: tuple[str, ...] = (self.straggler.reason,)
        elif self.victim is not None:
            lead = (f"{self.name}: {self.victim.cause}: {self.victim.reason.split(': ', 1)[-1]}",)
        else:
            lead = ()
        return lead + self.slow_links + self.health.reasons

    @property
    def lossy_link(self) -> bool:
        """The probe mesh names the node's own link (a held suspect of kind NODE): a fault of
        the node's, unlike a path, an uplink or a switch that its probes merely cross."""
        s = self.mesh_suspect
        return s is not None and s.kind == MESH_NODE

    @property
    def level(self) -> Level:
        state = self.state
        if state is _UP:
            if self.straggler is not None or self.slow_links or self.lossy_link:  # at least a warning
                return max(self.health.level, _WARNING)
            return self.health.level
        if state == _CONNECTING:
            return _OK
        if state is _STALE:
            return _WARNING
        return _CRITICAL
