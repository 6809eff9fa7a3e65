"""Pilot tests of replay and recording in the UI: the keys a user presses, what they see."""

from __future__ import annotations

import re

import pytest

from netui.engine.recording.reader import read_records
from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from netui.ui.app import make_app
from netui.ui.cluster import ClusterScreen
from netui.checks.latency.screen import LatencyScreen
from netui.checks.pairs.screen import MatrixScreen
from netui.ui.node import NodeScreen
from netui.ui.timeline import Timeline
from tests.factories import record_demo
from tests.pilot import column, demo_app, on_screen, plain, pressed, running
from tests.replayed import lab_replay


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory):
    return lab_replay(tmp_path_factory.mktemp("replay") / "lab.ndjson.gz")


def replay_app(path):
    return make_app(ReplayMonitor(load(path), history_s=900), autostart=False)


async def ticked(app, pilot) -> None:
    """One tick of the monitor (a replay moves a second), then the screen catches up."""
    await app.monitor.tick()
    await pilot.pause()


def timeline(app) -> str:
    return plain(app.screen.query_one(Timeline))


def status(app) -> str:
    return plain(app.screen.query_one("#status"))


@pytest.mark.slow
async def test_the_timeline_follows_play_pause_speed_and_seek(lab_file):
    app = replay_app(lab_file)
    async with running(app, (120, 30), ticks=1) as pilot:
        await pilot.pause()
        assert timeline(app).startswith("▶ 1×  0:00 / 0:38  00:15:11 UTC")
        assert "replay ▶ 1×" in status(app)
        await ticked(app, pilot)
        assert "0:01 / 0:38" in timeline(app)
        await pressed(pilot, "right")
        assert "0:11 / 0:38" in timeline(app)
        await pressed(pilot, "shift+left")
        assert "0:00 / 0:38" in timeline(app) and app.monitor.position == 1
        await pilot.press("p")
        assert timeline(app).startswith("‖ 1×")
        await pilot.pause()
        foot = on_screen(app).splitlines()[-1]
        assert "p Play" in foot and "PAUSED" in status(app)
        await ticked(app, pilot)
        assert "0:00 / 0:38" in timeline(app)  # paused: the clock holds
        await pilot.press("p", "x")
        await ticked(app, pilot)
        assert timeline(app).startswith("▶ 10×  0:10")
        await pressed(pilot, "shift+right")
        assert "0:38 / 0:38" in timeline(app)
        await ticked(app, pilot)
        assert timeline(app).startswith("■ end")


@pytest.mark.slow
async def test_n_jumps_to_the_next_event_and_the_timeline_names_it(lab_file):
    app = replay_app(lab_file)
    async with running(app, (140, 30), ticks=1) as pilot:
        await pressed(pilot, "n")
        text = timeline(app)
        assert "0:04 / 0:38" in text  # a straggler is held: named from its second interval
        assert "0:04 straggler node" in text
        assert "straggler node3" in status(app)  # the grid's state is the one at that point
        assert column(app, "node")[0] == "node3"
        marks = text.splitlines()[0]
        assert "▲" in marks and "◆" in marks  # stragglers, and the two recorded tests


@pytest.mark.slow
async def test_recorded_tests_open_on_their_keys_once_reached(lab_file):
    app = replay_app(lab_file)
    async with running(app, (120, 34), ticks=1) as pilot:
        await pressed(pilot, "T")
        assert isinstance(app.screen, ClusterScreen)  # none recorded before 0:00
        await pressed(pilot, "right", "right", "right")
        await pressed(pilot, "T")
        assert isinstance(app.screen, MatrixScreen) and not isinstance(app.screen, LatencyScreen)
        assert "node3" in plain(app.screen.query_one("#matrix-verdict"))
        await pressed(pilot, "escape", "l")
        assert isinstance(app.screen, LatencyScreen)
        assert app.screen.report.results


@pytest.mark.slow
async def test_the_node_screen_replays_too(lab_file):
    app = replay_app(lab_file)
    async with running(app, (120, 40), ticks=1) as pilot:
        await pressed(pilot, "right")
        await pressed(pilot, "enter")  # the worst node first: node3
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "node3"
        assert "0:10 / 0:38" in timeline(app)
        assert "retransmits" in plain(app.screen.query_one("#tcp"))
        await pressed(pilot, "right", "right", "right")
        assert "0:38 / 0:38" in timeline(app)
        assert "TCP retransmits" not in plain(app.screen.query_one("#node-head"))  # traffic over by then


