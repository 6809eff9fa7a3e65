"""The sources the engine itself provides (this host, a recording), and what it asks of
every source (the contract: collectors/source.py ``Source``).

A pull source's ``sample()`` is awaited once per poll and returns a NodeSample, or raises
``SourceError`` with the state the node should show. Blocking reads (local files, netlink)
run in a thread; the sample is immutable, so nothing is shared with the UI. The engine
bounds how long it waits (engine/monitor.py): a read that hangs makes its node stale.
"""

from __future__ import annotations

import asyncio
import threading

from netui.collectors.source import BaseSource, NodeAccess, NodeShell, Sink, Source
from netui.model.node import NodeState
from netui.model.samples import NodeSample

REPLAY_RUNS_NO_COMMANDS = "a replay cannot run commands"


class SourceError(Exception):
    def __init__(self, state: NodeState, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


class LocalSource(BaseSource):
    """This host (or a procfs/sysfs tree) read by a collectors.local reader (its ``live``
    says which; its ``procfs`` and ``sysfs``, where the files are).

    Each read runs in a daemon thread of its own, at most one at a time: a read stuck in
    the kernel (a firmware MAD that does not answer, ``ethtool -S`` on a hung NIC) keeps its
    thread, never the event loop nor the app's exit; ``sample()`` called while a read is in
    flight awaits that same read instead of starting another.
    """

    no_commands = None  # this host's shell, or a tree's files read by one

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

    def prepare(self) -> None:
        self.reader.prepare()

    def commands(self) -> NodeAccess:
        from netui.collectors.shell import LocalShell

        reader = self.reader
        return NodeAccess(LocalShell(self.name), live=reader.live, procfs=reader.procfs, sysfs=reader.sysfs)

    async def close(self) -> None:
        self.reader.close()


class ReplaySource(BaseSource):
    """Samples from a recording, one per poll, in order; None once it is all played (the
    node then keeps showing its last state).

    The node clock of the recording drives the rates, so a replay is deterministic.
    """

    no_commands = REPLAY_RUNS_NO_COMMANDS

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


class RecordedNode(BaseSource):
    """A node of a recording played back by engine/replay.py's ReplayMonitor: its samples and
    states come with the recording's frames, which the ReplayMonitor applies by its own clock
    (seeking too); the source itself streams nothing."""

    push = True  # never polled
    no_commands = REPLAY_RUNS_NO_COMMANDS

    def __init__(self, name: str) -> None:
        self.name = name

    async def run(self, sink: Sink) -> None:
        return None


def shells_for(sources: list[Source]) -> dict[str, NodeShell]:
    """A shell per node that can run commands on the node as it runs now: SSH nodes and this
    host (not replays, HTTP sources or captured trees). Nodes without one cannot take part
    in a pair or latency test."""
    shells: dict[str, NodeShell] = {}
    for source in sources:
        commands = source.commands()
        if commands is not None and commands.live:
            shells[source.name] = commands.shell
    return shells
