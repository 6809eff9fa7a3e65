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