@pytest.mark.slow
async def test_recorded_node_states_show_as_they_were(tmp_path):
    path = tmp_path / "demo.ndjson.gz"
    await record_demo(path, ticks=5)
    app = replay_app(path)
    async with running(app, (160, 30), ticks=1) as pilot:
        await pressed(pilot, "right")
        assert column(app, "state")[0] == "down"
        assert "connection refused" in " ".join(app.screen.grid.rows_text()[0])


@pytest.mark.slow
async def test_arrows_in_the_filter_box_move_its_cursor_not_the_replay(lab_file):
    app = replay_app(lab_file)
    async with running(app, (120, 30), ticks=1) as pilot:
        await pressed(pilot, "slash", "n", "o", "left")
        assert app.monitor.position == 1
        await pressed(pilot, "escape", "right")
        assert app.monitor.elapsed_s == 10


@pytest.mark.slow
async def test_w_records_from_the_ui_with_rec_in_the_status_bar(tmp_path):
    app = demo_app()
    app.record_dir = tmp_path
    async with running(app, (160, 30), ticks=1) as pilot:
        await pilot.press("w")
        for _ in range(3):
            await app.monitor.tick()
        await pilot.pause()
        text = status(app)
        assert re.search(r"● REC [\d.]+ k?B", text)  # its badge, with its size
        # the file is named where it is asked for (the palette, help), not in the status bar
        assert "netui-" not in text
        record = {c.title: c.help for c in app.get_system_commands(app.screen)}["Record / stop"]
        assert str(app.monitor.recorder.path) in record and record.startswith("Stop recording to ")
        assert not app.screen.query_one(Timeline).display  # live: no timeline
        await pilot.press("x", "right")  # replay keys do nothing live
        await pressed(pilot, "w")
        assert "REC" not in status(app)
    files = list(tmp_path.glob("netui-*.ndjson.gz"))
    assert len(files) == 1
    kinds = [r["type"] for r in read_records(files[0])]
    assert kinds.count("tick") == 3 and kinds.count("sample") == 6  # gpu01 and gpu02; gpu03 is down
    assert any(r["type"] == "state" and r["state"] == "down" for r in read_records(files[0]))


@pytest.mark.slow
async def test_shift_n_jumps_to_the_next_straggler_only(lab_file):
    app = replay_app(lab_file)
    async with running(app, (140, 30), ticks=1) as pilot:
        await pressed(pilot, "N")  # node3 and node4, held from their second interval
        assert "0:04 / 0:38" in timeline(app) and app.monitor.fleet.stragglers
        # node3 stays a straggler (retransmits, then its TX as the flows end: one straggler,
        # no event), then the pair test of 0:20 names it once the fleet is idle; none after
        await pressed(pilot, "N")
        assert "0:36 / 0:38" in timeline(app)
        assert [s.metric for s in app.monitor.fleet.stragglers] == ["pairs"]
        await pressed(pilot, "N")
        assert "0:36 / 0:38" in timeline(app)


@pytest.mark.slow
async def test_a_recording_cut_mid_write_replays_with_a_warning(lab_file, tmp_path):
    cut = tmp_path / "cut.ndjson.gz"
    data = lab_file.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    app = replay_app(cut)
    async with running(app, (120, 30), ticks=1) as pilot:
        await pilot.pause()
        assert any("cut mid-write" in n.message or "not finished" in n.message for n in app._notifications)
        assert 10 < app.monitor.recording.duration_s < 38


