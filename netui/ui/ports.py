"""The node screen's fabric: a panel per RDMA port, with the PFC of the netdev it pairs with."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from netui.model import units
from netui.model.fabric import ERROR_COUNTERS, NO_PAUSE, IbPort, PfcCounters, PfcRates, PortKey, PortRates
from netui.model.health import Level
from netui.model.node import Node
from netui.ui.panels import RatesPanel, plot_rx_tx

MOVED_SHOWN = 8  # hw_counters that moved, busiest first
# counters/ shown in the "moved" lines besides the hw_counters (data and packets have their row)
_QUIET_COUNTERS = frozenset({"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
                             "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets",
                             "multicast_rcv_packets"})


def _state(port: IbPort) -> str:
    state = port.state.name or str(port.state.num) if port.state else "—"
    phys = port.phys_state.name or str(port.phys_state.num) if port.phys_state else "—"
    return f"{state} / {phys}"


def port_title(port: IbPort) -> str:
    return f"{port.label} ↔ {port.netdev}" if port.netdev else f"{port.label} (no netdev)"


def moved_counters(r: PortRates) -> list[tuple[str, float]]:
    """Counters that moved over the interval, busiest first: hw_counters, then the error and
    other counters/ (data and packets excepted: they have their own row)."""
    hw = [(n, v) for n, v in r.hw_per_s.items() if v]
    other = [(n, v) for n, v in r.counters_per_s.items() if v and n not in _QUIET_COUNTERS]
    return sorted(hw, key=lambda x: -x[1]) + sorted(other, key=lambda x: (x[0] not in ERROR_COUNTERS, -x[1]))


def pfc_lines(netdev: str, c: PfcCounters, r: PfcRates | None, interval_s: float | None) -> Text:
    """Per priority with PFC on: pause frames RX/TX per second and the share of time paused;
    then link-level pause, buffer discards and out_of_buffer."""
    text = Text()
    age = f" (ethtool every {interval_s:.0f} s)" if interval_s else " (waiting for a second ethtool -S)"
    text.append(f"PFC on {netdev}{age}", style="bold")
    shown = [(p, pc) for p, pc in enumerate(c.priorities) if pc != NO_PAUSE]
    if c.global_pause != NO_PAUSE:
        shown.append(("global", c.global_pause))
    if not shown:
        text.append("\n  no per-priority pause counters (PFC off, or not an mlx5 NIC)", style="dim")
    for prio, pc in shown:
        pr = None
        if r is not None:
            pr = r.global_pause if prio == "global" else r.priorities[prio]
        label = "global" if prio == "global" else f"prio {prio}"
        rx = units.per_s(pr.rx_pause_per_s if pr else None, width=6)
        tx = units.per_s(pr.tx_pause_per_s if pr else None, width=6)
        paused = pr.rx_pause_us_per_s if pr else None
        share = units.percent(None if paused is None else paused / 1e4, digits=1, width=6)
        total_rx = pc.rx_pause if pc.rx_pause is not None else "—"
        total_tx = pc.tx_pause if pc.tx_pause is not None else "—"
        text.append(f"\n  {label:<7} pause RX {rx}/s  TX {tx}/s  paused {share}")
        text.append(f"  (total {total_rx}/{total_tx})", style="dim")
    if r is not None:
        text.append(f"\n  pause_ctrl_phy RX {units.per_s(r.rx_pause_ctrl_phy_per_s)}/s"
                    f" TX {units.per_s(r.tx_pause_ctrl_phy_per_s)}/s"
                    f"   discards_phy {units.per_s(r.rx_discards_phy_per_s)}/s"
                    f"   out_of_buffer {units.per_s(r.rx_out_of_buffer_per_s)}/s")
    return text


class PortPanel(RatesPanel):
    """One RDMA port: state, rate, link layer, netdev; RX/TX sparklines and chart; the
    counters that moved; PFC of the paired netdev when ethtool -S is read."""

    DEFAULT_CSS = """
    PortPanel {
        height: auto;
        border: round $secondary 70%;
        border-title-color: $text;
        padding: 0 1;
    }
    PortPanel.-down { border: round $error; }
    PortPanel .port-info { height: 1; color: $text-muted; }
    PortPanel .row { height: 1; }
    PortPanel .row Label { width: 16; }
    PortPanel .row TrendLine { width: 1fr; color: $secondary; }
    PortPanel .counts { height: auto; }
    PortPanel PlotextPlot { height: 9; }
    """

    INFO_CLASS = "port-info"

    def __init__(self, key: PortKey, **kwargs) -> None:
        super().__init__(f"{key[0]}/{key[1]}", **kwargs)
        self.key = key
        self._pfc = Static(classes="counts")

    def extra(self) -> list:
        return [self._pfc]

    def show(self, node: Node, styles, *, as_bytes: bool, interval_s: float) -> None:
        fabric = node.sample.fabric if node.sample else None
        port = fabric.ports.get(self.key) if fabric else None
        if port is None:
            return
        rates = node.fabric_rates
        r = rates.ports.get(self.key) if rates else None
        self.border_title = port_title(port)
        self.set_class(port.active is False, "-down")
        info = Text(_state(port), style=styles[Level.CRITICAL] if port.active is False else "")
        info.append(f"  {port.rate_gbps:g} Gb/s" if port.rate_gbps else "  rate —")
        info.append(f"  {port.link_layer or 'link layer —'}")
        info.append(f"  netdev {port.netdev or '—'}")
        if r is not None and r.link_percent is not None:
            info.append(f"  {units.percent(r.link_percent)} of link")
        self._info.update(info)
        rx_ring, tx_ring = node.port_history.get(self.key, (None, None))
        rx = None if r is None or r.rx_bits_per_s is None else r.rx_bits_per_s / 8
        tx = None if r is None or r.tx_bits_per_s is None else r.tx_bits_per_s / 8
        self._rx_label.update(f"RX {units.bits_per_s(rx, as_bytes=as_bytes, width=11)}")
        self._tx_label.update(f"TX {units.bits_per_s(tx, as_bytes=as_bytes, width=11)}")
        rx_values = rx_ring.values(200) if rx_ring else []
        tx_values = tx_ring.values(200) if tx_ring else []
        top = max((v for v in rx_values + tx_values if v is not None), default=None)
        self._rx_spark.set(rx_values, top)
        self._tx_spark.set(tx_values, top)
        self._counts.update(self._counts_text(port, r, styles))
        step_s = rates.interval_s if rates else interval_s
        plot_rx_tx(self._plot, rx_ring, tx_ring, as_bytes=as_bytes, interval_s=step_s)
        pfc = fabric.pfc.get(port.netdev) if port.netdev else None
        self._pfc.display = pfc is not None
        if pfc is not None:
            pr = rates.pfc.get(port.netdev) if rates else None
            self._pfc.update(pfc_lines(port.netdev, pfc, pr, rates.pfc_interval_s if rates else None))

    def _counts_text(self, port: IbPort, r: PortRates | None, styles) -> Text:
        text = Text()
        if r is None:
            text.append("waiting for a second sample…" if port.active is not False else "port not ACTIVE: no rates",
                        style="dim")
            return text
        text.append(f"pkts {units.per_s(r.rx_packets_per_s)}/{units.per_s(r.tx_packets_per_s)}/s   ")
        errors = f"errors {units.per_s(r.errors_per_s)}/s"
        text.append(errors, style=styles[Level.CAREFUL] if r.errors_per_s else "")
        text.append(f"   discards {units.per_s(r.discards_per_s)}/s   xmit_wait {units.per_s(r.xmit_wait_per_s)}/s")
        if r.cnp_sent_per_s is not None or r.cnp_handled_per_s is not None:
            text.append(f"   CNP sent {units.per_s(r.cnp_sent_per_s)}/s handled {units.per_s(r.cnp_handled_per_s)}/s")
        moved = moved_counters(r)
        if moved:
            text.append("\nmoved:", style="bold")
            for name, rate in moved[:MOVED_SHOWN]:
                text.append(f"  {name} {units.per_s(rate)}/s")
        unknown = {n: why for n, why in r.unknown.items() if why != "new"}
        if unknown:
            shown = ", ".join(f"{n} {why}" for n, why in list(unknown.items())[:4])
            text.append(f"\nunknown: {shown}" + (" …" if len(unknown) > 4 else ""), style="dim")
        return text
