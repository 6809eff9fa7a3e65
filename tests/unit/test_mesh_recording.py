"""Recordings keep the probe mesh: a sample's ``mesh`` under a key of its own (absent when the
mesh was off, ignored by a netui that predates it), read back as it was; a recorded mesh that
netui would never have written is the node's mesh unavailable, with the reason, never the
recording's damage nor a crash of the replay."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.collectors.protocol import MESH_MAX_PEERS, MESH_MAX_RTTS
from netui.engine.monitor import judge_tick, take_sample
from netui.engine.recording.codec import header_record, sample_from_dict, sample_record, sample_to_dict
from netui.engine.recording.playback import load, replay_frames
from netui.engine.recording.writer import RecordingWriter
from netui.model.fleet import Fleet
from netui.model.mesh import MeshPeerReading, MeshSample
from netui.model.node import NodeState
from tests.factories import MESH_NODES, full_sample, mesh_node_sample


def round_trip(sample):
    return sample_from_dict(json.loads(json.dumps(sample_to_dict(sample))))


def test_a_recorded_sample_keeps_its_mesh():
    sample = mesh_node_sample("gpu03", 7)
    assert sample.mesh is not None and sample.mesh.readings and sample.mesh.readings[0].rtts_us

    assert round_trip(sample) == sample


def test_ipv6_an_unavailable_mesh_and_one_without_readings_survive_json():
    six = MeshSample(12.5, port=51000, peers=1, answers=3, refused=9, address="fd00::1",
                     readings=(MeshPeerReading("fd00::2", 52000, 2, 1, (180, 260)),))
    for mesh in (six, MeshSample(3.0, available=False, error="mesh unavailable: Address family not supported"),
                 MeshSample(4.0, port=40000, address=None)):
        sample = replace(full_sample(3.0), mesh=mesh)
        assert round_trip(sample) == sample


def test_the_mesh_has_a_key_of_its_own_absent_when_off_and_an_older_recording_reads_none():
    on = sample_to_dict(mesh_node_sample("gpu01", 2))
    assert on["mesh"]["readings"][0][:4] == ["198.18.0.2", 40001, 5, 0]
    off = sample_to_dict(full_sample(2.0))
    assert "mesh" not in off  # a recording without the mesh is as it was
    assert sample_from_dict(off).mesh is None
    older = dict(on)
    del older["mesh"]  # what a netui that predates the mesh reads: the rest of the sample
    assert sample_from_dict(older) == replace(mesh_node_sample("gpu01", 2), mesh=None)


def _good() -> dict:
    return sample_to_dict(mesh_node_sample("gpu01", 4))["mesh"]


def _row(**kw) -> list:
    row = {"address": "198.18.0.2", "port": 40001, "answered": 5, "lost": 0, "rtts": [200] * 5} | kw
    return [row["address"], row["port"], row["answered"], row["lost"], row["rtts"]]


HOSTILE = {
    "not an object": [],
    "no time": {k: v for k, v in _good().items() if k != "mono_s"},
    "a time of no clock": _good() | {"mono_s": 1e300},
    "a time as text": _good() | {"mono_s": "12"},
    "available as text": _good() | {"available": "yes"},
    "readings not a list": _good() | {"readings": {"a": 1}},
    "more peers than a sampler takes": _good() | {"readings": [_row()] * (MESH_MAX_PEERS + 1)},
    "a short row": _good() | {"readings": [_row()[:4]]},
    "more RTTs than answers": _good() | {"readings": [_row(answered=2)]},
    "more RTTs than a row lists": _good() | {"readings": [_row(answered=500, rtts=[1] * (MESH_MAX_RTTS + 1))]},
    "a negative count": _good() | {"readings": [_row(lost=-1)]},
    "a count beyond the wire": _good() | {"readings": [_row(lost=1 << 16)]},
    "a count as a float": _good() | {"readings": [_row(lost=1.5)]},
    "a count as a boolean": _good() | {"readings": [_row(lost=True)]},
    "an RTT beyond 32 bits": _good() | {"readings": [_row(rtts=[1 << 40] * 5)]},
    "an address of escapes": _good() | {"readings": [_row(address="\x1b[2J198.18.0.2")]},
    "an address that is a name": _good() | {"address": "gpu01"},
    "a long address": _good() | {"address": "1" * 10_000},
    "a port beyond 16 bits": _good() | {"port": 70_000},
    "peers beyond 32 bits": _good() | {"peers": 1 << 40},
    "an error that is a number": _good() | {"error": 3},
}


@pytest.mark.parametrize("mesh", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_mesh_netui_would_not_write_is_the_nodes_mesh_unavailable_and_the_rest_is_read(mesh):
    d = sample_to_dict(mesh_node_sample("gpu01", 4)) | {"mesh": mesh}

    back = sample_from_dict(json.loads(json.dumps(d)))

    assert back.mesh is not None and not back.mesh.available and back.mesh.readings == ()
    assert back.mesh.error.startswith("recorded mesh refused: ") and back.mesh.error.isprintable()
    assert len(back.mesh.error) <= 200 and back.mesh.mono_s == back.mono_s
    assert back.interfaces == mesh_node_sample("gpu01", 4).interfaces


def test_an_error_text_is_shown_as_netui_shows_any_text_it_did_not_make():
    d = sample_to_dict(mesh_node_sample("gpu01", 4))
    d["mesh"] |= {"available": False, "error": "\x1b]0;owned\x07" + "x" * 5000}
    error = sample_from_dict(d).mesh.error
    assert "\x1b" not in error and "\\x1b" in error and len(error) <= 200


def _write(path, ticks: int, hostile_at: int | None = None):
    w = RecordingWriter(path, header_record(100.0, hosts=list(MESH_NODES), interval_s=1.0))
    for k in range(ticks):
        for name in MESH_NODES:
            rec = sample_record(100.0 + k, name, mesh_node_sample(name, k))
            if k == hostile_at and name == "gpu02":
                rec["sample"]["mesh"]["readings"] = [["\x1b[2J", 1, 1, 1, []]] * 5000
            w.write(rec)
        w.write({"type": "tick", "t": 100.0 + k})
    w.close()


def test_a_recording_with_a_hostile_mesh_loads_whole_and_replays_with_that_nodes_mesh_unavailable(tmp_path):
    _write(tmp_path / "m.ndjson.gz", 30, hostile_at=20)
    recording = load(tmp_path / "m.ndjson.gz")
    assert recording.notes == [] and len(recording.frames) == 30  # no damage: every tick read

    fleet = Fleet(list(recording.nodes), interval_s=1.0)
    for step in replay_frames(recording, fleet):
        if step.index == 20:
            assert "recorded mesh refused" in fleet["gpu02"].sample.mesh.error
            assert fleet["gpu02"].state is NodeState.UP  # the mesh's problem, not the node's
    assert [s.name for s in fleet.mesh_suspects] == ["gpu03 link"]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False,
                                                                                        allow_infinity=False)
                    | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(
                        st.sampled_from(["mono_s", "available", "error", "port", "peers", "answers", "refused",
                                         "address", "readings"]), inner, max_size=9),
                    max_leaves=30))
def test_any_json_as_a_recorded_mesh_is_read_or_refused_and_the_fleet_judges_it(mesh):
    fleet = Fleet(["gpu01", "gpu02"])
    for k in (4, 5):  # beside a node whose mesh is fine, through the live code
        take_sample(fleet, "gpu01", sample_from_dict(sample_to_dict(mesh_node_sample("gpu01", k)) | {"mesh": mesh}))
        take_sample(fleet, "gpu02", mesh_node_sample("gpu02", k, up=("gpu01", "gpu02")))
        judge_tick(fleet)
    assert fleet["gpu01"].state is NodeState.UP


# --- the pairs answered before a recording began -----------------------------------------------

def _frame(name: str, k: int, silent: bool):
    """5 probes of every other node settled a frame; with ``silent``, every probe to or from n3
    is lost (answered before: a black hole, not UDP blocked)."""
    from tests.unit.test_mesh_document import NODES, address
    from tests.synth import node_sample

    readings = tuple(MeshPeerReading(address(p), 40_000, 0 if silent and "n3" in (name, p) else 5,
                                     5 if silent and "n3" in (name, p) else 0,
                                     () if silent and "n3" in (name, p) else (200, 210, 220, 230, 240))
                     for p in NODES if p != name and k)
    s = node_sample(k)
    return replace(s, mesh=MeshSample(s.mono_s, port=40_000, peers=5, readings=readings, address=address(name)))


def _ticks(live: Fleet, steps: range, *, silent: bool, recorder=None) -> None:
    """Each tick of ``steps``, as the live monitor takes it: every node's ``_frame`` taken by
    the fleet (and written by ``recorder`` first, when one records), then the tick judged
    (and recorded)."""
    from tests.unit.test_mesh_document import NODES

    for k in steps:
        for name in NODES:
            s = _frame(name, k, silent=silent)
            if recorder is not None:
                recorder.sample(name, s)
            take_sample(live, name, s)
        judge_tick(live)
        if recorder is not None:
            recorder.tick(live)


def _recorded_late(tmp_path, *, keep_header: bool = True):
    """A fleet whose pairs were all answered for 30 s, then a recording started, then n3 went
    silent: the live fleet, and the recording's path."""
    from netui.engine.recorder import Recorder
    from tests.unit.test_mesh_document import NODES

    live = Fleet(list(NODES))
    _ticks(live, range(30), silent=False)
    path = tmp_path / "late.ndjson.gz"
    recorder = Recorder(path, hosts=list(NODES), interval_s=1.0, fleet=live if keep_header else None)
    _ticks(live, range(30, 130), silent=True, recorder=recorder)
    recorder.close()
    return live, path


