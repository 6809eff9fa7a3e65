"""What every source of samples offers the engine, declared once: ``Source``, and ``Sink``,
what a streaming source reports to.

A source is one node's supply of samples: this host or a captured tree (engine/sources.py
``LocalSource``), an SSH node (collectors/ssh.py), a node_exporter (collectors/node_exporter.py),
a node of a Prometheus fleet (collectors/prometheus.py), a recording (engine/sources.py
``ReplaySource``, ``RecordedNode``). Each one says what it is — pulled or pushing, what its
counters come through, whether commands run on its node — and answers every call of the
contract, with an explicit no-op where it has nothing to do (``BaseSource``). The engine calls
the methods directly, never asks a source's class; it reads what is fixed (``push``) once,
when it is built, so a tick costs nothing more.

Two kinds, by ``push``:

- a *pull* source (``push`` False) is asked for a sample each tick: ``sample()``;
- a *push* source streams on its own: ``run(sink)`` reports samples and states to the sink
  (the monitor) until cancelled.

Collectors implement this without importing the engine: the layers point one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from netui.model.node import NodeState
from netui.model.samples import NodeSample

if TYPE_CHECKING:
    from netui.collectors.shell import Running


class Sink(Protocol):
    """What a push source reports to (the monitor): samples, states, and the interval it
    should sample at. A sink may also offer ``queue_frame(session, payload)``: an SSH
    node's frames are then queued there and taken in batches (engine/monitor.py)."""

    @property
    def interval_s(self) -> float:
        """How often nodes are sampled now (seconds)."""
        ...

    def observe(self, name: str, sample: NodeSample) -> None:
        """A new sample of node ``name``."""
        ...

    def report(self, name: str, state: NodeState, reason: str | None) -> None:
        """Node ``name`` is in ``state`` (connecting, up, down…), for ``reason``."""
        ...


class NodeShell(Protocol):
    """Runs commands on one node (collectors/shell.py: ``SshShell``, ``LocalShell``)."""

    name: str

    @property
    def session(self) -> object | None:
        """What the shell's commands ride on now (the node's SSH connection; this host): a
        new value means a new session (a reconnect), which its source announces with a
        ``Sink.report`` (connecting) before it. None: not connected."""
        ...

    async def start(self, script: str) -> Running:
        """Start the POSIX sh ``script`` on the node; raises ``CommandFailed`` when it cannot."""
        ...


@dataclass(frozen=True, slots=True)
class NodeAccess:
    """How commands reach a source's node. ``shell`` runs them. ``live`` False: the node is
    a captured tree read on this host — commands run here and only reading the tree's files
    (``procfs``, ``sysfs``) tells about the node, so it takes no pair or latency test and the
    doctor reads its files only."""

    shell: NodeShell
    live: bool = True
    procfs: str = "/proc"
    sysfs: str = "/sys"


class Source(Protocol):
    """One node's samples, as the engine sees them. Every source has every member."""

    name: str  # the node's name in the fleet
    push: bool  # True: ``run(sink)`` streams; False: ``sample()`` each tick. Fixed for the source's life
    via: str | None  # what the counters come through when that limits what can be shown ("node_exporter")
    no_commands: str | None  # why ``commands()`` is None, in the user's words (None: it is not)
    retry_at: float | None  # time.monotonic() of the next try while waiting to retry after a failure
    tried: bool  # False while the node still waits its turn to be reached (a handshake slot)

    async def sample(self) -> NodeSample | None:
        """A pull source's next sample; None: nothing new. Raises ``SourceError`` (or any
        error: a parse error) with the state the node should show."""
        ...

    async def run(self, sink: Sink) -> None:
        """A push source's stream: report to ``sink`` until cancelled."""
        ...

    def prepare(self) -> None:
        """What the first read needs (imports), done before the monitor starts; may block."""
        ...

    def set_interval(self, interval_s: float) -> None:
        """The interval changed: a source that keeps its own pace follows it."""
        ...

    def set_detail(self, on: bool) -> None:
        """Per-CPU tables wanted (``on``) or not; a source that always has them ignores it."""
        ...

    def retry_now(self) -> bool:
        """Cut a wait before the next try short; False when the source is not waiting."""
        ...

    def commands(self) -> NodeAccess | None:
        """How to run commands on the node; None when this source runs none (``no_commands``)."""
        ...

    def send_mesh(self, lines: Sequence[str]) -> bool:
        """Steer the node's part of the probe mesh (docs/protocol.md#stdin: ``m …``, ``mp+ …``);
        False when the source has no sampler to steer (its node takes no part in the mesh)."""
        ...

    async def close(self) -> None:
        """End what the source holds (connections, threads' readers); bounded by the caller."""
        ...


class BaseSource:
    """The contract's defaults, each explicit: a pull source on its node's own files that
    keeps no pace of its own, never waits to retry, has no per-CPU switch and runs no
    commands. A source overrides what it does."""

    push: ClassVar[bool] = False
    via: ClassVar[str | None] = None
    no_commands: ClassVar[str | None] = "this source runs no commands"
    retry_at: float | None = None
    tried: bool = True
    name: str

    async def sample(self) -> NodeSample | None:
        raise NotImplementedError(f"{type(self).__name__} streams (run), it is not polled")

    async def run(self, sink: Sink) -> None:
        raise NotImplementedError(f"{type(self).__name__} is polled (sample), it does not stream")

    def prepare(self) -> None:
        pass

    def set_interval(self, interval_s: float) -> None:
        pass

    def set_detail(self, on: bool) -> None:
        pass

    def retry_now(self) -> bool:
        return False

    def commands(self) -> NodeAccess | None:
        return None

    def send_mesh(self, lines: Sequence[str]) -> bool:
        return False

    async def close(self) -> None:
        pass
