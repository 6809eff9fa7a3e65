"""Hostile numbers from nodes: clocks that hardly move or are NaN, counters of ±1.7e308, jumps
to 2⁶⁴−1, negative counters. Real parts: frames as the remote sampler packs them through the
real decoder (and over real SSH on 127.0.0.1 into ``netui record``), a real HTTP server on
127.0.0.1 playing node_exporter for ``netui snapshot``, and ``netui export`` of what was
recorded. Every rate stays a finite number within what the link carries, or unknown; the
node with impossible numbers says so in its state; the other nodes go on, recorded.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
import os
import re
import struct
import time
from contextlib import AsyncExitStack
from pathlib import Path

import asyncssh
import pytest
from aiohttp import web

from netui.collectors.frames import FrameDecoder, encode_fields
from netui.engine.monitor import Monitor
from netui.engine.recording.codec import header_record, sample_record
from netui.engine.recording.reader import read_records
from netui.engine.recording.writer import RecordingWriter
from netui.model.limits import MAX_LINK_BYTES_PER_S, link_ceiling_bytes_per_s
from netui.model.node import NodeState
from tests.command import netui, netui_async
from tests.echo_ssh import loopback_ssh_server
from tests.factories import make_iface, make_sample
from tests.prometheus_api import served
from tests.synth import ScriptedSource, node_sample

REPO = Path(__file__).resolve().parents[2]
U64 = (1 << 64) - 1
SPEED_MBPS = 100_000
TOP = link_ceiling_bytes_per_s(SPEED_MBPS)  # 10 × 100 Gbit/s in bytes/s
# eth0 as the sampler describes it (mtu, operstate, carrier, speed, ifindex, type, device path)
IF_RECORD = encode_fields([("if/eth0", b"\x1f".join([b"9000\n", b"up\n", b"1\n", b"%d\n" % SPEED_MBPS, b"3\n",
                                                     b"1\n", b"../../devices/pci0000:00/net/eth0", b"\x1e",
                                                     b"\x1e", b""]))])


def payload(wall: bytes, mono: bytes, rx_bytes: int = 0) -> bytes:
    """A sampler frame's payload: the node's clocks as it writes them, eth0's 16 u64 counters."""
    counters = struct.pack("=16Q", rx_bytes, *([0] * 15))
    return encode_fields([("wall", wall), ("mono", mono), ("netdev", b"eth0\n" + counters)]) + IF_RECORD


def framed(p: bytes) -> bytes:
    return b"NETUI2 %d\n" % len(p) + p


def finite_or_none(values) -> bool:
    return all(v is None or math.isfinite(v) for v in values)


def fleet_of(*names: str) -> Monitor:
    return Monitor([ScriptedSource(n, lambda step: node_sample(step)) for n in names], interval_s=1.0)


# --- frames through the real decoder ---------------------------------------------------------------


def test_frames_whose_clock_advances_by_1e_300_s_give_no_infinite_rate():
    m = fleet_of("liar")
    decode = FrameDecoder().decode
    for step in range(5):  # 0, 1e-300, 2e-300 … s: 10⁹ bytes in 1e-300 s was infinity
        m.observe("liar", decode(payload(b"1700000000.0", repr(step * 1e-300).encode(), 10**9 * step)))
    node = m.fleet["liar"]
    assert node.state is NodeState.IMPOSSIBLE and "advanced" in node.error
    assert finite_or_none(node.summary) and node.rates is None
    assert all(v is None or math.isfinite(v) for v in node.history.table.column("rx_bytes_per_s"))


def test_a_frame_with_wall_nan_is_that_nodes_parse_error_and_the_next_good_frame_is_taken():
    m = fleet_of("liar", "good")
    decode = FrameDecoder().decode
    m.observe("liar", decode(payload(b"1700000000.0", b"10.0")))
    for wall in (b"nan", b"inf", b"-inf", b"1e400"):
        m.observe("liar", decode(payload(wall, b"11.0", 100)))
        node = m.fleet["liar"]
        assert node.state is NodeState.PARSE_ERROR and "is not a time" in node.error, (wall, node.error)
        assert m.fleet["good"].state is not NodeState.PARSE_ERROR
    m.observe("liar", decode(payload(b"1700000002.0", b"12.0", 2000)))
    assert m.fleet["liar"].state is NodeState.UP and m.fleet["liar"].summary.rx_bytes_per_s == 1000.0


def test_counters_jumping_to_2_64_minus_1_and_back_give_no_rate_above_the_link():
    m = fleet_of("jumps")
    decode = FrameDecoder().decode
    rates = []
    for step, rx in enumerate((0, 10**9, U64, 5, 10**9 + 5)):
        m.observe("jumps", decode(payload(b"%d.0" % (1700000000 + step), b"%d.0" % step, rx)))
        node = m.fleet["jumps"]
        assert node.state is NodeState.UP
        rates.append(node.summary.rx_bytes_per_s)
    assert rates == [None, 10**9, None, None, 10**9]  # was 1.8e19 B/s, then 0


