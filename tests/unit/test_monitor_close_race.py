"""Closing the monitor while a tick awaits its reads (the TUI ended by q or a signal in the
middle of a poll): the tick ends without an error, rather than a KeyError from the reads
that close() dropped, which ended the app with status 1 and a traceback."""

from __future__ import annotations

import asyncio

from netui.collectors.source import BaseSource
from netui.engine.monitor import Monitor


class Slow(BaseSource):
    """A pull source whose read answers only when told to."""

    def __init__(self, name: str, answer: asyncio.Event) -> None:
        self.name = name
        self.answer = answer
        self.started = asyncio.Event()

    async def sample(self):
        self.started.set()
        await self.answer.wait()
        return None


async def test_close_during_a_tick_ends_the_tick_quietly():
    answer = asyncio.Event()
    sources = [Slow("a", answer), Slow("b", answer)]
    monitor = Monitor(sources, interval_s=1.0, history_s=10)
    tick = asyncio.ensure_future(monitor.tick())
    await asyncio.wait_for(asyncio.gather(*(s.started.wait() for s in sources)), 5)
    answer.set()  # the reads end in the same moment as the close
    await monitor.close()
    await asyncio.wait_for(tick, 5)  # raised KeyError: 'a'
