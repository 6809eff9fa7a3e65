"""Replay: frames from a recording, the clock, seeking, speed, events — and the same rates
as live mode, since replay runs the live code path."""

from __future__ import annotations

from pathlib import Path

import pytest

from netui.engine.monitor import Monitor
from netui.engine.recording.codec import RecordingError
from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from tests.factories import record_demo

CAPTURE = Path(__file__).resolve().parents[1] / "data" / "lab-capture.jsonl"


def test_an_old_capture_loads_as_frames_of_one_tick():
    rec = load(CAPTURE)
    assert len(rec.frames) == 39 and rec.samples == 156
    assert sorted(rec.nodes) == ["node1", "node2", "node3", "node4"]
    assert rec.interval_s == 1.0 and 37 < rec.duration_s < 39
    assert all(sorted(r["node"] for r in f.records) == sorted(rec.nodes) for f in rec.frames)


def test_a_file_without_samples_is_an_error(tmp_path):
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    with pytest.raises(RecordingError, match="no samples"):
        load(empty)
    with pytest.raises(RecordingError, match="no such file"):
        load(tmp_path / "nope")


async def test_replay_gives_the_live_rates_and_states_back(tmp_path):
    path = tmp_path / "demo.ndjson.gz"
    live = await record_demo(path)
    replay = ReplayMonitor(load(path))
    assert replay.recording.nodes == ["gpu01", "gpu02", "gpu03"]
    again: list[tuple] = []
    replay.on_sample = lambda name, s: again.append((name, s.mono_s, replay.fleet[name].rates,
                                                     replay.fleet[name].health))
    while not replay.at_end:
        await replay.tick()
    assert again == live
    # gpu03 never answered: its recorded state and reason show as they did
    gpu03 = replay.fleet["gpu03"]
    assert gpu03.state.value == "down" and "connection refused" in gpu03.error


async def test_the_clock_moves_by_interval_times_speed_and_stops_at_the_end():
    replay = ReplayMonitor(load(CAPTURE))
    await replay.tick()
    assert replay.position == 1 and replay.elapsed_s == 0
    await replay.tick()
    assert replay.position == 2 and replay.elapsed_s == 1
    assert replay.cycle_speed() == 10
    await replay.tick()
    assert replay.position == 12 and replay.elapsed_s == 11
    assert replay.cycle_speed() == 60
    await replay.tick()
    assert replay.at_end and not replay.playing
    assert replay.cycle_speed() == 1


async def test_pause_holds_the_clock():
    replay = ReplayMonitor(load(CAPTURE))
    await replay.tick()
    replay.toggle_playing()
    for _ in range(5):
        await replay.tick()
    assert replay.position == 1
    replay.toggle_playing()
    await replay.tick()
    assert replay.position == 2


@pytest.mark.slow
async def test_seeking_back_rebuilds_the_same_state_as_playing_forward():
    forward = ReplayMonitor(load(CAPTURE))
    for _ in range(21):
        await forward.tick()
    jumpy = ReplayMonitor(load(CAPTURE))
    jumpy.seek(jumpy.recording.end_t)
    jumpy.seek_by(-60)  # clamped to the start
    assert jumpy.position == 1
    jumpy.seek_by(30)
    jumpy.seek_by(-10)
    assert jumpy.position == forward.position == 21
    for name in jumpy.recording.nodes:
        a, b = forward.fleet[name], jumpy.fleet[name]
        assert (a.rates, a.summary, a.health, a.state) == (b.rates, b.summary, b.health, b.state)
        assert a.history["tx_bytes_per_s"].values() == b.history["tx_bytes_per_s"].values()
    assert [s.reason for s in forward.fleet.stragglers] == [s.reason for s in jumpy.fleet.stragglers]


async def test_next_event_jumps_to_stragglers_and_state_changes():
    replay = ReplayMonitor(load(CAPTURE))
    await replay.tick()
    kinds = [e.record["type"] for e in replay.events]
    assert kinds.count("straggler") >= 2 and kinds.count("state") == 4
    event = replay.next_event()
    # a straggler is held for two intervals before it is named: the first event by 0:05
    assert event.record["type"] in ("health", "straggler") and 2 <= replay.elapsed_s <= 5
    assert replay.fleet.stragglers  # the straggler is there at that point
    event = replay.next_event(kinds=("straggler",))
    while event is not None and event.record.get("flagged"):
        event = replay.next_event(kinds=("straggler",))
    assert event is not None and "cleared" in f"{event.record['reason']} cleared"
    assert not any(s.node == event.record["node"] for s in replay.fleet.stragglers)
    replay.seek(replay.recording.end_t)
    assert replay.next_event() is None