def test_the_recorder_refuses_one_nodes_bad_sample_and_records_the_others(tmp_path):
    """A sample the reader would refuse (NaN that reached the writer) is that node's alone."""
    m = fleet_of("liar", "good")
    path = tmp_path / "run.ndjson.gz"
    recorder = m.start_recording(path)
    bad = make_sample(1.0, make_iface(rx_bytes=1))
    object.__setattr__(bad, "hostname", float("nan"))  # a number no JSON reader takes, past the model's checks
    for step in range(3):
        m.observe("good", node_sample(step))
        m.observe("liar", bad)
        recorder.tick(m.fleet)
    m.stop_recording()
    assert recorder.error is None and recorder.skipped == 3
    assert m.fleet["liar"].state is NodeState.IMPOSSIBLE and "NaN" in m.fleet["liar"].error
    recs = list(read_records(path))
    assert [r["node"] for r in recs if r["type"] == "sample"] == ["good"] * 3
    assert sum(r["type"] == "tick" for r in recs) == 3


# --- node_exporter on 127.0.0.1 --------------------------------------------------------------------

SCRAPE = (REPO / "tests" / "data" / "node_exporter" / "lab-node2-full.prom").read_bytes()
ETH0_RX = b'node_network_receive_bytes_total{device="eth0"} 3268'


@pytest.fixture
async def exporters():
    """Ports of two node_exporters: "liar" (counters of ±1.7e308, a clock of NaN) and "good"."""
    hits = {"liar": 0, "good": 0}

    def app(kind: str) -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            hits[kind] += 1
            n = hits[kind]
            body = SCRAPE.replace(b"node_time_seconds 1.7960060724266322e+09",
                                  f"node_time_seconds {time.time()!r}".encode())
            if kind == "liar":
                value = b"1.7e308" if n % 2 else b"-1.7e308"
                body = body.replace(ETH0_RX, b'node_network_receive_bytes_total{device="eth0"} ' + value)
                body = re.sub(rb"\nnode_netstat_Tcp_OutSegs \S+", b"\nnode_netstat_Tcp_OutSegs 1e300", body)
                body = re.sub(rb"node_time_seconds \S+", b"node_time_seconds NaN", body)
            else:
                body = body.replace(ETH0_RX, b'node_network_receive_bytes_total{device="eth0"} %d' % (1000 * n))
            return web.Response(body=body, content_type="text/plain")

        a = web.Application()
        a.router.add_get("/metrics", handle)
        return a

    async with AsyncExitStack() as servers:
        yield {kind: await servers.enter_async_context(served(app(kind), address))
               for kind, address in (("liar", "127.0.0.1"), ("good", "127.0.0.2"))}


def no_long_digits(text: str) -> bool:
    return re.search(r"\d{25}", text) is None


@pytest.mark.slow
async def test_snapshot_of_a_node_exporter_with_counters_of_1_7e308_says_impossible_numbers(exporters):
    hosts = [f"127.0.0.1:{exporters['liar']}", f"127.0.0.2:{exporters['good']}"]
    names = ["127.0.0.1", "127.0.0.2"]  # (a node is named by its host)
    code, out, err = await netui_async("snapshot", "--source", "node-exporter", "--interval", "0.3", *hosts)
    assert code == 1 and "Traceback" not in err, err  # 1: a node is not up
    assert no_long_digits(out) and "inf" not in out.replace("info", ""), out
    liar = next(line for line in out.splitlines() if line.startswith(names[0] + ":"))
    assert "impossible numbers" in liar and "is not a counter" in liar, out
    code, out, err = await netui_async("snapshot", "--json", "--source", "node-exporter", "--interval", "0.3", *hosts)
    doc = json.loads(out)
    states = {n["name"]: n["state"] for n in doc["nodes"]}
    assert states == {names[0]: "impossible numbers", names[1]: "up"}, states


@pytest.mark.slow
async def test_recording_a_node_exporter_with_impossible_numbers_records_the_other_and_exports(exporters, tmp_path):
    hosts = [f"127.0.0.1:{exporters['liar']}", f"127.0.0.2:{exporters['good']}"]
    names = ["127.0.0.1", "127.0.0.2"]
    rec = tmp_path / "run.ndjson.gz"
    code, _, err = await netui_async("record", "-o", str(rec), "--count", "5", "--interval", "0.3",
                                   "--source", "node-exporter", *hosts)
    assert code == 0 and "Traceback" not in err and "stopped" not in err, err
    recs = list(read_records(rec))
    sampled = {r["node"] for r in recs if r["type"] == "sample"}
    assert sampled == {names[1]}, sampled  # the liar's samples were refused, the good node's recorded
    states = [r for r in recs if r["type"] == "state" and r["node"] == names[0]]
    assert states and states[-1]["state"] == "impossible numbers", states
    for fmt in ("json", "csv", "prom"):
        code, out, err = await netui_async("export", "--format", fmt, str(rec))
        assert code == 0 and "Traceback" not in err, (fmt, err)


# --- a recording that an older netui wrote with ±1.7e308 counters ----------------------------------


