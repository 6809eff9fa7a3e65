"""Where samples come from, seen from the engine: something to ask for the next sample.

A source's ``sample()`` is awaited once per poll and returns a NodeSample, or raises
``SourceError`` with the state the node should show. Blocking reads (local files, netlink)
run in a thread; the sample is immutable, so nothing is shared with the UI. The engine
bounds how long it waits (engine/monitor.py): a read that hangs makes its node stale.
"""

from __future__ import annotations

import asyncio
import threading

from netui.model.node import NodeState
from netui.model.samples import NodeSample


class SourceError(Exception):
    def __init__(self, state: NodeState, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


class LocalSource:
    """This host (or a procfs/sysfs tree) read by a collectors.local reader.

    Each read runs in a daemon thread of its own, at most one at a time: a read stuck in
    the kernel (a firmware MAD that does not answer, ``ethtool -S`` on a hung NIC) keeps its
    thread, never the event loop nor the app's exit; ``sample()`` called while a read is in
    flight awaits that same read instead of starting another.
    """

    def __init__(self, reader) -> None:
        self.reader = reader
        self.name: str = reader.name
        self._pending: asyncio.Future | None = None

    @property
    def reading(self) -> bool:
        """A read is in flight."""
        return self._pending is not None and not self._pending.done()

    def _start(self) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def deliver(result, exc) -> None:
            if not future.done():
                if exc is not None:
                    future.set_exception(exc)
                else:
                    future.set_result(result)

        def read() -> None:
            result = exc = None
            try:
                result = self.reader.sample()
            except Exception as e:  # handed to the awaiting side
                exc = e
            try:
                loop.call_soon_threadsafe(deliver, result, exc)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        threading.Thread(target=read, name=f"netui-read-{self.name}", daemon=True).start()
        return future

    async def sample(self) -> NodeSample:
        if self._pending is None or self._pending.done():
            self._pending = self._start()
        try:
            return await asyncio.shield(self._pending)
        except OSError as exc:  # the reader itself maps unreadable files to None
            raise SourceError(NodeState.UNSUPPORTED, str(exc)) from exc

    async def close(self) -> None:
        close = getattr(self.reader, "close", None)
        if close is not None:
            close()


class ReplaySource:
    """Samples from a recording, one per poll, in order; None once it is all played (the
    node then keeps showing its last state).

    The node clock of the recording drives the rates, so a replay is deterministic.
    """

    def __init__(self, name: str, samples: list[NodeSample]) -> None:
        if not samples:
            raise ValueError(f"no samples for {name}")
        self.name = name
        self.samples = samples
        self.position = 0

    async def sample(self) -> NodeSample | None:
        if self.position >= len(self.samples):
            return None
        s = self.samples[self.position]
        self.position += 1
        return s

    @property
    def finished(self) -> bool:
        return self.position >= len(self.samples)

    async def close(self) -> None:
        pass
