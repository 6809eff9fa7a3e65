"""SshSource's frame splitting (SamplerSession) and keepalive, over real SSH on 127.0.0.1.

A real asyncssh server plays the node: each scenario (chosen by the host alias the client
connects to, sent as the login name) writes the bytes a sampler might — frames cut over
several SSH packets, several frames in one packet, garbage, a frame cut short, a missing
python3 — and the node must end in the state that says so. The keepalive test freezes the
fake fleet's server process (SIGSTOP): no FIN, no data, no keepalive reply.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import asyncssh
import pytest

from netui.collectors.ssh import SshSource

from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.engine.monitor import Monitor
from netui.model.node import NodeState
from tests.bench.fake_fleet import NodeFrames, node_name, write_client_files, write_keys
from tests.echo_ssh import loopback_ssh_server, watch_scenarios

FRAMES = NodeFrames()


def frame(step: int) -> bytes:
    return FRAMES.frame(step, time.time(), time.monotonic())


async def _write(process: asyncssh.SSHServerProcess, data: bytes) -> None:
    process.stdout.write(data)
    await process.stdout.drain()
    await asyncio.sleep(0.05)  # a separate SSH packet for what comes next


async def node(process: asyncssh.SSHServerProcess) -> None:
    scenario = process.get_extra_info("username")
    try:
        if scenario == "split":  # 5 frames: one in three packets, one whole, then three in one packet
            one = frame(0)
            for piece in (one[:5], one[5:4000], one[4000:]):
                await _write(process, piece)
            await _write(process, frame(1))
            await _write(process, frame(2) + frame(3) + frame(4))
            await process.stdin.read()  # hold the channel until the client closes it
        elif scenario == "garbage":
            await _write(process, b"HELLO 12\nsomething else\n")
            await process.stdin.read()
        elif scenario == "noheader":
            await _write(process, b"x" * 200)
            await process.stdin.read()
        elif scenario == "badpayload":
            await _write(process, frame(0) + b"NETUI2 10\n0123456789")
            await process.stdin.read()
        elif scenario == "cut":
            whole = frame(0) + frame(1)
            await _write(process, whole[: len(whole) - 100])
            process.exit(0)
            return
        elif scenario == "nopython":
            process.stderr.write(b"netui: no python3 on this node\n")
            process.exit(127)
            return
        elif scenario == "exits":
            await _write(process, frame(0))
            process.stderr.write(b"Traceback ...\nOSError: something broke\n")
            process.exit(5)
            return
        if not process.is_closing():
            process.exit(0)
    except (asyncssh.Error, OSError):
        pass


@pytest.fixture
async def server(tmp_path):
    async with loopback_ssh_server(tmp_path, node) as config:
        yield config


async def run_scenarios(config, scenarios: list[str], until, timeout_s: float = 10.0) -> Monitor:
    return await watch_scenarios(config, scenarios, until, timeout_s=timeout_s)


async def test_no_compression_even_when_ssh_config_asks_for_it(server):
    """asyncssh's server accepts zlib@openssh.com; `Compression yes` must not turn it on."""
    server.write_text(server.read_text() + "  Compression yes\n")
    connector = SshConnector(SshSettings(config_paths=[str(server)], connect_timeout_s=5))
    conn = await connector.connect("127.0.0.1", "split", None)
    try:
        assert (conn.get_extra_info("recv_compression"), conn.get_extra_info("send_compression")) == ("none", "none")
        assert conn.get_extra_info("recv_cipher") == "aes128-gcm@openssh.com"
    finally:
        conn.close()
        await connector.close()


@pytest.mark.slow
async def test_frames_over_several_packets_and_several_in_one_packet_all_arrive(server):
    m = await run_scenarios(server, ["split"], lambda m: m.fleet["split"].samples_seen >= 5)
    node = m.fleet["split"]
    assert node.samples_seen == 5, (node.state, node.error)
    assert node.state is NodeState.UP


