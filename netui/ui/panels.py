"""The panels of the node screen. Each takes the Node and shows it; none computes a rate."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Label, Static
from textual_plotext import PlotextPlot

from netui.model import units
from netui.model.health import Level
from netui.model.node import Node
from netui.model.rates import CpuSumRates
from netui.model.samples import SOFTWARE_KINDS, CpuSums
from netui.ui.base import NetuiStatic
from netui.ui.render import spark

CHART_SECONDS = 300  # the chart shows the last five minutes


class TrendLine(Widget):
    """A one-line sparkline with an explicit scale, so RX and TX bars compare (Textual's
    Sparkline scales each series to its own range: 2 Mb/s would look as full as 2 Gb/s)."""

    DEFAULT_CSS = """
    TrendLine { height: 1; width: 1fr; color: $accent; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.values: list[float | None] = []
        self.top: float | None = None

    def set(self, values: list[float | None], top: float | None) -> None:
        self.values, self.top = values, top
        self.refresh()

    def render(self) -> str:
        width = self.size.width
        return spark(self.values[-width:], width, top=self.top) if width else ""


class RatesPanel(Vertical):
    """What an interface's panel and an RDMA port's panel share: an info line, RX and TX
    sparklines with their rates, a counts line, a chart, and whatever ``extra`` adds.

    The children are built in ``__init__`` so that ``show()`` can run before they are
    mounted.
    """

    INFO_CLASS = "info"

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = title
        self._info = Static(classes=self.INFO_CLASS)
        self._rx_label = Label("RX")
        self._tx_label = Label("TX")
        self._rx_spark = TrendLine()
        self._tx_spark = TrendLine()
        self._counts = Static(classes="counts")
        self._plot = PlotextPlot(classes="chart")

    def extra(self) -> list:
        return []

    def compose(self) -> ComposeResult:
        yield self._info
        with Horizontal(classes="row"):
            yield self._rx_label
            yield self._rx_spark
        with Horizontal(classes="row"):
            yield self._tx_label
            yield self._tx_spark
        yield self._counts
        yield self._plot
        yield from self.extra()


class InterfacePanel(RatesPanel):
    """One interface: state line, RX/TX sparklines with rates, drops/errors, a chart."""

    INFO_CLASS = "iface-info"

    DEFAULT_CSS = """
    InterfacePanel {
        height: auto;
        border: round $primary 60%;
        border-title-color: $text;
        padding: 0 1;
    }
    InterfacePanel.-down { border: round $error; }
    InterfacePanel .iface-info { height: 1; color: $text-muted; }
    InterfacePanel .row { height: 1; }
    InterfacePanel .row Label { width: 16; }
    InterfacePanel .row TrendLine { width: 1fr; }
    InterfacePanel .counts { height: 1; }
    InterfacePanel PlotextPlot { height: 9; }
    """

    def __init__(self, iface: str, **kwargs) -> None:
        super().__init__(iface, **kwargs)
        self.iface = iface

    def show(self, node: Node, *, as_bytes: bool, interval_s: float) -> None:
        s = node.sample.interfaces.get(self.iface) if node.sample else None
        r = node.rates.interfaces.get(self.iface) if node.rates else None
        if s is None:
            return
        self.set_class(s.operstate == "down" or s.carrier is False, "-down")
        self._info.update(
            f"{s.operstate or '—'}  {units.speed(s.speed_mbps)}"
            # a software device's speed is nominal (a veth says 10G): said so, as the pair test does
            + (" nominal" if s.kind in SOFTWARE_KINDS and s.speed_mbps else "")
            + f"  MTU {s.mtu if s.mtu is not None else '—'}"
            f"  {s.kind or ''}"
            + (f"  {units.percent(r.link_percent)} of link" if r and r.link_percent is not None else "")
        )
        rx_ring, tx_ring = node.iface_history.get(self.iface, (None, None))
        rx_rate = r.rx_bytes_per_s if r else None
        tx_rate = r.tx_bytes_per_s if r else None
        self._rx_label.update(f"RX {units.bits_per_s(rx_rate, as_bytes=as_bytes, width=11)}")
        self._tx_label.update(f"TX {units.bits_per_s(tx_rate, as_bytes=as_bytes, width=11)}")
        rx_values = rx_ring.values(200) if rx_ring else []
        tx_values = tx_ring.values(200) if tx_ring else []
        top = max((v for v in rx_values + tx_values if v is not None), default=None)
        self._rx_spark.set(rx_values, top)
        self._tx_spark.set(tx_values, top)
        c = s.counters
        drops = f"drops {units.per_s(r.rx_dropped_per_s)}/{units.per_s(r.tx_dropped_per_s)}/s" if r else "drops —"
        errs = f"errors {units.per_s(r.rx_errors_per_s)}/{units.per_s(r.tx_errors_per_s)}/s" if r else "errors —"
        pkts = f"pkts {units.per_s(r.rx_packets_per_s)}/{units.per_s(r.tx_packets_per_s)}/s" if r else "pkts —"
        total = f"total drops {c.rx_dropped + c.tx_dropped}  errors {c.rx_errors + c.tx_errors}"
        self._counts.update(f"{pkts}   {drops}   {errs}   {total}")
        # the node's own sample spacing (a replay may run faster than it was recorded)
        step_s = node.rates.interval_s if node.rates else interval_s
        self._chart(rx_ring, tx_ring, as_bytes=as_bytes, interval_s=step_s)

    def _chart(self, rx_ring, tx_ring, *, as_bytes: bool, interval_s: float) -> None:
        plot_rx_tx(self._plot, rx_ring, tx_ring, as_bytes=as_bytes, interval_s=interval_s)


# The chart's scale never goes below this (bits/s): an idle interface carrying a few kb/s of
# SSH draws a flat line near zero, not a full-height wave (the floor nload and btop keep too).
CHART_FLOOR_BPS = 1e6


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """``count`` + 1 round ticks from 0 to at least ``top``: steps of 1, 2, 2.5 or 5 × 10^k
    (0, 250 M, 500 M, 750 M, 1 G), never a tick at 1.10 or 0.92."""
    if not math.isfinite(top) or top <= 0:
        top = 1.0
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    return [step * k for k in range(count + 1)]


def time_ticks(span_s: float, count: int = 5) -> list[tuple[float, str]]:
    """Ticks on a "seconds ago" axis ending at 0: at most ``count`` + 1 at a round step
    (1 s … 10 min), labelled "now", "-30s", "-2m"."""
    step = next((st for st in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600) if span_s / st <= count), 600)
    ticks = []
    k = 0
    while k * step <= span_s + 1e-9:
        ago = k * step
        label = "now" if ago == 0 else f"-{ago // 60:g}m" if step >= 60 else f"-{ago:g}s"
        ticks.append((-float(ago), label))
        k += 1
    return ticks[::-1]


