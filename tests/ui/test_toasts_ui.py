"""Toasts at 80x24: one at a time, one line where the words fit, never over the Σ line, the
replay's timeline or the footer; a replay's n says where it landed on the timeline, not in a
toast per event. Pilot tests with notifications on (run_test leaves them off by default)."""

from __future__ import annotations

import pytest
from textual import events
from textual.geometry import Region
from textual.widgets._toast import Toast

from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from netui.ui.app import make_app
from netui.ui.timeline import Timeline
from tests.pilot import demo_app, on_screen, plain, poll
from tests.replayed import lab_replay


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory):
    return lab_replay(tmp_path_factory.mktemp("replay") / "lab.ndjson.gz")


def burst(app, keys) -> None:
    """Keys queued all at once, as a terminal delivers a burst."""
    for key in keys:
        event = events.Key(key, " " if key == "space" else key)
        event.set_sender(app)
        app._driver.send_message(event)


def toasts(app) -> list[str]:
    return [str(t._notification.message) for t in app.screen.query(Toast)]


def hidden_rows(app, widget) -> list[str]:
    """The rows of ``widget`` that differ on screen from what it paints itself: what a toast
    (or anything else) covers of it."""
    screen = on_screen(app).splitlines()
    own = [s.text for s in widget.render_lines(Region(0, 0, *widget.region.size))]
    y = widget.region.y
    return [screen[y + i] for i, line in enumerate(own) if screen[y + i].rstrip() != line.rstrip()]


async def settle(pilot, n=4):
    for _ in range(n):
        await pilot.pause(0.05)


@pytest.mark.slow
async def test_marking_nodes_raises_one_short_toast_that_leaves_the_totals_whole():
    app = demo_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await poll(app, pilot, 3)
        burst(app, ["space", "j", "space", "j", "space"])  # as tmux send-keys delivers them
        await settle(pilot)
        shown = toasts(app)
        assert shown == ["3 marked: T/R matrix, l latency"]  # not one per mark
        toast = app.screen.query_one(Toast)
        assert toast.region.height == 1
        totals = app.screen.query_one("#totals")
        assert toast.region.bottom <= totals.region.y  # above the Σ line
        assert not hidden_rows(app, totals)
        assert "3 marked: T/R matrix, l latency" in on_screen(app)


@pytest.mark.slow
async def test_n_in_a_replay_names_the_event_on_the_timeline_without_a_toast(lab_file):
    app = make_app(ReplayMonitor(load(lab_file), history_s=900), autostart=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await app.monitor.tick()
        await pilot.pause()
        timeline = app.screen.query_one(Timeline)
        await pilot.press("n")
        await settle(pilot)
        assert "0:04 straggler node" in plain(timeline) and not hidden_rows(app, timeline)
        await pilot.press("n", "n", "x")
        await settle(pilot)
        assert toasts(app) == []  # the timeline and the status bar say it
        # a warning now (nothing recorded before the start): above the timeline and the Σ line
        app.monitor.seek(app.monitor.recording.start_t)
        await pilot.press("T")
        await settle(pilot)
        assert toasts(app) and "no pair test recorded yet" in toasts(app)[0]
        toast = app.screen.query_one(Toast)
        totals = app.screen.query_one("#totals")
        assert toast.region.bottom <= totals.region.y
        assert not hidden_rows(app, totals) and not hidden_rows(app, timeline)


@pytest.mark.slow
async def test_a_recorded_test_reached_in_a_replay_says_its_key_on_the_timeline(lab_file):
    app = make_app(ReplayMonitor(load(lab_file), history_s=900), autostart=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await app.monitor.tick()
        await pilot.pause()
        while app.monitor.next_event() is not None and not app.monitor.tests:
            pass
        await settle(pilot)
        assert toasts(app) == []
        second = plain(app.screen.query_one(Timeline)).splitlines()[1]
        assert "T shows it: iperf3 test" in second
