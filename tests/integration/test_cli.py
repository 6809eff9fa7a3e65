"""The command line on this machine: snapshot, record/replay, captured trees, bad input."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.command import netui
from tests.testdata import PROCFS, data_path


def loopback_transfer(total_bytes: int, max_s: float) -> int:
    """Send up to ``total_bytes`` over 127.0.0.1 for at most ``max_s`` seconds; return bytes sent."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    received = 0

    def sink():
        nonlocal received
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(1 << 20):
                received += len(data)

    t = threading.Thread(target=sink, daemon=True)
    t.start()
    chunk = b"x" * (1 << 20)
    sent = 0
    deadline = time.monotonic() + max_s
    with socket.create_connection(server.getsockname(), timeout=5) as c:
        while sent < total_bytes and time.monotonic() < deadline:
            c.sendall(chunk)
            sent += len(chunk)
    t.join(5)
    server.close()
    return sent


def lo_rx_bytes() -> int:
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[0])
    raise AssertionError("no lo in /proc/net/dev")


@pytest.mark.slow
def test_snapshot_json_on_this_machine_sees_real_interfaces_and_loopback_bytes():
    before = lo_rx_bytes()
    sent = loopback_transfer(32 << 20, max_s=5)
    assert sent >= 8 << 20
    result = netui("snapshot", "--json", "--interval", "0.5")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    (node,) = doc["nodes"]
    assert node["state"] == "up" and node["error"] is None
    names = {i["name"] for i in node["interfaces"]}
    assert names == set(os.listdir("/sys/class/net"))
    lo = next(i for i in node["interfaces"] if i["name"] == "lo")
    assert lo["counters"]["rx_bytes"] >= before + sent
    assert lo["hidden"] is True and lo["mtu"] == 65536
    for i in node["interfaces"]:
        assert set(i["counters"]) >= {"rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors",
                                      "tx_errors", "rx_dropped", "tx_dropped"}
        for key, value in i["rates"].items():
            assert value is None or value >= 0, (i["name"], key, value)
    assert node["tcp"]["counters"]["RetransSegs"] >= 0
    assert set(node["tcp"]["rates"]) >= {"retrans_segs_per_s", "retrans_ratio"}
    assert len(node["cpus"]) == os.cpu_count()
    assert {"cpu", "softirq_percent", "net_rx_per_s", "net_tx_per_s"} <= set(node["cpus"][0])
    assert {"cpu", "processed", "dropped", "time_squeeze"} <= set(node["softnet"][0])
    assert node["health"]["level"] in ("ok", "careful", "warning", "critical")


@pytest.mark.slow
def test_snapshot_rates_see_traffic_flowing_during_the_interval():
    proc = subprocess.Popen([sys.executable, "-m", "netui", "snapshot", "--json", "--interval", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # traffic for the whole window (bounded: at most 4 s and 4 GiB)
        loopback_transfer(4 << 30, max_s=4)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    lo = next(i for i in json.loads(out)["nodes"][0]["interfaces"] if i["name"] == "lo")
    assert lo["rates"]["rx_bits_per_s"] > 10e6
    assert lo["rates"]["rx_bits_per_s"] == pytest.approx(lo["rates"]["tx_bits_per_s"], rel=0.01)


@pytest.mark.slow
def test_snapshot_reads_a_captured_tree(tmp_path):
    tree = data_path(PROCFS)
    # the fixture keeps snmp/netstat under pid_26231_net: assemble a tree as a host would have it
    proc = tmp_path / "proc"
    shutil.copytree(tree / "proc", proc)
    for f in ("snmp", "netstat"):
        shutil.copy(tree / "proc" / "pid_26231_net" / f, proc / "net" / f)
    result = netui("snapshot", "--json", "--interval", "0.2", "--procfs", str(proc), "--sysfs", str(tree / "sys"))
    assert result.returncode == 0, result.stderr
    (node,) = json.loads(result.stdout)["nodes"]
    assert node["state"] == "up"
    eth0 = next(i for i in node["interfaces"] if i["name"] == "eth0")
    assert (eth0["mtu"], eth0["speed_mbps"], eth0["operstate"]) == (1500, 1000, "up")
    assert eth0["counters"]["rx_bytes"] == 874354587
    assert eth0["rates"]["rx_bits_per_s"] == 0  # a static tree does not move
    assert node["tcp"]["counters"]["MaxConn"] == -1
    assert [c["cpu"] for c in node["softnet"]][:2] == [0, 1]


@pytest.mark.slow
def test_a_tree_with_missing_files_is_a_partial_sample_with_reasons():
    tree = data_path(PROCFS)
    result = netui("snapshot", "--json", "--interval", "0.2", "--procfs", str(tree / "proc"),
                   "--sysfs", str(tree / "sys"))
    assert result.returncode == 0, result.stderr
    (node,) = json.loads(result.stdout)["nodes"]
    assert node["state"] == "up"
    assert "net/snmp: not readable" in node["error"]
    assert node["tcp"] is None and node["interfaces"]


@pytest.mark.slow
def test_garbage_tree_is_a_parse_error_state_not_a_crash(tmp_path):
    (tmp_path / "net").mkdir()
    for name in ("net/dev", "net/snmp", "stat", "softirqs", "net/softnet_stat"):
        (tmp_path / name).write_text("garbage: \x00 1 2 3\nmore garbage\n")
    result = netui("snapshot", "--json", "--interval", "0.2", "--procfs", str(tmp_path), "--sysfs", str(tmp_path))
    assert result.returncode == 1, result.stderr  # the document is printed; not every node is up
    (node,) = json.loads(result.stdout)["nodes"]
    assert node["state"] == "parse error"
    assert "/proc/net/dev" in node["error"]


@pytest.mark.slow
def test_bad_arguments_are_clear_errors(tmp_path):
    r = netui("snapshot", "--procfs", str(tmp_path / "nope"))
    assert r.returncode != 0 and "not a directory" in r.stderr
    r = netui("snapshot", "--interval", "0")
    assert r.returncode != 0 and "must be greater than 0" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"node": "x", "sample": {"wall_s": 1}}\n')
    r = netui("snapshot", "--replay", str(bad))
    assert r.returncode != 0 and "bad.jsonl:1" in r.stderr


@pytest.mark.slow
def test_record_then_replay_gives_the_same_counters(tmp_path):
    out = tmp_path / "rec.ndjson.gz"
    r = netui("record", "-o", str(out), "--count", "3", "--interval", "0.2")
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in gzip.decompress(out.read_bytes()).splitlines()]  # as zcat reads it
    assert [r["type"] for r in records if r["type"] in ("header", "sample", "tick")] == [
        "header", "sample", "tick", "sample", "tick", "sample", "tick"]
    lines = [json.dumps(r) for r in records if r["type"] == "sample"]
    assert len(lines) == 3
    last = json.loads(lines[-1])["sample"]
    r = netui("snapshot", "--json", "--replay", str(out), "--interval", "0.1")
    assert r.returncode == 0, r.stderr
    node = json.loads(r.stdout)["nodes"][0]
    lo = next(i for i in node["interfaces"] if i["name"] == "lo")
    # snapshot took the first two samples of the recording
    second = json.loads(lines[1])["sample"]
    assert lo["counters"]["rx_bytes"] == second["interfaces"]["lo"]["counters"]["rx_bytes"]
    assert last["interfaces"]["lo"]["counters"]["rx_bytes"] >= lo["counters"]["rx_bytes"]


