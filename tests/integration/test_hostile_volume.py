"""Hostile volume: what one node may send is capped, and each cap has a node state naming it.

Each node is a session of a loopback asyncssh server (tests/echo_ssh.py) that plays the
liar: frames of 100,000 interfaces, a million fields, a flood of frames, of bytes or of
stderr, or nothing at all. Every scenario is bounded in bytes and time; traffic stays on
127.0.0.1.
"""

from __future__ import annotations

import asyncio
import resource
import time
from array import array

import asyncssh
import pytest

from netui.collectors.frames import encode_fields
MAX_IFACES = 4096  # protocol.MAX_IFACES, the cap these tests check
from netui.engine.monitor import Monitor
from netui.model.node import NodeState
from tests.echo_ssh import loopback_ssh_server, watch_scenarios

pytestmark = pytest.mark.slow


def netdev_frame(count: int) -> bytes:
    """A frame with ``count`` interfaces in its /proc/net/dev table (16 u64 counters each)."""
    names = " ".join(f"v{i:06d}" for i in range(count)).encode()
    counters = array("Q", bytes(8 * 16 * count)).tobytes()
    payload = encode_fields([("wall", repr(time.time()).encode()), ("mono", repr(time.monotonic()).encode()),
                             ("boot_id", b"b1"), ("hostname", b"liar"), ("netdev", names + b"\n" + counters)])
    return b"NETUI2 %d\n" % len(payload) + payload


def small_frame() -> bytes:
    return netdev_frame(2)


def fields_frame(count: int) -> bytes:
    """A frame of its clocks and ``count`` empty unknown fields (``x``), 3.6 MB at 600,000."""
    payload = encode_fields([("wall", repr(time.time()).encode()), ("mono", repr(time.monotonic()).encode())])
    payload += b"x\0\0\0\0\0" * count
    return b"NETUI2 %d\n" % len(payload) + payload


def blob_frame(size: int) -> bytes:
    """A well-formed frame of ``size`` bytes or so: its clocks, two interfaces, one big unknown field."""
    payload = netdev_frame(2)
    payload = payload[payload.index(b"\n") + 1:] + encode_fields([("blob", b"0" * size)])
    return b"NETUI2 %d\n" % len(payload) + payload


async def write(process: asyncssh.SSHServerProcess, data: bytes, stream=None) -> None:
    (stream or process.stdout).write(data)
    await (stream or process.stdout).drain()


async def liar(process: asyncssh.SSHServerProcess) -> None:
    scenario = process.get_extra_info("username")
    try:
        if scenario == "huge":  # a node of 100,000 interfaces: a 13.6 MB frame
            await write(process, netdev_frame(100_000))
        elif scenario == "wide":  # 5,000 interfaces: a frame within the size cap, beyond the interface cap
            for _ in range(20):
                await write(process, netdev_frame(5000))
                await asyncio.sleep(0.2)
        elif scenario == "fields":
            for _ in range(5):
                await write(process, fields_frame(600_000))
                await asyncio.sleep(0.2)
        elif scenario == "frames":  # thousands of small well-formed frames at once
            await write(process, small_frame() * 5000)
        elif scenario == "bytes":  # 3.9 MB frames, one after the other: 20 of them at most
            frame = blob_frame(3_900_000)
            for _ in range(20):
                await write(process, frame)
        elif scenario == "stderr":  # a flood of stderr (64 MB at most)
            await write(process, small_frame())
            chunk = b"E" * (256 << 10) + b"\n"
            for _ in range(256):
                if process.is_closing():
                    break
                await write(process, chunk, process.stderr)
        elif scenario == "silent":  # connects, never writes
            pass
        await process.stdin.read()  # hold the channel until the client closes it
        if not process.is_closing():
            process.exit(0)
    except (asyncssh.Error, OSError, BrokenPipeError):
        pass


@pytest.fixture
async def server(tmp_path):
    async with loopback_ssh_server(tmp_path, liar) as config:
        yield config


