"""The doctor screen (D): the cluster's configuration checked, findings worst first.

Each finding shows its severity, the node, what was checked, the evidence in words and the
command that fixes it (or, where only hands can, the command that shows more). What passed
is listed below, dimmed. ``r`` runs the checks again (after a fix); Esc goes back, and
stops the probes if they are still running.

The checks run in a named, exclusive worker and report back with a typed message.
"""

from __future__ import annotations

from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from netui.ui.base import NetuiScreen
from textual.widgets import Footer, Static

from netui.checks.latency import KIND as LATENCY_TEST
from netui.checks.doctor.report import PERSIST_NOTE, not_examined_lines, summary
from netui.checks.doctor.runner import DoctorReport, examine, latency_rtt_ms
from netui.checks.doctor.rules import CHECKS, Finding, grouped
from netui.model.health import Level
from netui.model.units import fold

# theme variable per severity
SEVERITY_COLORS = {Level.CRITICAL: "error", Level.WARNING: "warning", Level.CAREFUL: "accent", Level.OK: "success"}


def start(app, nodes: list[str]) -> None:
    """The doctor over ``nodes``, on its screen (the doctor's ``start``, checks/doctor/__init__.py)."""
    app.push_screen(DoctorScreen(nodes))


def _nodes(n: int) -> str:
    return "1 node" if n == 1 else f"{n} nodes"


class FindingsTable(Static):
    """The findings of one doctor run, alike ones once with their nodes. Set by the screen
    with ``show``."""

    DEFAULT_CSS = """
    FindingsTable { height: auto; padding: 0 1; }
    """

    def show(self, findings: list[Finding]) -> None:
        theme = self.app.theme_variables
        muted = Style(dim=True)
        table = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False, expand=True)
        table.add_column("severity", no_wrap=True)
        table.add_column("node", max_width=24)
        table.add_column("check", no_wrap=True, style=muted)
        table.add_column("finding", ratio=1)
        for f, nodes in grouped(findings):
            color = theme.get(SEVERITY_COLORS[f.severity]) or None
            text = Text()
            if f.subject and not f.evidence.startswith(f.subject):
                text.append(f"{f.subject}: ", style="bold")
            text.append(f.evidence)
            if f.fix:
                text.append("\nfix: ", style=muted)
                text.append(f.fix, style="bold")
            if f.look:
                text.append("\nlook: ", style=muted)
                text.append(f.look)
            table.add_row(Text(f.severity.label, style=Style(color=color, bold=f.failed)),
                          Text(fold(nodes) or "all"), f.check, text)
        self.update(table)


class DoctorScreen(NetuiScreen):
    """The doctor over ``nodes`` (names of the app's fleet)."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("r", "rerun", "Run again"),
    ]
    DEFAULT_CSS = """
    DoctorScreen { layout: vertical; }
    DoctorScreen #doctor-head { height: auto; background: $panel; padding: 0 1; text-style: bold; }
    DoctorScreen #doctor-verdict { height: auto; padding: 1 1 0 1; }
    DoctorScreen #doctor-verdict.-failed { color: $error; }
    DoctorScreen #doctor-verdict.-passed { color: $success; }
    DoctorScreen #doctor-unexamined { height: auto; padding: 0 1; color: $warning; }
    DoctorScreen VerticalScroll { height: 1fr; }
    DoctorScreen #doctor-passed { height: auto; padding: 1 1 0 1; color: $text-muted; }
    DoctorScreen #doctor-status { height: auto; padding: 0 1; color: $text-muted; }
    """

    class Finished(Message):
        def __init__(self, report: DoctorReport | None, error: str | None = None) -> None:
            super().__init__()
            self.report = report
            self.error = error

    def __init__(self, nodes: list[str]) -> None:
        super().__init__()
        self.nodes = list(nodes)
        self.report: DoctorReport | None = None
        self.running = False
        self.runs = 0

    def compose(self) -> ComposeResult:
        yield Static(id="doctor-head")
        with VerticalScroll():
            yield Static(id="doctor-verdict")
            yield Static(id="doctor-unexamined")
            yield FindingsTable(id="doctor-findings")
            yield Static(id="doctor-passed")
        yield Static(id="doctor-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#doctor-head", Static).update(
            f"Doctor · {_nodes(len(self.nodes))} · MTU, link speeds, RDMA ports, sysctls, interface errors, "
            f"IRQs, packet steering, traffic shaping, offloads and rings")
        self._start()

    def _start(self) -> None:
        self.running = True
        self.runs += 1
        self.query_one("#doctor-status", Static).update(f"examining {_nodes(len(self.nodes))}… · Esc stops")
        self.run_worker(self._run(), name="doctor", group="doctor", exclusive=True, exit_on_error=False)

    async def _run(self) -> None:
        try:
            last = self.app.last_tests.get(LATENCY_TEST)
            report = await examine(self.app.monitor, self.nodes,
                                   rtt_ms=latency_rtt_ms(last))
        except Exception as exc:  # noqa: BLE001 - shown, not raised: the app goes on
            self.post_message(self.Finished(None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Finished(report))

    def on_doctor_screen_finished(self, message: Finished) -> None:
        self.running = False
        status = self.query_one("#doctor-status", Static)
        if message.report is None:
            status.update(f"the doctor stopped: {message.error} · r runs it again · Esc goes back")
            return
        self.report = message.report
        self._show(message.report)
        status.update(f"done in {message.report.elapsed_s:.1f} s · r runs it again (after a fix) · Esc goes back")

    def _show(self, report: DoctorReport) -> None:
        verdict = self.query_one("#doctor-verdict", Static)
        verdict.update(summary(report))
        verdict.set_class(any(f.failed for f in report.findings), "-failed")
        verdict.set_class(not report.failed, "-passed")
        self.query_one("#doctor-unexamined", Static).update("\n".join(not_examined_lines(report)))
        self.query_one(FindingsTable).show(report.problems)
        passed = [f for f in report.findings if f.severity == Level.OK]
        lines = [Text("passed", style="bold")]
        for f in passed:
            lines.append(Text(f"  {f.subject or CHECKS[f.check]}: {f.evidence}"))
        if any(f.fix for f in report.problems):
            lines += [Text(""), Text(PERSIST_NOTE)]
        self.query_one("#doctor-passed", Static).update(Group(*lines) if passed or len(lines) > 1 else "")

    # keys -------------------------------------------------------------------------------
    def action_back(self) -> None:
        if self.running:
            self.workers.cancel_group(self, "doctor")  # the probes die with their channels
            self.running = False
        self.app.pop_screen()

    def action_rerun(self) -> None:
        if self.running:
            self.notify("the doctor is still running", timeout=2)
            return
        self._start()
