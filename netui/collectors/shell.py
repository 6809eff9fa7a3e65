"""Commands on a node, beside the sampler: over the node's live SSH connection, or on this
host for ``--local``. A source offers its node's shell (``Source.commands``,
collectors/source.py); the pair and latency tests and the doctor run their commands on
it. Every command is guarded.

A guarded command dies with its channel or with its timeout, whichever comes first — no
orphans, ever, even when netui is killed or the network goes away:

- it runs under ``timeout -k 2 N`` (TERM at N seconds, KILL 2 s later);
- a watcher in the same shell reads the channel's stdin until end of file, then kills the
  command's process group (``timeout`` leads one). The client never writes to stdin, so
  EOF means the client closed it, closed the channel, or lost the connection (sshd closes
  the session's stdin in all three);
- a *gated* command first waits (bounded) for the line ``go [ARG…]`` on stdin: its SSH
  channel and shell are set up ahead of time, so the start itself costs one message, not
  a channel open and a shell start-up (~150 ms each over SSH on a busy node). The ARGs
  become the command's last arguments (``"$@"``): what is chosen only after the command
  was staged (addresses). They are checked against a narrow alphabet and never evaluated.

Output is line buffered where ``stdbuf`` exists, so a server's "listening" line arrives
when it is printed, not when the server exits. netui keeps at most ``OUTPUT_LIMIT``
characters of each stream: a node that floods it is read to the end (or the timeout) and
the rest dropped, with a line saying so at the end of stderr. Whatever reaches the script from users or
nodes must already be ``shlex.quote``d by the caller (the command line is built from
argv lists with ``shlex.join``).
"""

from __future__ import annotations

import asyncio
import codecs
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from netui.model.text import safe_line


class _Asyncssh:
    """asyncssh, imported on first use: the local monitor starts without it (~0.1 s)."""

    def __getattr__(self, name: str):
        import asyncssh as module

        globals()["asyncssh"] = module  # from now on, the module itself
        return getattr(module, name)


asyncssh = _Asyncssh()


# exit status of a gated command that was never told to go (channel closed, gate timeout)
NOT_STARTED = 90
TIMED_OUT = 124  # timeout(1)'s status when the time ran out
GO = "go"
GATED = "netui-gated"  # the gate's line on stdout: what comes before it is the preamble's
_GATED_LINE = "\n" + GATED + "\n"
KILL_GRACE_S = 2


def _seconds(value: float) -> str:
    return f"{max(1, int(value + 0.999))}"


# what may travel in a go line: addresses, device names, numbers, options
_GO_ARG = re.compile(r"^[A-Za-z0-9_.:%@+-]{1,64}$")


def guarded(command: str, timeout_s: float, *, gate_timeout_s: float | None = None,
            line_buffered: bool = True, preamble: str | None = None, preamble_timeout_s: float = 10.0) -> str:
    """The POSIX sh script that runs ``command`` (a quoted command line) guarded.

    Exit status: the command's; 124 when its ``timeout_s`` ran out; 90 when gated and
    never started. ``gate_timeout_s``: wait at most this long for ``go`` (None: no gate);
    the go line's arguments are appended to ``command``. A gated command may run a
    ``preamble`` first (a script, at most ``preamble_timeout_s``; its output, stdout and
    stderr, is ``Running.preamble``): a pair test probes a node in the same session.
    """
    lines = ["exec 3<&0"]  # the channel's stdin, for the gate and the watcher
    if gate_timeout_s is not None:
        gate = shlex.quote('IFS= read -r l && printf "%s\\n" "$l"')
        if preamble is not None:
            lines.append(f"timeout {_seconds(preamble_timeout_s)} sh -c {shlex.quote(preamble)} </dev/null 2>&1")
        lines += [
            f"printf '\\n%s\\n' {GATED}",  # the shell is up: the caller may stop waiting
            f"l=$(timeout {_seconds(gate_timeout_s)} sh -c {gate} <&3) || exit {NOT_STARTED}",
            f'set -f; set -- $l; [ "$1" = {GO} ] || exit {NOT_STARTED}; shift',
        ]
        command += ' "$@"'
    if line_buffered:
        lines.append('L=; command -v stdbuf >/dev/null 2>&1 && L="stdbuf -oL -eL"')
    lines += [
        f"timeout -k {KILL_GRACE_S} {_seconds(timeout_s)} {'$L ' if line_buffered else ''}{command} </dev/null & p=$!",
        # EOF on stdin: TERM the group timeout leads, KILL it a second later
        "{ while read -r _; do :; done <&3; kill -TERM -$p || kill -TERM $p; sleep 1; kill -KILL -$p; }"
        " >/dev/null 2>&1 & w=$!",
        "exec 3<&-",
        "wait $p; s=$?; kill $w 2>/dev/null; exit $s",
    ]
    return "\n".join(lines)


