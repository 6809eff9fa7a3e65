"""The poll loop: owns time, asks every source for a sample, feeds the fleet.

The next poll is scheduled when the current one ends, so polls never overlap: a slow
source delays the next tick instead of queueing reads. Works headless; the UI only
registers ``on_update``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from netui.engine.sources import SourceError
from netui.model.fleet import Fleet
from netui.model.node import NodeState

INTERVALS_S = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


class Monitor:
    def __init__(self, sources: list, *, interval_s: float = 1.0, history_s: float = 900.0,
                 thresholds=None) -> None:
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        self.sources = sources
        self.interval_s = interval_s
        self.fleet = Fleet([s.name for s in sources], history_s=history_s, interval_s=interval_s,
                           thresholds=thresholds)
        self.on_update: Callable[[], None] | None = None
        self.polls = 0
        self.last_poll_s: float | None = None  # how long the last poll took
        self._wake = asyncio.Event()
        self._stopped = False

    async def poll_once(self) -> None:
        """Ask every source once, concurrently, and apply the results."""
        started = time.monotonic()
        results = await asyncio.gather(*(s.sample() for s in self.sources), return_exceptions=True)
        for source, result in zip(self.sources, results):
            node = self.fleet[source.name]
            if isinstance(result, SourceError):
                node.fail(result.state, result.reason)
            elif isinstance(result, BaseException):
                node.fail(NodeState.PARSE_ERROR, f"{type(result).__name__}: {result}")
            else:
                node.observe(result)
        self.polls += 1
        self.last_poll_s = time.monotonic() - started
        if self.on_update is not None:
            self.on_update()

    async def run(self, *, polls: int | None = None) -> None:
        """Poll until stopped (or ``polls`` times); sleep ``interval_s`` after each poll ends."""
        count = 0
        while not self._stopped:
            await self.poll_once()
            count += 1
            if polls is not None and count >= polls:
                break
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval_s)
            except asyncio.TimeoutError:
                pass

    def set_interval(self, interval_s: float) -> None:
        """Change the poll interval; the sleep in progress is cut short."""
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        self.interval_s = interval_s
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

    async def close(self) -> None:
        self.stop()
        for s in self.sources:
            await s.close()
