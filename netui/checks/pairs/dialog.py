"""The settings of a pair test, asked before it starts (t, T, r, R in the grid).

The dialog is filled with the last settings used (the app remembers them between runs) and
dismisses with the new ``PairSettings``, or None when the user backs out. It checks
nothing itself beyond turning text into numbers: ``PairSettings.check`` says what is wrong.
What it shares with the latency test's dialog is in checks/dialog_fields.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.app import ComposeResult
from textual.widgets import Checkbox, Input, Label, Select

from netui.checks.dialog_fields import SettingsDialog, dialog_css, field_row, finite_number, whole_number
from netui.checks.pairs.tools import (DIRECTION_LABELS, DIRECTIONS, FIRST_PORT, IB_WRITE_BW, IPERF3, PAIRS, SHIFT,
                                      PairSettings, default_direction)
from netui.checks.pairs.model_addresses import suggest_interface
from netui.checks.pairs.runner import plan_rounds

@dataclass
class Remembered:
    """What the app keeps of the pair tests between runs (``app.check_settings["pairs"]``):
    the last settings chosen, and the direction last chosen for a matrix (True) and for one
    pair (False)."""

    settings: PairSettings = field(default_factory=PairSettings)
    directions: dict[bool, str] = field(default_factory=dict)


def start(app, nodes: list[str], *, tool: str, matrix: bool) -> None:
    """The pair check's ``start``: ask for the settings (the last ones offered, with
    ``tool``), then run the test on its screen. The direction is netui bench's default (a
    matrix both ways, the shift pattern; one pair one way) unless the user chose otherwise
    before for that kind of test. A cancelled dialog chooses nothing."""
    from netui.checks.pairs.screen import MatrixScreen

    memory = app.check_settings.setdefault("pairs", Remembered())
    direction = {"direction": memory.directions.get(matrix, default_direction(matrix))}
    settings = PairSettings.from_dict(memory.settings.to_dict() | {"tool": tool} | direction)
    samples = {n: app.monitor.fleet[n].sample for n in nodes}

    def started(chosen: PairSettings | None) -> None:
        if chosen is not None:
            memory.settings = chosen
            memory.directions[matrix] = chosen.direction
            app.push_screen(MatrixScreen(nodes=nodes, settings=chosen, matrix=matrix))

    app.push_screen(PairTestDialog(settings, nodes, matrix=matrix, suggested_interface=suggest_interface(samples)),
                    started)


PATTERN_CHOICES = (("shift: all send and receive at once", SHIFT), ("disjoint pairs, one way each", PAIRS))


class TickBox(Checkbox):
    """A checkbox that draws its mark only when checked: Textual's draws ``▐X▌`` in both
    states, told apart by colour alone (which a screenshot without colour, or a terminal
    with few colours, loses)."""

    @property
    def _button(self):
        self.BUTTON_INNER = "X" if self.value else " "
        return super()._button


class PairTestDialog(SettingsDialog[PairSettings]):
    """Duration, streams, direction, the test network, thresholds; perftest's own fields."""

    DEFAULT_CSS = dialog_css("PairTestDialog")
    FIRST_FIELD = "duration"

    def __init__(self, settings: PairSettings, nodes: list[str], *, matrix: bool,
                 suggested_interface: str | None = None) -> None:
        super().__init__(settings, nodes, suggested_interface=suggested_interface)
        self.matrix = matrix

    def title_text(self) -> str:
        what = (f"all-pairs matrix over {len(self.nodes)} nodes" if self.matrix
                else f"{self.nodes[0]} → {self.nodes[1]}")
        return f"{self.settings.tool}: {what}"

    def compose_fields(self) -> ComposeResult:
        s = self.settings
        yield from field_row("Duration (s)", "duration", s.duration_s, type="integer")
        if s.tool == IPERF3:
            yield from field_row("Parallel streams (-P)", "streams", s.streams, type="integer")
        directions = [d for d in DIRECTIONS if s.tool == IPERF3 or d != "bidir"]
        yield Label("Direction")
        yield Select([(DIRECTION_LABELS[d], d) for d in directions], allow_blank=False, id="direction",
                     value=s.direction if s.direction in directions else directions[0], compact=True)
        if self.matrix:  # both ways only: one way and bidirectional run disjoint pairs
            yield Label("Pattern (both ways)")
            yield Select(PATTERN_CHOICES, allow_blank=False, id="pattern", value=s.pattern, compact=True)
        yield from self.compose_test_net(s.test_net)
        yield from field_row("Pass at Gb/s", "threshold-gbps", s.threshold_gbps, type="number",
                             placeholder="unset: the % rule below")
        yield from field_row("... else % of link", "threshold-percent", s.threshold_percent, type="number")
        yield from field_row("First port", "port", s.port, type="integer",
                             placeholder=f"{FIRST_PORT[s.tool]} (ports in use are skipped)")
        if s.tool == IB_WRITE_BW:
            yield from field_row("Message size (bytes)", "size", s.size_bytes, type="integer")
            yield from field_row("QPs", "qps", s.qps, type="integer")
            yield from field_row("RDMA device", "device", s.device,
                                 placeholder="auto: an ACTIVE port from /sys/class/infiniband")
            yield from field_row("RDMA port", "ib-port", s.ib_port, type="integer", placeholder="auto")
            yield from field_row("GID index", "gid", s.gid_index, type="integer",
                                 placeholder="auto: RoCE v2 of the test address")
        yield Label("")
        yield TickBox("one test at a time (shared uplinks)", s.one_at_a_time, id="one-at-a-time", compact=True)
        if self.matrix:
            yield Label("")
            yield TickBox("confirm: rerun alone the pairs that decide a fail", s.confirm, id="confirm",
                          compact=True)

    def plan_text(self, s: PairSettings) -> str:
        """How many tests and rounds this makes, and about how long (the test's own words)."""
        rounds = plan_rounds(self.nodes, matrix=self.matrix, direction=s.direction, one_by_one=s.one_at_a_time,
                             pattern=s.pattern)
        tests = sum(len(r) for r in rounds)
        seconds = len(rounds) * (s.duration_s + 0.5)
        confirm = " (and the retests)" if s.confirm and self.matrix else ""
        return (f"{tests} test{'s' if tests != 1 else ''} in {len(rounds)} round{'s' if len(rounds) != 1 else ''}: "
                f"about {seconds:.0f} s{confirm}. Enter starts, Esc cancels.")

    def read(self) -> PairSettings:
        """The settings as typed; ValueError with the reason when they are not valid."""
        def value(widget_id: str) -> str:
            found = self.query(f"#{widget_id}")
            return found.first(Input).value if found else ""

        s = self.settings
        fields = dict(
            tool=s.tool,
            duration_s=whole_number(value("duration"), "duration") or 0,
            streams=whole_number(value("streams"), "parallel streams") or s.streams,
            direction=self.query_one("#direction", Select).value,
            one_at_a_time=self.query_one("#one-at-a-time", Checkbox).value,
            test_net=value("test-net").strip(),
            threshold_gbps=finite_number(value("threshold-gbps"), "pass at Gb/s"),
            threshold_percent=finite_number(value("threshold-percent"), "% of link") or 0.0,
            port=whole_number(value("port"), "first port"),
        )
        patterns = self.query("#pattern")
        if patterns:
            fields["pattern"] = patterns.first(Select).value
        confirm = self.query("#confirm")
        if confirm:
            fields["confirm"] = confirm.first(Checkbox).value
        if s.tool == IB_WRITE_BW:
            fields |= dict(
                size_bytes=whole_number(value("size"), "message size") or 0,
                qps=whole_number(value("qps"), "QPs") or 0,
                device=value("device").strip(),
                ib_port=whole_number(value("ib-port"), "RDMA port"),
                gid_index=whole_number(value("gid"), "GID index"),
            )
        return PairSettings.from_dict(s.to_dict() | fields).check()