def test_keeping_gcm_keys_gives_the_same_bytes():
    """A cipher's own AESGCM encrypts and decrypts exactly as a fresh one per packet."""
    from asyncssh.crypto import GCMCipher
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from netui.collectors.asyncssh_shims import keep_gcm_keys

    assert keep_gcm_keys() and keep_gcm_keys()  # once, and idempotent
    key, iv = os.urandom(16), os.urandom(12)
    send, recv = GCMCipher("aes128-gcm", key, iv), GCMCipher("aes128-gcm", key, iv)
    for n in range(3):
        header, body = b"\0\0\0\x10", os.urandom(100 + n)
        sealed, mac = send.encrypt_and_sign(header, body)
        nonce = iv[:4] + (int.from_bytes(iv[4:], "big") + n).to_bytes(8, "big")
        assert sealed[4:] + mac == AESGCM(key).encrypt(nonce, body, header)  # what a fresh key schedule gives
        assert recv.verify_and_decrypt(header, sealed[4:], mac) == body
    assert recv.verify_and_decrypt(b"\0\0\0\x10", b"x" * 20, b"y" * 16) is None  # a bad tag is still refused


FAILURES = {
    "garbage": (NodeState.PARSE_ERROR, "not a sampler frame"),
    "noheader": (NodeState.PARSE_ERROR, "not a sampler frame"),
    "badpayload": (NodeState.PARSE_ERROR, "bad frame: not a field key"),
    "cut": (NodeState.PARSE_ERROR, "stream ended inside a frame"),
    "nopython": (NodeState.UNSUPPORTED, "no python3 on this node"),
    "exits": (NodeState.DOWN, "sampler exited (status 5): OSError: something broke"),
}


@pytest.mark.slow
async def test_bad_streams_and_ended_samplers_give_their_node_state_and_reason(server):
    def settled(m: Monitor) -> bool:
        return all(m.fleet[s].state is state for s, (state, _) in FAILURES.items())

    m = await run_scenarios(server, list(FAILURES), settled)
    for scenario, (state, words) in FAILURES.items():
        node = m.fleet[scenario]
        assert (node.state, words in (node.error or "")) == (state, True), (scenario, node.error)
    assert m.fleet["badpayload"].samples_seen == 1  # the good frame before the bad one counted
    assert m.fleet["cut"].samples_seen == 1


@pytest.mark.slow
@pytest.mark.parametrize("lazy", [True, False])
async def test_a_frozen_server_is_down_within_the_keepalive_window(tmp_path, lazy):
    """SIGSTOP on the server: no data, no FIN, no keepalive reply. Down after the interval
    plus keepalive_count_max unanswered requests (1 s + 3 × 1 s here), with the lazy
    keepalive timer as with asyncssh's own."""
    from tests.bench.bench_fleet import FleetServer

    write_keys(tmp_path)
    with FleetServer(tmp_path) as fleet:
        config = write_client_files(tmp_path, 1, fleet.port)
        connector = SshConnector(SshSettings(config_paths=[str(config)], keepalive_s=1.0,
                                             backoff_first_s=60, backoff_max_s=60))
        connector.lazy_keepalive = lazy
        name = node_name(0)
        source = SshSource(name, name, connector)
        monitor = Monitor([source], interval_s=1.0, history_s=30, connector=connector)
        task = asyncio.ensure_future(monitor.run())
        node = monitor.fleet[name]
        try:
            for _ in range(100):
                if node.samples_seen >= 2:
                    break
                await asyncio.sleep(0.1)
            assert node.state is NodeState.UP, node.error
            # the lazy timer is what is tested (an asyncssh whose internals changed would not take it)
            assert ("_keepalive_timer_callback" in vars(source.connection)) is lazy
            os.kill(fleet.proc.pid, signal.SIGSTOP)
            t0 = time.monotonic()
            try:
                while node.state is not NodeState.DOWN and time.monotonic() - t0 < 10:
                    await asyncio.sleep(0.1)
                took = time.monotonic() - t0
            finally:
                os.kill(fleet.proc.pid, signal.SIGCONT)
            assert node.state is NodeState.DOWN, (node.state, node.error)
            assert "keepalive" in node.error
            assert 2.5 <= took <= 6.0, took  # last data ≤ 1 s before the freeze, then 1 + 3 × 1 s
        finally:
            await asyncio.wait_for(monitor.close(), timeout=10)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def test_packets_are_described_only_when_packet_logging_is_on(caplog):
    """quiet_packet_log: asyncssh's packet log line still comes at debug level 3."""
    import logging

    import asyncssh
    from asyncssh.logging import logger as ssh_logger
    from asyncssh.packet import SSHPacket, SSHPacketLogger

    from netui.collectors.asyncssh_shims import quiet_packet_log

    assert quiet_packet_log() and quiet_packet_log()

    looked_up = []

    class Names(dict):
        def __getitem__(self, key):
            looked_up.append(key)
            return super().__getitem__(key)

    class Handler(SSHPacketLogger):
        _handler_names = Names({94: "MSG_CHANNEL_DATA"})

        @property
        def logger(self):
            return ssh_logger.get_child("conn")

    packet = SSHPacket(b"\x5e" + bytes(100))
    with caplog.at_level(logging.DEBUG, logger="asyncssh"):
        Handler().log_received_packet(94, 7, packet)
        assert not [r for r in caplog.records if "MSG_CHANNEL_DATA" in r.getMessage()]
        assert looked_up == []  # not even described
        asyncssh.set_debug_level(3)
        try:
            Handler().log_received_packet(94, 7, packet)
        finally:
            asyncssh.set_debug_level(1)
    assert [r for r in caplog.records if "Received MSG_CHANNEL_DATA (94), 101 bytes" in r.getMessage()]


