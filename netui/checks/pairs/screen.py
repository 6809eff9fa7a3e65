"""The pair-test screen: progress while it runs, then the heatmap and the verdict.

Row = sender, column = receiver, Gbit/s in each cell, coloured on a scale from the theme
(error → warning → success as the pair nears the best one measured). ✗ marks a pair that
fails its pass mark, ! an outlier against the best pairs. Esc cancels a running test (both ends
of every test are killed) and goes back once it has ended; ``e`` exports CSV and JSON.

The test runs in a named, exclusive worker; it reports back with typed messages.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from netui.ui.base import NetuiScreen
from textual.widgets import Footer, Static

from netui.checks.pairs import KIND
from netui.checks.pairs.report import (LINK, by_switch, counters_text, export, fabric_lines, gbps_cell_format,
                                       gbps_text, judged_word, live_text, node_lines, result_words, summary)
from netui.checks.pairs.runner import PairProgress, PairTest, PairTestReport
from netui.checks.pairs.tools import BIDIR, BOTH_WAYS, DIRECTION_LABELS, SHIFT, PairSettings
from netui.checks.pairs.model import Pair, PairResult
from netui.checks.pairs.verdict import CANNOT_RUN, FAIL, INCONCLUSIVE, Verdict
from netui.model import units
from netui.ui.matrix import matrix_table, scale_color, scale_colors

RATE_CELLS = 9  # a result line's Gb/s column, "9.41 Gb/s" right-aligned
def scale_share(gbps: float, need: float | None, top: float) -> float:
    """Where a result sits on the scale: below the pass mark ``need`` in the lower half
    (red → yellow), above it in the upper half (yellow → green at the best result ``top``);
    without a pass mark, simply against ``top``."""
    if top <= 0:
        return 1.0
    if need is None or need <= 0:
        return gbps / top
    if gbps < need:
        return 0.5 * gbps / need
    return 0.5 + 0.5 * ((gbps - need) / (top - need) if top > need else 1.0)


class Heatmap(Static):
    """The matrix of one pair test. Set by the screen with ``show``."""

    DEFAULT_CSS = """
    Heatmap { height: auto; width: auto; padding: 0 1; }
    """

    def show(self, nodes: list[str], results: list[PairResult], verdict: Verdict | None,
             running: tuple[Pair, ...] = (), sections: dict[str, str] | None = None) -> None:
        colors = scale_colors(self.app.theme_variables)
        muted = Style(dim=True)
        by_pair = {r.pair: r for r in results}
        measured = [r.gbps for r in results if r.ok and r.gbps is not None]
        top = max(measured, default=0.0)
        failing = {r.pair for r in verdict.failing} if verdict else set()
        outliers = {r.pair for r in verdict.outliers} if verdict else set()
        number = gbps_cell_format(measured)

        def cell(a: str, b: str) -> Text:
            r = by_pair.get((a, b))
            if r is None:
                return Text("…" if (a, b) in running or (b, a) in running else "", style=muted)
            if not r.ok and r.kind in CANNOT_RUN:
                return Text("not run", style=muted)  # a node that cannot run the tool: untested, no failure
            if not r.ok or r.gbps is None:
                return Text("fail ✗", style=Style(color=colors[0].rich_color, bold=True))
            need = verdict.required_gbps.get(r.pair) if verdict else None
            bg = scale_color(colors, scale_share(r.gbps, need, top))
            mark = "✗" if r.pair in failing else "!" if r.pair in outliers else " "
            return Text(f"{number(r.gbps)} {mark}", style=Style(
                bgcolor=bg.rich_color, color=bg.get_contrast_text().rich_color, bold=r.pair in failing))

        table = matrix_table(nodes, "Gb/s send ↓", 7, cell, muted, sections)
        best = f" ({units.gbps(top)})" if top > 0 else ""
        legend = Text(f"Gb/s, row sends to column · colour: the pass mark mid-scale, the best pair{best} "
                      "at the top · ✗ fails · ! outlier against the best pairs · not run: a node could not take part",
                      style=muted)
        self.update(Group(table, legend))


class MatrixScreen(NetuiScreen):
    """A pair test: started here (``settings``), or a finished ``report`` shown again."""

    BINDINGS = [
        Binding("escape", "back", "Cancel / back"),
        Binding("e", "export", "Export CSV+JSON"),
    ]
    DEFAULT_CSS = """
    MatrixScreen { layout: vertical; }
    MatrixScreen #matrix-head { height: auto; background: $panel; padding: 0 1; text-style: bold; }
    MatrixScreen #matrix-progress { height: auto; padding: 0 1; color: $text-muted; }
    MatrixScreen #matrix-verdict { height: auto; padding: 1 1 0 1; }
    MatrixScreen #matrix-verdict.-failed { color: $error; }
    MatrixScreen #matrix-verdict.-passed { color: $success; }
    MatrixScreen #matrix-verdict.-inconclusive { color: $warning; }
    MatrixScreen VerticalScroll { height: 1fr; }
    MatrixScreen #matrix-results { height: auto; padding: 1 1 0 1; }
    """

    SHOW_EVERY_S = 0.2
    CANCELLING = "cancelling: stopping both ends of every test"

    class Progress(Message):
        """Where the test is; a newer one replaces an unhandled older one."""

        def __init__(self, progress: PairProgress) -> None:
            super().__init__()
            self.progress = progress

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, MatrixScreen.Progress)

    class ResultIn(Message):
        def __init__(self, result: PairResult) -> None:
            super().__init__()
            self.result = result

    class Finished(Message):
        def __init__(self, report: PairTestReport | None, error: str | None = None) -> None:
            super().__init__()
            self.report = report
            self.error = error

    def __init__(self, *, nodes: list[str] | None = None, settings: PairSettings | None = None,
                 matrix: bool = True, report: PairTestReport | None = None) -> None:
        super().__init__()
        if report is None and (settings is None or not nodes):
            raise ValueError("a pair test needs nodes and settings, or a report")
        self.report = report
        self.settings = report.settings if report is not None else settings
        self.nodes = list(report.nodes if report is not None else nodes)
        self.matrix = report.matrix if report is not None else matrix
        self.test: PairTest | None = None
        self.results: list[PairResult] = list(report.results) if report is not None else []
        self.progress: PairProgress | None = None
        self._progress_at = 0.0  # when the last progress came (time.monotonic())
        self._show_pending = False

    @property
    def running(self) -> bool:
        return self.test is not None and self.report is None

    def compose(self) -> ComposeResult:
        yield Static(id="matrix-head")
        with VerticalScroll():
            yield self._make_map()
            yield Static(id="matrix-verdict")
            yield Static(id="matrix-results")
        yield Static(id="matrix-progress")
        yield Footer()

    def on_mount(self) -> None:
        if self.report is None:
            self.test = self._new_test(on_progress=lambda p: self.post_message(self.Progress(p)),
                                       on_result=lambda r: self.post_message(self.ResultIn(r)))
            self.run_worker(self._run(self.test), name="pairtest", group="pairtest", exclusive=True,
                            exit_on_error=False)
            # the progress line moves between the test's own reports: time, the estimate, and
            # the running pairs' throughput as the nodes' counters see it
            self.set_interval(1.0, self._tick)
        self._show()

    def _tick(self) -> None:
        if self.running:
            self._show_progress()

    LIVE_FIGURES = 4  # figures on the progress line at most

    def _live(self) -> str:
        """The running tests' throughput now: the tool's own interval report where it gives
        one (iperf3), else the link's, from the interface counters (the lower of the sender's
        TX and the receiver's RX: the job's flows on that link too), said "link"."""
        progress = self.progress
        if progress is None or progress.phase not in ("running", "confirming") or not progress.running:
            return ""
        fleet = self.app.monitor.fleet
        tool = self.test.tool_gbps() if self.test is not None else {}
        directions = [d for a, b in progress.running
                      for d in (((a, b), (b, a)) if self.settings.direction == BIDIR else ((a, b),))]
        figures = []
        for a, b in directions[:self.LIVE_FIGURES]:
            if (a, b) in tool:
                figures.append((a, b, tool[(a, b)], self.settings.tool))
                continue
            known = [r for r in (fleet[a].summary.tx_bytes_per_s, fleet[b].summary.rx_bytes_per_s) if r is not None]
            figures.append((a, b, min(known) * 8 / 1e9 if known else None, LINK))
        return live_text(figures, len(directions) - self.LIVE_FIGURES)

    # what a kind of test brings (a latency test overrides these: checks/latency/screen.py) --------------
    def _make_map(self) -> Static:
        return Heatmap(id="heatmap")

    def _new_test(self, **callbacks):
        return PairTest(self.app.monitor, self.nodes, self.settings, matrix=self.matrix,
                        **callbacks)

    def _empty_report(self):
        fleet = self.app.monitor.fleet
        return PairTestReport(self.settings, self.nodes, self.matrix, results=list(self.results),
                              topology=fleet.topology_for(self.nodes), topology_source=fleet.topology_source)

    def _head(self, report) -> str:
        s = self.settings
        where = f" · {report.how}" if report is not None and report.how else ""
        what = f"{len(self.nodes)} nodes" if self.matrix else f"{self.nodes[0]} → {self.nodes[1]}"
        how = DIRECTION_LABELS[s.direction]
        if self.matrix and s.direction == BOTH_WAYS:
            # a finished run says what ran (a saved one from before the shift pattern: pairs)
            ran = report.pattern if isinstance(report, PairTestReport) else s.pattern_used(self.matrix)
            how += ", one at a time" if s.one_at_a_time else (
                ", shift pattern" if ran == SHIFT else ", disjoint pairs")
        retests = ""
        if isinstance(report, PairTestReport) and report.retests_total:
            retests = f" · {len(report.retests)} of {report.retests_total} retests"
        return f"{s.tool} · {what} · {how} · {s.duration_s} s per test{where}{retests}"

    def _show_map(self, verdict, running: tuple[Pair, ...]) -> None:
        report = self.report if self.report is not None else (self.test.report if self.test else None)
        nodes, sections = by_switch(report) if report is not None else (self.nodes, {})
        # once judged, a retested pair's cell holds its confirmed figure
        shown = verdict.results + verdict.untested if verdict is not None and verdict.retested else self.results
        self.query_one(Heatmap).show(nodes, shown, verdict, running, sections)

    def _summary(self) -> str:
        return summary(self.report)

    def _export(self, directory: Path) -> tuple[Path, Path]:
        return export(self.report, directory)

    async def _run(self, test: PairTest) -> None:
        try:
            report = await test.run()
        except Exception as exc:  # noqa: BLE001 - shown, not raised: the app goes on
            self.post_message(self.Finished(None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Finished(report))

    # messages from the worker -------------------------------------------------------------
    def on_matrix_screen_progress(self, message: Progress) -> None:
        self.progress = message.progress
        self._progress_at = time.monotonic()
        self._show_soon()

    def on_matrix_screen_result_in(self, message: ResultIn) -> None:
        self.results.append(message.result)
        self._show_soon()

    def _show_soon(self) -> None:
        """Repaint at most every SHOW_EVERY_S: a big matrix is a big table, and a round of
        many pairs ends in a burst of results."""
        if not self._show_pending:
            self._show_pending = True
            self.set_timer(self.SHOW_EVERY_S, self._show_now)

    def _show_now(self) -> None:
        self._show_pending = False
        self._show()

    def on_matrix_screen_finished(self, message: Finished) -> None:
        if message.report is None:
            self.report = self._empty_report()
            self.report.judge()
            self.query_one("#matrix-progress", Static).update(f"the test stopped: {message.error}")
        else:
            self.report = message.report
            self.results = list(message.report.results)
            self._record(message.report)
        self._show()

    def _record(self, report) -> None:
        """Into the recording, when one is running (w)."""
        from netui.checks.pairs.report import report_document

        self.app.record_test(KIND, report_document(report))

    # showing ----------------------------------------------------------------------------
    def _show(self) -> None:
        report = self.report if self.report is not None else (self.test.report if self.test else None)
        self.query_one("#matrix-head", Static).update(self._head(report))
        verdict = self.report.verdict if self.report is not None else None
        running = self.progress.running if self.progress is not None and self.running else ()
        self._show_map(verdict, running)
        self._show_results(verdict)
        box = self.query_one("#matrix-verdict", Static)
        if self.report is not None:
            box.update(self._summary())
            status = "refused" if self.report.refused else verdict.status if verdict is not None else None
            box.set_class(status in (FAIL, "refused"), "-failed")
            box.set_class(verdict is not None and verdict.passed, "-passed")
            box.set_class(status == INCONCLUSIVE, "-inconclusive")
            if self.progress is None or self.progress.phase in ("done", "cancelled"):
                done = "cancelled" if self.report.cancelled else "done"
                self.query_one("#matrix-progress", Static).update(
                    f"{done} in {self.report.elapsed_s:.0f} s · e exports CSV and JSON · Esc goes back")
        else:
            box.update("")
            self._show_progress()

    def _show_progress(self) -> None:
        """The progress line while the test runs: the last report, moved on to now (elapsed
        time counts up, the estimate down), and what the running pairs move."""
        progress = self.progress
        if progress is None:
            words = "starting…"
        else:
            since = time.monotonic() - self._progress_at
            eta = None if progress.eta_s is None else max(0.0, progress.eta_s - since)
            words = dataclasses.replace(progress, elapsed_s=progress.elapsed_s + since, eta_s=eta).words
        live = self._live()
        self.query_one("#matrix-progress", Static).update(f"{words} · Esc cancels" + (f"\n{live}" if live else ""))

    def _show_results(self, verdict: Verdict | None) -> None:
        """One line per result: as they come while the test runs, failing first (the slowest
        first) once it is judged: pass/fail, Gbit/s or the tool's words, counters; then each
        node as a sender and as a receiver."""
        failing = {r.pair for r in verdict.failing} if verdict else set()
        bad = Style(color=self.app.theme_variables.get("error"), bold=True)
        shown = self.results
        untested: set[int] = set()
        if verdict is not None:
            shown = verdict.results + verdict.untested
            untested = {id(r) for r in verdict.untested}
        width = max((len(r.sender) + len(r.receiver) + 1 for r in shown), default=0)
        lines = Text()
        # spaces end a span rather than start the next one: SVG exports drop leading blanks
        for r in shown:
            cell = units.gbps(r.gbps, width=RATE_CELLS) if r.ok else " " * RATE_CELLS
            number = cell.lstrip()
            pad = cell[:len(cell) - len(number)]  # the blanks go to the span before the number
            lines.append(f"{r.sender}→{r.receiver}".ljust(width) + "  ")
            if verdict is not None:
                failed = r.pair in failing
                state = "skip" if id(r) in untested else "FAIL" if failed else judged_word(verdict)
                lines.append(state.ljust(4) + "  " + pad, style=bad if failed else "")
            else:
                lines.append(pad)
            first = verdict.retested.get(r.pair) if verdict is not None else None
            extra = counters_text(first or r)
            if first is not None:  # rerun alone to confirm: both figures
                lines.append(result_words(r, first) + ("   " if extra else ""), style="" if r.ok else bad)
            elif r.ok:
                lines.append(number + ("   " if extra else ""))
            elif id(r) in untested or r.kind in CANNOT_RUN:  # a node that could not take part: no failure
                lines.append(f"not run: {r.error}" + ("   " if extra else ""), style="dim")
            else:
                lines.append(f"failed: {r.error}" + ("   " if extra else ""), style=bad)
            if extra:
                lines.append(extra, style="dim")
            lines.append("\n")
        split = fabric_lines(self.report) if verdict is not None and isinstance(self.report, PairTestReport) else []
        if split:
            lines.append("\n")
            for line in split:
                lines.append(line + "\n", style=bad if line.startswith("  ←") else "")
        if verdict is not None and len(verdict.nodes) > 2:
            lines.append("\n")
            for line in node_lines(verdict):
                lines.append(line + "\n", style=bad if "← suspect" in line else "")
        self.query_one("#matrix-results", Static).update(lines)

    # keys -------------------------------------------------------------------------------
    def action_back(self) -> None:
        if self.running and self.test is not None:
            if not self.test.cancelled:
                self.test.cancel()
                self.notify(self.CANCELLING, timeout=2)
            return
        self.app.pop_screen()

    def action_export(self) -> None:
        if self.report is None:
            self.notify("the test is still running", severity="warning", timeout=2)
            return
        try:
            csv_path, json_path = self._export(Path.cwd())
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        self.notify(f"exported to {csv_path} and {json_path}", timeout=6)
