"""A registered check with a key is on the cluster screen with no edit outside its folder and
its registration: its key runs it over the marked nodes (or all), the footer shows it where
there is room, the help screen has its row, and the command palette finds it by its words.
The echo check (tests/echo_check.py) is registered inside each test; netui's own checks keep
their keys and their footer (tests/ui/__snapshots__)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.command import CommandList, CommandPalette

from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from netui.ui.app import make_app
from netui.ui.help import HelpScreen
from tests.echo_check import ECHO, STARTED, registered
from tests.pilot import five_nodes, on_screen, palette_titles, poll
from tests.replayed import lab_replay


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory):
    return lab_replay(tmp_path_factory.mktemp("replay") / "lab.ndjson.gz")


def toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.mark.slow
async def test_its_key_runs_it_over_the_marked_nodes_or_all_and_the_footer_shows_it():
    with registered():
        app = five_nodes()
        async with app.run_test(size=(200, 30)) as pilot:
            await poll(app, pilot)
            everyone = [n.name for n in app.monitor.fleet]
            footer = on_screen(app).splitlines()[-1]
            assert "E Echo test" in footer  # after netui's own keys, which keep their places
            assert footer.index("l Latency") < footer.index("D Doctor") < footer.index("E Echo test")
            await pilot.press("E")
            await pilot.pause()
            assert STARTED == [(app, everyone, {})]
            grid = app.screen.grid
            await pilot.press("space", "j", "space")
            await pilot.pause()
            marked = [n for n in everyone if n in grid.marked]
            assert len(marked) == 2
            await pilot.press("E")
            await pilot.pause()
            assert STARTED[-1] == (app, marked, {}) and len(STARTED) == 2


@pytest.mark.slow
async def test_fewer_nodes_marked_than_it_needs_it_says_so_and_does_not_start():
    with registered(replace(ECHO, min_nodes=3)):
        app = five_nodes()
        async with app.run_test(size=(120, 30)) as pilot:
            await poll(app, pilot)
            await pilot.press("space", "j", "space", "E")
            await pilot.pause()
            assert STARTED == []
            assert "the echo test needs at least three nodes" in toasts(app)
            await pilot.press("U", "E")  # unmarked: all five
            await pilot.pause()
            assert [nodes for _, nodes, _ in STARTED] == [[n.name for n in app.monitor.fleet]]


@pytest.mark.slow
async def test_the_help_screen_has_its_row_beside_netuis_checks():
    with registered():
        app = five_nodes()
        async with app.run_test(size=(100, 120)) as pilot:  # tall enough for the whole help
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            text = on_screen(app)
            assert "E  echo test: every node answers back" in text  # the help wraps the rest
            assert text.index("D  doctor:") < text.index("E  echo test") < text.index("o  ring order")


@pytest.mark.slow
async def test_the_command_palette_finds_it_by_its_words_and_runs_it():
    with registered():
        app = five_nodes()
        async with app.run_test(size=(120, 30)) as pilot:
            await poll(app, pilot)
            assert "Echo test" in await palette_titles(pilot, "answers")
            assert "Echo test" in await palette_titles(pilot, "echo")
            assert "Echo test" not in await palette_titles(pilot, "doctor")
            await pilot.press("ctrl+p")
            await pilot.pause()
            for ch in "every node answers":
                await pilot.press("space" if ch == " " else ch)
            for _ in range(40):  # bounded: the palette searches in a worker
                await pilot.pause(0.05)
                options = app.screen.query_one(CommandList)._options
                if [o for o in options if hasattr(o, "hit")]:
                    break
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, CommandPalette)
            assert STARTED == [(app, [n.name for n in app.monitor.fleet], {})]


@pytest.mark.slow
async def test_in_a_replay_its_key_shows_the_last_one_recorded(lab_file):
    with registered():
        app = make_app(ReplayMonitor(load(lab_file), history_s=900), autostart=False)
        async with app.run_test(size=(120, 30)) as pilot:
            await app.monitor.tick()
            await pilot.pause()
            await pilot.press("E")
            await pilot.pause()
            assert STARTED == []  # a recorded check is not run in a replay
            assert "no echo test recorded yet" in toasts(app)