def _replayed(path) -> Fleet:
    recording = load(path)
    fleet = Fleet(list(recording.nodes))
    for _ in replay_frames(recording, fleet):
        pass
    return fleet


def test_a_recording_started_late_replays_a_black_hole_as_live_judged_it(tmp_path):
    live, path = _recorded_late(tmp_path)
    assert [s.name for s in live.mesh_suspects] == ["n3 link"] and not live.mesh_verdict.unanswered
    replayed = _replayed(path)
    assert replayed.mesh_suspects == live.mesh_suspects
    assert replayed.mesh_verdict.nodes["n3"] == live.mesh_verdict.nodes["n3"]
    assert not replayed.mesh_verdict.nodes["n3"].blocked


def test_without_what_was_answered_before_the_recording_the_silent_node_reads_blocked(tmp_path):
    """(what the header's ``mesh_answered`` is for: without it the replay judges otherwise)"""
    _, path = _recorded_late(tmp_path, keep_header=False)
    replayed = _replayed(path)
    assert replayed.mesh_suspects == () and replayed.mesh_verdict.nodes["n3"].blocked


def test_a_rotated_files_header_holds_the_pairs_answered_by_then(tmp_path):
    from netui.engine.recorder import Recorder
    from netui.engine.recording.codec import mesh_answered_from_dict
    from netui.engine.recording.reader import read_records, recording_files
    from tests.unit.test_mesh_document import NODES

    live = Fleet(list(NODES))
    path = tmp_path / "rotated.ndjson.gz"
    recorder = Recorder(path, hosts=list(NODES), interval_s=1.0, max_size_bytes=1024, keep=3, fleet=live)
    _ticks(live, range(20), silent=False, recorder=recorder)
    recorder.close()
    assert recorder.writer.rotations >= 3
    first = next(read_records(recording_files(path)[:1], []))  # the oldest file kept: answered by then
    assert first["type"] == "header"
    names, answered = mesh_answered_from_dict(first["mesh_answered"])
    pairs = {(p, names[j]) for p, bits in answered.items() for j in range(len(names)) if bits >> j & 1}
    assert pairs == {(a, b) for a in NODES for b in NODES if a != b}
    assert live.mesh.answered() == (names, answered)


