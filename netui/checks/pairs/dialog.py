"""The settings of a pair test, asked before it starts (t, T, r, R in the grid; l for latency).

The dialog is filled with the last settings used (the app remembers them between runs) and
dismisses with the new ``PairSettings``, or None when the user backs out. It checks
nothing itself beyond turning text into numbers: ``PairSettings.check`` says what is wrong.
"""

from __future__ import annotations

import math
from typing import TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from netui.checks.pairs.tools import DIRECTION_LABELS, DIRECTIONS, FIRST_PORT, IB_WRITE_BW, IPERF3, PairSettings
from netui.checks.latency.tools import AUTO, LatencySettings
from netui.checks.pairs.model import all_pairs_rounds, one_at_a_time

SettingsT = TypeVar("SettingsT", PairSettings, LatencySettings)


class TickBox(Checkbox):
    """A checkbox that draws its mark only when checked: Textual's draws ``▐X▌`` in both
    states, told apart by colour alone (which a screenshot without colour, or a terminal
    with few colours, loses)."""

    @property
    def _button(self):
        self.BUTTON_INNER = "X" if self.value else " "
        return super()._button


# The dialogs fit 80×24: one row per field (compact inputs, no borders), scrolling only when
# the screen is smaller still.
DIALOG_CSS = """
PairTestDialog { align: center middle; }
PairTestDialog > Vertical {
    width: 84; max-width: 100%; height: auto; max-height: 100%; overflow-y: auto;
    border: round $primary; background: $surface; padding: 0 1;
}
PairTestDialog #pair-title { text-style: bold; padding: 0 0 1 0; }
PairTestDialog Grid { grid-size: 2; grid-columns: 24 1fr; grid-rows: auto; grid-gutter: 0 1; height: auto; }
PairTestDialog Grid > Label { padding: 0; }
PairTestDialog Input, PairTestDialog Select { width: 1fr; }
PairTestDialog #pair-error { color: $error; height: auto; }
PairTestDialog #pair-plan { color: $text-muted; height: auto; padding: 1 0 0 0; }
PairTestDialog Horizontal { height: auto; align: right middle; }
PairTestDialog Button { margin: 0 0 0 1; }
"""


def _int(text: str, what: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what}: not a whole number: {text!r}") from None


def _float(text: str, what: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what}: not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{what}: not a finite number: {text!r}")
    return value


def _text(value) -> str:
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


