"""Keys people try, at 80x24: j/k (and G) move the grid's cursor as in k9s, htop and less; a
burst of keys scrolls the help screen as far as it asked; j/k/g/G scroll every screen that
scrolls; the command palette finds an action by any word of it, whatever the state."""

from __future__ import annotations

import json

import pytest
from textual import events
from textual.containers import VerticalScroll

from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from netui.ui.app import make_app
from netui.ui.cluster import ClusterScreen
from netui.ui.grid import FleetGrid
from netui.ui.help import HelpScreen
from netui.ui.keys import rows
from tests.pilot import five_nodes, highlighted, on_screen, palette_titles, poll
from tests.replayed import PAIR_TEST, lab_replay


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory):
    return lab_replay(tmp_path_factory.mktemp("replay") / "lab.ndjson.gz")


def burst(app, keys) -> None:
    """Keys as a terminal delivers a burst (tmux send-keys, a held key): all queued at once."""
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else ("?" if key == "question_mark" else None))
        event.set_sender(app)
        app._driver.send_message(event)


@pytest.mark.slow
async def test_j_k_and_G_move_the_grid_cursor():
    app = five_nodes()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        grid = app.screen.query_one(FleetGrid)
        names = [n.name for n in grid.shown_nodes]
        await pilot.press("j", "j")
        assert grid.selected == names[2] and highlighted(app)[0].startswith(names[2])
        await pilot.press("k")
        assert grid.selected == names[1]
        await pilot.press("G")
        assert grid.selected == names[-1] and highlighted(app)[0].startswith(names[-1])
        await pilot.press("home")
        assert grid.selected == names[0]
        await pilot.press("slash", "j", "k", "G")  # typing a filter: letters are the filter's
        await pilot.pause()
        assert app.screen.query_one("#filter").value == "jkG"


@pytest.mark.slow
async def test_a_burst_of_keys_scrolls_the_help_screen():
    app = five_nodes()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        burst(app, ["question_mark", *["down"] * 6, *["j"] * 4])
        for _ in range(4):
            await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        box = app.screen.query_one(VerticalScroll)
        assert box.scroll_y == 10  # every key counted, those before the first layout too
        assert "Enter  open the selected node" not in on_screen(app)  # scrolled past the first lines
        burst(app, ["k", "k"])
        await pilot.pause()
        await pilot.pause()
        assert box.scroll_y == 8
        await pilot.press("G")
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y > 8 and "ctrl+z" in on_screen(app)
        await pilot.press("g")
        await pilot.pause()
        assert box.scroll_y == 0
        await pilot.press("space")
        await pilot.pause()
        assert box.scroll_y > 10
        await pilot.press("escape")
        assert isinstance(app.screen, ClusterScreen)
        assert app.screen.grid.grouping == ""  # g there was the help's, not a grouping


@pytest.mark.slow
async def test_j_g_and_G_scroll_the_node_screen():
    app = five_nodes()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        await pilot.press("enter")
        await poll(app, pilot, 2)
        box = app.screen.query_one("#node-body", VerticalScroll)
        assert box.max_scroll_y >= 2, "the node screen fits 80x24: nothing to scroll"
        await pilot.press("j", "j")
        await pilot.pause()
        assert box.scroll_y == 2
        await pilot.press("G")
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y
        await pilot.press("k", "g")
        await pilot.pause()
        assert box.scroll_y == 0


WORDS = {"straggler": "Open node", "suspect": "Clear pair-test suspects", "jump": "First row",
         "record": "Record / stop", "matrix": "iperf3 matrix"}


@pytest.mark.slow
async def test_the_palette_finds_every_action_by_its_words_with_or_without_suspects():
    app = five_nodes()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        assert not app.monitor.fleet.pair_suspects
        for word, title in WORDS.items():
            assert title in await palette_titles(pilot, word), word
        app.record_test("pair-test", json.loads(PAIR_TEST.read_text()))  # names node3
        await poll(app, pilot, 1)
        assert app.monitor.fleet.pair_suspects
        for word, title in WORDS.items():
            assert title in await palette_titles(pilot, word), word


@pytest.mark.slow
async def test_the_palette_finds_replay_actions_by_their_words(lab_file):
    app = make_app(ReplayMonitor(load(lab_file), history_s=900), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.monitor.tick()
        await pilot.pause()
        found = await palette_titles(pilot, "straggler")
        assert "Next straggler" in found and "Next event" in found
        assert "Next event" in await palette_titles(pilot, "jump")
        assert "Recorded pair test" in await palette_titles(pilot, "record")
        assert "Next straggler" in await palette_titles(pilot, "suspect")


def test_words_match_the_start_of_words_in_any_order():
    from netui.ui.commands import words_match

    assert words_match("straggler", "Jump to the next straggler flagged (N)")
    assert words_match("pair sus", "Clear pair-test suspects")
    assert not words_match("record", "Cycle the grid's sort order")  # r…e…c…o…r…d spread out
    assert not words_match("", "anything")


async def test_the_help_screen_lists_every_row_of_the_key_table_in_its_order():
    app = five_nodes()
    async with app.run_test(size=(100, 120)) as pilot:  # tall enough for the whole help
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = on_screen(app)
        where = []
        for key in rows():
            first_words = " ".join(key.help.split()[:3])
            line = f"{key.shown}  {first_words}"
            assert line in text, line
            where.append(text.index(line))
        assert where == sorted(where)
