"""The interval has one owner, the Monitor: + / - change it, and the history keeps covering its
seconds, charts place old points at their real age, a recording records the change and
replay and export honour it."""

from __future__ import annotations

import csv
import io
import json

import pytest

from netui.collectors.source import BaseSource
from netui.engine.export import export_csv, export_json
from netui.engine.monitor import Monitor
from netui.engine.recording.codec import RECORD_TYPES
from netui.engine.recording.reader import read_records, recording_files
from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from netui.model.history import Ring, capacity_for
from netui.model.node import Node
from netui.ui.panels import CHART_SECONDS, chart_ages
from tests.factories import make_iface, make_sample

RX_BYTES_PER_S = 1_000_000
WALL0 = 1_800_000_000.0


def sample_at(t: float):
    """eth0 receiving RX_BYTES_PER_S, at node time ``t`` (wall clock WALL0 + t)."""
    return make_sample(t, make_iface("eth0", rx_bytes=int(t * RX_BYTES_PER_S)), wall_s=WALL0 + t)


class Clocked(BaseSource):
    """A pull source whose node clock moves by the monitor's interval each read: samples
    come every interval, as they would live."""

    def __init__(self, name: str, monitor_of) -> None:
        self.name = name
        self._monitor_of = monitor_of
        self.t = 0.0

    async def sample(self):
        s = sample_at(self.t)
        self.t += self._monitor_of().interval_s
        return s


def covered_s(node: Node) -> float:
    """The seconds from the oldest row to the newest, plus the interval the newest spans
    (N rows at 1 s are N seconds of history)."""
    times = node.history["rx_bytes_per_s"].times()
    return times[-1] - times[0] + node.interval_s


def feed(node_or_monitor, t: float, step: float, count: int) -> float:
    observe = (node_or_monitor.observe if isinstance(node_or_monitor, Node)
               else lambda s: node_or_monitor.observe("n1", s))
    for _ in range(count):
        observe(sample_at(t))
        t += step
    return t


# --- the history keeps its seconds ----------------------------------------------------------


def test_a_shorter_interval_keeps_the_history_seconds():
    m = Monitor([Clocked("n1", lambda: m)], interval_s=1.0, history_s=60)
    t = feed(m, 0.0, 1.0, 61)

    assert m.step_interval(-1) == 0.5  # the "-" key
    feed(m, t, 0.5, 200)

    node = m.fleet["n1"]
    # 60 s at 0.5 s: 120 rows, not the 60 the history was sized for at 1 s (30 s of history)
    assert len(node.history["rx_bytes_per_s"]) >= 120
    assert covered_s(node) >= 60
    assert len(node.iface_history["eth0"][0]) >= 120


def test_a_longer_interval_keeps_what_is_within_the_history_and_then_shrinks():
    m = Monitor([Clocked("n1", lambda: m)], interval_s=1.0, history_s=60)
    t = feed(m, 0.0, 1.0, 61)
    node = m.fleet["n1"]
    before = node.history["rx_bytes_per_s"].values()

    assert m.step_interval(+1) == 2.0  # the "+" key
    # the minute at 1 s is still there, not cut to the 30 rows of a minute at 2 s
    assert node.history["rx_bytes_per_s"].values() == before
    t = feed(m, t, 2.0, 5)
    assert covered_s(node) >= 60

    feed(m, t, 2.0, 60)  # two minutes at 2 s: the rows at 1 s have aged out
    assert covered_s(node) >= 60
    assert node.history.table.capacity == node.iface_history.table.capacity == capacity_for(60, 2.0)


def test_resized_rings_keep_their_newest_values_and_times():
    ring = Ring(4)
    for k in range(6):
        ring.append(k, 100.0 + k)
    ring.resize(3)
    assert ring.values() == [3, 4, 5] and ring.times() == [103, 104, 105]
    ring.resize(5)
    ring.append(6, 106.0)
    assert ring.values() == [3, 4, 5, 6] and ring.times() == [103, 104, 105, 106]
    assert ring.oldest_t() == 103


# --- charts place points at their real time --------------------------------------------------


def test_a_chart_after_an_interval_change_places_old_points_at_their_real_age():
    node = Node("n1", history_s=900, interval_s=1.0)
    t = feed(node, 0.0, 1.0, 11)  # node times 0 … 10
    node.set_interval(5.0)
    feed(node, t + 4.0, 5.0, 3)  # 15, 20, 25

    rx = node.iface_history["eth0"][0]
    ages = chart_ages(rx, node.rates.interval_s)
    # eth0 has rates from time 1 on: 1 … 10 at 1 s, then 15, 20, 25 — spaced as they were taken
    assert ages == pytest.approx([-24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -10, -5, 0])
    assert rx.values() == pytest.approx([RX_BYTES_PER_S] * 13, rel=3e-4)


def test_a_chart_shows_the_last_chart_seconds_by_time():
    node = Node("n1", history_s=900, interval_s=0.25)
    t = feed(node, 0.0, 0.25, 4 * 400)
    node.set_interval(1.0)
    feed(node, t, 1.0, 100)

    ages = chart_ages(node.iface_history["eth0"][0], 1.0)
    # node times 400 … 499 at 1 s, and before them those after 199 at 0.25 s (199.25 … 399.75)
    assert ages[0] == -299.75 and ages[-1] == 0
    assert len(ages) == 100 + 803


