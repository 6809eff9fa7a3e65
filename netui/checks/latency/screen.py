"""The latency screen (``l``): the matrix screen in its latency mode.

Row = the node that pings, column = the node that answers; each cell the average RTT, with
the loss when there was any. Colour from the theme: success at the typical RTT, warning at
the pass limit, error for a pair that fails (loss, or an RTT outlier). Below the matrix one
line per pair: avg, p50, p99, loss — or the tool's own words. Esc cancels (every ping and
fping is killed), then goes back; ``e`` exports CSV and JSON.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from netui.checks.latency import KIND
from netui.checks.latency.report import cell_text, export, head_text, report_document, result_line, summary
from netui.checks.latency.runner import LatencyReport, LatencyTest
from netui.checks.latency.model import LatencyResult, LatencyVerdict, is_untested, rtt_text
from netui.checks.pairs.model import Pair
from netui.checks.pairs.screen import MatrixScreen
from netui.ui.matrix import matrix_table, scale_color, scale_colors


def latency_share(typical_ms: float, baseline_ms: float | None, limit_ms: float | None) -> float:
    """Where a passing pair sits on the scale: 1 (success) at the typical RTT, 0.5 (warning)
    at the limit; a failing pair is drawn at the bottom (error) by the caller."""
    if baseline_ms is None or limit_ms is None or limit_ms <= baseline_ms:
        return 1.0
    return 1.0 - 0.5 * max(0.0, min(1.0, (typical_ms - baseline_ms) / (limit_ms - baseline_ms)))


class LatencyMap(Static):
    """The RTT matrix of one latency test. Set by the screen with ``show``."""

    DEFAULT_CSS = """
    LatencyMap { height: auto; width: auto; padding: 0 1; }
    """

    def show(self, nodes: list[str], results: list[LatencyResult], verdict: LatencyVerdict | None,
             running: tuple[Pair, ...] = ()) -> None:
        colors = scale_colors(self.app.theme_variables)
        muted = Style(dim=True)
        by_pair = {r.pair: r for r in results}
        failing = {r.pair for r in verdict.failing} if verdict else set()
        # known as the result comes: a pair with a node that cannot take part is never a failure
        untested = {r.pair for r in results if is_untested(r)}

        def cell(a: str, b: str) -> Text:
            r = by_pair.get((a, b))
            if r is None:
                return Text("…" if (a, b) in running else "", style=muted)
            if r.pair in untested:
                return Text("not run", style=muted)
            if not r.ok:
                return Text("fail ✗", style=Style(color=colors[0].rich_color, bold=True))
            failed = r.pair in failing
            if failed or r.typical_ms is None:
                bg = colors[0]
            else:
                bg = scale_color(colors, latency_share(r.typical_ms, verdict.baseline_ms if verdict else None,
                                                       verdict.limit_ms if verdict else None))
            return Text(f"{cell_text(r)} {'✗' if failed else ' '}", style=Style(
                bgcolor=bg.rich_color, color=bg.get_contrast_text().rich_color, bold=failed))

        table = matrix_table(nodes, "ping ↓  answer →", 9, cell, muted)
        typical = f" ({rtt_text(verdict.baseline_ms)})" if verdict and verdict.baseline_ms is not None else ""
        limit = f" ({rtt_text(verdict.limit_ms)})" if verdict and verdict.limit_ms is not None else ""
        legend = Text(f"average RTT, loss when any · colour: the typical RTT{typical} at the top, the limit{limit} "
                      "mid-scale · ✗ fails (loss, or an RTT outlier) · not run: a node could not take part", style=muted)
        self.update(Group(table, legend))


class LatencyScreen(MatrixScreen):
    """A latency test: started here (``settings``: ``LatencySettings``), or a saved ``report``."""

    CANCELLING = "cancelling: stopping every ping"

    def _live(self) -> str:
        return ""  # a ping moves too little to show on the counters

    def _make_map(self) -> Static:
        return LatencyMap(id="latency-map")

    def _new_test(self, **callbacks):
        return LatencyTest(self.app.monitor, self.nodes, self.settings, matrix=self.matrix,
                        **callbacks)

    def _empty_report(self):
        return LatencyReport(self.settings, self.nodes, self.matrix, results=list(self.results))

    def _head(self, report) -> str:
        return head_text(report if report is not None else self._empty_report())

    def _show_map(self, verdict, running: tuple[Pair, ...]) -> None:
        self.query_one(LatencyMap).show(self.nodes, self.results, verdict, running)

    def _summary(self) -> str:
        return summary(self.report)

    def _export(self, directory: Path) -> tuple[Path, Path]:
        return export(self.report, directory)

    def _record(self, report) -> None:
        self.app.record_test(KIND, report_document(report))

    def _show_results(self, verdict) -> None:
        """One line per pair as it came: pass/fail, avg · p50 · p99 · loss, or the tool's words."""
        failing = {r.pair for r in verdict.failing} if verdict else set()
        untested = {r.pair for r in self.results if is_untested(r)}
        bad = Style(color=self.app.theme_variables.get("error"), bold=True)
        width = max((len(r.sender) + len(r.receiver) + 1 for r in self.results), default=0)
        lines = Text()
        for r in self.results:
            lines.append(f"{r.sender}→{r.receiver}".ljust(width) + "  ")
            failed = r.pair in failing
            if r.pair in untested:
                lines.append("n/a   ", style="dim")
                lines.append(f"not run: {r.error}\n", style="dim")
                continue
            if verdict is not None:
                lines.append(("FAIL" if failed else "pass") + "  ", style=bad if failed else "")
            why = verdict.reasons.get(r.pair) if verdict is not None and failed and r.ok else None
            lines.append(result_line(r) + (f"   ({why})" if why else ""), style=bad if not r.ok else "")
            lines.append("\n")
        self.query_one("#matrix-results", Static).update(lines)
