"""A recording as frames, and the frames applied to a fleet: the one way netui runs the
model over a recording.

``load(path)`` is the one loader: a recording (a rotated set, a version 1 JSON lines file)
as frames, one per recorded tick, with its node states, test reports, interval changes and
the notes of what could not be read. ``replay_frames`` applies frames to a fleet in order
and yields a ``Step`` after each: samples go through the model (rates computed again from
the raw counters), recorded node states are reported to their nodes, a recorded pair test's
suspects become stragglers, an interval change resizes the histories, and stragglers and the
probe mesh are judged after each frame as live (engine/monitor.py ``take_sample``,
``judge_tick``: the live monitor's own code). The replay UI (engine/replay.py), its event list, the
exports (engine/export.py) and ``snapshot``/``record --replay`` all go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from statistics import median

from netui.engine.monitor import judge_tick, report_state, take_sample, take_test
from netui.engine.recording.codec import (MAX_INTERVAL_S, MAX_NODES, MIN_INTERVAL_S, RecordingError, is_interval,
                                          mesh_answered_from_dict)
from netui.engine.recording.reader import read_records, recording_files
from netui.model.events import EventTracker
from netui.model.fleet import Fleet
from netui.model.node import NodeState
from netui.model.samples import NodeSample


@dataclass(slots=True)
class Frame:
    """The records of one recorded tick, at the tick's time ``t`` (seconds since the epoch).
    Ticks without records (every node down, nothing new) share one empty tuple: a long
    recording of them stays small."""

    t: float
    records: list[dict] | tuple = ()

    def add(self, record: dict) -> None:
        if not self.records:
            self.records = []
        self.records.append(record)

    def add_first(self, record: dict) -> None:
        self.records = [record, *self.records]


@dataclass
class Recording:
    files: list[Path]
    header: dict | None
    frames: list[Frame]
    nodes: list[str]
    interval_s: float
    notes: list[str]
    samples: int
    # its first header's ``mesh_answered`` read (``mesh_answered_from_dict``): None when absent or refused
    mesh_answered: tuple[list[str], dict[str, int]] | None = None

    @property
    def start_t(self) -> float:
        return self.frames[0].t if self.frames else 0.0

    @property
    def end_t(self) -> float:
        return self.frames[-1].t if self.frames else 0.0

    @property
    def duration_s(self) -> float:
        return self.end_t - self.start_t

    def interval_changes(self) -> list[tuple[float, float]]:
        """(time, interval_s) of each interval change recorded after the start."""
        return [(rec["t"], rec["interval_s"]) for f in self.frames for rec in f.records if rec["type"] == "interval"]

    @cached_property
    def has_mesh(self) -> bool:
        """Whether any sample carries the probe mesh (the recording was made with it on)."""
        return any(rec["type"] == "sample" and rec["sample"].mesh is not None
                   for f in self.frames for rec in f.records)

    def samples_by_node(self) -> dict[str, list[NodeSample]]:
        """Each node's samples in the recording's order (nodes in the order of their first
        sample): the raw counters alone, for a source that replays them one per poll."""
        out: dict[str, list[NodeSample]] = {}
        for frame in self.frames:
            for rec in frame.records:
                if rec["type"] == "sample":
                    out.setdefault(rec["node"], []).append(rec["sample"])
        return out


def load(path: str | Path) -> Recording:
    """A recording as frames. Raises RecordingError (with file and line) when a file is not
    a recording, of a newer format, past the read limits, bad before its first tick, or when
    the recording holds no sample; a damaged or cut tail is dropped (every complete tick
    before it is kept) and said in ``notes``."""
    files = recording_files(path)
    notes: list[str] = []
    header = None
    frames: list[Frame] = []
    current = Frame(0.0)
    sampled: set[str] = set()  # nodes with a sample in the current frame
    nodes: dict[str, None] = {}
    samples = 0
    interval = None  # the interval so far, when the recording says it

    def changed(rec: dict, frame: Frame) -> None:
        """An interval the recording gives (a tick mark's, a later file's header): when it
        changes, the frame applies it first (live mode did, before the tick's samples)."""
        nonlocal interval
        value = rec.get("interval_s")
        if is_interval(value) and value != interval:
            if interval is not None or frames or frame.records:  # not the first header's
                frame.add_first({"type": "interval", "t": rec["t"], "interval_s": float(value)})
            interval = value

    for rec in read_records(files, notes):
        kind = rec["type"]
        if kind == "header":
            header = header or rec
            nodes.update(dict.fromkeys(str(h) for h in rec.get("hosts") or ()))
            changed(rec, current)
            continue
        if kind == "tick":
            current.t = rec["t"]
            changed(rec, current)
            frames.append(current)
            current, sampled = Frame(0.0), set()
            continue
        if kind == "sample":
            # version 1 has no tick marks: a node seen again starts the next tick
            if header is None and rec["node"] in sampled:
                frames.append(current)
                current, sampled = Frame(0.0), set()
            sampled.add(rec["node"])
            nodes.setdefault(rec["node"], None)
            samples += 1
        elif kind in ("state", "health", "straggler"):
            nodes.setdefault(rec["node"], None)
        current.add(rec)
        current.t = max(current.t, rec["t"])
        if len(nodes) > MAX_NODES:
            raise RecordingError(f"{path}: more than {MAX_NODES:,} nodes, more than netui records")
    if current.records:
        frames.append(current)
    if not samples:
        raise RecordingError(f"{path}: holds no samples")
    interval = header.get("interval_s") if header else None
    if not is_interval(interval):
        steps = [b.t - a.t for a, b in zip(frames, frames[1:]) if b.t > a.t]
        interval = round(median(steps), 3) if steps else 1.0
        interval = min(max(interval, MIN_INTERVAL_S), MAX_INTERVAL_S)  # history rings are sized by it
    return Recording(files, header, frames, list(nodes), float(interval), notes, samples,
                     _mesh_answered(path, header, notes))


def _mesh_answered(path: str | Path, header: dict | None, notes: list[str]) -> tuple[list[str], dict[str, int]] | None:
    """The header's ``mesh_answered`` read; one that netui would not have written is passed by
    and said in ``notes`` (the replay then judges those pairs as never answered)."""
    d = header.get("mesh_answered") if header else None
    if d is None:
        return None
    try:
        return mesh_answered_from_dict(d)
    except ValueError as exc:
        notes.append(f"{path}: the header's mesh_answered is unreadable ({str(exc).removeprefix('mesh_answered: ')}): "
                     "mesh pairs answered before the recording are judged as never answered")
        return None


@dataclass(frozen=True)
class Event:
    """Something worth jumping to: a state change, a health level change, a straggler
    flagged or cleared, a test result. ``record`` is its recording record."""

    t: float
    frame: int  # index of the frame that brings it
    record: dict


@dataclass(slots=True)
class Step:
    """What applying one frame did: the frame's ``index`` and time ``t``, the nodes whose
    sample the model took (in the frame's order; a sample with impossible numbers is
    refused and not among them), the frame's test records, and, when asked for, its events
    (the test records, then what changed: states, health levels, stragglers)."""

    index: int
    t: float
    sampled: list[str]
    tests: list[dict]
    events: list[Event] = field(default_factory=list)


Observe = Callable[[str, NodeSample], object]


def hear_mesh(fleet: Fleet, recording: Recording) -> None:
    """The probe mesh's pairs answered before the recording began (its header's
    ``mesh_answered``), into the fleet's mesh: replayed, they are judged as they were live (a
    pair answered then that stays silent is a black hole, not a pair never answered). Without
    it (absent, or refused at ``load`` with a note) those pairs are judged as never answered."""
    if recording.mesh_answered is not None:
        fleet.hear_mesh(*recording.mesh_answered)


def replay_frames(recording: Recording, fleet: Fleet, *, observe: Observe | None = None, start: int = 0,
                  stop: int | None = None, judge: bool = True, events: bool = False) -> Iterator[Step]:
    """Apply the recording's frames ``start`` … ``stop - 1`` to ``fleet``, in order, and
    yield a Step after each; a caller that stops iterating leaves the fleet as of the last
    Step. Samples go to ``observe(name, sample)`` (default: ``take_sample``, as live: the node,
    then the mesh; a Monitor passes its own, which records it and keeps a model error that
    node's state),
    recorded node states to the node (with no failure time: a replay has no wall clock),
    a pair test's suspects become stragglers, an interval change resizes the histories.
    With ``judge`` (as every caller but a Monitor, which judges in its own tick), the
    stragglers and the mesh are judged after each frame as live (``judge_tick``); with ``events``, each Step lists what
    the frame changed (for that, the frames from the start: ``start`` 0)."""
    nodes = fleet.nodes
    if observe is None:
        def observe(name: str, sample: NodeSample) -> object:
            return take_sample(fleet, name, sample)
    tracker = EventTracker() if events else None
    frames = recording.frames
    if start == 0:
        hear_mesh(fleet, recording)
    for index in range(start, len(frames) if stop is None else min(stop, len(frames))):
        frame = frames[index]
        sampled: list[str] = []
        tests: list[dict] = []
        for rec in frame.records:
            kind = rec["type"]
            if kind == "sample":
                node = nodes[rec["node"]]
                seen = node.samples_seen
                observe(rec["node"], rec["sample"])
                if node.samples_seen > seen and rec["node"] not in sampled:
                    sampled.append(rec["node"])
            elif kind == "state":
                try:
                    state = NodeState(rec.get("state"))
                except ValueError:
                    continue
                if state is NodeState.UP and nodes[rec["node"]].sample is not None:
                    continue  # the samples already made it up; nothing to add
                report_state(nodes[rec["node"]], state, rec.get("reason"))
            elif kind == "test":
                tests.append(rec)
                take_test(fleet, rec.get("kind"), rec.get("report"))  # its suspects are stragglers, as they were live
            elif kind == "interval":
                fleet.set_interval(rec["interval_s"])  # the histories keep their seconds, as they did live
        if judge:
            judge_tick(fleet)
        step = Step(index, frame.t, sampled, tests)
        if tracker is not None:
            step.events = [Event(frame.t, index, rec) for rec in tests]
            step.events.extend(Event(frame.t, index, {"type": c.pop("type"), "t": frame.t, **c})
                               for c in tracker.changes(fleet))
        yield step
