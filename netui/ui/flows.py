"""Who talks to whom: the node screen's top peers, and the peer matrix screen (P in the grid),
a live heatmap of the TCP flows between watched nodes with the worst pairs listed below.
The figures are the model's (model/flows.py); this only lays them out."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.containers import VerticalScroll
from netui.ui.base import NetuiScreen
from textual.widgets import Footer, Static

from netui.model import units
from netui.model.flows import MATRIX_METRICS, PairFlow, pair_matrix, pair_value, worst_pairs
from netui.model.node import Node
from netui.ui.status import StatusBar
from netui.ui.timeline import Timeline

TOP_PEERS = 8  # rows of the node screen's peers panel
METRIC_LABELS = {"throughput": "throughput", "rtt": "RTT", "retrans": "retransmits/s"}


def rtt_text(rtt_s: float | None) -> str:
    if rtt_s is None:
        return units.UNKNOWN
    ms = rtt_s * 1e3
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.0f} ms"


def metric_text(flow: PairFlow, metric: str, as_bytes: bool) -> str:
    if metric == "rtt":
        return rtt_text(flow.rtt_s)
    if metric == "retrans":
        return units.per_s(flow.retrans_per_s)
    return units.bits_per_s(flow.bytes_per_s, as_bytes=as_bytes)


def _short(text: str) -> str:
    """A cell's figure without the unit's spaces (``1.2 Gb/s`` → ``1.2G``)."""
    return text.replace(" ms", "ms").replace("b/s", "").replace("B/s", "").replace(" ", "")


class PeerPanel(Static):
    """A node's top peers: name (a watched node) or address, TX, RX, RTT, retransmits/s, sockets."""

    DEFAULT_CSS = """
    PeerPanel { height: auto; border: round $primary 60%; padding: 0 1; }
    """

    def on_mount(self) -> None:
        self.border_title = "TCP peers"

    def show(self, node: Node, peers: dict, styles, *, as_bytes: bool) -> None:
        sample = node.sample.peers if node.sample is not None else None
        self.display = sample is not None  # (node_exporter, a recording made before peers: none)
        if sample is None:
            return
        if not sample.available:
            self.update(f"TCP peers unavailable ({sample.error})")
            return
        table = Table.grid(padding=(0, 1))
        for justify in ("left", "right", "right", "right", "right", "right"):
            table.add_column(justify=justify, no_wrap=True)
        table.add_row(*(Text(h, style="bold") for h in ("peer", "TX", "RX", "RTT", "retr/s", "sockets")))
        for name, r in list(peers.items())[:TOP_PEERS]:
            table.add_row(name, units.bits_per_s(r.tx_bytes_per_s, as_bytes=as_bytes),
                          units.bits_per_s(r.rx_bytes_per_s, as_bytes=as_bytes), rtt_text(r.rtt_s),
                          units.per_s(r.retrans_per_s), str(r.sockets))
        note = f"{sample.sockets} sockets, {sample.peers_seen} peers"
        if len(peers) > TOP_PEERS or sample.peers_seen > len(sample.peers):
            note += f" (top {min(TOP_PEERS, len(peers))} shown)"
        if sample.capped:
            note += "; stopped at the socket cap: some sockets not read"
        if not peers:
            note += "; none moved bytes or all are loopback"
        self.update(Group(table, Text(note, style="dim")))


