"""The recording file: gzip stream flushed per tick, read back after a cut at any byte,
rotation, and the old plain JSON lines."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.engine.recorder import Recorder
from netui.engine.recording.codec import RecordingError, dump_lines, header_record
from netui.engine.recording.playback import load
from netui.engine.recording.reader import read_records, recording_files
from netui.readlimits import parse_size
from netui.model.fleet import Fleet
from netui.model.node import NodeState
from tests.factories import full_sample, write_ticks

CAPTURE = Path(__file__).resolve().parents[1] / "data" / "lab-capture.jsonl"


def test_the_file_is_gzip_that_zcat_reads_while_it_is_written(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    w, _ = write_ticks(path, 3)
    # not closed: no gzip trailer yet, but every line written so far is there
    lines = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(path.read_bytes()).splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["header"] + ["sample", "sample", "tick"] * 3
    w.close()
    assert gzip.decompress(path.read_bytes()).splitlines() == lines  # closed: a complete gzip file
    records = list(read_records(path))
    assert records[1]["sample"] == full_sample(0.0, rx=0, retrans=0)  # a NodeSample again
    assert records[0] == header_record(100.0, hosts=["gpu01", "gpu02"], interval_s=1.0)


def test_compression_across_records_beats_plain_json_lines(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    w, _ = write_ticks(path, 40)
    w.close()
    assert path.stat().st_size * 5 < w.raw_size  # samples alike from tick to tick compress well


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_file_cut_at_any_byte_gives_every_record_before_the_last_flush(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("cut") / "r.ndjson.gz"
    w, synced = write_ticks(path, 4)
    full = path.read_bytes()
    everything = [r["type"] for r in read_records(path)]
    offset = data.draw(st.integers(0, len(full)))
    path.write_bytes(full[:offset])

    notes: list[str] = []
    got = [r["type"] for r in read_records(path, notes)]

    assert got == everything[:len(got)]  # a prefix, never a wrong record
    flushed_ticks = sum(1 for s in synced[1:] if s <= offset)
    assert got.count("tick") >= flushed_ticks  # nothing flushed is lost


@pytest.mark.slow
def test_every_byte_offset_of_a_small_file(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    w, synced = write_ticks(path, 2, nodes=("a",))
    w.close()
    full = path.read_bytes()
    everything = [r["type"] for r in read_records(path)]
    cut = tmp_path / "cut.gz"
    for offset in range(len(full) + 1):
        cut.write_bytes(full[:offset])
        got = [r["type"] for r in read_records(cut)]
        assert got == everything[:len(got)], offset
        assert got.count("tick") >= sum(1 for s in synced[1:] if s <= offset), offset


def test_damaged_bytes_end_the_read_with_a_note_keeping_what_came_before(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    w, synced = write_ticks(path, 3)
    data = bytearray(path.read_bytes())
    data[synced[2] + 5:] = b"\xff" * (len(data) - synced[2] - 5)  # garbage after the second tick
    path.write_bytes(bytes(data))
    notes: list[str] = []
    got = [r["type"] for r in read_records(path, notes)]
    assert got[:7] == ["header", "sample", "sample", "tick", "sample", "sample", "tick"]
    assert notes


def test_a_bad_complete_record_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    path.write_bytes(gzip.compress(b'{"type":"header","format":2,"t":1}\n{"type":"sample","t":2,"node":"a","sample":{}}\n'))
    with pytest.raises(RecordingError, match=r"r\.ndjson\.gz:2:"):
        list(read_records(path))
    path.write_bytes(gzip.compress(b'{"type":"nonsense","t":1}\n'))
    with pytest.raises(RecordingError, match="unknown record type"):
        list(read_records(path))


def test_rotation_keeps_a_bounded_set_that_loads_in_order(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    w, _ = write_ticks(path, 60, max_size_bytes=2048, keep=3)
    w.close()
    files = recording_files(path)
    assert [f.name for f in files] == ["r.ndjson.gz.3", "r.ndjson.gz.2", "r.ndjson.gz.1", "r.ndjson.gz"]
    assert w.rotations > 3  # older files went
    for f in files[:-1]:
        assert f.stat().st_size < 2048 + 1500  # at most one tick past the size
        assert gzip.decompress(f.read_bytes())  # each a complete gzip file
    records = list(read_records(files))
    assert sum(r["type"] == "header" for r in records) == 4  # every file starts with the header
    clocks = [r["sample"].mono_s for r in records if r["type"] == "sample" and r["node"] == "gpu01"]
    assert clocks == sorted(clocks) and clocks[-1] == 59.0
    assert load(str(path)).samples_by_node()["gpu01"][-1].mono_s == 59.0


def test_old_plain_json_lines_still_load(tmp_path):
    recording = load(str(CAPTURE)).samples_by_node()
    assert sorted(recording) == ["node1", "node2", "node3", "node4"]
    assert all(len(s) == 39 for s in recording.values())
    # cut mid-line, as a killed version 1 recorder left it
    path = tmp_path / "old.jsonl"
    text = "".join(dump_lines([("a", full_sample(0.0)), ("a", full_sample(1.0))]))
    path.write_text(text[:-40])
    notes: list[str] = []
    assert [r["node"] for r in read_records(path, notes)] == ["a"]
    assert "cut mid-write" in notes[0]


@pytest.mark.parametrize("text, size", [("100M", 100 << 20), ("1.5G", 3 << 29), ("512k", 512 << 10),
                                        ("4096", 4096), ("2GiB", 2 << 30), ("10 MB", 10 << 20)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "ten", "-5M", "0", "5X"])
def test_bad_sizes(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_the_recorder_writes_states_health_and_stragglers_at_the_end_of_each_tick(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    clock = iter(float(t) for t in range(1000, 2000))
    fleet = Fleet(["a", "b"])
    rec = Recorder(path, hosts=["a", "b"], interval_s=1.0, clock=lambda: next(clock))
    rec.sample("a", full_sample(0.0))
    fleet["a"].observe(full_sample(0.0))
    fleet["b"].fail(NodeState.AUTH_FAILED, "permission denied (publickey)")
    rec.tick(fleet)
    rec.tick(fleet)  # nothing changed: only a tick mark
    rec.test("pair-test", {"kind": "pair-test", "verdict": {"passed": True}})
    rec.close()
    records = list(read_records(path))
    kinds = [(r["type"], r.get("node")) for r in records]
    assert kinds == [("header", None), ("sample", "a"), ("state", "a"), ("state", "b"), ("health", "b"),
                     ("tick", None), ("tick", None), ("test", None)]
    b = records[3]
    assert (b["state"], b["reason"], b["was"]) == ("auth failed", "permission denied (publickey)", "connecting")
    assert records[4]["level"] == "critical"
    assert [r["t"] for r in records] == sorted(r["t"] for r in records)


def test_a_failing_disk_stops_the_recording_not_the_monitor(tmp_path):
    path = tmp_path / "r.ndjson.gz"
    rec = Recorder(path, hosts=["a"], interval_s=1.0)
    rec.writer._file.close()  # as a write error would leave it
    rec.sample("a", full_sample(0.0))
    rec.tick(Fleet(["a"]))
    assert rec.error and not rec.active


@pytest.mark.parametrize("bad, words", [(float("nan"), "NaN or an infinity"), (float("inf"), "NaN or an infinity"),
                                         (1 << 64, "beyond 64 bits"), (-(1 << 63) - 1, "beyond 64 bits"),
                                         (10**300, "beyond 64 bits")])
def test_the_recorder_writes_only_what_reads_back_and_goes_on_with_the_other_nodes(tmp_path, bad, words):
    path = tmp_path / "r.ndjson.gz"
    rec = Recorder(path, hosts=["liar", "good"], interval_s=1.0)
    sample = full_sample(1.0)
    liar = type(sample)(**{**{f: getattr(sample, f) for f in sample.__slots__}, "boot_id": bad})
    for step in range(3):
        refused = rec.sample("liar", liar)
        assert refused is not None and words in refused, refused
        assert rec.sample("good", full_sample(float(step))) is None
        rec.tick(Fleet(["liar", "good"]))
    rec.close()
    assert rec.error is None and rec.samples == 3 and rec.skipped == 3
    records = list(read_records(path))  # every line reads back
    assert [r["node"] for r in records if r["type"] == "sample"] == ["good"] * 3
    assert sum(r["type"] == "tick" for r in records) == 3


def test_the_reader_takes_integers_of_64_bits_and_no_more(tmp_path):
    path = tmp_path / "r.jsonl"
    for value, ok in (((1 << 64) - 1, True), (-(1 << 63), True), (1 << 64, False), (-(1 << 64), False)):
        header = json.dumps(header_record(1.7e9, hosts=["a"], interval_s=1.0))
        path.write_text(header + "\n" + json.dumps({"type": "tick", "t": 1.7e9, "n": value}) + "\n")
        if ok:
            assert len(list(read_records(path))) == 2
        else:
            with pytest.raises(RecordingError, match="beyond 64 bits"):
                list(read_records(path))