OUTPUT_LIMIT = 8 << 20  # characters kept of a command's stdout, and of its stderr


class CommandFailed(Exception):
    """The command could not be started on the node (not connected, channel refused). Its
    message may hold the node's or the SSH library's words: made safe to show (model/text.py)."""

    def __init__(self, *args) -> None:
        super().__init__(*(safe_line(a) if isinstance(a, str) else a for a in args))


@dataclass(frozen=True)
class CommandResult:
    """How a command ended. ``exit_status`` None: unknown (stopped, connection lost)."""

    exit_status: int | None
    stdout: str
    stderr: str
    timed_out: bool = False  # netui gave up waiting, or the remote timeout(1) fired

    @property
    def not_started(self) -> bool:
        return self.exit_status == NOT_STARTED


class Running:
    """A command running on a node: output as it arrives, the gate, the end, the stop."""

    def __init__(self, node: str) -> None:
        self.node = node
        self._out: list[str] = []
        self._err: list[str] = []
        self._changed = asyncio.Event()
        self._pumps: list[asyncio.Task] = []
        self.exit_status: int | None = None
        self.stopped = False

    # subclasses: start the pumps, write a line to stdin, close stdin, wait for the exit
    def _write(self, text: str) -> None:
        raise NotImplementedError

    def _close_stdin(self) -> None:
        raise NotImplementedError

    async def _exit_status(self) -> int | None:
        raise NotImplementedError

    def _pump(self, read: Callable, sink: list[str], decode: Callable[[object], str]) -> None:
        async def pump() -> None:
            kept = dropped = 0
            try:
                while True:
                    chunk = await read(65536)
                    if not chunk:
                        break
                    text = decode(chunk)
                    room = OUTPUT_LIMIT - kept
                    if len(text) > room:  # past the limit: read on (the node is not blocked), keep nothing
                        dropped += len(text) - max(room, 0)
                        text = text[:max(room, 0)]
                    if text:
                        sink.append(text)
                        kept += len(text)
                        self._changed.set()
            except (OSError, asyncssh.Error, asyncio.IncompleteReadError):
                pass
            finally:
                if dropped:
                    which = "stdout" if sink is self._out else "stderr"
                    self._err.append(f"\nnetui: {dropped} more characters of {which} were dropped "
                                     f"(it keeps {OUTPUT_LIMIT})\n")
                self._changed.set()

        self._pumps.append(asyncio.ensure_future(pump()))

    def _split(self) -> tuple[str | None, str]:
        """(the preamble's output, or None when no gate line came; the command's output)."""
        text = "".join(self._out)
        at = ("\n" + text).find(_GATED_LINE)
        if at < 0:
            return None, text
        return text[:max(0, at - 1)], text[at - 1 + len(_GATED_LINE):]

    @property
    def stdout(self) -> str:
        """The command's output so far (after the gate line of a gated command)."""
        return self._split()[1]

    @property
    def preamble(self) -> str | None:
        """What a gated command's preamble printed; None until the gate line came."""
        return self._split()[0]

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    @property
    def gated(self) -> bool:
        """Whether a gated command's shell is up (its preamble done) and waits for ``go``."""
        return self._split()[0] is not None

    @property
    def output_ended(self) -> bool:
        return all(p.done() for p in self._pumps)

    def go(self, *args: str) -> None:
        """Start a gated command with ``args`` as its last arguments (no effect on an
        ungated one: it never reads stdin). ValueError on an argument outside
        ``[A-Za-z0-9_.:%@+-]``: nothing from a node is ever evaluated by the shell."""
        for arg in args:
            if not _GO_ARG.match(arg):
                raise ValueError(f"not allowed in a command's arguments: {arg!r}")
        self._write(" ".join((GO, *args)) + "\n")

    async def wait_for(self, ready: Callable[[str, str], bool], timeout_s: float) -> bool:
        """Wait until ``ready(stdout, stderr)`` or the output ends (then: its last answer)
        or ``timeout_s`` passes (False)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            self._changed.clear()
            if ready(self.stdout, self.stderr):
                return True
            if self.output_ended:
                return ready(self.stdout, self.stderr)
            left = deadline - loop.time()
            if left <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=left)
            except asyncio.TimeoutError:
                pass

    async def result(self, timeout_s: float) -> CommandResult:
        """Wait for the end (output and exit status). On timeout: stop it; ``timed_out``."""
        try:
            await asyncio.wait_for(self._finish(), timeout=timeout_s)
        except asyncio.TimeoutError:
            await self.stop()
            return CommandResult(None, self.stdout, self.stderr, timed_out=True)
        return CommandResult(self.exit_status, self.stdout, self.stderr,
                             timed_out=self.exit_status == TIMED_OUT)

    async def _finish(self) -> None:
        if self._pumps:
            await asyncio.gather(*self._pumps, return_exceptions=True)
        self.exit_status = await self._exit_status()

    async def wait_gated(self, timeout_s: float) -> bool:
        """Wait until a gated command's shell is up (True), or it ended or time ran out."""
        return await self.wait_for(lambda out, err: self.gated, timeout_s)

    async def stop(self, wait_s: float = 2.0) -> None:
        """End it: EOF on stdin (the watcher kills the command), then close the channel.
        Waits at most ``wait_s`` for the end; safe to call more than once."""
        if not self.stopped:
            self.stopped = True
            self._close_stdin()
        try:
            await asyncio.wait_for(asyncio.shield(self._finish()), timeout=wait_s)
        except (asyncio.TimeoutError, OSError, asyncssh.Error):
            pass
        finally:
            self._close()

    def kill(self) -> None:
        """End it now, without waiting: EOF on stdin and the channel closed (either one
        makes the node's watcher kill the command). For cancellation paths; the output
        readers end by themselves when the pipes close."""
        self.stopped = True
        self._close_stdin()
        self._close_channel()

    def _close_channel(self) -> None:
        pass

    def _close(self) -> None:
        self._close_channel()
        for pump in self._pumps:
            pump.cancel()


