"""Replay: a recording played back through the live code path.

``load(path)`` reads a recording (a rotated set, a version 1 JSON lines file) into frames,
one per recorded tick. ``ReplayMonitor`` is a Monitor whose ticks, instead of polling
sources, apply the frames whose time has come: samples go through ``Monitor.observe`` (so
the model computes rates from the raw counters again), recorded node states through
``Monitor.report``, stragglers are judged after each frame as live (a recorded pair test's
suspects included, from the frame that brings it). The clock is the
recording's: it moves by the wall time elapsed × ``speed`` while playing; seeking back
rebuilds the fleet by running the model again from the start (it is pure, and fast). Its
sources are the recording's nodes (``RecordedNode``: they keep the source contract, run no
commands, stream nothing themselves); its ``mode`` tells the UI it plays a recording.
"""

from __future__ import annotations

import copy
import time
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from netui.engine.monitor import Mode, Monitor, report_state, take_test
from netui.engine.recording import (MAX_INTERVAL_S, MAX_NODES, MIN_INTERVAL_S, RecordingError, is_interval,
                                    read_records, recording_files)
from netui.engine.sources import RecordedNode
from netui.model.events import EventTracker
from netui.model.fleet import Fleet
from netui.model.history import capacity_for
from netui.model.node import NODE_SERIES, NodeState

SPEEDS = (1, 10, 60)
REPLAY = Mode(replay=True, can_record=False)  # a replay is not recorded again
CHECKPOINT_BUDGET_BYTES = 64 << 20  # copies of the fleet kept to seek without replaying from the start
MAX_CHECKPOINTS = 200


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
    return Recording(files, header, frames, list(nodes), float(interval), notes, samples)


@dataclass(frozen=True)
class Event:
    """Something worth jumping to: a state change, a health level change, a straggler
    flagged or cleared, a test result. ``record`` is its recording record."""

    t: float
    frame: int  # index of the frame that brings it
    record: dict


def _apply(fleet: Fleet, rec: dict, observe, report) -> None:
    kind = rec["type"]
    if kind == "sample":
        observe(rec["node"], rec["sample"])
    elif kind == "state":
        try:
            state = NodeState(rec.get("state"))
        except ValueError:
            return
        if state is NodeState.UP and fleet[rec["node"]].sample is not None:
            return  # the samples already made it up; nothing to add
        report(rec["node"], state, rec.get("reason"))
    elif kind == "test":
        take_test(fleet, rec.get("kind"), rec.get("report"))  # its suspects are stragglers, as they were live
    elif kind == "interval":
        fleet.set_interval(rec["interval_s"])  # the histories keep their seconds, as they did live


