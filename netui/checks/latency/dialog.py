"""The settings of a latency test, asked before it starts (``l`` in the grid).

The dialog is filled with the last settings used and dismisses with the new
``LatencySettings``, or None when the user backs out; ``LatencySettings.check`` says what is
wrong. The layout, the plan line and the keys are those of every settings dialog
(checks/dialog_fields.py).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Input, Label, Select

from netui.checks.dialog_fields import SettingsDialog, dialog_css, field_row, finite_number, whole_number
from netui.checks.latency.tools import AUTO, LatencySettings
from netui.checks.pairs.model_addresses import suggest_interface


def start(app, nodes: list[str]) -> None:
    """The latency check's ``start``: ask for the settings (the last ones offered, kept in
    ``app.check_settings["latency"]``), then run it on its screen: every node pings every
    other (two nodes: the pair, both ways)."""
    from netui.checks.latency.screen import LatencyScreen

    samples = {n: app.monitor.fleet[n].sample for n in nodes}

    def started(chosen: LatencySettings | None) -> None:
        if chosen is not None:
            app.check_settings["latency"] = chosen
            app.push_screen(LatencyScreen(nodes=nodes, settings=chosen, matrix=True))

    settings = app.check_settings.setdefault("latency", LatencySettings())
    app.push_screen(LatencyDialog(settings, nodes, suggested_interface=suggest_interface(samples)), started)


class LatencyDialog(SettingsDialog[LatencySettings]):
    """The latency test's settings (``l``): probes, interval, network, tool, pass rule."""

    DEFAULT_CSS = dialog_css("LatencyDialog")
    FIRST_FIELD = "count"

    def title_text(self) -> str:
        what = (f"{self.nodes[0]} ↔ {self.nodes[1]}" if len(self.nodes) == 2
                else f"matrix over {len(self.nodes)} nodes")
        return f"latency (ping): {what}"

    def compose_fields(self) -> ComposeResult:
        s = self.settings
        yield from field_row("Probes per pair", "count", s.count, type="integer")
        yield from field_row("Interval (s)", "interval", s.interval_s, type="number")
        yield Label("Tool")
        yield Select([("fping where present, else ping", AUTO), ("fping", "fping"), ("ping", "ping")],
                     allow_blank=False, id="tool", value=s.tool, compact=True)
        yield from self.compose_test_net(s.test_net)
        yield from field_row("Loss allowed (%)", "max-loss", s.max_loss_percent, type="number")
        yield from field_row("RTT outlier at ×typical", "rtt-factor", s.rtt_factor, type="number")
        yield from field_row("... or fail above (ms)", "threshold-ms", s.threshold_ms, type="number",
                             placeholder="unset: the outlier rule")

    def plan_text(self, s: LatencySettings) -> str:
        n = len(self.nodes)
        pairs = n * (n - 1)
        seconds = s.expected_s(n - 1) + 0.5
        return (f"{pairs} directions, every node pinging every other at once: about {seconds:.0f} s. "
                "Enter starts, Esc cancels.")

    def read(self) -> LatencySettings:
        """The settings as typed; ValueError with the reason when they are not valid."""
        def value(widget_id: str) -> str:
            return self.query_one(f"#{widget_id}", Input).value

        fields = dict(
            count=whole_number(value("count"), "probes") or 0,
            interval_s=finite_number(value("interval"), "interval") or 0.0,
            tool=self.query_one("#tool", Select).value,
            test_net=value("test-net").strip(),
            max_loss_percent=finite_number(value("max-loss"), "loss allowed") or 0.0,
            rtt_factor=finite_number(value("rtt-factor"), "RTT outlier factor") or 0.0,
            threshold_ms=finite_number(value("threshold-ms"), "fail above ms"),
        )
        return LatencySettings.from_dict(self.settings.to_dict() | fields).check()
