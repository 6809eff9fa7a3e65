"""A pair test's suspects in the grid and the status bar until the user clears them
(pilot tests; the suspects' rules are in tests/unit/test_straggler.py)."""

from __future__ import annotations

import json

import pytest

from netui.engine.monitor import Monitor
from netui.ui.app import make_app
from tests.pilot import column, plain, poll
from tests.replayed import PAIR_TEST
from tests.synth import ScriptedSource, node_sample


def idle_lab_app():
    sources = [ScriptedSource(f"node{i}", lambda k: node_sample(k)) for i in range(1, 5)]
    return make_app(Monitor(sources, interval_s=1.0, history_s=60), autostart=False)


@pytest.mark.slow
async def test_a_finished_pair_test_names_its_suspect_until_the_user_clears_it():
    app = idle_lab_app()
    async with app.run_test(size=(160, 30)) as pilot:
        await poll(app, pilot)
        assert app.monitor.fleet.stragglers == []  # idle: nobody
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Clear pair-test suspects"].startswith("No pair test names a suspect now")
        # the saved lab matrix (a tbf towards node3) ends, as the test's screen ends one
        app.record_test("pair-test", json.loads(PAIR_TEST.read_text()))
        await poll(app, pilot, 1)
        status = plain(app.screen.query_one("#status"))
        assert "straggler node3: the pair test names it: receives slowly, 3 of 3 receives fail" in status
        health = dict(zip(column(app, "node"), column(app, "health")))
        assert health["node3"].startswith("straggler: the pair test names it")
        assert column(app, "node")[0] == "node3"  # a warning at least: worst first
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Clear pair-test suspects" in titles
        app.action_clear_pair_suspects()
        await poll(app, pilot, 1)
        assert app.monitor.fleet.stragglers == [] and "straggler" not in plain(app.screen.query_one("#status"))


@pytest.mark.slow
async def test_at_80_columns_a_pair_test_suspect_says_pair_test_and_its_rate():
    app = idle_lab_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        app.record_test("pair-test", json.loads(PAIR_TEST.read_text()))
        await poll(app, pilot, 1)
        health = dict(zip(column(app, "node"), column(app, "health")))
        assert health["node3"] == "pair test 187 Mb/s"  # its median receive rate, as a rate
        assert "straggler node3" in plain(app.screen.query_one("#status"))


@pytest.mark.slow
async def test_at_80_columns_a_pair_test_suspect_carries_the_rate_its_test_screen_shows():
    """The grid judges a finished test again from its JSON document: the document's rates
    are the measured ones (not cut to 1 Mbit/s), so the suspect's Why and the status bar
    give the median the test's screen gives (lab: the screen said median 37.8 Mb/s, the
    grid "pair test 37.5 Mb/s")."""
    from netui.checks.pairs.model import PairResult
    from netui.checks.pairs.tools import PairSettings
    from netui.checks.pairs.report import report_document
    from netui.checks.pairs.runner import PairTestReport

    rates = {("node1", "node2"): 9.5, ("node2", "node1"): 9.4, ("node1", "node3"): 9.3, ("node2", "node3"): 9.2,
             ("node3", "node1"): 0.0112, ("node3", "node2"): 0.0644, ("node1", "node4"): 9.6,
             ("node4", "node1"): 9.5, ("node2", "node4"): 9.4, ("node4", "node2"): 9.3}
    results = [PairResult(s, r, "iperf3", g, True, retransmits=0) for (s, r), g in rates.items()]
    report = PairTestReport(PairSettings(duration_s=2, threshold_gbps=1.0), ["node1", "node2", "node3", "node4"],
                            True, results=results, rounds=3, tests_done=10, tests_total=10, elapsed_s=6.0,
                            started_wall_s=1_790_000_000.0)
    verdict = report.judge()
    assert verdict.suspects == ["node3"] and "median 37.8 Mb/s" in verdict.text  # the test's screen
    app = idle_lab_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        app.record_test("pair-test", json.loads(json.dumps(report_document(report))))
        await poll(app, pilot, 1)
        health = dict(zip(column(app, "node"), column(app, "health")))
        assert health["node3"] == "pair test 37.8 Mb/s"
        assert "straggler node3: pair test 37.8 Mb/s" in plain(app.screen.query_one("#status"))
