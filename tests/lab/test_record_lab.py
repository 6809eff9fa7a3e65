"""Recording the lab: a real `netui record` killed with SIGKILL mid-run, and replay giving
the live rates back exactly."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
import zlib

import pytest

from netui.engine.recording.reader import read_records
from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from tests.lab.watch import iperf3_servers, monitor_for, started, wait_for

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")


def traffic(lab, seconds: int, port: int) -> None:
    """node1 → node2 and node3 → node4, iperf3 for ``seconds`` on ``port`` (each test its own:
    the lab's processes of a test end at its own pace)."""
    n1, n2, n3, n4 = lab.nodes
    iperf3_servers([n2, n4], port)
    n1.popen(["iperf3", "-c", n2.address, "-p", str(port), "-t", str(seconds)])
    n3.popen(["iperf3", "-c", n4.address, "-p", str(port), "-t", str(seconds), "-b", "2G"])


def complete_lines(data: bytes) -> list[bytes]:
    """What zcat would give of a file cut anywhere: the complete lines."""
    out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
    return out.split(b"\n")[:-1]


def test_netui_record_killed_with_sigkill_leaves_every_complete_sample_readable(lab, tmp_path):
    path = tmp_path / "lab.ndjson.gz"
    traffic(lab, 12, 5301)
    record = subprocess.Popen([sys.executable, "-m", "netui", "record", "-o", str(path), "--interval", "0.5",
                               "-F", str(lab.ssh_config), lab.host_pattern()],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=dict(os.environ, TMPDIR=str(tmp_path)))  # its temp files die with the test
    try:
        deadline = time.monotonic() + 20
        ticks = 0
        while time.monotonic() < deadline:  # ~10 s of recording: 20 ticks at 0.5 s
            time.sleep(0.5)
            if path.exists():
                ticks = sum(1 for r in read_records(path) if r["type"] == "tick")
            if ticks >= 20:
                break
        assert ticks >= 20, record.stderr.read1().decode() if record.poll() is not None else f"{ticks} ticks"
        os.kill(record.pid, signal.SIGKILL)
        record.wait(timeout=10)
        assert record.returncode == -signal.SIGKILL
    finally:
        if record.poll() is None:
            record.kill()
            record.wait()
    data = path.read_bytes()
    notes: list[str] = []
    records = list(read_records(path, notes))
    # every complete line of the stream is a record that parses, in order
    assert len(records) == len([line for line in complete_lines(data) if line.strip()])
    assert records[0]["type"] == "header" and records[0]["hosts"] == ["node1", "node2", "node3", "node4"]
    samples = [r for r in records if r["type"] == "sample"]
    by_node: dict[str, list] = {}
    for r in samples:
        by_node.setdefault(r["node"], []).append(r["sample"])
    assert sorted(by_node) == ["node1", "node2", "node3", "node4"]
    for name, got in by_node.items():
        assert len(got) >= 12, (name, len(got))  # 20 ticks, the first ones connecting
        clocks = [s.mono_s for s in got]
        assert clocks == sorted(clocks)
        gaps = [b - a for a, b in zip(clocks, clocks[1:])]
        assert max(gaps) < 1.5, (name, gaps)  # no sample missing in the middle
    # the same file cut anywhere (as a kill in the middle of a write cuts it): a prefix of it
    cut = tmp_path / "cut.ndjson.gz"
    for offset in range(0, len(data), max(1, len(data) // 60)):
        cut.write_bytes(data[:offset])
        got = [r["type"] for r in read_records(cut)]
        assert got == [r["type"] for r in records[:len(got)]]
    ups = [r for r in records if r["type"] == "state" and r["state"] == "up"]
    assert sorted(r["node"] for r in ups) == ["node1", "node2", "node3", "node4"]
    # and it replays: the iperf3 traffic is there in the rates computed again
    replay = ReplayMonitor(load(path))
    replay.seek(replay.recording.end_t)
    assert replay.position == len(replay.recording.frames)
    tx = [x for x in replay.fleet["node1"].history["tx_bytes_per_s"].values() if x is not None]
    assert max(tx) * 8 > 1e9, tx


async def test_replayed_rates_equal_the_live_ones_interval_by_interval(lab, tmp_path):
    path = tmp_path / "live.ndjson.gz"
    await asyncio.to_thread(traffic, lab, 8, 5302)
    live: list[tuple] = []
    m = monitor_for(lab, interval_s=0.5)
    m.on_sample = lambda name, sample: live.append((name, sample.mono_s, m.fleet[name].rates,
                                                     m.fleet[name].summary, m.fleet[name].health))
    recorder = m.start_recording(path)
    task = await started(m)
    try:
        await wait_for(lambda: recorder.ticks >= 16 and all(n.samples_seen >= 12 for n in m.fleet), 20,
                       "12 samples a node", m)
    finally:
        await m.close()
        task.cancel()
    assert recorder.error is None

    replay = ReplayMonitor(load(path))
    replayed: list[tuple] = []
    replay.on_sample = lambda name, sample: replayed.append((name, sample.mono_s, replay.fleet[name].rates,
                                                             replay.fleet[name].summary, replay.fleet[name].health))
    while not replay.at_end:
        await replay.tick()

    assert len(replayed) == len(live) == recorder.samples
    busy = 0
    for a, b in zip(live, replayed):
        assert a == b  # same node, same sample, same rates, summary and health: exactly
        if a[2] is not None and (a[3].tx_bytes_per_s or 0) * 8 > 1e9:
            busy += 1
    assert busy >= 4  # the traffic was measured, not just quiet intervals


def test_a_node_that_is_down_is_recorded_and_replays_down_with_its_reason(lab, tmp_path):
    path = tmp_path / "down.ndjson.gz"
    lab.node(3).stop_sshd()
    r = subprocess.run([sys.executable, "-m", "netui", "record", "-o", str(path), "--count", "12", "--interval", "0.5",
                        "--connect-timeout", "3", "-F", str(lab.ssh_config), lab.host_pattern()],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    states = [(x["node"], x["state"], x["reason"]) for x in read_records(path) if x["type"] == "state"]
    assert ("node3", "down") in [(n, s) for n, s, _ in states]
    replay = ReplayMonitor(load(path))
    replay.seek(replay.recording.end_t)
    node3 = replay.fleet["node3"]
    assert node3.state.value == "down" and "connection refused" in node3.error
    assert [replay.fleet[f"node{k}"].state.value for k in (1, 2, 4)] == ["up"] * 3
    assert any(e.record["type"] == "state" and e.record["node"] == "node3" for e in replay.events)
