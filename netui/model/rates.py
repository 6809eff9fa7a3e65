"""Rates: a pure function of (previous sample, current sample).

Rates are per second over the interval between the two samples' node-side monotonic
clocks. A rate is ``None`` ("unknown", shown as "—") whenever the counters cannot be
trusted across the two samples: a counter went backwards (driver reload, reset), the boot
id changed (reboot), an interface was recreated (new ifindex under the same name), or the
interval is shorter than a millisecond (model/limits.py). A rate above what the link can
carry is a counter reset too, not traffic: above 10 × the interface's speed, or 3.2 Tbit/s
when the speed is unknown; packets, segments and softirqs above 4·10¹¹ a second. 32-bit
counters (/proc/softirqs, softnet_stat) wrap modulo 2**32. Never a negative, infinite or
absurd rate.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from netui.model.limits import MAX_EVENTS_PER_S, rate_interval_s
from netui.model.samples import CounterMap, CpuSums, InterfaceTable, LayoutMapping, NodeSample
from netui.speedups import column_stats, deltas, positive, share

U32 = 1 << 32


def column(values: list) -> Sequence[float | None]:
    """A per-CPU column of rates: packed 8 bytes a value (``array('d')``) when every value is
    known — a 128-CPU node has seven such columns, a thousand nodes keep them all — or a
    tuple holding the Nones. Either indexes, iterates, sums and compares element by
    element; compare with a tuple through ``tuple(column)``."""
    if None in values:
        return tuple(values)
    return array("d", values)


def _packed_column(result: tuple[array, int]) -> Sequence[float | None]:
    """A speedups result (doubles, how many are NaN) as a ``column``."""
    values, unknown = result
    return values if not unknown else tuple(None if math.isnan(v) else v for v in values)


def delta_u64(prev: int, cur: int) -> int | None:
    """Increase of a 64-bit counter, or None when it went backwards (a reset)."""
    d = cur - prev
    return d if d >= 0 else None


def delta_u32(prev: int, cur: int) -> int:
    """Increase of a 32-bit counter that wraps at 2**32."""
    return (cur - prev) % U32


class InterfaceRates(NamedTuple):
    """Per-second rates of one interface (bytes, packets, drops, errors)."""

    name: str
    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None
    rx_packets_per_s: float | None
    tx_packets_per_s: float | None
    rx_dropped_per_s: float | None
    tx_dropped_per_s: float | None
    rx_errors_per_s: float | None
    tx_errors_per_s: float | None
    speed_mbps: int | None

    @property
    def rx_bits_per_s(self) -> float | None:
        return None if self.rx_bytes_per_s is None else self.rx_bytes_per_s * 8

    @property
    def tx_bits_per_s(self) -> float | None:
        return None if self.tx_bytes_per_s is None else self.tx_bytes_per_s * 8

    @property
    def link_percent(self) -> float | None:
        """The busier direction in % of link speed (None when the speed is unknown)."""
        if not self.speed_mbps:
            return None
        busiest = max((r for r in (self.rx_bytes_per_s, self.tx_bytes_per_s) if r is not None), default=None)
        return None if busiest is None else busiest * 8 / (self.speed_mbps * 1e6) * 100


# positions in InterfaceCounters of rx/tx bytes, packets, dropped, errors (InterfaceRates order)
_IFACE_INDEX = (0, 8, 1, 9, 3, 11, 2, 10)
_NCOUNTERS = 16


class RatesTable(LayoutMapping):
    """Per-second rates of a node's interfaces in one flat array, as InterfaceTable holds
    their counters (``flat[i * 16 + k]``: counter ``k`` of interface ``i``; NaN unknown).
    A mapping of name → InterfaceRates, built on access."""

    __slots__ = ("layout", "flat", "unknown")

    def __init__(self, layout, values: array, unknown: int | None = None) -> None:
        self.layout = layout
        self.flat = values
        self.unknown = sum(1 for v in values if v != v) if unknown is None else unknown  # NaNs

    def row(self, i: int) -> list[float | None]:
        """The 8 rates of interface ``i`` in InterfaceRates order (None unknown)."""
        v = self.flat
        at = i * _NCOUNTERS
        return [None if (x := v[at + k]) != x else x for k in _IFACE_INDEX]

    def __getitem__(self, name: str) -> InterfaceRates:
        i = self.layout.index[name]
        return InterfaceRates(name, *self.row(i), self.layout.link_mbps[i])


_NAN_ROW = array("d", [float("nan")] * _NCOUNTERS)


def interface_table_rates(prev: InterfaceTable, cur: InterfaceTable, dt: float) -> RatesTable:
    """Rates of every interface of ``cur`` against ``prev``: a row of None where the
    interface is new or was recreated (a new ifindex under its name), None where a counter
    went backwards or rose faster than the interface carries (its layout's ``rate_ceilings``)."""
    inv = 1.0 / dt
    pl, cl = prev.layout, cur.layout
    pv, cv = prev.flat, cur.flat
    same = pl is cl or (pl.names == cl.names and all(
        a.ifindex is None or b.ifindex is None or a.ifindex == b.ifindex for a, b in zip(pl.meta, cl.meta)))
    if same:
        try:  # u64 counters (what the parsers make): in C
            flat, unknown = deltas(pv, cv, inv, False, cl.rate_ceilings)
            return RatesTable(cl, flat, unknown)
        except (TypeError, ValueError):
            pass
    return _interface_rates_by_row(prev, cur, inv)


def _interface_rates_by_row(prev: InterfaceTable, cur: InterfaceTable, inv: float) -> RatesTable:
    """``interface_table_rates`` row by row: interfaces came, went or were recreated, or the
    counters are not u64. (A function of its own: the comprehension's closure would cost
    the common case its cells at every call.)"""
    pl, cl = prev.layout, cur.layout
    pv, cv = prev.flat, cur.flat
    out = array("d")
    for i, name in enumerate(cl.names):
        j = pl.index.get(name)
        a, b = (pl.meta[j].ifindex, cl.meta[i].ifindex) if j is not None else (None, None)
        if j is None or (a is not None and b is not None and a != b):
            out.extend(_NAN_ROW)
            continue
        p, c = pv[j * _NCOUNTERS : (j + 1) * _NCOUNTERS], cv[i * _NCOUNTERS : (i + 1) * _NCOUNTERS]
        top = cl.rate_ceilings[i]
        out.extend([r if y >= x and (r := (y - x) * inv) <= top else math.nan for x, y in zip(p, c)])
    return RatesTable(cl, out)


class TcpRates(NamedTuple):
    """TCP segment rates and the retransmit ratio ΔRetransSegs/ΔOutSegs, at most 1 (100 %).

    OutSegs does not count segments that only carry retransmitted data, so the quotient
    can pass 1 (an idle node's 3 retransmits of 2 segments sent); it is capped at 1, and
    ``out_segs`` (ΔOutSegs, the segments sent in the interval) says how much it weighs.
    """

    retrans_segs_per_s: float | None
    out_segs_per_s: float | None
    in_segs_per_s: float | None
    retrans_ratio: float | None
    ext_per_s: dict[str, float]  # TcpExt counters that moved in this interval (read only: may be shared)
    out_segs: int | None = None  # ΔOutSegs: segments sent in the interval

    @property
    def spurious_segs_per_s(self) -> float:
        """Segments per second that the receivers' D-SACKs reported as received twice
        (TcpExt TCPDSACKRecvSegs): retransmits of data that had arrived, after reordering or
        a hasty timer. 0 where the kernel or the source does not count them."""
        return self.ext_per_s.get("TCPDSACKRecvSegs", 0.0)

    @property
    def lost_ratio(self) -> float | None:
        """The retransmit ratio without the spurious retransmits: (ΔRetransSegs less the
        segments D-SACKs reported twice received) / ΔOutSegs, 0..1; None as ``retrans_ratio``.
        What the node's sending lost, as far as its counters tell: equal to ``retrans_ratio``
        where no D-SACK is counted."""
        if self.retrans_ratio is None or self.retrans_segs_per_s is None or not self.out_segs_per_s:
            return self.retrans_ratio
        lost = max(0.0, self.retrans_segs_per_s - self.spurious_segs_per_s)
        return min(1.0, lost / self.out_segs_per_s)


@dataclass(frozen=True, slots=True)
class CpuRates:
    """Per-CPU softirq load, one column (see ``column``) per metric, indexed like ``cpus``.

    ``softirq_percent`` is the share of the CPU's time spent in softirq (0..100);
    ``net_rx_per_s``/``net_tx_per_s`` are NET_RX/NET_TX softirq invocations per second.
    """

    cpus: tuple[int, ...]
    softirq_percent: Sequence[float | None]
    net_rx_per_s: Sequence[float | None]
    net_tx_per_s: Sequence[float | None]

    def hottest(self) -> tuple[int, float] | None:
        """(cpu, softirq %) of the CPU with the most softirq time, or None."""
        pcts = self.softirq_percent
        if type(pcts) is array:  # the common case (no unknown), in C: ties go to the lowest CPU
            _, pct, at = column_stats(pcts)
            return None if at is None else (self.cpus[at], pct)
        if pcts and None not in pcts:
            pct = max(pcts)
            return self.cpus[pcts.index(pct)], pct
        known = [(pct, -i) for i, pct in enumerate(pcts) if pct is not None]
        if not known:
            return None
        pct, i = max(known)  # ties go to the lowest CPU
        return self.cpus[-i], pct


@dataclass(frozen=True, slots=True)
class SoftnetRates:
    cpus: tuple[int, ...]
    processed_per_s: Sequence[float]
    dropped_per_s: Sequence[float]
    time_squeeze_per_s: Sequence[float]


class CpuSumRates(NamedTuple):
    """A node's CPUs as one, from the remote sampler's sums (samples.CpuSums): the hottest
    CPU by softirq share as (cpu, %), and per second the NET_RX/NET_TX softirqs and the
    softnet packets processed, dropped and squeezed, summed over the CPUs. None: unknown."""

    hottest: tuple[int, float] | None
    net_rx_per_s: float | None
    net_tx_per_s: float | None
    processed_per_s: float | None
    dropped_per_s: float | None
    time_squeeze_per_s: float | None


class NodeRates(NamedTuple):
    """All rates of a node over one interval (``interval_s`` seconds, node clock).

    ``cpu``/``softnet`` are per CPU, from the per-CPU tables; ``cpu_sums`` the same for the
    CPUs as one, from the remote sampler's sums (which come with or without the tables).
    The grid reads the tables first: ``hottest_cpu`` and friends below.
    """

    interval_s: float
    interfaces: RatesTable  # a mapping of name → InterfaceRates
    tcp: TcpRates | None
    cpu: CpuRates | None
    softnet: SoftnetRates | None
    cpu_sums: CpuSumRates | None = None

    def hottest_cpu(self) -> tuple[int, float] | None:
        """(cpu, softirq %) of the CPU with the largest softirq share, or None."""
        hot = self.cpu.hottest() if self.cpu is not None else None
        if hot is None and self.cpu_sums is not None:
            return self.cpu_sums.hottest
        return hot


def _cpu_sum_rates(p: CpuSums | None, c: CpuSums | None, prev_mono_s: float, dt: float) -> CpuSumRates | None:
    if p is None or c is None:
        return None
    inv = 1.0 / dt
    _, a1, a2, a3, a4, a5, _, _, _, _ = p
    _, b1, b2, b3, b4, b5, hot_cpu, hot_softirq, hot_total, hot_since_s = c
    # the sampler's hottest CPU is over the time since its reading at hot_since_s: this interval's?
    hot = None
    if hot_since_s == prev_mono_s and hot_cpu is not None and hot_softirq is not None and hot_total \
            and 0 <= hot_softirq <= hot_total:
        hot = (hot_cpu, hot_softirq * 100.0 / hot_total)
    # a u64 sum's rate: one that went back was reset (a new sampler after a wrap); one below 0,
    # or rising faster than a node can, is no rate. (Unpacked, rated inline and built as a
    # tuple: a node's sums are rated every second.)
    top = MAX_EVENTS_PER_S
    return _new_tuple(CpuSumRates, (
        hot,
        None if a1 is None or b1 is None or b1 < a1 or a1 < 0 or (r1 := (b1 - a1) * inv) > top else r1,
        None if a2 is None or b2 is None or b2 < a2 or a2 < 0 or (r2 := (b2 - a2) * inv) > top else r2,
        None if a3 is None or b3 is None or b3 < a3 or a3 < 0 or (r3 := (b3 - a3) * inv) > top else r3,
        None if a4 is None or b4 is None or b4 < a4 or a4 < 0 or (r4 := (b4 - a4) * inv) > top else r4,
        None if a5 is None or b5 is None or b5 < a5 or a5 < 0 or (r5 := (b5 - a5) * inv) > top else r5))


_new_tuple = tuple.__new__


def _tcp_rates(prev: NodeSample, cur: NodeSample, dt: float) -> TcpRates | None:
    if prev.tcp is None or cur.tcp is None:
        return None
    pt, ct = prev.tcp.tcp, cur.tcp.tcp
    if type(ct) is CounterMap and type(pt) is CounterMap and ct.keys_ is pt.keys_ and ct._index is not None:
        # one layout (the remote sampler's): by position, the three counters at once
        positions = _TCP_POSITIONS.get(ct.keys_)
        if positions is None:
            if len(_TCP_POSITIONS) >= 64:
                _TCP_POSITIONS.clear()
            positions = _TCP_POSITIONS[ct.keys_] = tuple(map(ct._index.get, _TCP_RATED))
        pv, cv = pt.values_, ct.values_
        i, j, k = positions
        # each one's rate: None when not in the layout, gone back, or faster than a node counts
        # (inline: every node's, every second)
        top = MAX_EVENTS_PER_S
        retrans = None if i is None or (d := cv[i] - pv[i]) < 0 or (r := d / dt) > top else r
        out = None if j is None or (d := cv[j] - pv[j]) < 0 or (r := d / dt) > top else r
        in_segs = None if k is None or (d := cv[k] - pv[k]) < 0 or (r := d / dt) > top else r
    else:
        retrans, out, in_segs = _tcp_rates_by_key(pt, ct, dt)
    ratio = None
    if retrans is not None and out is not None and out > 0:
        ratio = min(1.0, retrans / out)
    elif retrans == 0.0 and out == 0.0:
        ratio = 0.0
    pe, ce = prev.tcp.ext, cur.tcp.ext
    moved: dict[str, float]
    if type(ce) is CounterMap and type(pe) is CounterMap and ce.keys_ is pe.keys_:  # one layout: in C
        pv, cv = pe.values_, ce.values_
        if pv == cv:  # (most intervals of a healthy node: none moved; one empty dict, never written, for all)
            moved = _NONE_MOVED
        else:
            moved = _moved(ce.keys_, deltas(pv, cv, 1.0 / dt, False, MAX_EVENTS_PER_S)[0])
    else:
        moved = _moved_by_key(pe, ce, dt)
    return _new_tuple(TcpRates, (retrans, out, in_segs, ratio, moved, None if out is None else round(out * dt)))


# (the three helpers below are functions of their own so that ``_tcp_rates``, called for every
# sample, has no closure: a comprehension or nested function would make its variables cells,
# allocated at each call even where the code using them does not run)

def _moved(keys: tuple[str, ...], rates: array) -> dict[str, float]:
    """The TcpExt counters whose rate is above 0 (``rates``: by position in ``keys``)."""
    return {keys[i]: rates[i] for i in positive(rates)} or _NONE_MOVED  # usually a few of them


def _moved_by_key(pe, ce, dt: float) -> dict[str, float]:
    """``_moved`` of two TcpExt readings of different layouts (or dicts), key by key."""
    inv = 1.0 / dt  # as in C, so a replayed recording gives the very same rates
    moved = {}
    for key, value in ce.items():
        before = pe.get(key)
        if before is not None and value > before and (value - before) * inv <= MAX_EVENTS_PER_S:
            moved[key] = (value - before) * inv
    return moved


def _tcp_rates_by_key(pt, ct, dt: float) -> list[float | None]:
    """The rates of _TCP_RATED, key by key (Tcp readings of different layouts, or dicts)."""
    def rate(key: str) -> float | None:
        if key not in pt or key not in ct:
            return None
        d = delta_u64(pt[key], ct[key])
        return None if d is None or d / dt > MAX_EVENTS_PER_S else d / dt

    return list(map(rate, _TCP_RATED))


_NONE_MOVED: dict[str, float] = {}  # TcpRates.ext_per_s of an interval in which no TcpExt counter moved: read only


_TCP_RATED = ("RetransSegs", "OutSegs", "InSegs")  # the Tcp counters TcpRates has rates of
_TCP_POSITIONS: dict[tuple[str, ...], tuple[int | None, ...]] = {}  # a Tcp layout → where they are in it


def _u32_rates(prev: Sequence[int], cur: Sequence[int], dt: float) -> Sequence[float | None]:
    """Per-second increase of 32-bit counters (they wrap), element by element."""
    try:  # packed arrays of one length and type (what the parsers make): in C
        return _packed_column(deltas(prev, cur, 1.0 / dt, True, MAX_EVENTS_PER_S))
    except (TypeError, ValueError):
        pass
    inv = 1.0 / dt
    return column([r if (r := (b - a) % U32 * inv) <= MAX_EVENTS_PER_S else None for a, b in zip(prev, cur)])


def _softirq_pct(ps: int, cs: int, pt: int, ct: int) -> float | None:
    dtot = ct - pt
    dsoft = cs - ps
    return dsoft * 100.0 / dtot if dtot > 0 and 0 <= dsoft <= dtot else None


def _cpu_rates(prev: NodeSample, cur: NodeSample, dt: float) -> CpuRates | None:
    pc, cc = prev.cpu, cur.cpu
    if cc is None and cur.softirqs is None:
        return None
    cpus = cc.cpus if cc is not None else cur.softirqs.cpus
    # softirq % of each CPU's time
    if pc is not None and cc is not None:
        if pc.cpus is cc.cpus or pc.cpus == cc.cpus:  # (a tuple compares item by item even with itself)
            try:  # packed u64 columns (what the parsers make): in C
                softirq_percent = _packed_column(share(pc.softirq, cc.softirq, pc.total, cc.total, 100.0))
            except (TypeError, ValueError):
                softirq_percent = column(list(map(_softirq_pct, pc.softirq, cc.softirq, pc.total, cc.total)))
        else:  # CPUs went on- or offline: match by id
            before = {cpu: (s, t) for cpu, s, t in zip(pc.cpus, pc.softirq, pc.total)}
            pct = []
            for cpu, cs, ct in zip(cc.cpus, cc.softirq, cc.total):
                ps, pt = before.get(cpu, (None, None))
                if ps is None:
                    pct.append(None)
                    continue
                dtot, dsoft = ct - pt, cs - ps
                pct.append(dsoft * 100.0 / dtot if dtot > 0 and 0 <= dsoft <= dtot else None)
            softirq_percent = tuple(pct)
    else:
        softirq_percent = (None,) * len(cpus)
    # NET_RX / NET_TX per second, from /proc/softirqs (u32), aligned to ``cpus``
    ps_, cs_ = prev.softirqs, cur.softirqs
    if ps_ is not None and cs_ is not None and (ps_.cpus is cs_.cpus or ps_.cpus == cs_.cpus):
        rx_all = _u32_rates(ps_.net_rx, cs_.net_rx, dt)
        tx_all = _u32_rates(ps_.net_tx, cs_.net_tx, dt)
        if cs_.cpus is cpus or cs_.cpus == cpus:
            net_rx, net_tx = rx_all, tx_all
        else:  # /proc/softirqs lists every possible CPU, /proc/stat only the online ones
            index = {cpu: i for i, cpu in enumerate(cs_.cpus)}
            net_rx = tuple(rx_all[index[c]] if c in index else None for c in cpus)
            net_tx = tuple(tx_all[index[c]] if c in index else None for c in cpus)
    else:
        net_rx = net_tx = (None,) * len(cpus)
    return CpuRates(cpus, softirq_percent, net_rx, net_tx)


def _events(per_s: float) -> float | None:
    """A count per second, or None above what a node can do (MAX_EVENTS_PER_S)."""
    return per_s if per_s <= MAX_EVENTS_PER_S else None


def _softnet_rates(prev: NodeSample, cur: NodeSample, dt: float) -> SoftnetRates | None:
    p, c = prev.softnet, cur.softnet
    if p is None or c is None:
        return None
    if p.cpus is c.cpus or p.cpus == c.cpus:
        return SoftnetRates(c.cpus, _u32_rates(p.processed, c.processed, dt), _u32_rates(p.dropped, c.dropped, dt),
                            _u32_rates(p.time_squeeze, c.time_squeeze, dt))
    before = {cpu: i for i, cpu in enumerate(p.cpus)}
    cpus, proc, drop, squeeze = [], [], [], []
    for i, cpu in enumerate(c.cpus):
        j = before.get(cpu)
        if j is None:
            continue
        cpus.append(cpu)
        proc.append(_events(delta_u32(p.processed[j], c.processed[i]) / dt))
        drop.append(_events(delta_u32(p.dropped[j], c.dropped[i]) / dt))
        squeeze.append(_events(delta_u32(p.time_squeeze[j], c.time_squeeze[i]) / dt))
    return SoftnetRates(tuple(cpus), column(proc), column(drop), column(squeeze))


def node_rates(prev: NodeSample | None, cur: NodeSample) -> NodeRates | None:
    """Rates between two samples of one node, or None when they are not comparable
    (``limits.rate_interval_s``: no previous sample, a different boot id, a node clock that
    advanced by less than MIN_INTERVAL_S (1 ms) or not at all)."""
    dt = rate_interval_s(prev, cur)
    if dt is None:
        return None
    assert prev is not None
    interfaces = interface_table_rates(prev.interfaces, cur.interfaces, dt)
    return _new_tuple(NodeRates, (dt, interfaces, _tcp_rates(prev, cur, dt), _cpu_rates(prev, cur, dt),
                                  _softnet_rates(prev, cur, dt), _cpu_sum_rates(prev.cpu_sums, cur.cpu_sums, prev.mono_s, dt)))