@pytest.mark.slow
async def test_the_fake_fleet_sends_the_per_cpu_tables_as_the_sampler_does(tmp_path):
    """bench_fleet's nodes send the tables' sums, and the tables too when asked (--detail,
    "d 1"): its figures are those of what a sampler sends."""
    from tests.bench.bench_fleet import FleetServer

    write_keys(tmp_path)
    with FleetServer(tmp_path) as fleet:
        config = write_client_files(tmp_path, 2, fleet.port)
        connector = SshConnector(SshSettings(config_paths=[str(config)], backoff_first_s=60, backoff_max_s=60))
        names = [node_name(0), node_name(1)]
        sources = [SshSource(n, n, connector) for n in names]
        monitor = Monitor(sources, interval_s=0.25, history_s=30, connector=connector)
        monitor.want_detail([names[0]], True)  # before it connects: --detail
        task = asyncio.ensure_future(monitor.run())
        nodes = monitor.fleet.nodes
        try:
            for _ in range(100):
                if all(nodes[n].samples_seen >= 3 for n in names):
                    break
                await asyncio.sleep(0.1)
            a, b = (nodes[n].sample for n in names)
            assert len(a.cpu.cpus) == 128 and a.cpu_sums.ncpus == 128
            assert b.cpu is None and b.cpu_sums.ncpus == 128
            assert nodes[names[1]].summary.hottest_cpu is not None  # the sums' "since" is the frame before's clock
            monitor.want_detail([names[1]], True)
            # (the frames already on their way when it was asked do not have it: waited for)
            for _ in range(100):
                if nodes[names[1]].sample.cpu is not None:
                    break
                await asyncio.sleep(0.1)
            assert nodes[names[1]].sample.cpu is not None
        finally:
            await asyncio.wait_for(monitor.close(), timeout=10)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


@pytest.mark.slow
async def test_closing_the_monitor_ends_a_node_stuck_in_its_handshake():
    """A node that accepts TCP but never speaks SSH: closing must not wait for it."""
    import socket
    import time

    from netui.collectors.ssh import SshSource

    from netui.collectors.ssh_connect import SshConnector
    from netui.engine.monitor import Monitor

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the TCP handshake; nobody ever answers
    port = silent.getsockname()[1]
    try:
        connector = SshConnector(SshSettings(config_paths=["/dev/null"], connect_timeout_s=30))
        m = Monitor([SshSource("quiet", "127.0.0.1", connector, port=port)], interval_s=0.5)
        task = asyncio.ensure_future(m.run())
        await asyncio.sleep(0.5)
        assert m.fleet["quiet"].state is NodeState.CONNECTING
        t0 = time.monotonic()
        await asyncio.wait_for(m.close(), timeout=5)
        assert time.monotonic() - t0 < 2
        task.cancel()
    finally:
        silent.close()