async def watch(config, scenarios: list[str], until, *, interval_s: float = 0.2, connect_timeout_s: float = 5,
                timeout_s: float = 60.0) -> Monitor:
    return await watch_scenarios(config, scenarios, until, interval_s=interval_s,
                                 connect_timeout_s=connect_timeout_s, timeout_s=timeout_s)


def failed(m: Monitor, name: str) -> bool:
    return m.fleet[name].state not in (NodeState.CONNECTING, NodeState.UP, NodeState.STALE)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_a_frame_over_the_size_cap_is_refused_by_its_header(server):
    before = peak_rss_mb()
    m = await watch(server, ["huge"], lambda m: failed(m, "huge"))
    node = m.fleet["huge"]
    assert node.state is NodeState.PARSE_ERROR, (node.state, node.error)
    assert "frame too large: 13.6 MB > 4 MiB" in node.error
    assert "retrying in" in node.error
    assert node.samples_seen == 0
    assert peak_rss_mb() - before < 500  # generous: the 13.6 MB frame was never decoded


async def test_interfaces_beyond_the_cap_are_cut_and_the_node_says_so(server):
    m = await watch(server, ["wide"], lambda m: m.fleet["wide"].samples_seen >= 2 or failed(m, "wide"))
    node = m.fleet["wide"]
    assert node.state is NodeState.UP, (node.state, node.error)
    assert len(node.sample.interfaces) == MAX_IFACES == 4096
    assert f"too many interfaces: 5000 > {MAX_IFACES} (first {MAX_IFACES} kept)" in node.error
    assert list(node.sample.interfaces)[-1] == f"v{MAX_IFACES - 1:06d}"  # the first ones, in order


async def test_a_frame_of_a_million_tiny_fields_is_refused(server):
    m = await watch(server, ["fields"], lambda m: failed(m, "fields"))
    node = m.fleet["fields"]
    assert node.state is NodeState.PARSE_ERROR, (node.state, node.error)
    assert "too many fields: more than 16384 in one frame" in node.error
    assert node.samples_seen == 0


async def test_a_flood_of_frames_ends_the_session(server):
    m = await watch(server, ["frames"], lambda m: failed(m, "frames"))
    node = m.fleet["frames"]
    assert node.state is NodeState.PARSE_ERROR, (node.state, node.error)
    assert "too many frames:" in node.error and "(at most 4 an interval)" in node.error
    # 50 intervals of 0.2 s in the 10 s window: 200 frames taken, the 201st ends it
    assert node.samples_seen == 200


async def test_more_bytes_than_an_interval_allows_end_the_session(server):
    # at 30 s, a window is 8 intervals: 8 × 8 MiB, passed by the 18th frame of 3.9 MB
    m = await watch(server, ["bytes"], lambda m: failed(m, "bytes"), interval_s=30)
    node = m.fleet["bytes"]
    assert node.state is NodeState.PARSE_ERROR, (node.state, node.error)
    assert "sending too much:" in node.error and "(at most 8 MiB an interval)" in node.error
    assert 10 <= node.samples_seen < 20


async def test_a_stderr_flood_ends_the_session_and_says_so(server):
    m = await watch(server, ["stderr"], lambda m: failed(m, "stderr"))
    node = m.fleet["stderr"]
    assert node.state is NodeState.DOWN, (node.state, node.error)
    assert "stderr flood:" in node.error and "(at most 64 KiB an interval)" in node.error


async def test_a_node_that_connects_and_never_writes_is_down_within_the_connect_timeout(server):
    m = await watch(server, ["silent"], lambda m: failed(m, "silent"), connect_timeout_s=1.5, timeout_s=30)
    node = m.fleet["silent"]
    assert node.state is NodeState.DOWN, (node.state, node.error)
    assert "no first sample in 1.5 s" in node.error
    assert "retrying in" in node.error