class ReplayMonitor(Monitor):
    """A Monitor fed by a recording. ``tick()`` moves the clock by one recorded interval ×
    ``speed`` (``run()`` by the wall time elapsed × ``speed``) while playing."""

    mode = REPLAY

    def __init__(self, recording: Recording, *, history_s: float = 900.0, thresholds=None, rules=None,
                 straggler_rules=None) -> None:
        """``thresholds``, ``rules`` (health) and ``straggler_rules``: as live (the
        configuration file's), so a replay judges the nodes as live mode did."""
        super().__init__([RecordedNode(n) for n in recording.nodes], interval_s=recording.interval_s,
                         history_s=history_s, thresholds=thresholds, rules=rules)
        self.recording = recording
        self._history_s = history_s
        self._thresholds = thresholds
        self._rules = self.fleet.rules
        self._straggler_rules = straggler_rules
        if straggler_rules is not None:
            self.fleet.straggler_rules = straggler_rules
        self._times = [f.t for f in recording.frames]
        self.position = 0  # frames applied
        self.clock_t = recording.start_t
        self.speed = SPEEDS[0]
        self.playing = True
        self.tests: list[tuple[float, dict]] = []  # test records reached so far: (t, record)
        self._checkpoints: dict[int, Fleet] = {}  # frames applied → a copy of the fleet then
        self.events = self._find_events()

    # the recording ----------------------------------------------------------------------------
    def _new_fleet(self) -> Fleet:
        """The fleet at the recording's start (its first interval)."""
        fleet = Fleet(list(self.recording.nodes), history_s=self._history_s, interval_s=self.recording.interval_s,
                      thresholds=self._thresholds, rules=self._rules)
        if self._straggler_rules is not None:
            fleet.straggler_rules = self._straggler_rules
        return fleet

    def _find_events(self) -> list[Event]:
        """Run the model over the whole recording once, noting what changed at each frame,
        and keeping copies of the fleet along the way (checkpoints, within a memory budget)."""
        fleet = self._new_fleet()
        frames = len(self.recording.frames)
        every = max(1, -(-frames // self._checkpoint_count()))
        tracker = EventTracker()
        events: list[Event] = []

        def report(name, state, reason):
            report_state(fleet[name], state, reason)

        for i, frame in enumerate(self.recording.frames):
            for rec in frame.records:
                _apply(fleet, rec, lambda n, s: fleet[n].observe(s), report)
                if rec["type"] == "test":
                    events.append(Event(frame.t, i, rec))
            fleet.update_stragglers()
            events.extend(Event(frame.t, i, {"type": c.pop("type"), "t": frame.t, **c})
                          for c in tracker.changes(fleet))
            if (i + 1) % every == 0 and i + 1 < frames:
                self._checkpoints[i + 1] = copy.deepcopy(fleet)
        return events

    def _checkpoint_count(self) -> int:
        """How many fleet copies fit the budget: history rings dominate (float32 per node
        series, 16-bit per interface series, a float64 time per row of each)."""
        capacity = self._new_fleet_capacity()
        per_node = (len(NODE_SERIES) * 4 + 2 * 8 * 2 + 2 * 8) * capacity + 64_000  # 8 interfaces, the sample, rates
        return max(1, min(MAX_CHECKPOINTS, CHECKPOINT_BUDGET_BYTES // max(1, per_node * len(self.recording.nodes))))

    def _new_fleet_capacity(self) -> int:
        """History rows per series at the shortest interval the recording has."""
        shortest = min([self.recording.interval_s, *(i for _, i in self.recording.interval_changes())])
        return capacity_for(self._history_s, shortest)

    @property
    def at_end(self) -> bool:
        return self.position >= len(self.recording.frames)

    @property
    def elapsed_s(self) -> float:
        """Where the replay is, in seconds from the recording's start."""
        return max(0.0, min(self.clock_t, self.recording.end_t) - self.recording.start_t)

    # applying frames --------------------------------------------------------------------------
    def _apply_frame(self, frame: Frame) -> None:
        for rec in frame.records:
            _apply(self.fleet, rec, self.observe, self.report)
            if rec["type"] == "test":
                self.tests.append((frame.t, rec))
        self.fleet.update_stragglers()

    def _play_to(self, t: float, *, jump: bool = False) -> None:
        """Apply every frame up to time ``t``, from where the replay is; going back (or, with
        ``jump``, forward past a checkpoint) from the nearest checkpoint before ``t``."""
        # a frame's time is its nodes' latest clock: a little jitter must not hold it back a tick
        until = bisect_right(self._times, t + 0.25 * self.interval_s)
        back = until < self.position
        start = max((k for k in self._checkpoints if k <= until), default=0)
        if back or (jump and start > self.position):
            self.fleet = copy.deepcopy(self._checkpoints[start]) if start else self._new_fleet()
            self.position = start
            self.tests = [(e.t, e.record) for e in self.events if e.record["type"] == "test" and e.frame < start]
        while self.position < until:
            self._apply_frame(self.recording.frames[self.position])
            self.position += 1
        self.clock_t = t

    async def tick(self, advance_s: float | None = None) -> None:
        """Move the clock by ``advance_s`` seconds of recording (default: one interval ×
        speed) while playing — the first tick shows the first frame — and tell the UI."""
        started = time.monotonic()
        if self.playing:
            if advance_s is None:
                advance_s = self.interval_s * self.speed if self.position else 0.0
            self._play_to(min(self.clock_t + advance_s, self.recording.end_t))
            if self.at_end:
                self.playing = False
        self.ticks += 1
        self.last_tick_s = time.monotonic() - started
        if self.on_update is not None:
            self.on_update()

    poll_once = tick

    async def run(self, *, polls: int | None = None) -> None:
        """Play at the recorded pace × speed until stopped (or ``polls`` ticks)."""
        count = 0
        await self.tick()
        last = time.monotonic()
        while not self._stopped and (polls is None or count < polls):
            await self._sleep(min(self.interval_s, 1.0))  # the timeline moves at least once a second
            now = time.monotonic()
            await self.tick((now - last) * self.speed)
            last = now
            count += 1

    # what the keys do -------------------------------------------------------------------------
    def seek(self, t: float) -> None:
        """Jump to time ``t`` (clamped to the recording) and tell the UI."""
        t = max(self.recording.start_t, min(t, self.recording.end_t))
        self._play_to(t, jump=True)
        if self.on_update is not None:
            self.on_update()

    def seek_by(self, seconds: float) -> None:
        self.seek(self.clock_t + seconds)

    def set_playing(self, playing: bool) -> None:
        self.playing = playing and not self.at_end

    def toggle_playing(self) -> bool:
        if not self.playing and self.at_end:  # at the end, play again from the start
            self._play_to(self.recording.start_t)
        self.set_playing(not self.playing)
        return self.playing

    def cycle_speed(self) -> int:
        self.speed = SPEEDS[(SPEEDS.index(self.speed) + 1) % len(SPEEDS)] if self.speed in SPEEDS else SPEEDS[0]
        self._wake.set()
        return self.speed

    def next_event(self, *, kinds: tuple[str, ...] | None = None, flagged: bool = False) -> Event | None:
        """Jump to the first event after the current position (of ``kinds``; with ``flagged``
        only stragglers flagged, not cleared); None when there is none."""
        for e in self.events:
            if e.frame >= self.position and (kinds is None or e.record["type"] in kinds) \
                    and (not flagged or e.record.get("flagged")):
                self.seek(e.t)
                return e
        return None

    def last_test(self, kind: str) -> dict | None:
        """The report of the last test of ``kind`` reached so far ("pair-test", "latency-test")."""
        for _, rec in reversed(self.tests):
            if rec.get("kind") == kind:
                return rec["report"]
        return None

    def set_interval(self, interval_s: float) -> None:
        """A replay keeps its recorded intervals (the recording's changes are applied with
        its frames)."""

    def want_detail(self, names, on: bool) -> None:
        """A replay has what was recorded."""

    def set_detail_all(self, on: bool) -> None:
        """A replay has what was recorded."""

    def step_interval(self, direction: int) -> float:
        return self.interval_s

    def start_recording(self, *args, **kwargs):
        raise RuntimeError("a replay is not recorded again")

    async def close(self) -> None:
        self.stop()
