"""The check screens while their test runs, at 80×24: what the progress line and the matrix
show before the verdict. The nodes are this host under other names (tests/localnodes.py):
real ping and iperf3 over loopback, a few seconds per test."""

from __future__ import annotations

import shutil

import pytest

from netui.checks.latency.screen import LatencyMap, LatencyScreen
from netui.checks.pairs.screen import MatrixScreen
from netui.checks.pairs.tools import BIDIR, PairSettings
from netui.checks.latency.tools import LatencySettings
from netui.model import units
from netui.model.node import NodeState
from netui.ui.app import make_app
from tests.localnodes import local_monitor
from tests.pilot import on_screen, pause_until, plain, running, shown

LOOPBACK = "127.0.0.0/8"

pytestmark = pytest.mark.slow


def table_count(matrix_text: str, word: str = "not run") -> int:
    """How often ``word`` is in a matrix's cells (its legend left out)."""
    return matrix_text.split("average RTT")[0].count(word)


def local_app(names=("a", "b", "c", "d")):
    return make_app(local_monitor(names), autostart=False)


@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed (Debian iputils-ping)")
async def test_a_down_nodes_latency_pairs_are_not_run_while_the_test_runs_and_said_once():
    app = local_app()
    async with running(app, (80, 24), polls=2) as pilot:
        # as an SSH source words it while it waits to retry
        app.monitor.report("d", NodeState.DOWN, "connection refused (retrying in 55 s)")
        screen = await shown(pilot, LatencyScreen(nodes=["a", "b", "c", "d"], matrix=True,
                                                  settings=LatencySettings(count=15, test_net=LOOPBACK)))
        # the down node's pairs come at once, the others' after about 3 s of pings
        await pause_until(pilot, lambda: len(screen.results) >= 6 and screen.report is None, 10, 0.05)
        await pilot.pause(0.3)  # repainted (at most every 0.2 s)
        assert screen.report is None and screen.progress is not None and screen.progress.phase == "running"
        live = plain(screen.query_one(LatencyMap))
        rows = {line.split()[0]: line for line in live.splitlines() if line.strip()}
        assert rows["d"].count("not run") == 3 and table_count(live) == 6, live
        table = live.split("average RTT")[0]
        assert "fail" not in table and "✗" not in table, live
        results = plain(screen.query_one("#matrix-results"))
        assert results.count("not run: d is down") == 6 and "FAIL" not in results, results
        assert "not run" in on_screen(app)
        await pause_until(pilot, lambda: screen.report is not None, 15, 0.1)
        await pilot.pause(0.3)
        verdict = plain(screen.query_one("#matrix-verdict"))
        assert verdict.count("Not tested") == 1 and "d is down" in verdict and "pairs pass" in verdict, verdict
        # when it failed and what, never the countdown from when the words were written
        assert "retrying" not in verdict and "d is down (failed at " in verdict, verdict
        assert "(failed at " in results and "retrying" not in results
        assert table_count(plain(screen.query_one(LatencyMap))) == 6


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")
@pytest.mark.parametrize("direction", ["oneway", BIDIR])
async def test_a_running_pair_tests_live_figure_is_iperf3s_own_report_in_the_grids_units(direction):
    """The figure under a running test is what iperf3 reports for it (its last interval), not
    the interfaces' counters, which count the job's flows on the link too; in b/s, as the
    results are."""
    app = local_app(("a", "b"))
    async with running(app, (80, 24), polls=2) as pilot:
        screen = await shown(pilot, MatrixScreen(nodes=["a", "b"], matrix=False,
                                                 settings=PairSettings(duration_s=4, test_net=LOOPBACK,
                                                                       direction=direction)))
        lines, figures = [], []

        def look() -> bool:  # the progress line painted now, and what iperf3 said at that moment
            if screen.running:
                screen._show_progress()
                lines.append(plain(screen.query_one("#matrix-progress")))
                figures.append(screen.test.tool_gbps())
            return screen.report is not None

        await pause_until(pilot, look, 30, 0.2)
        assert screen.report is not None and screen.report.results and screen.report.results[0].ok
        tool = [(line, fig) for line, fig in zip(lines, figures) if fig]
        assert tool, lines  # iperf3 reported an interval while it ran (4 s: three at least)
        for line, fig in tool:
            live = line.splitlines()[-1]
            want = f"a→b {units.gbps(fig[('a', 'b')])}"
            if direction == BIDIR:
                want += f", b→a {units.gbps(fig[('b', 'a')])}"
            assert live.startswith("iperf3 now: ") and want in live, (live, fig)
        assert "iperf3 now: a→b" in "\n".join(lines)
        results = plain(screen.query_one("#matrix-results"))
        if screen.report.verdict.inconclusive:  # nothing passed that can be trusted (a busy CPU may fail one way)
            assert "pass" not in results and ("a→b  ran" in results or "a→b  FAIL" in results), results


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")
async def test_a_down_nodes_pairs_in_a_pair_test_are_not_run_and_say_when_it_failed():
    app = local_app(("a", "b", "c"))
    async with running(app, (80, 24), polls=2) as pilot:
        app.monitor.report("c", NodeState.DOWN, "connection refused (retrying in 55 s)")
        screen = await shown(pilot, MatrixScreen(nodes=["a", "b", "c"], matrix=True,
                                                 settings=PairSettings(duration_s=1, test_net=LOOPBACK,
                                                                       direction="oneway", confirm=False)))
        await pause_until(pilot, lambda: screen.report is not None, 30, 0.1)
        await pilot.pause(0.3)
        results = plain(screen.query_one("#matrix-results"))
        assert results.count("not run: c is down (failed at ") == 2 and "failed: c" not in results, results
        assert "retrying" not in results + plain(screen.query_one("#matrix-verdict"))
