"""One way to run the model over a recording: the replay UI (played, or seeked), its
events, the exports and ``snapshot --replay`` all see the same fleet at every frame, so a
copy of the frame logic that drifts (a state handled differently, a test's suspects not
taken, stragglers judged twice, the probe mesh fed or judged otherwise than live) fails here."""

from __future__ import annotations

import csv
import io
import json

import pytest

from netui.engine.document import fleet_document, mesh_document
from netui.engine.export import export_csv, export_json, mesh_of, node_rows
from netui.engine.recording.playback import load
from netui.engine.replay import RecordingFeed, ReplayMonitor
from tests.factories import record_demo, record_mesh_demo
from tests.replayed import record_lab_replay


@pytest.fixture(params=["demo", "lab", "mesh"])
async def recording_path(request, tmp_path):
    """A recording with a node down from its start (demo), one with stragglers and two
    recorded tests, a pair test's suspects among them (the lab's), and one with the probe mesh
    on, a lossy node link among four nodes, one of them down for a while (mesh)."""
    path = tmp_path / f"{request.param}.ndjson.gz"
    if request.param == "demo":
        await record_demo(path)
    elif request.param == "mesh":
        await record_mesh_demo(path)
    else:
        await record_lab_replay(path)
    return path


def _document(fleet, t: float) -> dict:
    return json.loads(json.dumps({"t": round(t, 3), "interval_s": fleet.interval_s} | fleet_document(fleet)))


@pytest.mark.slow
async def test_the_replay_and_the_export_agree_on_every_interval_and_every_event(recording_path):
    recording = load(recording_path)
    out = io.StringIO()
    export_json(recording, out)
    exported = json.loads(out.getvalue())
    rows = list(csv.reader(io.StringIO(_csv(recording))))[1:]

    played = ReplayMonitor(load(recording_path))
    played._checkpoints.clear()  # frame by frame from the start, as a user playing it sees it
    assert [e.record for e in played.events] == exported["events"]
    assert any(e["type"] == "state" for e in exported["events"])
    seen_rows = []
    for i, frame in enumerate(recording.frames):
        await played.tick(0.0 if i == 0 else frame.t - played.clock_t)
        assert played.position == i + 1
        assert _document(played.fleet, frame.t) == exported["intervals"][i], f"frame {i}"
        names = [r["node"] for r in frame.records if r["type"] == "sample"]
        for name in dict.fromkeys(names):
            node = played.fleet[name]
            if node.sample is not None and node.sample.wall_s == max(
                    r["sample"].wall_s for r in frame.records if r["type"] == "sample" and r["node"] == name):
                seen_rows += [[f"{node.sample.wall_s:.3f}", name, d, m, repr(float(v))] for d, m, v in node_rows(node, mesh_of(played.fleet, name))]
    assert seen_rows == rows

    jumpy = ReplayMonitor(load(recording_path))  # seeking, from the checkpoints
    for i in reversed(range(0, len(recording.frames), 7)):
        jumpy.seek(recording.frames[i].t)
        assert jumpy.position == i + 1
        assert _document(jumpy.fleet, recording.frames[i].t) == exported["intervals"][i], f"seek to frame {i}"


def _csv(recording) -> str:
    out = io.StringIO()
    export_csv(recording, out)
    return out.getvalue()


@pytest.mark.slow
async def test_the_feed_of_snapshot_and_record_replay_sees_the_replays_fleet(recording_path):
    """``snapshot --replay`` and ``record --replay`` watch a RecordingFeed: after each tick,
    the fleet's rates, states, health and stragglers are the export's for that frame."""
    recording = load(recording_path)
    out = io.StringIO()
    export_json(recording, out)
    exported = json.loads(out.getvalue())["intervals"]
    feed = RecordingFeed(recording)
    for i, frame in enumerate(recording.frames):
        assert not feed._stopped
        await feed.tick()
        doc = _document(feed.fleet, frame.t)
        for got, want in zip(doc["nodes"], exported[i]["nodes"]):
            assert {k: got[k] for k in ("name", "state", "error", "interfaces", "tcp", "health")} == \
                   {k: want[k] for k in ("name", "state", "error", "interfaces", "tcp", "health")}, f"frame {i}"
        assert doc["stragglers"] == exported[i]["stragglers"], f"frame {i}"
        assert doc["mesh"] == exported[i]["mesh"], f"frame {i}"
    assert feed._stopped  # it ends with the recording
    await feed.close()


def _json(value):
    return json.loads(json.dumps(value))


@pytest.mark.slow
async def test_every_path_judges_the_probe_mesh_as_live_did_at_every_frame(tmp_path):
    """The mesh's verdict (each node's loss, the suspects as held, the worst pairs) of the
    export, the replay played and seeked, and the feed of ``--replay``, frame by frame, is
    the live monitor's at the tick the frame recorded."""
    path = tmp_path / "mesh.ndjson.gz"
    live = await record_mesh_demo(path)
    assert any([s["name"] for s in doc["suspects"]] == ["gpu03 link"] for doc in live)
    assert live[-1]["nodes"][2]["loss"] > 0.01 and live[-1]["worst_pairs"][0]["lost"]
    recording = load(path)
    assert len(recording.frames) == len(live)
    out = io.StringIO()
    export_json(recording, out)
    assert [frame["mesh"] for frame in json.loads(out.getvalue())["intervals"]] == live

    played = ReplayMonitor(load(path))
    played._checkpoints.clear()
    feed = RecordingFeed(load(path))
    for i, frame in enumerate(recording.frames):
        await played.tick(0.0 if i == 0 else frame.t - played.clock_t)
        await feed.tick()
        assert _json(mesh_document(played.fleet)) == live[i], f"replay, frame {i}"
        assert _json(mesh_document(feed.fleet)) == live[i], f"--replay, frame {i}"
    await feed.close()

    jumpy = ReplayMonitor(load(path))
    for i in reversed(range(0, len(recording.frames), 4)):
        jumpy.seek(recording.frames[i].t)
        assert _json(mesh_document(jumpy.fleet)) == live[i], f"seek to frame {i}"
