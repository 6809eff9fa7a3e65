"""Replay: a recording played back through the live code path.

``ReplayMonitor`` is a Monitor whose ticks, instead of polling sources, apply the frames
whose time has come (netui/engine/recording/playback.py: ``load`` reads a recording into
frames, ``replay_frames`` applies them): samples go through ``Monitor.observe`` (so the
model computes rates from the raw counters again), recorded node states to their nodes,
stragglers are judged after each frame as live (a recorded pair test's suspects included,
from the frame that brings it). The clock is the recording's: it moves by the wall time
elapsed × ``speed`` while playing; seeking back rebuilds the fleet by running the model
again from the start (it is pure, and fast). Its sources are the recording's nodes
(``RecordedNode``: they keep the source contract, run no commands, stream nothing
themselves); its ``mode`` tells the UI it plays a recording.

``RecordingFeed`` is a live Monitor fed by a recording, one recorded frame per tick at the
monitor's own pace: what ``netui snapshot --replay`` and ``netui record --replay`` watch.
"""

from __future__ import annotations

import copy
import time
from bisect import bisect_right

from netui.engine.monitor import Mode, Monitor
from netui.engine.recording.playback import Event, Recording, replay_frames
from netui.engine.sources import RecordedNode
from netui.model.fleet import Fleet
from netui.model.history import capacity_for
from netui.model.node import NODE_SERIES, NodeState

SPEEDS = (1, 10, 60)
REPLAY = Mode(replay=True, can_record=False)  # a replay is not recorded again
CHECKPOINT_BUDGET_BYTES = 64 << 20  # copies of the fleet kept to seek without replaying from the start
MAX_CHECKPOINTS = 200


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

    @property
    def mesh_on(self) -> bool:
        """Whether the recording was made with the probe mesh on (its samples carry it)."""
        return self.recording.has_mesh

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
        events: list[Event] = []
        for step in replay_frames(self.recording, fleet, events=True):
            events.extend(step.events)
            applied = step.index + 1
            if applied % every == 0 and applied < frames:
                self._checkpoints[applied] = copy.deepcopy(fleet)
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
        for step in replay_frames(self.recording, self.fleet, observe=self.observe, start=self.position, stop=until):
            self.tests.extend((step.t, rec) for rec in step.tests)
            self.position = step.index + 1
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


class RecordingFeed(Monitor):
    """A live Monitor whose nodes are a recording's and whose every tick applies the next
    recorded frame (``replay_frames``), states, tests and interval changes included, then
    ticks as live (stragglers judged, a recording written); it stops after the last frame.
    ``interval_s``: the pace of its ticks until the recording changes it (None: the
    recording's)."""

    def __init__(self, recording: Recording, *, interval_s: float | None = None, history_s: float = 900.0,
                 thresholds=None, rules=None) -> None:
        super().__init__([RecordedNode(n) for n in recording.nodes],
                         interval_s=recording.interval_s if interval_s is None else interval_s,
                         history_s=history_s, thresholds=thresholds, rules=rules)
        self.recording = recording
        self._steps = replay_frames(recording, self.fleet, observe=self.observe, judge=False)

    async def tick(self) -> None:
        interval_s = self.interval_s
        step = next(self._steps, None)
        if self.interval_s != interval_s and self.recorder is not None:
            self.recorder.interval(self.interval_s)  # recorded again with the recording's intervals
        await super().tick()
        if step is None or step.index + 1 >= len(self.recording.frames):
            self.stop()  # the recording has no more