class SshRunning(Running):
    def __init__(self, node: str, process: asyncssh.SSHClientProcess) -> None:
        super().__init__(node)
        self._process = process
        self._pump(process.stdout.read, self._out, str)
        self._pump(process.stderr.read, self._err, str)

    def _write(self, text: str) -> None:
        if not self._process.stdin.is_closing():
            try:
                self._process.stdin.write(text)
            except (OSError, asyncssh.Error):
                pass

    def _close_stdin(self) -> None:
        try:
            if not self._process.stdin.is_closing():
                self._process.stdin.write_eof()
        except (OSError, asyncssh.Error):
            pass

    async def _exit_status(self) -> int | None:
        await self._process.wait_closed()
        return self._process.exit_status if self._process.exit_status not in (None, -1) else None

    def _close_channel(self) -> None:
        self._process.close()


class LocalRunning(Running):
    def __init__(self, node: str, process: asyncio.subprocess.Process) -> None:
        super().__init__(node)
        self._process = process
        for stream, sink in ((process.stdout, self._out), (process.stderr, self._err)):
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            self._pump(stream.read, sink, decoder.decode)

    def _write(self, text: str) -> None:
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.write(text.encode())

    def _close_stdin(self) -> None:
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    async def _exit_status(self) -> int | None:
        return await self._process.wait()


class SshShell:
    """Commands over a node's live connection (the one its sampler streams on)."""

    def __init__(self, source) -> None:
        self.source = source
        self.name: str = source.name

    @property
    def session(self) -> object | None:
        return self.source.connection

    async def start(self, script: str) -> Running:
        conn = self.source.connection
        if conn is None:
            raise CommandFailed(f"{self.name} is not connected")
        try:
            process = await conn.create_process("sh -c " + shlex.quote(script),
                                                encoding="utf-8", errors="replace")
        except (OSError, asyncssh.Error) as exc:
            reason = getattr(exc, "reason", "") or str(exc) or type(exc).__name__
            raise CommandFailed(f"cannot run a command on {self.name}: {reason}") from None
        return SshRunning(self.name, process)


_THIS_HOST = object()  # this host's session: always there, never renewed


class LocalShell:
    """Commands on this host (the ``--local`` node)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def session(self) -> object:
        return _THIS_HOST

    async def start(self, script: str) -> Running:
        try:
            process = await asyncio.create_subprocess_exec(
                "sh", "-c", script, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise CommandFailed(f"cannot run a command on {self.name}: {exc}") from None
        return LocalRunning(self.name, process)


async def run_guarded(shell, command: str, timeout_s: float) -> CommandResult:
    """Run ``command`` guarded on ``shell`` and wait for it (at most ``timeout_s`` + 2 s)."""
    running = await shell.start(guarded(command, timeout_s, line_buffered=False))
    try:
        return await running.result(timeout_s + KILL_GRACE_S)
    finally:
        await running.stop()
