"""Pair tests from the grid: marks, keys, the settings dialog, the matrix screen, export.

Without a lab: a scripted cluster (its nodes cannot run commands, so a test fails them in
words) and a saved report of a real lab run (tests/data/pairtest-lab-tbf-node3.json: four
lab nodes, tbf 200mbit on node3's root-side veth, both ways, 2 s per test). With the lab:
the whole flow against real sshd and iperf3.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from netui.checks.pairs.report import load_report
from netui.model.node import NodeState
from netui.ui.cluster import ClusterScreen
from netui.ui.grid import FleetGrid
from netui.checks.pairs.screen import Heatmap, MatrixScreen
from netui.checks.pairs.dialog import PairTestDialog
from tests.pilot import (escape_to_grid, exported, lab_app, pause_until, pressed, running, scripted_app,
                         shown)
from tests.pilot import plain_wide as plain
from tests.synth import node_sample

SAVED = Path(__file__).parents[1] / "data" / "pairtest-lab-tbf-node3.json"


def steady_app():
    """gpu0k receives k Gbit/s."""
    return scripted_app(lambda k, i: node_sample(i, rx_bps=k * 1e9))


async def reported(screen, pilot, timeout_s: float = 2.5, step_s: float = 0.05) -> None:
    """Until the matrix (or latency) screen has its report, ``timeout_s`` at the most."""
    await pause_until(pilot, lambda: screen.report is not None, timeout_s, step_s)


def all_up(app) -> bool:
    return all(n.state is NodeState.UP for n in app.monitor.fleet)


def node_column(app) -> list[str]:
    return [row[0] for row in app.screen.query_one(FleetGrid).rows_text()]


@pytest.mark.slow
async def test_space_marks_nodes_and_t_tests_the_two_marked():
    app = steady_app()
    async with running(app, (140, 30), polls=2) as pilot:
        await pilot.press("s")  # by node: gpu01 … gpu04
        await pilot.press("space", "down", "down", "space")  # gpu01, then gpu03 (space stays on its node)
        grid = app.screen.query_one(FleetGrid)
        assert grid.marked == {"gpu01", "gpu03"}
        assert node_column(app) == ["● gpu01", "gpu02", "● gpu03", "gpu04"]
        dialog = await pressed(pilot, "t")
        assert isinstance(dialog, PairTestDialog) and dialog.nodes == ["gpu01", "gpu03"] and not dialog.matrix
        await escape_to_grid(pilot)
        await pilot.press("space")  # unmark gpu03
        assert grid.marked == {"gpu01"}
        await pressed(pilot, "home", "down", "t")  # the cursor's node and the next marked (wrapping)
        assert app.screen.nodes == ["gpu02", "gpu01"]


@pytest.mark.slow
async def test_t_without_a_pair_says_how_and_T_takes_every_node():
    app = steady_app()
    async with running(app, (140, 30), polls=2) as pilot:
        await pressed(pilot, "t")
        assert isinstance(app.screen, ClusterScreen)
        assert any("mark two nodes" in n.message for n in app._notifications)
        await pressed(pilot, "T")
        assert isinstance(app.screen, PairTestDialog)
        assert app.screen.matrix and app.screen.nodes == ["gpu01", "gpu02", "gpu03", "gpu04"]
        # a matrix tests each node sending and receiving by default, in the shift pattern (each node
        # sends and receives at once: every ordered pair in N-1 rounds), as netui bench --matrix does
        assert app.screen.query_one("#direction").value == "both"
        assert app.screen.query_one("#pattern").value == "shift"
        assert "12 tests in 3 rounds" in plain(app.screen.query_one("#pair-plan"))
        app.screen.query_one("#pattern").value = "pairs"
        await pilot.pause()
        assert "12 tests in 6 rounds" in plain(app.screen.query_one("#pair-plan"))
        # the retests are on by default, and the box is netui bench's --no-confirm
        assert app.screen.query_one("#confirm").value is True
        app.screen.query_one("#confirm").value = False
        chosen = app.screen.read()
        assert (chosen.pattern, chosen.confirm, chosen.direction) == ("pairs", False, "both")


@pytest.mark.slow
async def test_the_dialog_checks_then_runs_and_remembers_its_settings():
    app = steady_app()
    async with running(app, (140, 40), polls=2) as pilot:
        await pressed(pilot, "T")
        duration = app.screen.query_one("#duration")
        duration.value = "0"
        await pressed(pilot, "enter")
        assert isinstance(app.screen, PairTestDialog)
        assert "duration must be 1 to 3600 seconds" in plain(app.screen.query_one("#pair-error"))
        duration.value = "3"
        app.screen.query_one("#test-net").value = "10.0.0.0/8"
        screen = await pressed(pilot, "enter")
        assert isinstance(screen, MatrixScreen)
        await reported(screen, pilot)  # scripted nodes cannot run commands: the test is refused at once, in words
        assert screen.report is not None and screen.report.tests_done == 0
        verdict = plain(screen.query_one("#matrix-verdict"))
        assert verdict.strip() == "iperf3 cannot run: gpu[01-04] cannot run commands (a replay or a captured tree)"
        assert "suspect" not in verdict
        assert screen.query_one("#matrix-verdict").has_class("-failed")
        await escape_to_grid(pilot)
        assert app.check_settings["pairs"].settings.duration_s == 3 and app.check_settings["pairs"].settings.test_net == "10.0.0.0/8"
        await pressed(pilot, "R")  # the other tool keeps the shared settings
        assert app.screen.query_one("#duration").value == "3"
        assert app.screen.settings.tool == "ib_write_bw" and app.screen.query("#gid")


@pytest.mark.slow
async def test_a_run_with_retests_shows_both_figures():
    """The saved lab run (node3 receives slowly) with the deciding pairs rerun alone: the results
    give the matrix's figure and the retest's, the head counts the retests, the cells hold the
    confirmed figures."""
    from netui.checks.pairs.model import PairResult
    from netui.checks.pairs.verdict_confirm import pairs_to_confirm

    report = load_report(json.loads(SAVED.read_text()))
    chosen = pairs_to_confirm(report.verdict)
    assert ("node2", "node3") in chosen
    report.retests = [PairResult(a, b, "iperf3", 0.2 if b == "node3" else 9.3, True) for a, b in chosen]
    report.retests_total = len(chosen)
    report.judge()
    app = steady_app()
    async with running(app, (140, 40), polls=1) as pilot:
        await shown(pilot, MatrixScreen(report=report))
        results = plain(app.screen.query_one("#matrix-results"))
        line = next(x for x in results.splitlines() if x.startswith("node2→node3"))
        assert "FAIL" in line and "186 Mb/s → 200 Mb/s on retest" in line, results
        assert f"{len(chosen)} of {len(chosen)} retests" in plain(app.screen.query_one("#matrix-head"))
        verdict = " ".join(plain(app.screen.query_one("#matrix-verdict")).split())  # wrapped
        assert "Retested alone: " in verdict and "node2→node3 186 Mb/s → 200 Mb/s" in verdict
        heat = plain(app.screen.query_one(Heatmap))
        assert "0.200" in heat or "0.20" in heat


@pytest.mark.slow
async def test_the_matrix_of_a_saved_lab_run(tmp_path, monkeypatch):
    report = load_report(json.loads(SAVED.read_text()))
    app = steady_app()
    async with running(app, (120, 40), polls=1) as pilot:
        await shown(pilot, MatrixScreen(report=report))
        heat = plain(app.screen.query_one(Heatmap))
        rows = {line.split()[0]: line.split()[1:] for line in heat.splitlines()[1:] if line.strip()}
        assert heat.split()[:5] == ["Gb/s", "send", "↓", "node1", "node2"]  # the unit in the corner
        assert rows["node1"][0] == "·" and float(rows["node1"][2]) < 0.25 and rows["node1"][3] == "✗"
        assert rows["node2"].count("✗") == 1 and rows["node3"].count("✗") == 0  # node3 sends fine
        verdict = plain(app.screen.query_one("#matrix-verdict"))
        assert verdict.startswith("suspect node3 receives slowly (3 of 3 receives fail, median 187 Mb/s; "
                                  "it sends at 9.16 Gb/s)")
        results = plain(app.screen.query_one("#matrix-results"))
        assert "node2→node3  FAIL   186 Mb/s   sender/receiver retrans " in results and "node1→node2  pass " in results
        assert results.index("node4→node3  FAIL") < results.index("node1→node2  pass")  # failing first
        assert "node3  sends 9.16 Gb/s (0/3 fail)      receives 187 Mb/s (3/3 fail)  ← suspect: receiving" \
            in results
        written = await exported(pilot, tmp_path, monkeypatch)
        assert [p.suffix for p in written] == [".csv", ".json"]
        assert any(str(tmp_path) in n.message for n in app._notifications)
        await escape_to_grid(pilot)


@pytest.mark.slow
async def test_the_palette_offers_the_pair_tests():
    app = steady_app()
    async with running(app, (120, 30), polls=1):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Mark node", "iperf3 pair test", "iperf3 matrix", "ib_write_bw pair test", "ib_write_bw matrix"):
            assert title in titles


@pytest.mark.slow
async def test_typing_t_in_the_filter_filters(tmp_path):
    app = steady_app()
    async with running(app, (120, 30), polls=2) as pilot:
        await pressed(pilot, "slash", "t", "T", "r")
        assert isinstance(app.screen, ClusterScreen)
        assert app.screen.grid.filter == "tTr"


# --- against the lab ------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")
async def test_matrix_from_the_grid_in_the_lab(lab):
    app = lab_app(lab)
    async with running(app, (130, 40)) as pilot:
        await pause_until(pilot, lambda: all_up(app), 10)
        await pilot.press("s")  # by node
        await pilot.press("space", "down", "space", "down", "space")  # node1, node2, node3
        await pressed(pilot, "T")
        assert app.screen.nodes == ["node1", "node2", "node3"]
        app.screen.query_one("#duration").value = "1"
        screen = await pressed(pilot, "enter")
        assert isinstance(screen, MatrixScreen)
        seen = set()

        def progress_seen() -> bool:  # the progress line as it moves, until the report
            seen.add(plain(screen.query_one("#matrix-progress")))
            return screen.report is not None

        await pause_until(pilot, progress_seen, 20)
        # while a round runs, the line moves: its pairs' throughput (iperf3's own report, or the
        # link's before the first one), and time
        live = [line for text in seen for line in text.splitlines() if "now" in line and ": node" in line]
        assert any("→" in line and "b/s" in line for line in live), seen
        # the first matrix runs both directions in the shift pattern: 3 pairs x 2 = 6 tests in 2 rounds
        # of 3 (each node sends to one and receives from the other at once)
        assert screen.report is not None
        assert screen.report.settings.direction == "both" and screen.report.pattern == "shift"
        assert screen.report.tests_total == 6 and screen.report.rounds == 2
        heat = plain(screen.query_one(Heatmap))
        numbers = [w for w in heat.split() if w.replace(".", "").isdigit()]
        assert len(numbers) == 6, heat  # a cell per ordered pair
        verdict = plain(screen.query_one("#matrix-verdict"))
        assert any(word in verdict for word in ("pass", "fail", "inconclusive")), verdict
        assert "on 198.18.0.0/24" in plain(screen.query_one("#matrix-head"))
        await escape_to_grid(pilot)
    await asyncio.sleep(0)


def test_the_colour_scale_puts_the_pass_mark_mid_way():
    from netui.checks.pairs.screen import scale_share

    assert scale_share(1.0, 2.0, 10.0) == 0.25  # failing: the lower half
    assert scale_share(2.0, 2.0, 10.0) == 0.5
    assert scale_share(10.0, 2.0, 10.0) == 1.0
    assert scale_share(5.0, None, 10.0) == 0.5  # no pass mark: against the best
    assert scale_share(3.0, 2.0, 0.0) == 1.0


# --- latency (l) ----------------------------------------------------------------------------------

LATENCY_SAVED = Path(__file__).parents[1] / "data" / "latency-lab-loss-node3.json"


@pytest.mark.slow
async def test_l_asks_for_latency_settings_over_the_marked_or_all_and_remembers_them():
    from netui.checks.latency.screen import LatencyScreen
    from netui.checks.latency.dialog import LatencyDialog

    app = steady_app()
    async with running(app, (140, 40), polls=2) as pilot:
        dialog = await pressed(pilot, "s", "l")
        assert isinstance(dialog, LatencyDialog) and dialog.nodes == ["gpu01", "gpu02", "gpu03", "gpu04"]
        assert "12 directions, every node pinging every other at once" in plain(dialog.query_one("#pair-plan"))
        dialog.query_one("#interval").value = "0.05"
        await pressed(pilot, "enter")
        assert "interval must be 0.2 to 10 seconds" in plain(dialog.query_one("#pair-error"))
        dialog.query_one("#interval").value = "0.5"
        dialog.query_one("#count").value = "7"
        screen = await pressed(pilot, "enter")
        assert isinstance(screen, LatencyScreen)
        await reported(screen, pilot)  # scripted nodes cannot run commands: the test refuses at once, in words
        assert screen.report is not None and screen.report.results == []
        assert plain(screen.query_one("#matrix-verdict")).strip() == (
            "ping cannot run: gpu[01-04] cannot run commands (a replay or a captured tree)")
        assert "fail ✗" not in plain(screen.query_one("#latency-map"))
        assert "7 probes every 0.5 s" in plain(screen.query_one("#matrix-head"))
        await escape_to_grid(pilot)
        assert (app.check_settings["latency"].count, app.check_settings["latency"].interval_s) == (7, 0.5)
        await pressed(pilot, "home", "space", "down", "space", "l")  # two marked: the pair, both ways
        assert isinstance(app.screen, LatencyDialog) and app.screen.nodes == ["gpu01", "gpu02"]
        assert app.screen.query_one("#count").value == "7"
        assert "latency (ping): gpu01 ↔ gpu02" in plain(app.screen.query_one("#pair-title"))
        await escape_to_grid(pilot)


@pytest.mark.slow
async def test_the_latency_matrix_of_a_saved_lab_run(tmp_path, monkeypatch):
    from netui.checks.latency.report import load_report as load_latency
    from netui.checks.latency.screen import LatencyScreen

    report = load_latency(json.loads(LATENCY_SAVED.read_text()))
    app = steady_app()
    async with running(app, (130, 40), polls=1) as pilot:
        await shown(pilot, LatencyScreen(report=report))
        heat = plain(app.screen.query_one("#latency-map"))
        lines = [line for line in heat.splitlines() if line.strip()]
        assert lines[0].split() == ["ping", "↓", "answer", "→", "node1", "node2", "node3", "node4"]
        node1 = lines[1]
        assert node1.split()[:4] == ["node1", "·", "57", "µs"] and "40% ✗" in node1
        assert lines[3].count("✗") == 3  # node3's own pings lose too
        assert "colour: the typical RTT (28 µs) at the top" in heat
        verdict = plain(app.screen.query_one("#matrix-verdict"))
        assert "node3 is in 3 of 3 failing pairs — suspect node3's link (loss)" in verdict
        results = plain(app.screen.query_one("#matrix-results"))
        assert "node1→node3  FAIL  avg 61 µs · p50 39 µs · p99 170 µs · loss 40 % (12/20)   (40 % loss)" in results
        assert "node1→node2  pass  avg 57 µs" in results
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Export latency test" in titles and "Export pair test" not in titles
        written = await exported(pilot, tmp_path, monkeypatch)
        assert [p.suffix for p in written] == [".csv", ".json"] and written[0].name.startswith("netui-ping-")
        assert json.loads(written[1].read_text())["verdict"]["suspects"] == ["node3"]
        await escape_to_grid(pilot)


@pytest.mark.slow
async def test_the_palette_offers_the_latency_matrix():
    app = steady_app()
    async with running(app, (120, 30), polls=1):
        assert "Latency matrix" in [c.title for c in app.get_system_commands(app.screen)]


@pytest.mark.skipif(shutil.which("fping") is None and shutil.which("ping") is None, reason="no ping, no fping")
async def test_latency_from_the_grid_in_the_lab_and_esc_cancels(lab):
    from netui.checks.latency.screen import LatencyMap, LatencyScreen
    from tests.lab.watch import pings_left

    app = lab_app(lab)
    async with running(app, (130, 40)) as pilot:
        await pause_until(pilot, lambda: all_up(app), 10)
        await pressed(pilot, "s", "space", "down", "space", "down", "space", "l")  # node1 … node3
        app.screen.query_one("#count").value = "5"
        screen = await pressed(pilot, "enter")
        assert isinstance(screen, LatencyScreen) and screen.nodes == ["node1", "node2", "node3"]
        await reported(screen, pilot, 15, 0.1)
        assert screen.report is not None and len(screen.report.results) == 6
        heat = plain(screen.query_one(LatencyMap))
        assert heat.count("µs") + heat.count(" ms") >= 6, heat
        assert "all 3 pairs pass" in plain(screen.query_one("#matrix-verdict"))
        assert "on 198.18.0.0/24" in plain(screen.query_one("#matrix-head"))
        await escape_to_grid(pilot)
        last = app.check_settings["latency"]
        app.check_settings["latency"] = last.from_dict(last.to_dict() | {"count": 300})
        screen = await pressed(pilot, "l", "enter")  # a long one, cancelled with Esc
        await pause_until(pilot, lambda: len(pings_left(lab)) >= 3, 10)
        assert len(pings_left(lab)) == 3, pings_left(lab)
        await pilot.press("escape")
        await reported(screen, pilot, 5, 0.1)
        assert screen.report is not None and screen.report.cancelled
        assert "cancelled" in plain(screen.query_one("#matrix-progress"))
        await pause_until(pilot, lambda: not pings_left(lab), 4)
        assert not pings_left(lab)
        await escape_to_grid(pilot)
    await asyncio.sleep(0)


# --- the dialogs at 80×24 -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.parametrize("key", ["T", "R", "l"])
async def test_each_settings_dialog_fits_80_by_24_with_its_buttons_in_sight(key, size):
    app = steady_app()
    async with running(app, size, polls=2) as pilot:
        dialog = await pressed(pilot, key)
        frame = dialog.query_one("Vertical")
        screen = dialog.region
        assert screen.contains_region(frame.region), (frame.region, screen)
        assert frame.max_scroll_y == 0  # all of it in sight: nothing to scroll to
        for widget in dialog.query("Input, Select, Checkbox, Button"):
            r = widget.region
            assert r.area and frame.region.contains_region(r), (widget.id, r, frame.region)
        buttons = {str(b.label) for b in dialog.query("Button")}
        assert buttons == {"Start", "Cancel"}


@pytest.mark.slow
async def test_the_checkbox_draws_its_mark_only_when_checked():
    app = steady_app()
    async with running(app, (100, 30), polls=2) as pilot:
        await pressed(pilot, "T")
        box = app.screen.query_one("#one-at-a-time")
        assert not box.value and "X" not in str(box.render())
        box.value = True
        await pilot.pause()
        assert "X" in str(box.render())


@pytest.mark.slow
async def test_a_cancelled_dialog_leaves_the_first_matrix_testing_both_ways():
    app = steady_app()
    async with running(app, (100, 30), polls=2) as pilot:
        await pressed(pilot, "T", "escape", "R")
        assert app.screen.query_one("#direction").value == "both"


@pytest.mark.slow
async def test_a_pair_a_node_could_not_run_is_not_run_in_the_matrix_not_a_failure():
    from netui.checks.pairs.tools import pair_failed

    report = load_report(json.loads(SAVED.read_text()))
    report.nodes.append("node5")
    for other in ("node1", "node2"):
        report.results += pair_failed(report.settings, "node5", other, "node5 is down (connection refused)",
                                      "unavailable")
    report.results += pair_failed(report.settings, "node1", "node4", "iperf3: error - unable to connect")
    report.judge()
    app = steady_app()
    async with running(app, (140, 40), polls=1) as pilot:
        await shown(pilot, MatrixScreen(report=report))
        heat = plain(app.screen.query_one(Heatmap))
        node5 = next(line for line in heat.splitlines() if line.split()[:1] == ["node5"])
        assert node5.count("not run") == 2 and "fail" not in node5, node5
        node1 = next(line for line in heat.splitlines() if line.split()[:1] == ["node1"])
        assert "fail ✗" in node1  # a test that ran and failed is still a failure
