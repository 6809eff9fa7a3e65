"""The fabric next to the host stack: RDMA ports, RoCE hardware counters, PFC pause frames.

Samples (``IbPort``, ``PfcCounters``, ``FabricSample``) hold raw counters as the kernel and
``ethtool -S`` print them; ``fabric_rates(prev, cur)`` turns two samples into per-second
rates; ``port_health`` words what is wrong with one port. No I/O here: the collectors
(``collectors/infiniband.py``, ``collectors/ethtool.py``) build the samples.

A rate is None ("unknown") — never a guess — when its counter:

- is unavailable ("N/A (no PMA)", unreadable, garbage) in either sample;
- sits at the maximum of its width in either sample: it is *saturated* (IBA PortCounters
  stick at their maximum; a 16-bit ``symbol_error`` at 65535 says nothing more);
- went backwards: a *wrap* only for counters whose width wraps (the 32-bit mlx5 q-counters
  in ``hw_counters/``) and only when the wrapped increase is under half the range;
  otherwise a reset (driver reload, ``perfquery -R``);
- belongs to a port that is not ACTIVE now (the port's ``went_down`` flag says it just left).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from netui.model.health import DEFAULT_THRESHOLDS, Level, Threshold
from netui.model.limits import MAX_EVENTS_PER_S, counted_interval_s, rate_interval_s
from netui.model.units import per_s

# ----------------------------------------------------------------------------- samples

PortKey = tuple[str, int]  # (hca, port number), e.g. ("mlx5_0", 1)

ACTIVE_STATES = frozenset({4, 5})  # ACTIVE, ACTIVE_DEFER


class PortState(NamedTuple):
    """``state`` or ``phys_state`` of a port as printed: ``4: ACTIVE`` → (4, "ACTIVE")."""

    num: int | None
    name: str | None


@dataclass(frozen=True, slots=True)
class IbPort:
    """One port of an RDMA device (``/sys/class/infiniband/<hca>/ports/<n>``), one read.

    ``counters`` are the ``counters/`` files exactly as sysfs prints them — so
    ``port_xmit_data``/``port_rcv_data`` are in 4-byte words; ``xmit_bytes``/``rcv_bytes``
    are the same two counters in bytes (×4). ``hw_counters`` are the driver's counters
    (``lifespan`` is not a counter: it is ``hw_lifespan_ms``). A value is None when it could
    not be read or parsed ("N/A (no PMA)"). ``counter_bits``/``hw_counter_bits`` give each
    counter's width in bits (4, 8, 16, 32 or 64). ``hw_scope`` is "port" when the port has
    its own ``hw_counters/``, "device" when they are the HCA's device-level ones (shared by
    all its ports: count them once per HCA), None when there are none.
    """

    hca: str
    port: int
    state: PortState | None = None
    phys_state: PortState | None = None
    rate_gbps: float | None = None
    link_layer: str | None = None  # "InfiniBand", "Ethernet" (RoCE, iWARP) or "Unknown"
    netdev: str | None = None  # the paired network interface (ethtool -S is read there)
    counters: dict[str, int | None] = field(default_factory=dict)
    counter_bits: dict[str, int] = field(default_factory=dict)
    extended: bool = False  # 64-bit PortCountersExtended data/packet counters
    xmit_bytes: int | None = None
    rcv_bytes: int | None = None
    hw_counters: dict[str, int | None] = field(default_factory=dict)
    hw_counter_bits: dict[str, int] = field(default_factory=dict)
    hw_scope: str | None = None
    hw_lifespan_ms: int | None = None
    gid_netdevs: dict[int, str] = field(default_factory=dict)  # gid_attrs/ndevs/<i>
    gid_types: dict[int, str] = field(default_factory=dict)  # gid_attrs/types/<i>: "RoCE v2", ...

    @property
    def key(self) -> PortKey:
        return (self.hca, self.port)

    @property
    def label(self) -> str:
        return f"{self.hca}/{self.port}"

    @property
    def active(self) -> bool | None:
        """True when the port is ACTIVE (or ACTIVE_DEFER), None when its state is unknown."""
        if self.state is None or self.state.num is None:
            return None
        return self.state.num in ACTIVE_STATES


class PauseCounters(NamedTuple):
    """Pause counters of one priority (PFC) or of global 802.3x pause, from ``ethtool -S``.

    Durations are in microseconds. None where the driver does not print the counter (mlx5
    prints a priority's counters only when PFC is enabled on it).
    """

    rx_pause: int | None = None
    rx_pause_duration_us: int | None = None
    tx_pause: int | None = None
    tx_pause_duration_us: int | None = None
    rx_pause_transition: int | None = None  # XOFF → XON transitions


NO_PAUSE = PauseCounters()
PRIORITIES = range(8)


@dataclass(frozen=True, slots=True)
class PfcCounters:
    """The pause and buffer counters of one netdev that matter for RoCE (mlx5 names).

    ``priorities`` has 8 entries, indexed by priority. Every field is None when the driver
    does not print it; other drivers' counters stay in ``FabricSample.ethtool``.
    """

    priorities: tuple[PauseCounters, ...] = (NO_PAUSE,) * 8
    global_pause: PauseCounters = NO_PAUSE
    rx_pause_ctrl_phy: int | None = None  # link-layer pause frames, any priority
    tx_pause_ctrl_phy: int | None = None
    rx_discards_phy: int | None = None  # dropped for lack of NIC buffers
    tx_discards_phy: int | None = None
    rx_out_of_buffer: int | None = None  # no software RX buffers ("out_of_buffer")
    tx_pause_storm_warning_events: int | None = None
    tx_pause_storm_error_events: int | None = None

    @property
    def pfc_priorities(self) -> tuple[int, ...]:
        """Priorities the driver prints pause counters for (on mlx5: PFC enabled)."""
        return tuple(p for p, c in enumerate(self.priorities) if c != NO_PAUSE)


@dataclass(frozen=True, slots=True)
class FabricSample:
    """A node's RDMA ports and data-plane NICs at one moment.

    ``mono_s`` is the node's CLOCK_MONOTONIC when the ports were read. ``ethtool`` holds the
    raw ``ethtool -S`` counters per netdev (any driver); ``pfc`` the mlx5 view of them.
    ethtool runs at a slower cadence, so it has its own clock ``ethtool_mono_s`` (None when
    this sample has no ethtool reading); a reading carried over from an earlier sample keeps
    its original time, and its rates are then not recomputed.
    """

    mono_s: float
    ports: dict[PortKey, IbPort]
    pfc: dict[str, PfcCounters] = field(default_factory=dict)
    ethtool: dict[str, dict[str, int]] = field(default_factory=dict)
    ethtool_mono_s: float | None = None
    boot_id: str | None = None
    problems: tuple[str, ...] = ()


# ----------------------------------------------------------------------------- rates

# counters/ that count errors, in the order a reason lists them (IBA PortCounters)
ERROR_COUNTERS = (
    "symbol_error", "port_rcv_errors", "link_downed", "link_error_recovery",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors",
    "port_xmit_constraint_errors", "port_rcv_constraint_errors",
)
DISCARD_COUNTERS = ("port_xmit_discards",)
# hw_counters/ that mean RoCE packets were lost or corrupted
ROCE_LOSS_COUNTERS = (
    "out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "rx_icrc_encapsulated", "out_of_buffer",
)

UNAVAILABLE, SATURATED, RESET, NEW = "unavailable", "saturated", "reset", "new"


def counter_delta(prev: int | None, cur: int | None, bits: int, wraps: bool) -> tuple[int | None, str | None]:
    """Increase of a counter of ``bits`` bits between two reads: (delta, None) or (None, why).

    ``why`` is "unavailable", "saturated" or "reset". A value at the maximum of its width is
    saturated whether or not the counter wraps (a wrapping counter lands exactly there once
    in 2**bits; a saturating one stays). A counter that went backwards wrapped only when
    ``wraps`` and the wrapped increase is below half the range; else it was reset.
    """
    if prev is None or cur is None:
        return None, UNAVAILABLE
    top = (1 << bits) - 1
    if cur >= top or prev >= top:
        return None, SATURATED
    if cur >= prev:
        return cur - prev, None
    if wraps:
        d = (cur - prev) % (1 << bits)
        if d < 1 << (bits - 1):
            return d, None
    return None, RESET


def hw_counter_wraps(bits: int) -> bool:
    """hw_counters/: the 32-bit mlx5 q-counters wrap; 64-bit ones never get there."""
    return bits == 32


class PortRates(NamedTuple):
    """Per-second rates of one RDMA port over one interval (node clock).

    Bits/s come from ``port_*_data`` × 4 bytes × 8. ``errors_per_s`` sums the
    ``ERROR_COUNTERS`` that could be rated (None when none could); ``unknown`` names every
    counter without a rate and why ("saturated", "reset", "unavailable", "new"), hw
    counters as ``hw:<name>``.
    ``counters_per_s``/``hw_per_s`` hold every counter of ``counters/``/``hw_counters/``
    (None where unknown). All rates are None while the port is not ACTIVE.
    """

    hca: str
    port: int
    rx_bits_per_s: float | None
    tx_bits_per_s: float | None
    rx_packets_per_s: float | None
    tx_packets_per_s: float | None
    errors_per_s: float | None
    discards_per_s: float | None
    xmit_wait_per_s: float | None  # ticks with data to send and no credits (back-pressure)
    counters_per_s: dict[str, float | None]
    hw_per_s: dict[str, float | None]
    unknown: dict[str, str]
    active: bool | None
    state_changed: bool
    hw_scope: str | None = None
    rate_gbps: float | None = None

    @property
    def went_down(self) -> bool:
        """The port left ACTIVE during this interval."""
        return self.state_changed and self.active is False

    def hw(self, name: str) -> float | None:
        return self.hw_per_s.get(name)

    @property
    def cnp_sent_per_s(self) -> float | None:
        """CNPs this port sent (it received ECN-marked RoCE packets: notification point)."""
        return self.hw_per_s.get("np_cnp_sent")

    @property
    def cnp_handled_per_s(self) -> float | None:
        """CNPs this port received and slowed down for (reaction point)."""
        return self.hw_per_s.get("rp_cnp_handled")

    @property
    def roce_loss_per_s(self) -> float | None:
        """Sum of the ``ROCE_LOSS_COUNTERS`` present and known (None when none is)."""
        return _sum(self.hw_per_s.get(n) for n in ROCE_LOSS_COUNTERS)

    @property
    def link_percent(self) -> float | None:
        """The busier direction in % of the port's rate."""
        if not self.rate_gbps:
            return None
        busiest = max((r for r in (self.rx_bits_per_s, self.tx_bits_per_s) if r is not None), default=None)
        return None if busiest is None else busiest / (self.rate_gbps * 1e9) * 100


class PauseRates(NamedTuple):
    """Pause frames and pause time per second of one priority (or global pause)."""

    rx_pause_per_s: float | None = None
    rx_pause_us_per_s: float | None = None  # µs paused per second: 1e6 = always paused
    tx_pause_per_s: float | None = None
    tx_pause_us_per_s: float | None = None
    rx_transitions_per_s: float | None = None


NO_PAUSE_RATES = PauseRates()


class PfcRates(NamedTuple):
    """Per-second rates of a netdev's ``PfcCounters``; None where absent or unknown."""

    netdev: str
    priorities: tuple[PauseRates, ...]
    global_pause: PauseRates
    rx_pause_ctrl_phy_per_s: float | None
    tx_pause_ctrl_phy_per_s: float | None
    rx_discards_phy_per_s: float | None
    tx_discards_phy_per_s: float | None
    rx_out_of_buffer_per_s: float | None
    tx_pause_storm_warning_per_s: float | None
    tx_pause_storm_error_per_s: float | None

    def _pause(self, index: int, phy: float | None) -> float | None:
        per_prio = [getattr(p, _PAUSE_RATE_FIELDS[index]) for p in (*self.priorities, self.global_pause)]
        total = _sum(per_prio)
        return total if total is not None else phy

    @property
    def rx_pause_per_s(self) -> float | None:
        """Pause frames received per second (the fabric asks this NIC to stop): the sum over
        priorities and global pause, or ``rx_pause_ctrl_phy`` when the driver has neither."""
        return self._pause(0, self.rx_pause_ctrl_phy_per_s)

    @property
    def tx_pause_per_s(self) -> float | None:
        """Pause frames sent per second (this NIC cannot absorb what arrives)."""
        return self._pause(2, self.tx_pause_ctrl_phy_per_s)

    @property
    def pause_per_s(self) -> float | None:
        return _sum((self.rx_pause_per_s, self.tx_pause_per_s))


_PAUSE_RATE_FIELDS = PauseRates._fields


@dataclass(frozen=True, slots=True)
class FabricRates:
    """All fabric rates of a node over one interval.

    ``interval_s`` is the ports' interval; PFC rates have their own (``pfc_interval_s``,
    None when ethtool was not re-read between the two samples — keep the last ones).
    ``ethtool_per_s`` has, per netdev, every ``ethtool -S`` counter that increased.
    """

    interval_s: float
    ports: dict[PortKey, PortRates]
    pfc: dict[str, PfcRates]
    pfc_interval_s: float | None
    ethtool_per_s: dict[str, dict[str, float]]

    def _total(self, attr: str) -> float | None:
        return _sum(getattr(r, attr) for r in self.ports.values())

    @property
    def rx_bits_per_s(self) -> float | None:
        return self._total("rx_bits_per_s")

    @property
    def tx_bits_per_s(self) -> float | None:
        return self._total("tx_bits_per_s")

    @property
    def errors_per_s(self) -> float | None:
        return self._total("errors_per_s")

    def hw_total(self, name: str) -> float | None:
        """A hw counter's rate summed over ports, device-level counters counted once per HCA."""
        seen: set[str] = set()
        values = []
        for r in self.ports.values():
            if r.hw_scope == "device":
                if r.hca in seen:
                    continue
                seen.add(r.hca)
            values.append(r.hw_per_s.get(name))
        return _sum(values)

    @property
    def pause_per_s(self) -> float | None:
        return _sum(r.pause_per_s for r in self.pfc.values())


def _sum(values) -> float | None:
    """Sum of the known values; None when none is known."""
    total = None
    for v in values:
        if v is not None:
            total = v if total is None else total + v
    return total


def _rate_many(prev: dict[str, int | None], cur: dict[str, int | None], bits: dict[str, int],
               wraps, inv_dt: float, unknown: dict[str, str], prefix: str = "") -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, value in cur.items():
        if name not in prev:
            out[name] = None
            unknown[prefix + name] = NEW
            continue
        b = min(bits.get(name, 64), 64)
        d, why = counter_delta(prev[name], value, b, wraps(b))
        if d is None:
            unknown[prefix + name] = why
            out[name] = None
        elif d * inv_dt > MAX_EVENTS_PER_S:  # faster than any port: a reset, not traffic
            unknown[prefix + name] = RESET
            out[name] = None
        else:
            out[name] = d * inv_dt
    return out


def _never_wraps(bits: int) -> bool:
    return False


def port_rates(prev: IbPort | None, cur: IbPort, dt: float) -> PortRates:
    """Rates of one port over ``dt`` seconds (see the module docstring for when one is None)."""
    active = cur.active
    state_changed = prev is not None and prev.state != cur.state
    if prev is None or active is False or not dt > 0:
        return PortRates(cur.hca, cur.port, None, None, None, None, None, None, None,
                         dict.fromkeys(cur.counters), dict.fromkeys(cur.hw_counters),
                         {}, active, state_changed, cur.hw_scope, cur.rate_gbps)
    inv = 1.0 / dt
    unknown: dict[str, str] = {}
    # IBA counters saturate (64-bit ones never reach the top): no wrap for counters/
    # (a PMA that changed width between reads — prev bits != cur bits — is rare; cur wins)
    counters = _rate_many(prev.counters, cur.counters, cur.counter_bits, _never_wraps, inv, unknown)
    hw = _rate_many(prev.hw_counters, cur.hw_counters, cur.hw_counter_bits, hw_counter_wraps, inv, unknown, "hw:")

    def bits_of(name: str) -> float | None:
        words = counters.get(name)
        return None if words is None else words * 32.0  # 4-byte words → bits

    errors = _sum(counters.get(n) for n in ERROR_COUNTERS)
    discards = _sum(counters.get(n) for n in DISCARD_COUNTERS)
    return PortRates(
        cur.hca, cur.port,
        bits_of("port_rcv_data"), bits_of("port_xmit_data"),
        counters.get("port_rcv_packets"), counters.get("port_xmit_packets"),
        errors, discards, counters.get("port_xmit_wait"),
        counters, hw, unknown, active, state_changed, cur.hw_scope, cur.rate_gbps,
    )


_U64_TOP = (1 << 64) - 1


def _u64_rate(prev: int | None, cur: int | None, inv_dt: float) -> float | None:
    """ethtool counters are u64: backwards is a reset, all ones is not a value."""
    if prev is None or cur is None or cur < prev or cur >= _U64_TOP or (cur - prev) * inv_dt > MAX_EVENTS_PER_S:
        return None
    return (cur - prev) * inv_dt


def _pause_rates(p: PauseCounters, c: PauseCounters, inv: float) -> PauseRates:
    if c == NO_PAUSE:
        return NO_PAUSE_RATES
    return PauseRates(*[_u64_rate(a, b, inv) for a, b in zip(p, c)])


def pfc_rates(netdev: str, prev: PfcCounters, cur: PfcCounters, dt: float) -> PfcRates:
    """Per-second rates between two ``PfcCounters`` of one netdev, ``dt`` seconds apart."""
    inv = 1.0 / dt
    return PfcRates(
        netdev,
        tuple(_pause_rates(p, c, inv) for p, c in zip(prev.priorities, cur.priorities)),
        _pause_rates(prev.global_pause, cur.global_pause, inv),
        *[_u64_rate(getattr(prev, f), getattr(cur, f), inv) for f in _PFC_SCALARS],
    )


_PFC_SCALARS = (
    "rx_pause_ctrl_phy", "tx_pause_ctrl_phy", "rx_discards_phy", "tx_discards_phy", "rx_out_of_buffer",
    "tx_pause_storm_warning_events", "tx_pause_storm_error_events",
)


def fabric_rates(prev: FabricSample | None, cur: FabricSample) -> FabricRates | None:
    """Rates between two fabric samples of one node, or None when they are not comparable
    (no previous sample, another boot id, a node clock that did not advance).

    Ports are matched by (hca, port); a port new in ``cur`` gets all-None rates.
    """
    dt = rate_interval_s(prev, cur)
    if dt is None:
        return None
    assert prev is not None
    ports = {key: port_rates(prev.ports.get(key), port, dt) for key, port in cur.ports.items()}
    pfc: dict[str, PfcRates] = {}
    moved: dict[str, dict[str, float]] = {}
    pfc_dt = None
    if prev.ethtool_mono_s is not None and cur.ethtool_mono_s is not None:
        pfc_dt = counted_interval_s(prev.ethtool_mono_s, cur.ethtool_mono_s)
    if pfc_dt is not None:
        inv = 1.0 / pfc_dt
        for netdev, counters in cur.pfc.items():
            before = prev.pfc.get(netdev)
            if before is not None:
                pfc[netdev] = pfc_rates(netdev, before, counters, pfc_dt)
        for netdev, stats in cur.ethtool.items():
            before_stats = prev.ethtool.get(netdev)
            if before_stats is None:
                continue
            up = {}
            for name, value in stats.items():
                old = before_stats.get(name)
                if old is not None and value > old and value < _U64_TOP and (value - old) * inv <= MAX_EVENTS_PER_S:
                    up[name] = (value - old) * inv
            moved[netdev] = up
    return FabricRates(dt, ports, pfc, pfc_dt, moved)


# ----------------------------------------------------------------------------- health

# Errors, discards, RoCE loss and pause frames above 0/s are "careful" (health.py holds them
# with every other default, so that one config file overrides them all).
FABRIC_THRESHOLDS: dict[str, Threshold] = {
    k: DEFAULT_THRESHOLDS[k] for k in ("rdma_errors_per_s", "rdma_discards_per_s", "roce_loss_per_s", "pause_per_s")
}


def _detail(values: dict[str, float | None], names: tuple[str, ...]) -> str:
    moved = [f"{n} {per_s(values[n])}/s" for n in names if values.get(n)]
    return f" ({', '.join(moved)})" if moved else ""


def port_health(rates: FabricRates | None, port: IbPort,
                thresholds: dict[str, Threshold] | None = None) -> list[tuple[Level, str]]:
    """What is wrong with one port, worst first: ``[(level, reason in words), ...]``.

    A port not ACTIVE is critical by default (threshold ``port_down``; from the sample
    alone: no rates needed). Then, from the
    rates of the interval: IB errors, discards, RoCE loss counters and PFC pause frames on
    the paired netdev, each past its threshold (``FABRIC_THRESHOLDS``, overridable by
    name); and error counters stuck at their maximum (careful: new errors are invisible).
    """
    down = port_down(port, thresholds)
    found = ([down] if down is not None else []) + port_rates_health(rates, port, thresholds)
    found.sort(key=lambda x: -x[0])
    return found


def port_down(port: IbPort, thresholds: dict[str, Threshold] | None = None) -> tuple[Level, str] | None:
    """``(level, reason)`` when the port is not ACTIVE (threshold ``port_down``), else None.
    A state of the port, from the sample alone: a node shows it at once, never held."""
    t = FABRIC_THRESHOLDS if not thresholds else FABRIC_THRESHOLDS | thresholds
    down = t["port_down"].level(1.0) if "port_down" in t else Level.CRITICAL
    if port.active is False and down > Level.OK:
        state = port.state.name or str(port.state.num)
        phys = f", phys {port.phys_state.name}" if port.phys_state and port.phys_state.name else ""
        return down, f"{port.label} {state}{phys}"
    return None


def port_rates_health(rates: FabricRates | None, port: IbPort,
                      thresholds: dict[str, Threshold] | None = None) -> list[tuple[Level, str]]:
    """What the interval's rates show wrong with one port, worst first (see ``port_health``)."""
    t = FABRIC_THRESHOLDS if not thresholds else FABRIC_THRESHOLDS | thresholds
    found: list[tuple[Level, str]] = []
    pr = rates.ports.get(port.key) if rates is not None else None
    if pr is not None and pr.active is not False:

        def check(metric: str, value: float | None, text) -> None:
            level = t[metric].level(value) if metric in t else Level.OK
            if level > Level.OK:
                found.append((level, text()))

        check("rdma_errors_per_s", pr.errors_per_s,
              lambda: f"{port.label} RDMA errors {per_s(pr.errors_per_s)}/s"
                      + _detail(pr.counters_per_s, ERROR_COUNTERS))
        check("rdma_discards_per_s", pr.discards_per_s,
              lambda: f"{port.label} xmit discards {per_s(pr.discards_per_s)}/s")
        # device-level hw_counters belong to the HCA, not this port: said once per HCA
        # (the node keeps one of identical reasons)
        hw_where = port.hca if pr.hw_scope == "device" else port.label
        check("roce_loss_per_s", pr.roce_loss_per_s,
              lambda: f"{hw_where} RoCE loss {per_s(pr.roce_loss_per_s)}/s"
                      + _detail(pr.hw_per_s, ROCE_LOSS_COUNTERS))
        stuck = [n for n in ERROR_COUNTERS if pr.unknown.get(n) == SATURATED]
        if stuck:
            found.append((Level.CAREFUL, f"{port.label} {', '.join(stuck)} at maximum: new errors not counted"))
    pfc = rates.pfc.get(port.netdev) if rates is not None and port.netdev else None
    if pfc is not None:
        total = pfc.pause_per_s
        level = t["pause_per_s"].level(total) if "pause_per_s" in t else Level.OK
        if level > Level.OK:
            prios = [str(p) for p, r in enumerate(pfc.priorities) if (r.rx_pause_per_s or r.tx_pause_per_s)]
            where = f" (prio {','.join(prios)})" if prios else ""
            found.append((level, f"{pfc.netdev} pause RX {per_s(pfc.rx_pause_per_s)}/s "
                                 f"TX {per_s(pfc.tx_pause_per_s)}/s{where}"))
    found.sort(key=lambda x: -x[0])
    return found


# ----------------------------------------------------------------------------- recordings


def fabric_to_dict(f: FabricSample | None) -> dict | None:
    """A FabricSample as plain JSON data (raw counters only); None stays None.

    Ports are a list (their keys are tuples), states ``[num, name]``, PFC priorities lists
    of 8 ``PauseCounters`` field dicts. ``fabric_from_dict`` is its inverse.
    """
    if f is None:
        return None
    return {
        "mono_s": f.mono_s,
        "ports": [_port_to_dict(p) for p in f.ports.values()],
        "pfc": {n: _pfc_to_dict(c) for n, c in f.pfc.items()},
        "ethtool": f.ethtool,
        "ethtool_mono_s": f.ethtool_mono_s,
        "boot_id": f.boot_id,
        "problems": list(f.problems),
    }


def _port_to_dict(p: IbPort) -> dict:
    d = {name: getattr(p, name) for name in IbPort.__dataclass_fields__}
    d["state"] = None if p.state is None else list(p.state)
    d["phys_state"] = None if p.phys_state is None else list(p.phys_state)
    d["gid_netdevs"] = {str(k): v for k, v in p.gid_netdevs.items()}
    d["gid_types"] = {str(k): v for k, v in p.gid_types.items()}
    return d


def _pfc_to_dict(c: PfcCounters) -> dict:
    d = {name: getattr(c, name) for name in PfcCounters.__dataclass_fields__}
    d["priorities"] = [p._asdict() for p in c.priorities]
    d["global_pause"] = c.global_pause._asdict()
    return d


def fabric_from_dict(d: dict | None) -> FabricSample | None:
    """The inverse of ``fabric_to_dict``. Raises KeyError, TypeError or ValueError on a
    malformed record (the recording's reader turns them into its own error)."""
    if d is None:
        return None
    ports = {}
    for raw in d["ports"]:
        p = dict(raw)
        for attr in ("state", "phys_state"):
            p[attr] = None if p.get(attr) is None else PortState(*p[attr])
        for attr in ("gid_netdevs", "gid_types"):
            p[attr] = {int(k): v for k, v in (p.get(attr) or {}).items()}
        port = IbPort(**p)
        ports[port.key] = port
    pfc = {}
    for netdev, raw in (d.get("pfc") or {}).items():
        c = dict(raw)
        c["priorities"] = tuple(PauseCounters(**x) for x in c["priorities"])
        c["global_pause"] = PauseCounters(**c["global_pause"])
        pfc[netdev] = PfcCounters(**c)
    return FabricSample(
        mono_s=float(d["mono_s"]),
        ports=ports,
        pfc=pfc,
        ethtool={n: dict(s) for n, s in (d.get("ethtool") or {}).items()},
        ethtool_mono_s=None if d.get("ethtool_mono_s") is None else float(d["ethtool_mono_s"]),
        boot_id=d.get("boot_id"),
        problems=tuple(d.get("problems") or ()),
    )