class _SettingsDialog(ModalScreen[SettingsT | None]):
    """What both settings dialogs share: the plan follows every edit, Enter or Start dismisses
    with ``read()``'s settings (or shows why they are not valid), Esc or Cancel with None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def read(self) -> SettingsT:
        raise NotImplementedError

    def _show_plan(self) -> None:
        raise NotImplementedError

    def on_input_changed(self, event: Input.Changed) -> None:
        self._show_plan()

    def on_select_changed(self, event: Select.Changed) -> None:
        self._show_plan()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self._show_plan()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_start()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_start()
        else:
            self.action_cancel()

    def action_start(self) -> None:
        try:
            settings = self.read()
        except ValueError as exc:
            self.query_one("#pair-error", Static).update(str(exc))
            return
        self.dismiss(settings)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PairTestDialog(_SettingsDialog[PairSettings]):
    """Duration, streams, direction, the test network, thresholds; perftest's own fields."""

    DEFAULT_CSS = DIALOG_CSS

    def __init__(self, settings: PairSettings, nodes: list[str], *, matrix: bool,
                 suggested_interface: str | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.nodes = nodes
        self.matrix = matrix
        self.suggested_interface = suggested_interface

    def compose(self) -> ComposeResult:
        s = self.settings
        what = (f"all-pairs matrix over {len(self.nodes)} nodes" if self.matrix
                else f"{self.nodes[0]} → {self.nodes[1]}")
        auto = "auto: the fastest subnet all nodes share" + (
            f" ({self.suggested_interface})" if self.suggested_interface else "")
        with Vertical():
            yield Static(f"{s.tool}: {what}", id="pair-title")
            with Grid():
                yield Label("Duration (s)")
                yield Input(_text(s.duration_s), id="duration", type="integer", compact=True)
                if s.tool == IPERF3:
                    yield Label("Parallel streams (-P)")
                    yield Input(_text(s.streams), id="streams", type="integer", compact=True)
                directions = [d for d in DIRECTIONS if s.tool == IPERF3 or d != "bidir"]
                yield Label("Direction")
                yield Select([(DIRECTION_LABELS[d], d) for d in directions], allow_blank=False, id="direction",
                             value=s.direction if s.direction in directions else directions[0], compact=True)
                yield Label("Test on (subnet / iface)")
                yield Input(s.test_net, placeholder=auto, id="test-net", compact=True)
                yield Label("Pass at Gbit/s")
                yield Input(_text(s.threshold_gbps), placeholder="unset: the % rule below", id="threshold-gbps",
                            type="number", compact=True)
                yield Label("... else % of link")
                yield Input(_text(s.threshold_percent), id="threshold-percent", type="number", compact=True)
                yield Label("First port")
                yield Input(_text(s.port), placeholder=f"{FIRST_PORT[s.tool]} (ports in use are skipped)", id="port",
                            type="integer", compact=True)
                if s.tool == IB_WRITE_BW:
                    yield Label("Message size (bytes)")
                    yield Input(_text(s.size_bytes), id="size", type="integer", compact=True)
                    yield Label("QPs")
                    yield Input(_text(s.qps), id="qps", type="integer", compact=True)
                    yield Label("RDMA device")
                    yield Input(s.device, placeholder="auto: an ACTIVE port from /sys/class/infiniband", id="device",
                                compact=True)
                    yield Label("RDMA port")
                    yield Input(_text(s.ib_port), placeholder="auto", id="ib-port", type="integer", compact=True)
                    yield Label("GID index")
                    yield Input(_text(s.gid_index), placeholder="auto: RoCE v2 of the test address", id="gid",
                                type="integer", compact=True)
                yield Label("")
                yield TickBox("one test at a time (shared uplinks)", s.one_at_a_time, id="one-at-a-time", compact=True)
            yield Static("", id="pair-plan")
            yield Static("", id="pair-error")
            with Horizontal():
                yield Button("Start", variant="primary", id="start", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self._show_plan()
        self.query_one("#duration", Input).focus()

    def _show_plan(self) -> None:
        """How many tests and rounds this makes, and about how long (the test's own words)."""
        try:
            s = self.read()
        except ValueError:
            return
        if self.matrix:
            rounds = all_pairs_rounds(self.nodes, directed=s.direction == "both")
            if s.one_at_a_time:
                rounds = one_at_a_time(rounds)
            tests = sum(len(r) for r in rounds)
        else:
            rounds = [[0], [0]] if s.direction == "both" else [[0]]
            tests = len(rounds)
        seconds = len(rounds) * (s.duration_s + 0.5)
        self.query_one("#pair-plan", Static).update(
            f"{tests} test{'s' if tests != 1 else ''} in {len(rounds)} round{'s' if len(rounds) != 1 else ''}: "
            f"about {seconds:.0f} s. Enter starts, Esc cancels.")

    def read(self) -> PairSettings:
        """The settings as typed; ValueError with the reason when they are not valid."""
        def value(widget_id: str) -> str:
            found = self.query(f"#{widget_id}")
            return found.first(Input).value if found else ""

        s = self.settings
        fields = dict(
            tool=s.tool,
            duration_s=_int(value("duration"), "duration") or 0,
            streams=_int(value("streams"), "parallel streams") or s.streams,
            direction=self.query_one("#direction", Select).value,
            one_at_a_time=self.query_one("#one-at-a-time", Checkbox).value,
            test_net=value("test-net").strip(),
            threshold_gbps=_float(value("threshold-gbps"), "pass at Gbit/s"),
            threshold_percent=_float(value("threshold-percent"), "% of link") or 0.0,
            port=_int(value("port"), "first port"),
        )
        if s.tool == IB_WRITE_BW:
            fields |= dict(
                size_bytes=_int(value("size"), "message size") or 0,
                qps=_int(value("qps"), "QPs") or 0,
                device=value("device").strip(),
                ib_port=_int(value("ib-port"), "RDMA port"),
                gid_index=_int(value("gid"), "GID index"),
            )
        return PairSettings.from_dict(s.to_dict() | fields).check()



class LatencyDialog(_SettingsDialog[LatencySettings]):
    """The latency test's settings (``l``): probes, interval, network, tool, pass rule."""

    DEFAULT_CSS = DIALOG_CSS.replace("PairTestDialog", "LatencyDialog")

    def __init__(self, settings: LatencySettings, nodes: list[str], *, suggested_interface: str | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.nodes = nodes
        self.suggested_interface = suggested_interface

    def compose(self) -> ComposeResult:
        s = self.settings
        what = (f"{self.nodes[0]} ↔ {self.nodes[1]}" if len(self.nodes) == 2
                else f"matrix over {len(self.nodes)} nodes")
        auto = "auto: the fastest subnet all nodes share" + (
            f" ({self.suggested_interface})" if self.suggested_interface else "")
        with Vertical():
            yield Static(f"latency (ping): {what}", id="pair-title")
            with Grid():
                yield Label("Probes per pair")
                yield Input(_text(s.count), id="count", type="integer", compact=True)
                yield Label("Interval (s)")
                yield Input(_text(s.interval_s), id="interval", type="number", compact=True)
                yield Label("Tool")
                yield Select([("fping where present, else ping", AUTO), ("fping", "fping"), ("ping", "ping")],
                             allow_blank=False, id="tool", value=s.tool, compact=True)
                yield Label("Test on (subnet / iface)")
                yield Input(s.test_net, placeholder=auto, id="test-net", compact=True)
                yield Label("Loss allowed (%)")
                yield Input(_text(s.max_loss_percent), id="max-loss", type="number", compact=True)
                yield Label("RTT outlier at ×typical")
                yield Input(_text(s.rtt_factor), id="rtt-factor", type="number", compact=True)
                yield Label("... or fail above (ms)")
                yield Input(_text(s.threshold_ms), placeholder="unset: the outlier rule", id="threshold-ms",
                            type="number", compact=True)
            yield Static("", id="pair-plan")
            yield Static("", id="pair-error")
            with Horizontal():
                yield Button("Start", variant="primary", id="start", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self._show_plan()
        self.query_one("#count", Input).focus()

    def _show_plan(self) -> None:
        try:
            s = self.read()
        except ValueError:
            return
        n = len(self.nodes)
        pairs = n * (n - 1)
        seconds = s.expected_s(n - 1) + 0.5
        self.query_one("#pair-plan", Static).update(
            f"{pairs} directions, every node pinging every other at once: about {seconds:.0f} s. "
            "Enter starts, Esc cancels.")

    def read(self) -> LatencySettings:
        """The settings as typed; ValueError with the reason when they are not valid."""
        def value(widget_id: str) -> str:
            return self.query_one(f"#{widget_id}", Input).value

        fields = dict(
            count=_int(value("count"), "probes") or 0,
            interval_s=_float(value("interval"), "interval") or 0.0,
            tool=self.query_one("#tool", Select).value,
            test_net=value("test-net").strip(),
            max_loss_percent=_float(value("max-loss"), "loss allowed") or 0.0,
            rtt_factor=_float(value("rtt-factor"), "RTT outlier factor") or 0.0,
            threshold_ms=_float(value("threshold-ms"), "fail above ms"),
        )
        return LatencySettings.from_dict(self.settings.to_dict() | fields).check()