class PeerMatrixScreen(NetuiScreen):
    """The TCP flows between watched nodes: rows send, columns receive."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("m", "cycle_metric", "Metric"),
        Binding("b", "app.bytes", "Bytes"),
        Binding("b", "app.bits", "Bits"),
    ]
    DEFAULT_CSS = """
    PeerMatrixScreen #peer-body { height: 1fr; }
    PeerMatrixScreen #peer-heat { height: auto; padding: 0 1; }
    PeerMatrixScreen #peer-worst { height: auto; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.metric = MATRIX_METRICS[0]

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with VerticalScroll(id="peer-body"):
            yield Static(id="peer-heat")
            yield Static(id="peer-worst")
        yield Timeline(id="timeline")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Timeline).display = self.app.replay
        self.refresh_data()

    def on_resize(self, event) -> None:
        self.refresh_data()

    def action_cycle_metric(self) -> None:
        self.metric = MATRIX_METRICS[(MATRIX_METRICS.index(self.metric) + 1) % len(MATRIX_METRICS)]
        self.refresh_data()

    def refresh_data(self) -> None:
        app = self.app
        fleet = app.fleet
        as_bytes = app.grid_options.as_bytes
        self.query_one(StatusBar).update_from(app, title=f"› peers: {METRIC_LABELS[self.metric]}")
        if app.replay:
            self.query_one(Timeline).show(app.monitor)
        pairs = pair_matrix(fleet.peer_flows())
        involved = {name for pair in pairs for name in pair}
        names = [n.name for n in fleet if n.name in involved]
        heat = self.query_one("#peer-heat", Static)
        worst = self.query_one("#peer-worst", Static)
        if not pairs:
            read = sum(1 for n in fleet if n.sample is not None and n.sample.peers is not None)
            heat.update(Text(f"No TCP flows between watched nodes yet ({read} of {len(fleet)} nodes read their "
                             "sockets). m: throughput, RTT, retransmits.", style="dim"))
            worst.update("")
            return
        width = max(20, self.size.width - 2)
        heat.update(self._heatmap(names, pairs, width, as_bytes))
        worst.update(self._worst(pairs, width, max(3, self.size.height - len(names) - 7), as_bytes))

    def _colour(self, fraction: float) -> Style:
        """A cell's background: from the panel's colour towards the metric's, by ``fraction``."""
        v = self.app.theme_variables
        base = Color.parse(v.get("panel", "#000000"))
        towards = Color.parse(v.get("accent" if self.metric == "throughput" else "error", "#ff0000"))
        back = base.blend(towards, max(0.0, min(1.0, fraction)))
        return Style(bgcolor=back.rich_color, color=back.get_contrast_text().rich_color)

    def _heatmap(self, names: list[str], pairs: dict, width: int, as_bytes: bool):
        label = min(12, max(cell_len(n) for n in names))
        cell = 7
        fit = max(1, (width - label - 4) // (cell + 1))
        shown = names[:fit]
        values = [pair_value(f, self.metric) for f in pairs.values()]
        top = max((v for v in values if v is not None), default=0.0)
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True, width=label + 2)
        for _ in shown:
            table.add_column(justify="right", no_wrap=True, width=cell)
        table.add_row(Text("→ to", style="dim"), *(Text(n[:cell], style="bold") for n in shown))
        for src in shown:
            row = [Text(src[:label], style="bold")]
            for dst in shown:
                f = pairs.get((src, dst))
                if src == dst:
                    row.append(Text("·".rjust(cell), style="dim"))
                elif f is None:
                    row.append(Text("".rjust(cell)))
                else:
                    v = pair_value(f, self.metric)
                    text = _short(metric_text(f, self.metric, as_bytes))[:cell].rjust(cell)
                    row.append(Text(text, style=self._colour(v / top if v is not None and top > 0 else 0.0)))
            table.add_row(*row)
        more = len(names) - len(shown)
        note = (f"rows send, columns receive; {METRIC_LABELS[self.metric]} (m: throughput, RTT, retransmits)"
                + (f"; {more} more nodes: see the list" if more else ""))
        return Group(table, Text(note, style="dim"))

    def _worst(self, pairs: dict, width: int, rows: int, as_bytes: bool):
        ordered = worst_pairs(pairs, self.metric)
        what = {"throughput": "slowest flows first", "rtt": "longest RTT first", "retrans": "most retransmits first"}
        out = Text(f"worst pairs ({what[self.metric]})", style="bold")
        for (src, dst), f in ordered[:rows]:
            out.append(f"\n{src} → {dst}  ")
            out.append(f"{units.bits_per_s(f.bytes_per_s, as_bytes=as_bytes)}  RTT {rtt_text(f.rtt_s)}  "
                       f"retr {units.per_s(f.retrans_per_s)}/s  {f.sockets} sock")
        if not ordered:
            out.append(f"\nno pair has a {METRIC_LABELS[self.metric]} figure yet", style="dim")
        elif len(ordered) > rows:
            out.append(f"\n… {len(ordered) - rows} more pairs", style="dim")
        return out