@pytest.mark.parametrize("bad", [[], {"nodes": "a", "answered": {}}, {"nodes": ["a"], "answered": {"z": "AQ=="}},
                                 {"nodes": ["a", "b"], "answered": {"a": "not base64!"}},
                                 {"nodes": ["a"], "answered": {"a": "A" * 400}}])
def test_a_header_of_answered_pairs_netui_would_not_write_is_passed_by_and_said(tmp_path, bad):
    from tests.unit.test_mesh_document import NODES

    path = tmp_path / "bad.ndjson.gz"
    _with_header(path, bad, NODES)
    recording = load(path)
    assert len(recording.frames) == 3 and recording.mesh_answered is None  # the rest read whole
    [note] = recording.notes
    assert "mesh_answered is unreadable" in note and note.isprintable()
    assert note.endswith("pairs answered before the recording are judged as never answered")
    assert _replayed(path).mesh_verdict is not None


def test_a_late_recording_whose_header_is_unreadable_says_why_its_silent_node_reads_blocked(tmp_path):
    """The header damaged after the recording: the replay judges as if it had none, and the
    notes (shown on opening a replay, printed by export and --replay) say so."""
    from netui.engine.recording.reader import read_records, recording_files

    _, path = _recorded_late(tmp_path)
    records = list(read_records(recording_files(path), []))
    records[0]["mesh_answered"]["nodes"].append(records[0]["mesh_answered"]["nodes"][0])  # a node twice
    w = RecordingWriter(tmp_path / "damaged.ndjson.gz", records[0])
    for rec in records[1:]:
        w.write(rec | {"sample": sample_to_dict(rec["sample"])} if rec["type"] == "sample" else rec)
    w.close()

    recording = load(tmp_path / "damaged.ndjson.gz")
    assert len(recording.notes) == 1 and "a node named twice" in recording.notes[0]
    replayed = _replayed(tmp_path / "damaged.ndjson.gz")
    assert replayed.mesh_suspects == () and replayed.mesh_verdict.nodes["n3"].blocked