# --- a recording records the change ----------------------------------------------------------


async def record_with_a_change(path) -> Monitor:
    m = Monitor([Clocked("n1", lambda: m)], interval_s=1.0, history_s=60)
    clock = [WALL0]
    m.start_recording(path, clock=lambda: clock[0])
    for _ in range(6):  # node times 0 … 5
        await m.tick()
        clock[0] += m.interval_s
    m.set_interval(5.0)
    for _ in range(4):  # 6, 11, 16, 21: the source read once more at 1 s before the change
        await m.tick()
        clock[0] += m.interval_s
    m.stop_recording()
    return m


async def test_a_recording_records_an_interval_change_in_format_2(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    await record_with_a_change(path)

    records = list(read_records(recording_files(path)))
    assert records[0]["format"] == 2 and records[0]["interval_s"] == 1.0
    # only the record types a reader of format 2 knows: the change rides on a tick mark
    assert {r["type"] for r in records} <= RECORD_TYPES
    assert [r["interval_s"] for r in records if r["type"] == "tick" and "interval_s" in r] == [5.0]

    recording = load(path)
    assert recording.interval_s == 1.0
    assert [i for _, i in recording.interval_changes()] == [5.0]


async def test_a_replay_honours_the_recorded_change(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    live = await record_with_a_change(path)

    replay = ReplayMonitor(load(path), history_s=60)
    assert replay.interval_s == 1.0
    intervals = []
    while not replay.at_end:
        await replay.tick()
        intervals.append(replay.interval_s)
    assert intervals[0] == 1.0 and intervals[-1] == 5.0
    node = replay.fleet["n1"]
    assert node.history["rx_bytes_per_s"].times() == live.fleet["n1"].history["rx_bytes_per_s"].times()
    rx = node.iface_history["eth0"][0]
    assert chart_ages(rx, node.rates.interval_s) == pytest.approx([-20, -19, -18, -17, -16, -15, -10, -5, 0])
    assert rx.values() == pytest.approx([RX_BYTES_PER_S] * 9, rel=3e-4)

    replay.seek(replay.recording.start_t)  # back to the start: the first interval again
    assert replay.interval_s == 1.0


async def test_an_export_honours_the_recorded_change(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    await record_with_a_change(path)
    recording = load(path)

    out = io.StringIO()
    export_csv(recording, out)
    rows = [r for r in csv.DictReader(io.StringIO(out.getvalue())) if r["device"] == "eth0"
            and r["metric"] == "rx_bits_per_s"]
    assert [float(r["time"]) - WALL0 for r in rows] == pytest.approx([1, 2, 3, 4, 5, 6, 11, 16, 21])
    assert [float(r["value"]) for r in rows] == pytest.approx([RX_BYTES_PER_S * 8] * 9)

    out = io.StringIO()
    export_json(recording, out)
    doc = json.loads(out.getvalue())
    assert doc["interval_s"] == 1.0
    assert [f["interval_s"] for f in doc["intervals"]] == [1.0] * 6 + [5.0] * 4
    assert [f["nodes"][0]["interval_s"] for f in doc["intervals"]][-3:] == [5.0, 5.0, 5.0]


async def test_a_rotated_file_starts_with_the_interval_of_its_time(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    m = Monitor([Clocked("n1", lambda: m)], interval_s=1.0, history_s=60)
    clock = [WALL0]
    recorder = m.start_recording(path, keep=20, clock=lambda: clock[0])
    recorder.writer.max_size_bytes = recorder.writer.size + 1  # from now on, a file per tick
    for k in range(6):
        if k == 3:
            m.set_interval(5.0)
        await m.tick()
        clock[0] += m.interval_s
    m.stop_recording()

    files = recording_files(path)
    headers = [next(read_records(f)) for f in files]
    assert [h["interval_s"] for h in headers] == [1.0] * 4 + [5.0] * 3
    assert [i for _, i in load(path).interval_changes()] == [5.0]
    assert load(files[-2]).interval_s == 5.0  # a file alone, its older ones gone, reads at its interval


def test_a_tick_with_an_interval_netui_does_not_believe_ends_the_read_there(tmp_path):
    from netui.engine.recording.codec import header_record, sample_record
    from netui.engine.recording.writer import RecordingWriter

    path = tmp_path / "r.ndjson.gz"
    writer = RecordingWriter(path, header_record(WALL0, hosts=["n1"], interval_s=1.0))
    for k, extra in enumerate(({}, {}, {"interval_s": 0}, {})):
        writer.write(sample_record(WALL0 + k, "n1", sample_at(float(k))))
        writer.write({"type": "tick", "t": WALL0 + k, **extra})
    writer.close()

    recording = load(path)
    assert recording.samples == 3 and recording.interval_changes() == []  # the third tick's sample, not its mark
    assert "damaged after tick 2" in recording.notes[0] and "interval_s" in recording.notes[0]
