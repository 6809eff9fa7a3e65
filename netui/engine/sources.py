"""Where samples come from, seen from the engine: something to ask for the next sample.

A source's ``sample()`` is awaited once per poll and returns a NodeSample, or raises
``SourceError`` with the state the node should show. Blocking reads (local files, netlink)
run in a thread; the sample is immutable, so nothing is shared with the UI.
"""

from __future__ import annotations

import asyncio

from netui.model.node import NodeState
from netui.model.samples import NodeSample


class SourceError(Exception):
    def __init__(self, state: NodeState, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


class LocalSource:
    """This host (or a procfs/sysfs tree) read by a collectors.local reader."""

    def __init__(self, reader) -> None:
        self.reader = reader
        self.name: str = reader.name

    async def sample(self) -> NodeSample:
        try:
            return await asyncio.to_thread(self.reader.sample)
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