def _with_header(path, mesh_answered, nodes) -> None:
    """A recording of ``nodes`` whose header's ``mesh_answered`` is the one given, 3 ticks long."""
    w = RecordingWriter(path, header_record(100.0, hosts=list(nodes), interval_s=1.0) | {"mesh_answered": mesh_answered})
    for k in range(3):
        for name in nodes:
            w.write(sample_record(100.0 + k, name, _frame(name, k, silent=False)))
        w.write({"type": "tick", "t": 100.0 + k})
    w.close()


def test_a_header_of_invented_names_numbers_none_of_them_and_stays_small(tmp_path):
    """A header that netui could have written (4,096 names, every pair answered) of a 2-node
    fleet: only the fleet's pairs are heard; the other names are never numbered (each would
    grow the pair tables by a row and a column: 4,094 of them, some 300 MB)."""
    import tracemalloc

    from netui.engine.recording.codec import MESH_ANSWERED_MAX_NODES, mesh_answered_to_dict
    from netui.engine.recording.playback import hear_mesh

    fleet_nodes = ["n1", "n2"]
    names = fleet_nodes + [f"invented{j:04d}" for j in range(MESH_ANSWERED_MAX_NODES - 2)]
    every = (1 << len(names)) - 1
    header = mesh_answered_to_dict(names, {name: every ^ (1 << j) for j, name in enumerate(names)})
    assert header is not None
    path = tmp_path / "invented.ndjson.gz"
    _with_header(path, header, fleet_nodes)
    recording = load(path)
    fleet = Fleet(list(recording.nodes))

    tracemalloc.start()
    try:
        hear_mesh(fleet, recording)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert fleet.mesh.answered() == (fleet_nodes, {"n1": 0b10, "n2": 0b01})
    assert peak < 1_000_000  # (the header's 2.8 MB were decoded at load; the fleet's pairs: some 15 kB)


@pytest.mark.parametrize("bad", [{"nodes": ["a", "b", "a"], "answered": {"a": "Ag=="}},
                                 {"nodes": [f"n{j}" for j in range(4097)], "answered": {"n0": "Ag=="}}],
                         ids=["a name twice", "more names than netui writes"])
def test_a_header_of_answered_pairs_is_refused_with_a_name_twice_or_more_names_than_netui_writes(bad):
    from netui.engine.recording.codec import mesh_answered_from_dict

    with pytest.raises(ValueError, match="mesh_answered"):
        mesh_answered_from_dict(bad)