def test_a_recording_of_counters_of_1_7e308_exports_in_every_format_without_a_traceback(tmp_path):
    path = tmp_path / "old.ndjson.gz"
    w = RecordingWriter(path, header_record(1.7e9, hosts=["liar", "good"], interval_s=1.0))
    for step in range(4):
        t = 1.7e9 + step
        rx = 1.7e308 if step % 2 else -1.7e308  # finite JSON numbers: the reader takes them
        w.write(sample_record(t, "liar", make_sample(float(step), make_iface(rx_bytes=rx, speed_mbps=SPEED_MBPS),
                                                     wall_s=t)))
        w.write(sample_record(t, "good", make_sample(float(step), make_iface(rx_bytes=1000 * step), wall_s=t)))
        w.write({"type": "tick", "t": t})
        w.sync()
    w.close()
    for fmt in ("json", "csv", "prom"):
        r = netui("export", "--format", fmt, str(path))
        assert r.returncode == 0 and "Traceback" not in r.stderr, (fmt, r.stderr)
        assert "inf" not in r.stdout.lower().replace("info", ""), fmt
        if fmt == "json":
            doc = json.loads(r.stdout)
            last = {n["name"]: n for n in doc["intervals"][-1]["nodes"]}
            assert last["liar"]["state"] == "impossible numbers" and last["good"]["state"] == "up"


# --- over real SSH into `netui record` ---------------------------------------------------------------


async def sampler(process: asyncssh.SSHServerProcess) -> None:
    """The node's sampler, lying as its login name says: "nan" (wall=nan), "tiny" (a clock
    advancing 1e-300 s a frame), "jumps" (0 → 1e9 → 2⁶⁴−1 → 5 …); "good" tells the truth."""
    scenario = process.get_extra_info("username")
    try:
        for step in range(200):  # bounded: 200 frames, 0.1 s apart
            mono = time.monotonic()
            if scenario == "nan":
                p = payload(b"nan", repr(mono).encode(), 1000 * step)
            elif scenario == "tiny":
                p = payload(repr(time.time()).encode(), repr(step * 1e-300).encode(), 10**9 * step)
            elif scenario == "jumps":
                rx = (0, 10**9, U64, 5)[step % 4]
                p = payload(repr(time.time()).encode(), repr(mono).encode(), rx)
            else:
                p = payload(repr(time.time()).encode(), repr(mono).encode(), 1000 * step)
            process.stdout.write(framed(p))
            await process.stdout.drain()
            await asyncio.sleep(0.1)
        process.exit(0)
    except (asyncssh.Error, OSError, BrokenPipeError):
        pass


@pytest.mark.slow
async def test_netui_record_over_ssh_goes_on_for_every_node_while_liars_are_refused(tmp_path):
    async with loopback_ssh_server(tmp_path / "ssh", sampler) as config:
        rec = tmp_path / "run.ndjson.gz"
        hosts = ["nan@n1", "tiny@n2", "jumps@n3", "good@n4"]  # the login name is the scenario
        code, _, err = await netui_async("record", "-F", str(config), "-o", str(rec), "--count", "8",
                                       "--interval", "0.3", *hosts)
    assert code == 0 and "Traceback" not in err and "stopped" not in err, err
    recs = list(read_records(rec))
    samples = [r for r in recs if r["type"] == "sample"]
    by_node = {n: [r["sample"] for r in samples if r["node"] == n] for n in ("n1", "n2", "n3", "n4")}
    counts = {n: len(s) for n, s in by_node.items()}
    assert not by_node["n1"] and len(by_node["n2"]) == 1 and len(by_node["n4"]) >= 5, counts
    assert len(by_node["n3"]) >= 5, counts  # 2⁶⁴−1 is a counter: its rate is what is refused
    state = last_states(recs)
    assert state["n1"][0] == "parse error" and "wall=nan is not a time" in state["n1"][1], state
    assert state["n2"][0] == "impossible numbers" and "less than 1 ms" in state["n2"][1], state
    assert state["n3"][0] == state["n4"][0] == "up", state
    assert sum(r["type"] == "state" and r["node"] == "n2" for r in recs) <= 3  # not one record a sample
    code, out, err = await netui_async("export", "--format", "json", str(rec))
    assert code == 0 and "Traceback" not in err, err
    doc = json.loads(out)
    shown = 0
    for frame in doc["intervals"]:
        for n in frame["nodes"]:
            for i in n["interfaces"]:
                for key in ("rx_bits_per_s", "tx_bits_per_s", "rx_packets_per_s"):
                    v = i["rates"][key]
                    assert v is None or 0 <= v <= TOP * 8, (n["name"], key, v)
                    shown += v is not None
    assert shown > 10
    code, out, err = await netui_async("export", "--format", "csv", str(rec))
    assert code == 0 and "Traceback" not in err
    for line in out.splitlines()[1:]:
        _, node, _, metric, value = line.split(",")
        if metric.endswith("bytes_per_s"):
            assert float(value) <= MAX_LINK_BYTES_PER_S * 10, line  # never 1.8e19 B/s


def last_states(recs) -> dict:
    out = {}
    for r in recs:
        if r["type"] == "state":
            out[r["node"]] = (r["state"], r.get("reason") or "")
    return out
