"""asyncssh servers on 127.0.0.1 for tests of netui's connection internals: one whose sessions
run what a test gives, one whose every session echoes its stdin, and a client's round trips
over it: real SSH packets, both ways."""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from pathlib import Path

import asyncssh

from netui.collectors.ssh import SshSource

from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.engine.monitor import Monitor

from tests.bench.fake_fleet import write_keys


async def echo(process: asyncssh.SSHServerProcess) -> None:
    try:
        for _ in range(100_000):
            data = await process.stdin.read(65536)
            if not data:
                break
            process.stdout.write(data)
            await process.stdout.drain()
        process.exit(0)
    except (asyncssh.Error, OSError):
        pass


@asynccontextmanager
async def loopback_ssh_server(directory: Path, process_factory):
    """An asyncssh server on 127.0.0.1 whose sessions run ``process_factory`` (bytes, no
    encoding), its keys in ``directory``; yield an ssh_config for it (``Host *``, its key in
    known_hosts)."""
    write_keys(directory)
    acceptor = await asyncssh.listen(
        "127.0.0.1", 0, server_host_keys=[str(directory / "host_key")],
        authorized_client_keys=str(directory / "client_key.pub"), process_factory=process_factory, encoding=None,
    )
    port = acceptor.get_port()
    host_pub = (directory / "host_key.pub").read_text().split()
    (directory / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    config = directory / "ssh_config"
    config.write_text(
        f"Host *\n  HostName 127.0.0.1\n  Port {port}\n  IdentityFile {directory / 'client_key'}\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {directory / 'known_hosts'}\n")
    try:
        yield config
    finally:
        acceptor.close()
        await acceptor.wait_closed()


def echo_server(directory: Path):
    """Listen on 127.0.0.1, every session echoing its stdin; yield an ssh_config for it."""
    return loopback_ssh_server(directory, echo)


async def round_trips(conn: asyncssh.SSHClientConnection, count: int = 20, size: int = 1000) -> int:
    """Send ``count`` messages of ``size`` bytes one at a time, each echoed back before the
    next (at least one SSH packet each way per message); the bytes that came back."""
    proc = await conn.create_process("echo", encoding=None)
    got = 0
    try:
        for i in range(count):
            message = bytes([i % 256]) * size
            proc.stdin.write(message)
            back = await proc.stdout.readexactly(size)
            assert back == message
            got += len(back)
    finally:
        proc.stdin.write_eof()
        proc.close()
        await proc.wait_closed()
    return got


async def watch_scenarios(config: Path, scenarios: list[str], until, *, interval_s: float = 0.2,
                          connect_timeout_s: float = 5, timeout_s: float = 60.0, thresholds=None) -> Monitor:
    """A live Monitor of one SSH node per scenario on ``loopback_ssh_server``'s config (the
    scenario is the login name: ``user`` overrides the config's User), run until ``until(monitor)``
    or ``timeout_s``; closed before it is returned (a failed retry waits 60 s: never during a test)."""
    connector = SshConnector(SshSettings(config_paths=[str(config)], connect_timeout_s=connect_timeout_s,
                                         backoff_first_s=60, backoff_max_s=60))
    sources = [SshSource(s, "127.0.0.1", connector, user=s) for s in scenarios]
    monitor = Monitor(sources, interval_s=interval_s, history_s=30, connector=connector, thresholds=thresholds)
    task = asyncio.ensure_future(monitor.run())
    try:
        deadline = time.monotonic() + timeout_s
        while not until(monitor) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return monitor
    finally:
        await asyncio.wait_for(monitor.close(), timeout=15)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
