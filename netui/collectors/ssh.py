"""Nodes over SSH, agentless: one asyncssh connection and one sampler process per node.

The sampler (collectors/sampler.py, with the wire protocol of collectors/protocol.py) is sent
as the command line of the SSH session — nothing is written on the node — and streams frames
until the channel closes. Each node's session runs in its own task: it connects
(collectors/ssh_connect.py: at most ``fanout`` handshakes at once), starts the sampler, and
its channel (collectors/ssh_stream.py) cuts frames and hands samples to the sink; on failure
it reports the state with its reason and retries with capped exponential backoff and jitter
(collectors/backoff.py).
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Sequence
from pathlib import Path

import asyncssh

from netui.collectors import backoff
from netui.collectors.cancel import raise_if_cancelled
from netui.collectors.source import BaseSource, NodeAccess, Sink
from netui.collectors.ssh_connect import Failure, SshConnector, classify
from netui.collectors.ssh_stream import SamplerSession
from netui.model.node import NodeState

# The line of sampler.py that protocol.py's text replaces in the source that is shipped
PROTOCOL_IMPORT = "from netui.collectors.protocol import *  # noqa: F403 (shipped: protocol.py's text stands here)\n"


def shipped_sampler_source(sampler: str, protocol: str) -> str:
    """The sampler's source as a node runs it: one script, protocol.py's text in place of
    its import line (a node has no netui to import)."""
    if sampler.count(PROTOCOL_IMPORT) != 1:
        raise ValueError("the sampler does not import the protocol on a line of its own")
    return sampler.replace(PROTOCOL_IMPORT, protocol)


SAMPLER_SOURCE = shipped_sampler_source((Path(__file__).parent / "sampler.py").read_text(encoding="utf-8"),
                                        (Path(__file__).parent / "protocol.py").read_text(encoding="utf-8"))


def sampler_command(interval_s: float, *, sysfs: str | None = None, procfs: str | None = None,
                    ethtool_every_s: float | None = None, detail: bool = False) -> str:
    """The remote command line: the sampler's source, quoted, run by the node's python3.

    ``exec`` so that the sampler is the session's process (no shell left waiting), and a
    clear message when python3 is missing. ``sysfs``, ``procfs``: read /sys, /proc from there
    (a test points them at a copied tree); ``ethtool_every_s``: the cadence of ``ethtool -S`` (default 5 s);
    ``detail``: the per-CPU tables from the first frame (else their sums only).
    """
    script = shlex.quote(SAMPLER_SOURCE)
    extra = " --detail" if detail else ""
    if sysfs is not None:
        extra += f" --sysfs {shlex.quote(sysfs)}"
    if procfs is not None:
        extra += f" --procfs {shlex.quote(procfs)}"
    if ethtool_every_s is not None:
        extra += f" --ethtool-every {float(ethtool_every_s)!r}"
    return (
        "command -v python3 >/dev/null 2>&1 || { echo 'netui: no python3 on this node' >&2; exit 127; }; "
        f"exec python3 -c {script} {float(interval_s)!r}{extra}"
    )


class SshSource(BaseSource):
    """One node over SSH: connects, runs the sampler, streams samples into the sink."""

    push = True
    no_commands = None  # commands run beside the sampler, on its connection
    session_class = SamplerSession

    def __init__(self, name: str, host: str, connector: SshConnector, *, user: str | None = None,
                 port: int | None = None, seed: int | None = None) -> None:
        self.name = name
        self.host = host
        self.user = user
        self.port = port
        self.connector = connector
        self._seed = seed if seed is not None else name  # the backoff's jitter
        self._channel: asyncssh.SSHClientChannel | None = None  # the sampler's
        self._session: SamplerSession | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self.frames = 0
        self.detail = False  # the sampler sends its per-CPU tables (set_detail)
        self.retry_at: float | None = None  # time.monotonic() of the next try while waiting to retry
        self._retry = asyncio.Event()  # set: try again now (retry_now)

    @property
    def tried(self) -> bool:
        """Whether a handshake with this node has begun: with thousands of nodes and ``fanout``
        handshakes at once, the last ones wait their turn (a snapshot says "not tried in time")."""
        return self.host in self.connector.tried

    async def run(self, sink: Sink) -> None:
        """Until cancelled: stream, and on any failure report it and retry with backoff."""
        s = self.connector.settings
        waits = backoff.Backoff(s.backoff_first_s, s.backoff_max_s, self._seed)
        failure: Failure | None = None
        while True:
            raise_if_cancelled()
            try:
                # a node that failed keeps its failure while it is tried again (its countdown
                # gone): not "connecting" for the moment each retry takes, so a dead node does
                # not flicker between the two in the grid
                sink.report(self.name, *((NodeState.CONNECTING, None) if failure is None
                                         else (failure.state, failure.reason)))
                await self._stream(sink)
                failure = Failure(NodeState.DOWN, "the sampler stopped")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is a node state
                failure = classify(exc, None)
            finally:
                self._close()
            raise_if_cancelled()  # a cancellation that came back as a failure: stop, never retry
            if not failure.retry:  # an ssh_config error: the same every time, so said once
                sink.report(self.name, failure.state, failure.reason)
                return
            if self.frames and failure.backoff_reset:
                waits.reset()
            self.frames = 0
            delay = waits.next_s()
            sink.report(self.name, failure.state, f"{failure.reason} (retrying in {delay:.0f} s)")
            await self._wait_to_retry(delay)

    async def _wait_to_retry(self, delay_s: float) -> None:
        """Sleep ``delay_s``, or less when ``retry_now`` is called."""
        self._retry.clear()
        self.retry_at = time.monotonic() + delay_s
        try:
            await asyncio.wait_for(self._retry.wait(), timeout=delay_s)
        except asyncio.TimeoutError:
            pass
        finally:
            self.retry_at = None

    def retry_now(self) -> bool:
        """Cut the wait before the next try short; False when the source is not waiting."""
        if self.retry_at is None:
            return False
        self._retry.set()
        return True

    async def _stream(self, sink) -> None:
        self._conn = await self.connector.connect(self.host, self.user, self.port)
        # connected: the sampler's first frame comes within the connect timeout, or the
        # node is down saying so (a node that connects and never writes is not `connecting`)
        wait_s, started = self.connector.settings.connect_timeout_s, time.monotonic()
        session = self.session_class(self, sink)
        self._session = session
        detail = self.detail
        command = sampler_command(sink.interval_s, detail=detail)
        try:
            self._channel, _ = await asyncio.wait_for(
                self._conn.create_session(lambda: session, command, encoding=None), timeout=wait_s)
        except asyncio.TimeoutError:
            raise Failure(NodeState.DOWN, f"no first sample in {wait_s:g} s (the session did not open)") from None
        if self.detail != detail:  # changed while the channel opened
            self._tell(b"d 1\n" if self.detail else b"d 0\n")
        if not session.first.done() and not session.ended.done():
            left_s = max(0.0, wait_s - (time.monotonic() - started))
            done, _ = await asyncio.wait((session.first, session.ended), timeout=left_s,
                                         return_when=asyncio.FIRST_COMPLETED)
            if not done:
                raise Failure(NodeState.DOWN, f"no first sample in {wait_s:g} s")
        failure = await session.ended
        if failure is not None:
            raise failure
        raise session.why_ended()

    @property
    def connection(self) -> asyncssh.SSHClientConnection | None:
        """The node's live connection while it streams (None while down or connecting).

        Other commands (pair tests, collectors/shell.py) open their own channels on it: no
        second handshake, and they end when it does.
        """
        conn = self._conn
        return conn if conn is not None and self._channel is not None and not conn.is_closed() else None

    def commands(self) -> NodeAccess:
        """Commands over the node's live connection (``connection``): they fail while it is down."""
        from netui.collectors.shell import SshShell

        return NodeAccess(SshShell(self))

    def set_interval(self, interval_s: float) -> None:
        self._tell(f"i {interval_s}\n".encode())

    def set_detail(self, on: bool) -> None:
        """The sampler's per-CPU tables on or off (their sums come either way); a sampler
        started later starts so."""
        if on != self.detail:
            self.detail = on
            self._tell(b"d 1\n" if on else b"d 0\n")

    def send_mesh(self, lines: Sequence[str]) -> bool:
        """Lines for the sampler's probe mesh, written to its stdin (dropped while no sampler
        runs: the monitor tells a new one again from its first frames)."""
        for line in lines:
            self._tell(line.encode("ascii") + b"\n")
        return True

    def _tell(self, line: bytes) -> None:
        channel = self._channel
        if channel is not None and not channel.is_closing():
            try:
                channel.write(line)
            except (OSError, asyncssh.Error):
                pass

    def _close(self) -> None:
        self._session = None
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def close(self) -> None:
        conn = self._conn
        self._close()
        if conn is not None:
            try:
                await asyncio.wait_for(conn.wait_closed(), timeout=2)
            except (asyncio.TimeoutError, OSError, asyncssh.Error):
                pass
