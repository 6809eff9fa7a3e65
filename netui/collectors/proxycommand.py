"""ssh_config's ``ProxyCommand``, run by netui as OpenSSH runs it, with its failure said.

OpenSSH starts the command (as the user running ssh, on this machine) and speaks SSH over
its standard input and output. asyncssh can do the same, but it feeds the command's
standard error into the SSH stream as if the server had sent it, and a command that exits
at once shows only as "Broken pipe" or "Connection lost". ``ProxyCommand`` is a tunnel for
``asyncssh.connect(tunnel=...)`` that runs the command as asyncssh would (its words as
ssh_config gives them after ``%h``/``%p``/``%r`` expansion, split as a shell splits them but
run without one, in a session of its own), keeps the tail of its standard error apart from
the SSH stream, and says why it ended:
``ProxyCommand exited: status 1: <its last stderr line>``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

STDERR_TAIL_BYTES = 4096  # what is kept of the command's standard error: its last lines
MAX_LINE_CHARS = 200


def _printable(text: str) -> str:
    """One line for a node state: control characters shown as escapes, length capped."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return shown if len(shown) <= MAX_LINE_CHARS else shown[:MAX_LINE_CHARS - 1] + "…"


class _Pipes(asyncio.SubprocessProtocol):
    """The command's pipes: stdout feeds the SSH connection, stderr is kept apart, and the
    connection is lost when stdout (or stdin) closes, as over a socket."""

    def __init__(self, tunnel: ProxyCommand, conn) -> None:
        self.tunnel = tunnel
        self.conn = conn
        self.transport: asyncio.SubprocessTransport | None = None
        self.stdin: asyncio.WriteTransport | None = None
        self.lost = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.stdin = transport.get_pipe_transport(0)
        self.tunnel._pipes = self  # before the connection's first write (its version line)
        self.conn.connection_made(self.tunnel)

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.conn.data_received(data)
        else:
            self.tunnel.stderr = (self.tunnel.stderr + data)[-STDERR_TAIL_BYTES:]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd != 2 and not self.lost:
            self.lost = True
            self.conn.connection_lost(exc)

    def process_exited(self) -> None:
        self.tunnel.returncode = self.transport.get_returncode() if self.transport else None
        self.tunnel.ended.set()


class ProxyCommand:
    """A tunnel that reaches the SSH server through ``argv``'s standard input and output."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.stderr = b""
        self.returncode: int | None = None
        self.start_error: OSError | None = None
        self.ended = asyncio.Event()
        self.closed = False  # closed here while its output was open (the command killed): not its failure
        self.killed = False  # closed here before it ended: an end by a signal may be this close's
        self._pipes: _Pipes | None = None

    async def create_connection(self, session_factory, host: str, port: int):
        """Start the command; (this tunnel, the SSH connection over it), as asyncssh's
        tunnels answer."""
        conn = session_factory()
        loop = asyncio.get_running_loop()
        try:
            await loop.subprocess_exec(lambda: _Pipes(self, conn), *self.argv, start_new_session=True)
        except OSError as exc:
            self.start_error = exc
            raise
        return self, conn

    # what the SSH connection asks of its transport
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        transport = self._pipes.transport if self._pipes else None
        return transport.get_extra_info(name, default) if transport else default

    def write(self, data: bytes) -> None:
        if self._pipes and self._pipes.stdin is not None and not self._pipes.stdin.is_closing():
            self._pipes.stdin.write(data)

    def is_closing(self) -> bool:
        return self._pipes is None or self._pipes.transport is None or self._pipes.transport.is_closing()

    def abort(self) -> None:
        self.close()

    def close(self) -> None:
        if not self.ended.is_set():
            self.killed = True
            # (a close that follows the command closing its output, as the connection fails on
            # it, is not why it failed: whether it exited on its own is then waited for)
            if self._pipes is None or not self._pipes.lost:
                self.closed = True
        if self._pipes and self._pipes.transport is not None:
            self._pipes.transport.close()  # kills the command if it still runs

    async def wait_closed(self) -> None:
        if self._pipes is not None:
            await self.ended.wait()

    async def why_failed(self, wait_s: float = 5.0) -> str | None:
        """Why the connection through the command failed, when the command is why: it could
        not start, or it ended (waited for up to ``wait_s``: its output may close first)."""
        if self.start_error is not None:
            return f"ProxyCommand {self.argv[0] if self.argv else ''}: {self.start_error.strerror or self.start_error}"
        if self._pipes is None:
            return None
        try:
            await asyncio.wait_for(self.ended.wait(), wait_s)
        except asyncio.TimeoutError:
            return None  # still running: the failure is the connection's
        if self.closed:
            return None  # ended because the connection was closed
        code = self.returncode
        if self.killed and code is not None and code < 0:
            return None  # it closed its output and was then killed here: the connection's failure
        status = f"status {code}" if code is None or code >= 0 else f"killed by signal {-code}"
        lines = [line.strip() for line in self.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        return f"ProxyCommand exited: {status}" + (f": {_printable(lines[-1])}" if lines else "")
