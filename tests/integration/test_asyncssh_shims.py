"""netui's asyncssh shims (netui/collectors/asyncssh_shims.py), each seen in effect on a real
connection to an asyncssh server on 127.0.0.1 (tests/echo_ssh.py): a test fails when a shim
stops applying, whatever the reason (asyncssh renamed what it patches, or the patched code is
no longer the one running). An asyncssh whose internals changed (tests/asyncssh_changed.py)
still works, without the shims, and ``netui --version`` says which applied and why not.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import weakref
from pathlib import Path

import asyncssh
import pytest
from asyncssh.crypto import cipher
from asyncssh.logging import SSHLogger
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from netui.collectors import asyncssh_shims
from netui.collectors.asyncssh_shims import GCM, KEEPALIVE, PACKET_LOG, shim_states
from netui.collectors.ssh_connect import SshConnector, SshSettings
from tests.echo_ssh import echo_server, round_trips

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def config(tmp_path):
    async with echo_server(tmp_path) as path:
        yield path


async def _connect(config: Path, *, lazy: bool = True, keepalive_s: float = 30.0):
    connector = SshConnector(SshSettings(config_paths=[str(config)], connect_timeout_s=10, keepalive_s=keepalive_s))
    connector.lazy_keepalive = lazy
    conn = await connector.connect("127.0.0.1", None, None)
    await connector.close()
    return conn


async def _close(conn) -> None:
    conn.close()
    await conn.wait_closed()


def test_pyproject_pins_asyncssh_to_the_tested_minor_versions():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    pin = re.search(r'"asyncssh>=(\d+)\.(\d+),<(\d+)\.(\d+)"', text)
    assert pin, "asyncssh is not pinned to a minor range in pyproject.toml"
    low, high = (int(pin[1]), int(pin[2])), (int(pin[3]), int(pin[4]))
    pinned = {(low[0], m) for m in range(low[1], high[1])} if low[0] == high[0] else None
    assert pinned == set(asyncssh_shims.TESTED_ASYNCSSH)
    assert asyncssh_shims.version_is_tested(asyncssh.__version__)  # what these tests run with
    assert not asyncssh_shims.version_is_tested(f"{high[0]}.{high[1]}.0")


@pytest.mark.parametrize("lazy", [True, False])
async def test_keepalive_shim_keeps_one_timer_while_packets_arrive(config, lazy):
    """asyncssh's own timer is replaced on every read (the control, lazy=False); netui's stays
    the same TimerHandle for the whole interval."""
    conn = await _connect(config, lazy=lazy)
    try:
        armed = conn._keepalive_timer
        assert armed is not None
        assert await round_trips(conn) == 20_000
        assert (conn._keepalive_timer is armed and not armed.cancelled()) is lazy
    finally:
        await _close(conn)
    assert shim_states()[KEEPALIVE].applied


async def test_gcm_shim_builds_no_key_schedule_per_packet(config, monkeypatch):
    """asyncssh's GCMCipher calls its module's AESGCM(key) for every packet; with the shim,
    a connection's packets build none."""
    conn = await _connect(config)
    built = []

    def counting_aesgcm(key: bytes) -> AESGCM:
        built.append(len(key))
        return AESGCM(key)

    monkeypatch.setattr(cipher, "AESGCM", counting_aesgcm)
    try:
        assert conn.get_extra_info("send_cipher") == "aes128-gcm@openssh.com"
        assert await round_trips(conn) == 20_000
    finally:
        await _close(conn)
    assert built == []
    assert shim_states()[GCM].applied


@pytest.mark.slow
async def test_gcm_key_schedules_belong_to_their_connection(config):
    """Two connections share no AESGCM; a closed one leaves no key behind (nothing
    process-wide caches them)."""
    first, second = await _connect(config), await _connect(config)
    try:
        ciphers = [e._cipher for c in (first, second) for e in (c._send_encryption, c._recv_encryption)]
        schedules = [c._netui_aesgcm for c in ciphers]
        assert all(type(s) is AESGCM for s in schedules)
        assert len({id(s) for s in schedules}) == 4
        await round_trips(first)
        assert cipher.AESGCM is AESGCM and not hasattr(cipher.AESGCM, "cache_info")
        keys = [c._key for c in ciphers[:2]]
        gone = [weakref.ref(c) for c in ciphers[:2]]
        del ciphers, schedules
    finally:
        await _close(first)
    del first
    gc.collect()
    assert [ref() for ref in gone] == [None, None]  # the ciphers, with their key schedules
    assert [sys.getrefcount(k) for k in keys] == [3, 3]  # the list, getrefcount's argument: nobody else
    await round_trips(second)  # the other connection carries on
    await _close(second)


async def test_packet_log_shim_describes_no_packet_unless_packet_logging_is_on(config, monkeypatch):
    """asyncssh hands its logger a description of every packet, dropped below debug level 3;
    with the shim none is made, and at level 3 they still come."""
    described = []
    packet = SSHLogger.packet

    def counting(self, *args, **kwargs):
        described.append(args[2] if len(args) > 2 else "")
        return packet(self, *args, **kwargs)

    monkeypatch.setattr(SSHLogger, "packet", counting)
    conn = await _connect(config)
    try:
        await round_trips(conn)
        assert described == []
        asyncssh.set_debug_level(3)
        try:
            await round_trips(conn, count=2)
        finally:
            asyncssh.set_debug_level(1)
        assert described  # packet logging on: every packet is described, as asyncssh does
    finally:
        await _close(conn)
    assert shim_states()[PACKET_LOG].applied


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.slow
def test_version_names_asyncssh_and_the_shims_that_applied():
    r = subprocess.run(["netui", "--version"], capture_output=True, text=True, env=_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("netui ")
    assert lines[1] == f"asyncssh {asyncssh.__version__}"
    assert lines[2:] == ["  shim keepalive: applied", "  shim aes-gcm-keys: applied", "  shim packet-log: applied"]


@pytest.mark.slow
def test_an_asyncssh_with_other_internals_still_works_without_the_shims_and_version_says_why(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tests.asyncssh_changed", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True, env=_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout)
    assert seen["echoed"] == 20_000 and seen["cipher"] == "aes128-gcm@openssh.com"  # SSH works as before
    assert seen["lazy_keepalive"] is False  # asyncssh's own timer
    assert seen["states"] == {
        "keepalive": [False, "SSHConnection._recv_data no longer uses _reset_keepalive_timer"],
        "aes-gcm-keys": [False, "asyncssh has no GCMCipher"],
        "packet-log": [False, "SSHPacketLogger._log_packet no longer uses logger, packet"],
    }
    r = subprocess.run([sys.executable, "-c", "import tests.asyncssh_changed, netui.cli; netui.cli.main(['--version'])"],
                       cwd=REPO, capture_output=True, text=True, env=_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[2:] == [
        "  shim keepalive: not applied (SSHConnection._recv_data no longer uses _reset_keepalive_timer)",
        "  shim aes-gcm-keys: not applied (asyncssh has no GCMCipher)",
        "  shim packet-log: not applied (SSHPacketLogger._log_packet no longer uses logger, packet)",
    ]
