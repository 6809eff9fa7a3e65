"""An SSH server on 127.0.0.1 whose sessions run their command in ``sh`` on this host, as
sshd would: several "nodes" that are all this host, for ``netui`` run as a command (a pair
matrix on loopback, tests/integration/test_hostile_streams.py). Real SSH (asyncssh), real
processes; each command in its own process group, killed when its channel closes or the
server ends.

    python -m tests.shell_ssh DIR     # writes DIR/ssh_config, prints "ready", serves until SIGTERM
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import asyncssh

from tests.echo_ssh import loopback_ssh_server

_groups: set[int] = set()  # the process groups of the commands running


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def shell(process: asyncssh.SSHServerProcess) -> None:
    proc = await asyncio.create_subprocess_shell(
        process.command or "sh", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True)
    _groups.add(proc.pid)

    async def up(source, sink) -> None:
        while data := await source.read(65536):
            sink.write(data)

    async def down() -> None:
        try:
            while data := await process.stdin.read(65536):
                proc.stdin.write(data)
                await proc.stdin.drain()
        except (asyncssh.Error, OSError):
            pass
        finally:
            proc.stdin.close()  # EOF: netui's guarded commands end on it

    feeding = asyncio.ensure_future(down())
    try:
        await asyncio.gather(up(proc.stdout, process.stdout), up(proc.stderr, process.stderr))
        status = await proc.wait()
        process.exit(status if status >= 0 else 128 - status)
    except (asyncssh.Error, OSError):
        pass
    finally:
        feeding.cancel()
        if proc.returncode is None:
            _kill(proc.pid)
            await proc.wait()
        _groups.discard(proc.pid)


async def serve(directory: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with loopback_ssh_server(directory, shell):
        print("ready", flush=True)
        await stop.wait()
    for pid in list(_groups):
        _kill(pid)


if __name__ == "__main__":
    asyncio.run(serve(Path(sys.argv[1])))
