"""The node screen: one node in depth — interfaces, RDMA ports, per-CPU softirq, TCP, softnet."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from netui.ui.base import NetuiScreen
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from netui.model import units
from netui.model.health import Level
from netui.model.node import NodeState, data_plane
from netui.ui.flows import PeerPanel
from netui.ui.panels import CpuPanel, InterfacePanel, SoftnetPanel, TcpPanel, chart_rows
from netui.ui.ports import PortPanel
from netui.ui.render import level_styles
from netui.ui.status import StatusBar
from netui.ui.timeline import Timeline
from netui.ui.why import flag_line

WIDE = 120  # from this width the panels sit in two columns
IFACES_SHOWN = 32  # interface panels at most (each has a chart); the rest are counted below them


class NodeScreen(NetuiScreen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
    ]

    def __init__(self, node_name: str) -> None:
        super().__init__()
        self.node_name = node_name
        self._ifaces: list[str] = []
        self._ports: list[tuple[str, int]] = []

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Static(id="node-head")
        with VerticalScroll(id="node-body"):
            yield Grid(id="ifaces")
            yield Static(id="ifaces-more")
            yield Grid(id="ports")
            with Grid(id="host-panels"):
                yield CpuPanel(id="cpu")
                with VerticalScroll(id="right-col"):
                    yield TcpPanel(id="tcp")
                    yield SoftnetPanel(id="softnet")
                    yield PeerPanel(id="peers")
        yield Timeline(id="timeline")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Timeline).display = self.app.replay
        # the node's per-CPU tables while this screen shows it (the grid needs their sums only)
        self.app.monitor.want_detail((self.node_name,), True)
        self.refresh_data()

    def on_unmount(self) -> None:
        self.app.monitor.want_detail((self.node_name,), False)

    def on_resize(self, event) -> None:
        wide = self.size.width >= WIDE
        self.query_one("#ifaces").set_class(wide, "-wide")
        self.query_one("#ports").set_class(wide, "-wide")
        self.query_one("#host-panels").set_class(wide, "-wide")
        self.refresh_data()

    def _size_charts(self) -> None:
        """The charts use the height the screen has (a tall terminal gets tall charts)."""
        per_row = 2 if self.size.width >= WIDE else 1
        rows = -(-len(self._ifaces) // per_row) + -(-len(self._ports) // per_row)
        height = chart_rows(self.size.height, rows)
        for plot in self.query(PlotextPlot):
            if plot.styles.height is None or plot.styles.height.value != height:
                plot.styles.height = height

    def shown_interfaces(self) -> list[str]:
        node = self.app.fleet[self.node_name]
        if node.sample is None:
            return []
        if self.app.show_all:
            return sorted(node.sample.interfaces)
        return data_plane(node.sample.interfaces)

    def refresh_data(self) -> None:
        app = self.app
        node = app.fleet[self.node_name]
        styles = level_styles(app.theme_variables)
        self.query_one(StatusBar).update_from(app, title=f"› {node.name}")
        if app.replay:
            self.query_one(Timeline).show(app.monitor)
        head = Text()
        head.append(f"{node.name}", style="bold")
        if node.sample and node.sample.hostname and node.sample.hostname != node.name:
            head.append(f" ({node.sample.hostname})")
        head.append(f"  {node.state.value}", style=styles[node.level])
        s = node.summary
        head.append(f"   RX {units.bits_per_s(s.rx_bytes_per_s, as_bytes=app.grid_options.as_bytes)}"
                    f"  TX {units.bits_per_s(s.tx_bytes_per_s, as_bytes=app.grid_options.as_bytes)}")
        if node.sample and node.sample.fabric and node.sample.fabric.ports:
            head.append(f"   RDMA RX {units.bits_per_s(s.rdma_rx_bytes_per_s, as_bytes=app.grid_options.as_bytes)}"
                        f"  TX {units.bits_per_s(s.rdma_tx_bytes_per_s, as_bytes=app.grid_options.as_bytes)}")
        shown = self.shown_interfaces()
        hidden = 0
        if node.sample:
            hidden = len(node.sample.interfaces) - len(shown)
        if hidden:
            head.append(f"   ({hidden} hidden: a shows all)", style="dim")
        flag = flag_line(node)
        if flag:  # why the grid flags it, first: the rest of the screen says the details
            head.append(f"\n{flag}", style=Style.combine([styles[node.level], Style(bold=True)]))
        placed = app.fleet.placement(node.name)
        if placed is not None:
            head.append(f"\nswitch {placed.switch}" + (f" port {placed.port}" if placed.port else ""))
            sources = placed.source + (f"; port: {placed.port_source}"
                                       if placed.port_source and placed.port_source != placed.source else "")
            head.append(f"  ({sources})" if sources else "", style="dim")
        if node.error and node.state is NodeState.UP:  # a node that is not up: the flag line says it
            head.append(f"\n{node.error}", style=styles[node.level])
        said = {node.slow_links[0]} if node.slow_links and node.straggler is None else set()
        if node.straggler is None and not node.slow_links and node.health.level > 0 and node.health.reasons:
            said.add(node.health.reasons[0])  # the flag line's
        for reason in node.slow_links[:2]:
            if reason not in said:
                head.append(f"\n! {reason}", style=styles[Level.WARNING])
        for reason in node.health.reasons[: max(1, 3 - len(node.slow_links))]:
            if reason not in said:
                head.append(f"\n! {reason}", style=styles[node.health.level])
        self.query_one("#node-head", Static).update(head)

        wanted = shown
        more = len(wanted) - IFACES_SHOWN
        more_line = self.query_one("#ifaces-more", Static)
        more_line.display = more > 0
        if more > 0:
            wanted = wanted[:IFACES_SHOWN]
            more_line.update(Text(f"… and {more:,} more interfaces (the first {IFACES_SHOWN} are shown)", style="dim"))
        box = self.query_one("#ifaces", Grid)
        box.set_class(len(wanted) == 1, "-single")
        if wanted != self._ifaces:
            box.remove_children()
            box.mount_all([InterfacePanel(name) for name in wanted])
            self._ifaces = wanted
            self.call_after_refresh(self.refresh_data)
        for panel in box.query(InterfacePanel):
            panel.show(node, as_bytes=app.grid_options.as_bytes, interval_s=app.monitor.interval_s)
        self._show_ports(node, styles)
        self._size_charts()
        cpu = self.query_one(CpuPanel)
        cpu.show(node, styles, max(40, cpu.content_size.width or self.size.width - 4))
        self.query_one(TcpPanel).show(node, styles)
        self.query_one(SoftnetPanel).show(node, styles)
        self.query_one(PeerPanel).show(node, app.fleet.node_peers(node.name), styles,
                                       as_bytes=app.grid_options.as_bytes)

    def shown_ports(self) -> list[tuple[str, int]]:
        """The node's RDMA ports, (hca, port), in the order the node lists them."""
        node = self.app.fleet[self.node_name]
        fabric = node.sample.fabric if node.sample else None
        return list(fabric.ports) if fabric else []

    def _show_ports(self, node, styles) -> None:
        wanted = self.shown_ports()
        box = self.query_one("#ports", Grid)
        box.display = bool(wanted)
        box.set_class(len(wanted) == 1, "-single")
        if wanted != self._ports:
            box.remove_children()
            box.mount_all([PortPanel(key) for key in wanted])
            self._ports = wanted
            self.call_after_refresh(self.refresh_data)
        for panel in box.query(PortPanel):
            panel.show(node, styles, as_bytes=self.app.grid_options.as_bytes,
                       interval_s=self.app.monitor.interval_s)