@pytest.mark.slow
def test_record_rotates_at_max_size_and_export_reads_the_set(tmp_path):
    out = tmp_path / "rot.ndjson.gz"
    r = netui("record", "-o", str(out), "--count", "30", "--interval", "0.05", "--max-size", "1k", "--keep", "2")
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["rot.ndjson.gz", "rot.ndjson.gz.1", "rot.ndjson.gz.2"]  # bounded: the oldest went
    for name in names:
        assert gzip.decompress((tmp_path / name).read_bytes()).startswith(b'{"type":"header"')
    r = netui("export", str(out), "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("time,node,device,metric,value\n") and ",lo,rx_bits_per_s," in r.stdout


@pytest.mark.slow
def test_record_and_replay_say_what_is_wrong(tmp_path):
    r = netui("record", "-o", str(tmp_path / "x.gz"), "--max-size", "lots")
    assert r.returncode != 0 and "not a size" in r.stderr
    r = netui("record", "-o", str(tmp_path / "no" / "such" / "dir.gz"), "--count", "1")
    assert r.returncode != 0 and "cannot record" in r.stderr and "Traceback" not in r.stderr
    kept = tmp_path / "kept.gz"
    kept.write_bytes(b"an earlier recording")
    r = netui("record", "-o", str(kept), "--count", "1")
    assert r.returncode != 0 and "never overwrites" in r.stderr and kept.read_bytes() == b"an earlier recording"
    r = netui("replay", str(tmp_path / "nope.gz"))
    assert r.returncode != 0 and "cannot replay" in r.stderr and "no such file" in r.stderr


@pytest.mark.slow
def test_replay_reads_the_topology_it_is_given(tmp_path):
    from tests.replayed import lab_replay

    recording = lab_replay(tmp_path / "lab.ndjson.gz")
    bad = tmp_path / "topology.conf"
    bad.write_text("SwitchName=leaf1 Nodes=node[1-2]\nSwitchName=spine Switches=leaf1 Bogus\n")
    for argv in (["replay", str(recording)], ["--replay", str(recording)]):
        r = netui(*argv, "--topology", str(bad))
        assert r.returncode == 2 and f"{bad}:2" in r.stderr and "Traceback" not in r.stderr, (argv, r.stderr)


@pytest.mark.slow
def test_record_ends_its_file_cleanly_on_sigterm(tmp_path):
    import signal

    out = tmp_path / "t.ndjson.gz"
    p = subprocess.Popen([sys.executable, "-m", "netui", "record", "-o", str(out), "--interval", "0.1"],
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not out.exists() or out.stat().st_size < 2000):
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0 and "recorded" in err
    lines = gzip.decompress(out.read_bytes()).splitlines()  # a finished gzip file, trailer and all
    assert json.loads(lines[-1])["type"] == "tick"


def closed_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_snapshot_says_when_a_node_failed_and_what_never_a_retry_countdown():
    """``netui snapshot`` is taken once and never retries: a node that refused says when it
    failed and what ("failed at 16:13:21: connection refused"), not "retrying in 2 s"."""
    port = closed_loopback_port()
    text = netui("snapshot", "--connect-timeout", "2", f"127.0.0.1:{port}")
    assert text.returncode == 1
    assert "retrying" not in text.stdout, text.stdout
    head = text.stdout.splitlines()[0]
    assert head.startswith("127.0.0.1: down (failed at ") and head.endswith(": connection refused)  health critical")
    assert "  ! down: connection refused" in text.stdout.splitlines()
    doc = json.loads(netui("snapshot", "--json", "--connect-timeout", "2", f"127.0.0.1:{port}").stdout)
    (node,) = doc["nodes"]
    assert node["error"] == "connection refused" and abs(node["failed_at"] - time.time()) < 60
