"""The netui application: screens, keys, and the bridge from the engine to the screens."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from netui.engine.monitor import Monitor
from netui.engine.pairtools import PairSettings
from netui.engine.pingtools import PingSettings
from netui.model.testnet import suggest_interface
from netui.ui.cluster import ClusterScreen
from netui.ui.columns import GridOptions
from netui.ui.doctor import DoctorScreen
from netui.ui.help import HelpScreen
from netui.ui.latency import LatencyScreen
from netui.ui.matrix import MatrixScreen
from netui.ui.node import NodeScreen
from netui.ui.pairdialog import LatencyDialog, PairTestDialog


class FleetUpdated(Message):
    """The engine finished a poll. A newer one replaces an unhandled older one."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FleetUpdated)


class NetuiApp(App):
    CSS_PATH = "netui.tcss"
    TITLE = "netui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("b", "toggle_bytes", "Bytes"),
        Binding("a", "toggle_all", "All ifaces"),
        Binding("plus,equals_sign", "slower", "Slower", key_display="+", show=False),
        Binding("minus", "faster", "Faster", key_display="-", show=False),
    ]

    def __init__(self, monitor: Monitor, *, autostart: bool = True) -> None:
        super().__init__()
        self.monitor = monitor
        self.autostart = autostart
        self.paused = False
        self.show_all = False
        self.grid_options = GridOptions()
        self.pair_settings = PairSettings()  # the last pair test's, offered again next time
        self.latency_settings = PingSettings()  # the same for the latency test
        monitor.on_update = lambda: self.post_message(FleetUpdated())

    def on_mount(self) -> None:
        self.push_screen(ClusterScreen())
        if self.autostart:
            self.run_worker(self.monitor.run(), name="poller", group="poller", exclusive=True)

    async def on_unmount(self) -> None:
        await self.monitor.close()

    def on_fleet_updated(self, message: FleetUpdated) -> None:
        if not self.paused:
            self.refresh_screen()

    def refresh_screen(self) -> None:
        screen = self.screen
        refresh = getattr(screen, "refresh_data", None)
        if refresh is not None:
            refresh()

    def open_node(self, name: str) -> None:
        self.push_screen(NodeScreen(name))

    def open_doctor(self, nodes: list[str]) -> None:
        self.push_screen(DoctorScreen(nodes))

    def start_pair_test(self, tool: str, nodes: list[str], *, matrix: bool) -> None:
        """Ask for the settings (the last ones offered), then run the test on its screen."""
        settings = PairSettings.from_dict(self.pair_settings.to_dict() | {"tool": tool})
        samples = {n: self.monitor.fleet[n].sample for n in nodes}

        def start(chosen: PairSettings | None) -> None:
            if chosen is not None:
                self.pair_settings = chosen
                self.push_screen(MatrixScreen(nodes=nodes, settings=chosen, matrix=matrix))

        self.push_screen(PairTestDialog(settings, nodes, matrix=matrix,
                                        suggested_interface=suggest_interface(samples)), start)

    def start_latency_test(self, nodes: list[str]) -> None:
        """Ask for the latency settings (the last ones offered), then run it on its screen:
        every node pings every other (two nodes: the pair, both ways)."""
        samples = {n: self.monitor.fleet[n].sample for n in nodes}

        def start(chosen: PingSettings | None) -> None:
            if chosen is not None:
                self.latency_settings = chosen
                self.push_screen(LatencyScreen(nodes=nodes, settings=chosen, matrix=True))

        self.push_screen(LatencyDialog(self.latency_settings, nodes, suggested_interface=suggest_interface(samples)),
                         start)

    # actions -------------------------------------------------------------------------------
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.refresh_screen()

    def action_toggle_bytes(self) -> None:
        self.grid_options = GridOptions(as_bytes=not self.grid_options.as_bytes)
        self.refresh_screen()

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all
        self.refresh_screen()
        self.notify("all interfaces" if self.show_all else "data-plane interfaces only", timeout=1.5)

    def action_slower(self) -> None:
        self.monitor.step_interval(+1)
        self.refresh_screen()

    def action_faster(self) -> None:
        self.monitor.step_interval(-1)
        self.refresh_screen()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Pause / resume", "Freeze the display; sampling goes on", self.action_toggle_pause)
        yield SystemCommand("Bits / bytes", "Show throughput in bits/s or bytes/s", self.action_toggle_bytes)
        yield SystemCommand("All interfaces", "Show loopback and virtual interfaces too", self.action_toggle_all)
        yield SystemCommand("Longer interval", "Sample less often (+)", self.action_slower)
        yield SystemCommand("Shorter interval", "Sample more often (-)", self.action_faster)
        yield SystemCommand("Netui keys", "Every key netui knows (?)", self.action_help)
        if isinstance(screen, ClusterScreen):
            yield SystemCommand("Sort", "Cycle the grid's sort order (s)", screen.action_cycle_sort)
            yield SystemCommand("Filter", "Filter nodes by name or state (/)", screen.action_filter)
            yield SystemCommand("Mark node", "Mark or unmark the node under the cursor for a pair test (space)",
                                screen.grid.action_toggle_mark)
            yield SystemCommand("iperf3 pair test", "Between the two marked nodes (t)",
                                lambda: screen.action_pair_test("iperf3"))
            yield SystemCommand("iperf3 matrix", "All pairs of the marked nodes, or of all (T)",
                                lambda: screen.action_pair_matrix("iperf3"))
            yield SystemCommand("ib_write_bw pair test", "RDMA between the two marked nodes (r)",
                                lambda: screen.action_pair_test("ib_write_bw"))
            yield SystemCommand("ib_write_bw matrix", "RDMA, all pairs of the marked nodes, or of all (R)",
                                lambda: screen.action_pair_matrix("ib_write_bw"))
            yield SystemCommand("Latency matrix", "RTT and loss (fping or ping) between the marked nodes, "
                                                  "or all (l)", screen.action_latency)
            yield SystemCommand("Doctor", "Check MTU, link speeds, RDMA ports, sysctls… of the marked nodes, "
                                          "or of all (D)", screen.action_doctor)
        if isinstance(screen, DoctorScreen):
            yield SystemCommand("Doctor again", "Run the checks again, after a fix (r)", screen.action_rerun)
        if isinstance(screen, LatencyScreen):
            yield SystemCommand("Export latency test", "Write the results as CSV and JSON (e)", screen.action_export)
            yield SystemCommand("Cancel latency test / back", "Stop every ping, or leave the matrix (Esc)",
                                screen.action_back)
        elif isinstance(screen, MatrixScreen):
            yield SystemCommand("Export pair test", "Write the results as CSV and JSON (e)", screen.action_export)
            yield SystemCommand("Cancel pair test / back", "Stop every test, or leave the matrix (Esc)",
                                screen.action_back)


def make_app(monitor: Monitor, *, autostart: bool = True) -> NetuiApp:
    """The one app factory, for the CLI and the tests."""
    return NetuiApp(monitor, autostart=autostart)