async def test_seeking_through_checkpoints_gives_the_state_of_playing_through(monkeypatch):
    import netui.engine.replay as replay_module

    monkeypatch.setattr(replay_module, "MAX_CHECKPOINTS", 4)  # a checkpoint every 10 frames
    jumpy = ReplayMonitor(load(CAPTURE))
    assert sorted(jumpy._checkpoints) == [10, 20, 30]
    jumpy.seek(jumpy.recording.start_t + 25)
    jumpy.seek(jumpy.recording.start_t + 12)  # back: from the checkpoint at 10 frames
    played = ReplayMonitor(load(CAPTURE))
    played._checkpoints.clear()  # from the start, frame by frame
    for _ in range(13):
        await played.tick()
    assert jumpy.position == played.position == 13
    for name in played.recording.nodes:
        a, b = played.fleet[name], jumpy.fleet[name]
        assert (a.rates, a.summary, a.health, a.state, a.samples_seen) == (b.rates, b.summary, b.health, b.state,
                                                                           b.samples_seen)
        assert a.history["rx_bytes_per_s"].values() == b.history["rx_bytes_per_s"].values()
    assert jumpy.fleet["node1"] is not jumpy._checkpoints[10]["node1"]  # a copy: the checkpoint stays as it was


@pytest.mark.slow
async def test_a_pair_tests_suspects_are_stragglers_live_and_in_replay_alike(tmp_path):
    """The lab capture through a live Monitor that records, with the saved iperf3 matrix
    (a tbf towards node3) ending at 0:20 as the UI ends one; the replay of that recording
    shows the same stragglers at every tick, node3 named by the pair test once idle."""
    import json

    from netui.engine.recording.playback import load
    from netui.engine.sources import ReplaySource
    from tests.replayed import PAIR_AT, PAIR_TEST

    capture = load(str(CAPTURE)).samples_by_node()
    m = Monitor([ReplaySource(name, samples) for name, samples in sorted(capture.items())], interval_s=1.0,
                history_s=60)
    start = min(s[0].wall_s for s in capture.values())
    tick = 0
    recorder = m.start_recording(tmp_path / "r.ndjson.gz", clock=lambda: round(start + tick, 3))
    live = []
    for tick in range(len(next(iter(capture.values())))):
        await m.tick()
        live.append([s.reason for s in m.fleet.stragglers])
        if tick == PAIR_AT:
            document = json.loads(PAIR_TEST.read_text())
            recorder.test("pair-test", document)  # what the UI does when a test ends
            m.test_done("pair-test", document)
    m.stop_recording()
    assert not any("pair test" in r for reasons in live[:PAIR_AT + 1] for r in reasons)
    assert live[-1] == ["node3: the pair test names it: receives slowly, 3 of 3 receives fail "
                        "(median 187 Mb/s vs the pairs' median 9.7 Gb/s)"]  # the fleet is idle by then
    assert any(r.startswith("node3: ") and r.endswith("the pair test names it too") for r in live[PAIR_AT + 1])

    replay = ReplayMonitor(load(tmp_path / "r.ndjson.gz"))
    replayed = []
    while not replay.at_end:
        await replay.tick()
        replayed.append([s.reason for s in replay.fleet.stragglers])
    assert replayed == live
    flagged = [e for e in replay.events if e.record["type"] == "straggler" and e.record.get("metric") == "pairs"]
    assert [e.record["node"] for e in flagged] == ["node3"]
    replay.seek(replay.recording.start_t + 10)  # before the test: no suspect
    assert not replay.fleet.pair_suspects and all(s.metric != "pairs" for s in replay.fleet.stragglers)
    replay.seek(replay.recording.end_t)
    assert [s.metric for s in replay.fleet.stragglers] == ["pairs"]