def chart_rows(screen_height: int, panel_rows: int) -> int:
    """How tall each chart is: about half the screen shared by the rows of panels, never
    below the 9 rows that show two lines apart, never above 30."""
    if panel_rows < 1:
        return 9
    return max(9, min(30, int(screen_height * 0.55) // panel_rows - 6))


def chart_ages(ring, interval_s: float) -> list[float]:
    """The x of each point a chart shows (seconds before the newest, ≤ 0, oldest first): the
    ring's points of the last CHART_SECONDS, each at its real time — points taken before an
    interval change keep their spacing. A ring without times spaces its points by
    ``interval_s``, its newest CHART_SECONDS / ``interval_s`` of them."""
    times = ring.times()
    if not times or any(map(math.isnan, times)):  # rows appended without their time
        n = min(len(ring), max(2, int(CHART_SECONDS / interval_s)))
        return [-(n - 1 - i) * interval_s for i in range(n)]
    newest = times[-1]
    # the points of the last CHART_SECONDS; plotext needs two at least
    first = min(len(times) - 2, bisect_left(times, newest - CHART_SECONDS + 1e-6)) if len(times) > 1 else 0
    return [t - newest for t in times[first:]]


def plot_rx_tx(plot: PlotextPlot, rx_ring, tx_ring, *, as_bytes: bool, interval_s: float) -> None:
    """RX and TX (rings of bytes/s) over the last CHART_SECONDS, in the plot's own plotext:
    round ticks with their units on the y axis (from 0, at least ``CHART_FLOOR_BPS``), time
    ago on the x axis."""
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    if rx_ring is None or len(rx_ring) == 0:
        plot.refresh()
        return
    xs = chart_ages(rx_ring, interval_s)
    scale = 1.0 if as_bytes else 8.0
    rx = [(v or 0.0) * scale for v in rx_ring.values(len(xs))]
    tx = [(v or 0.0) * scale for v in tx_ring.values(len(xs))]
    ticks = nice_ticks(max(rx + tx + [CHART_FLOOR_BPS * scale / 8.0]))
    plt.plot(xs, rx, label="RX", marker="braille")
    plt.plot(xs, tx, label="TX", marker="braille")
    plt.ylim(0, ticks[-1] * 1.08)  # headroom: a line at the top tick stays clear of the legend
    plt.yticks(ticks, [units.si(t, "B/s" if as_bytes else "b/s") for t in ticks])
    span = max(-xs[0], interval_s) if len(xs) > 1 else interval_s  # one point still spans an interval
    plt.xlim(-span, 0)
    xt = time_ticks(span)
    plt.xticks([x for x, _ in xt], [label for _, label in xt])
    plot.refresh()


class CpuPanel(NetuiStatic):
    """Per-CPU softirq %, NET_RX/s and NET_TX/s; the hottest CPU picked out."""

    DEFAULT_CSS = """
    CpuPanel { height: auto; border: round $primary 60%; padding: 0 1; }
    """

    def on_mount(self) -> None:
        self.border_title = "CPU softirq · NET_RX/s NET_TX/s"

    def show(self, node: Node, styles, width: int) -> None:
        cr = node.rates.cpu if node.rates else None
        if cr is None or (not any(p is not None for p in cr.softirq_percent)
                          and not any(r is not None for r in cr.net_rx_per_s)):
            self.update(_waiting(node, "per-CPU softirq", _hottest_meanwhile, replay=self.app.replay))
            return
        hot = cr.hottest()
        thr = node.threshold("softirq_percent")
        cells = []
        for cpu, pct, rx, tx in zip(cr.cpus, cr.softirq_percent, cr.net_rx_per_s, cr.net_tx_per_s):
            level = thr.level(pct)
            bar = _bar(pct, 8)
            t = Text(f"{units.cpu(cpu):<6} {bar} {units.percent(pct, width=4)} rx {units.per_s(rx, width=5)}/s tx {units.per_s(tx, width=5)}/s")
            if hot is not None and cpu == hot[0] and (pct or 0) > 0:
                t.stylize("bold reverse")
            elif level > Level.OK:
                t.stylize(styles[level])
            cells.append(t)
        per_row = max(1, width // 44)
        grid = Table.grid(padding=(0, 2))
        for _ in range(per_row):
            grid.add_column()
        for i in range(0, len(cells), per_row):
            grid.add_row(*cells[i : i + per_row])
        head = Text(f"hottest: {units.cpu(hot[0])} {hot[1]:.0f}%\n" if hot else "hottest: —\n", style="bold")
        self.update(Group(head, grid))


def _waiting(node: Node, what: str, meanwhile: Callable[[CpuSumRates, CpuSums], str | None], *,
             replay: bool = False) -> str:
    """Why a per-CPU panel is empty. A remote node sends its per-CPU tables while its
    screen is open: the first two samples after it opened make the first rates. In a
    replay, the recording has them from its second sample on (or not, at that moment).
    ``meanwhile``: the panel's line from the node's summed figures, when they say it."""
    s = node.sample
    if s is None:
        return "no data"
    sums = s.cpu_sums
    if sums is None:
        return "waiting for a second sample…"
    r = node.rates.cpu_sums if node.rates else None
    line = meanwhile(r, sums) if r is not None else None
    now = f"\nmeanwhile, {line}" if line else ""
    if replay:
        return f"{what}: the recording has no per-CPU tables for this node at this moment{now}"
    return f"{what}: asked the node for its per-CPU tables, they come with the next samples…{now}"


def _hottest_meanwhile(r: CpuSumRates, sums: CpuSums) -> str | None:
    if not r.hottest or not sums.ncpus:
        return None
    return f"of {sums.ncpus} CPUs the hottest: {units.cpu(r.hottest[0])} {r.hottest[1]:.0f}%"


def _softnet_meanwhile(r: CpuSumRates, sums: CpuSums) -> str | None:
    if r.dropped_per_s is None:
        return None
    return f"all CPUs: backlog drops {units.per_s(r.dropped_per_s)}/s   time squeezes {units.per_s(r.time_squeeze_per_s)}/s"


def _bar(pct: float | None, width: int) -> str:
    if pct is None:
        return " " * width
    full = pct / 100 * width
    n = int(full)
    frac = full - n
    partial = " ▏▎▍▌▋▊▉"[int(frac * 8)] if n < width else ""
    return ("█" * n + partial).ljust(width)[:width]


class TcpPanel(NetuiStatic):
    DEFAULT_CSS = """
    TcpPanel { height: auto; border: round $primary 60%; padding: 0 1; }
    """

    def on_mount(self) -> None:
        self.border_title = "TCP"

    def show(self, node: Node, styles) -> None:
        s = node.sample.tcp if node.sample else None
        t = node.rates.tcp if node.rates else None
        via = self.app.monitor.via(node.name)
        if s is None:
            if via and node.sample is None:
                self.update(f"no TCP counters: nothing read from {via} yet")
            elif via:
                self.update(f"no TCP counters: not available from {via} (no node_netstat_Tcp_* series)")
            else:
                self.update("no TCP counters (net/snmp unreadable)")
            return
        lines = Text()
        # coloured only when it counts (enough segments sent in the interval: [health])
        judged = node.summary.retrans_judged
        ratio_level = node.threshold("retrans_ratio").level(t.retrans_ratio if t and judged else None)
        lines.append(f"retransmits {units.per_s(t.retrans_segs_per_s if t else None)}/s  ")
        lines.append(f"ratio {units.ratio_percent(t.retrans_ratio if t else None)}",
                     style=styles[ratio_level] if ratio_level > Level.OK else "")
        if judged is False:
            lines.append(f"  not judged: under {node.rules.retrans_min_segments:,} segments sent", style="dim")
        lines.append(f"\nsegments out {units.per_s(t.out_segs_per_s if t else None)}/s"
                     f"  in {units.per_s(t.in_segs_per_s if t else None)}/s"
                     f"  established {s.tcp.get('CurrEstab', '—')}")
        lines.append(f"\ntotal RetransSegs {s.tcp.get('RetransSegs', '—')}  OutSegs {s.tcp.get('OutSegs', '—')}")
        moved = sorted((t.ext_per_s if t else {}).items(), key=lambda kv: -kv[1])
        if moved:
            lines.append("\nTcpExt that moved:", style="bold")
            for key, rate in moved[:12]:
                lines.append(f"\n  {key:<28}{units.per_s(rate, width=8)}/s")
        elif via and s.ext:
            lines.append(f"\nTcpExt: nothing moved of the {len(s.ext)} {via} exports")
        elif not via:
            lines.append("\nTcpExt: nothing moved")
        if via:  # node_exporter exports only a few TcpExt counters by default
            lines.append(f"\nother TcpExt counters: not available from {via}" if s.ext
                         else f"\nTcpExt: not available from {via}", style="dim")
        self.update(lines)


class SoftnetPanel(NetuiStatic):
    DEFAULT_CSS = """
    SoftnetPanel { height: auto; border: round $primary 60%; padding: 0 1; }
    """

    def on_mount(self) -> None:
        self.border_title = "softnet backlog"

    def show(self, node: Node, styles) -> None:
        r = node.rates.softnet if node.rates else None
        if r is None:
            sums = node.sample.cpu_sums if node.sample else None
            if node.sample and (node.sample.softnet or (sums is not None and sums.dropped is not None)):
                self.update(_waiting(node, "per-CPU softnet", _softnet_meanwhile, replay=self.app.replay))
            else:
                self.update("no softnet_stat")
            return
        drops, squeeze = sum(r.dropped_per_s), sum(r.time_squeeze_per_s)
        text = Text()
        dl = node.threshold("softnet_drops_per_s").level(drops)
        sl = node.threshold("time_squeeze_per_s").level(squeeze)
        text.append(f"backlog drops {units.per_s(drops)}/s", style=styles[dl] if dl else "")
        text.append("   ")
        text.append(f"time squeezes {units.per_s(squeeze)}/s", style=styles[sl] if sl else "")
        busy = [(c, d, q) for c, d, q in zip(r.cpus, r.dropped_per_s, r.time_squeeze_per_s) if d or q]
        for cpu, d, q in busy[:8]:
            text.append(f"\n  {units.cpu(cpu):<6} drops {units.per_s(d)}/s  squeezes {units.per_s(q)}/s")
        if node.sample and node.sample.softnet:
            sn = node.sample.softnet
            text.append(f"\ntotal drops {sum(sn.dropped)}  squeezes {sum(sn.time_squeeze)}", style="dim")
        self.update(text)
