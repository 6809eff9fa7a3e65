"""The engine: owns time, feeds the fleet from every source, tells the UI once per tick.

Two kinds of source: *pull* sources (this host, a replay) are asked for a sample each tick;
*push* sources (SSH nodes) stream samples on their own and report their state. Each tick
polls the pull sources, marks push nodes that went quiet as stale, and calls ``on_update``
once — the UI repaints in one batch however many frames arrived. The next tick is scheduled
when the current one ends, so ticks never overlap. Works headless.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable

from netui.engine.sources import SourceError
from netui.model.fleet import Fleet
from netui.model.node import NodeState
from netui.model.samples import NodeSample

INTERVALS_S = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
STALE_INTERVALS = 3  # a node with no sample for this many intervals is stale

# CPython's cyclic GC runs a young collection every 700 net container allocations; a
# node-sample makes hundreds of short-lived tuples and dicts, nearly all freed by reference
# counting, and what lives on (nodes, rings) holds no cycles. At 1,024 nodes the default
# spent ~175 µs per node-sample in collections and froze the loop ~1 s at each full one
# (bench_fleet); with these thresholds, none ran in the measuring window. Cycles are still
# collected, just later.
GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc() -> None:
    """Raise the cyclic GC's thresholds to GC_THRESHOLDS (never lower them)."""
    current = gc.get_threshold()
    gc.set_threshold(*(max(c, t) for c, t in zip(current, GC_THRESHOLDS)))


def report_state(node, state: NodeState, reason: str | None) -> None:
    """A transport's word on a node: a state it is in, or a failure with its reason."""
    if state in (NodeState.CONNECTING, NodeState.STALE, NodeState.UP):
        node.set_state(state, reason)
    else:
        node.fail(state, reason or state.value)


class Monitor:
    def __init__(self, sources: list, *, interval_s: float = 1.0, history_s: float = 900.0,
                 thresholds=None) -> None:
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        self.sources = sources
        self.interval_s = interval_s
        self.fleet = Fleet([s.name for s in sources], history_s=history_s, interval_s=interval_s,
                           thresholds=thresholds)
        tune_gc()
        self.on_update: Callable[[], None] | None = None
        self.on_sample: Callable[[str, NodeSample], None] | None = None
        self.recorder = None  # an engine.recorder.Recorder while recording
        self.ticks = 0
        self.last_tick_s: float | None = None  # how long the last tick took
        self._pull = [s for s in sources if not getattr(s, "push", False)]
        self._push = [s for s in sources if getattr(s, "push", False)]
        self._arrival: dict[str, float] = {}
        self._tasks: list[asyncio.Task] = []
        self._wake = asyncio.Event()
        self._stopped = False

    # the sink that push sources report to ---------------------------------------------------
    def observe(self, name: str, sample: NodeSample) -> None:
        self.fleet[name].observe(sample)
        self._arrival[name] = time.monotonic()
        if self.on_sample is not None:
            self.on_sample(name, sample)
        if self.recorder is not None:
            self.recorder.sample(name, sample)

    def report(self, name: str, state: NodeState, reason: str | None) -> None:
        report_state(self.fleet[name], state, reason)

    # ticks ------------------------------------------------------------------------------------
    async def tick(self) -> None:
        """Poll the pull sources, check the push nodes for silence, tell the UI."""
        started = time.monotonic()
        self._start_push()
        if self._pull:
            results = await asyncio.gather(*(s.sample() for s in self._pull), return_exceptions=True)
            for source, result in zip(self._pull, results):
                if isinstance(result, SourceError):
                    self.report(source.name, result.state, result.reason)
                elif isinstance(result, BaseException):
                    self.report(source.name, NodeState.PARSE_ERROR, f"{type(result).__name__}: {result}")
                elif result is not None:  # None: nothing new (a replay that has ended)
                    self.observe(source.name, result)
        quiet_s = STALE_INTERVALS * self.interval_s
        now = time.monotonic()
        for source in self._push:
            node = self.fleet[source.name]
            last = self._arrival.get(source.name)
            if node.state is NodeState.UP and last is not None and now - last > quiet_s:
                node.set_state(NodeState.STALE, f"no sample for {now - last:.0f} s")
        self.fleet.update_stragglers()
        if self.recorder is not None:
            self.recorder.tick(self.fleet)
        self.ticks += 1
        self.last_tick_s = time.monotonic() - started
        if self.on_update is not None:
            self.on_update()

    # kept for callers that think in polls
    poll_once = tick

    def _start_push(self) -> None:
        if self._tasks or not self._push or self._stopped:
            return
        self._tasks = [asyncio.ensure_future(s.run(self)) for s in self._push]

    async def run(self, *, polls: int | None = None) -> None:
        """Tick until stopped (or ``polls`` times); sleep ``interval_s`` after each tick ends."""
        count = 0
        while not self._stopped:
            await self.tick()
            count += 1
            if polls is not None and count >= polls:
                break
            await self._sleep(self.interval_s)

    async def run_until(self, done: Callable[[], bool], *, timeout_s: float) -> bool:
        """Tick until ``done()`` or the timeout; True when done."""
        deadline = time.monotonic() + timeout_s
        while not self._stopped:
            await self.tick()
            if done():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            await self._sleep(min(self.interval_s, left))
        return done()

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)

    def set_interval(self, interval_s: float) -> None:
        """Change the interval; the sleep in progress is cut short, samplers are told."""
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        self.interval_s = interval_s
        for s in self._push:
            set_interval = getattr(s, "set_interval", None)
            if set_interval is not None:
                set_interval(interval_s)
        self._wake.set()

    def step_interval(self, direction: int) -> float:
        """Next shorter (-1) or longer (+1) interval of INTERVALS_S."""
        current = min(range(len(INTERVALS_S)), key=lambda i: abs(INTERVALS_S[i] - self.interval_s))
        index = max(0, min(len(INTERVALS_S) - 1, current + direction))
        self.set_interval(INTERVALS_S[index])
        return self.interval_s

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    def start_recording(self, path, *, max_size_bytes: int | None = None, keep: int = 5, clock=None):
        """Record from now on into ``path`` (engine/recorder.py); the Recorder. ``clock``:
        the wall time of each record (default ``time.time``)."""
        from netui.engine.recorder import Recorder

        self.stop_recording()
        self.recorder = Recorder(path, hosts=list(self.fleet.nodes), interval_s=self.interval_s,
                                 max_size_bytes=max_size_bytes, keep=keep, clock=clock or time.time)
        return self.recorder

    def stop_recording(self):
        """Finish the recording, if any; the Recorder that was recording (or None)."""
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            recorder.close()
        return recorder

    async def close(self) -> None:
        """Stop, end every stream (the samplers end with their channels) and close sources."""
        self.stop()
        self.stop_recording()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        for s in self.sources:
            await s.close()
        closer = getattr(self, "connector", None)
        if closer is not None:
            await closer.close()