@pytest.mark.slow
async def test_a_test_that_finishes_while_recording_goes_into_the_recording(tmp_path):
    import json

    from netui.checks.pairs.report import load_report as load_pair
    from netui.checks.latency.report import load_report as load_latency
    from tests.replayed import LATENCY_TEST, PAIR_TEST

    app = demo_app()
    app.record_dir = tmp_path
    async with running(app, (120, 34), ticks=1) as pilot:
        await pilot.press("w")
        pair = load_pair(json.loads(PAIR_TEST.read_text()))
        latency = load_latency(json.loads(LATENCY_TEST.read_text()))
        for screen, report in ((MatrixScreen(report=pair), pair), (LatencyScreen(report=latency), latency)):
            await app.push_screen(screen)
            screen.post_message(screen.Finished(report))  # as the test's worker reports its end
            await pilot.pause()
            await pilot.press("escape")
        await app.monitor.tick()
        await pilot.press("w")
    path = next(tmp_path.glob("netui-*.ndjson.gz"))
    tests = [r for r in read_records(path) if r["type"] == "test"]
    assert [t["kind"] for t in tests] == ["pair-test", "latency-test"]
    assert tests[0]["report"]["verdict"]["suspects"] == json.loads(PAIR_TEST.read_text())["verdict"]["suspects"]
    replay = ReplayMonitor(load(path))
    replay.seek(replay.recording.end_t)
    assert replay.last_test("latency-test")["kind"] == "latency-test"


@pytest.mark.slow
async def test_live_arrows_still_reach_the_filter_box():
    app = demo_app()
    async with running(app, (120, 30), ticks=1) as pilot:
        await pressed(pilot, "slash", "a", "b", "left", "X")
        assert app.screen.query_one("#filter").value == "aXb"


@pytest.mark.slow
async def test_t_in_a_replay_needs_no_marks(lab_file):
    app = replay_app(lab_file)
    async with running(app, (120, 34), ticks=1) as pilot:
        app.monitor.seek_by(25)
        await pressed(pilot, "t")
        assert isinstance(app.screen, MatrixScreen)


@pytest.mark.slow
async def test_a_click_on_the_timeline_seeks_there(lab_file):
    app = replay_app(lab_file)
    async with running(app, (120, 30), ticks=1) as pilot:
        await pilot.pause()
        bar = app.screen.query_one(Timeline)
        first, cells, _, _ = bar._bar
        await pilot.click(Timeline, offset=(1 + first + cells - 1, 0))  # the end of the bar
        await pilot.pause()
        assert "0:38 / 0:38" in timeline(app)
        await pilot.click(Timeline, offset=(1 + first + (cells - 1) // 2, 0))  # the middle
        await pilot.pause()
        assert 17 <= app.monitor.elapsed_s <= 20


@pytest.mark.slow
async def test_w_never_records_over_a_file_of_the_same_name(tmp_path):
    """A recording named for the second it starts in leaves a file of that name alone."""
    import time

    now = time.time()
    theirs = [tmp_path / time.strftime("netui-%Y%m%d-%H%M%S.ndjson.gz", time.localtime(now + k)) for k in range(-1, 6)]
    for path in theirs:
        path.write_bytes(b"not netui's")
    app = demo_app()
    app.record_dir = tmp_path
    async with app.run_test(size=(160, 30)) as pilot:
        await app.monitor.tick()
        await pilot.press("w")
        await app.monitor.tick()
        await pilot.press("w")
        await pilot.pause()
    assert all(path.read_bytes() == b"not netui's" for path in theirs)
    ours = [p for p in tmp_path.glob("netui-*.ndjson.gz") if p not in theirs]
    assert len(ours) == 1 and ours[0].name.endswith("-2.ndjson.gz")
    assert any(r["type"] == "sample" for r in read_records(ours[0]))



@pytest.mark.slow
async def test_w_takes_the_next_name_when_another_netui_took_this_one_meanwhile(tmp_path, monkeypatch):
    """Two netuis in one directory pressing w in the same second: the name one found free is
    created by the other before it is: the next free name, not 'cannot record'."""
    import netui.ui.app as app_module

    real = app_module.free_paths
    taken = []

    def raced(directory, stem, suffixes):
        paths = real(directory, stem, suffixes)
        if not taken:  # the other netui creates this very file now
            paths[0].write_bytes(b"")
            taken.append(paths[0])
        return paths

    monkeypatch.setattr(app_module, "free_paths", raced)
    app = demo_app()
    app.record_dir = tmp_path
    async with running(app, (160, 30), ticks=1) as pilot:
        await pilot.press("w")
        await pilot.pause()
        recorder = app.monitor.recorder
        assert recorder is not None and recorder.path != taken[0] and recorder.path.name.endswith("-2.ndjson.gz")
        await pressed(pilot, "w")
