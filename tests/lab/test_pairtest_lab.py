"""Pair bandwidth tests against the real lab: OpenSSH in network namespaces, iperf3 3.12,
perftest 4.5 without an RDMA device.

Traffic only between lab namespaces (198.18.0.0/15); every test is a few seconds long;
every shaping or mount is undone in ``finally``. After each test no iperf3, ib_write_bw or
staged netui shell is left in any namespace.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from netui.checks.pairs.runner import PairTest
from netui.checks.pairs.tools import BOTH_WAYS, IB_WRITE_BW, PairSettings
from netui.collectors.shell import CommandFailed, SshShell, guarded, run_guarded
from tests.command import netui
from tests.lab.network import veth_name
from tests.lab.watch import NODES, lab_monitor, started_all_up, stop

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None,
                                reason="iperf3 is not installed (tests/run.sh installs it as root)")

LEFTOVER_MARKS = (b"iperf3", b"ib_write_bw", b"netui-gated")


def leftovers(lab) -> dict[str, list[str]]:
    """Test processes still alive in any namespace of the lab: node → command lines."""
    found = {}
    for node in lab.nodes:
        for pid in node.pids():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            except OSError:
                continue
            if state not in ("Z", "X") and any(m in cmdline for m in LEFTOVER_MARKS):
                found.setdefault(node.name, []).append(cmdline.replace(b"\0", b" ").decode()[:120])
    return found


def iperf3_running(lab) -> int:
    """How many iperf3 processes run in the lab's namespaces (servers and clients)."""
    return sum(c.startswith("iperf3 ") for cs in leftovers(lab).values() for c in cs)


async def nothing_left(lab, within_s: float = 4.0) -> dict[str, list[str]]:
    deadline = time.monotonic() + within_s
    while (left := leftovers(lab)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return left


@contextmanager
def shaped_towards(lab, k: int):
    """tbf on node k's root-side veth: what the bridge sends to node k goes at 200 Mb/s."""
    dev = veth_name(lab.name, k)
    subprocess.run(["tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", "200mbit", "burst", "64kb",
                    "latency", "50ms"], check=True, capture_output=True, timeout=10)
    try:
        yield
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"], capture_output=True, timeout=10)


@contextmanager
def without_iperf3(lab, k: int):
    """iperf3 hidden on node k only: /dev/null bound over it in the mount namespace that
    node k's sshd and its sessions share (`ip netns exec` made it; nothing leaks out)."""
    pid = str(lab.node(k).sshd_pid)
    path = shutil.which("iperf3")
    subprocess.run(["nsenter", "-t", pid, "-m", "mount", "--bind", "/dev/null", path], check=True,
                   capture_output=True, timeout=10)
    try:
        yield
    finally:
        subprocess.run(["nsenter", "-t", pid, "-m", "umount", path], capture_output=True, timeout=10)


async def test_four_node_matrix_in_about_three_rounds_with_a_number_for_every_pair(lab):
    monitor = lab_monitor(lab)
    task = await started_all_up(monitor)
    progress = []
    try:
        test = PairTest(monitor, NODES, PairSettings(duration_s=2), on_progress=progress.append)
        report = await test.run()
    finally:
        await stop(monitor, task)
    assert report.rounds == 3 and report.tests_done == 6
    # the two pairs of a round run at once (how long that takes on a loaded host is for
    # tests/bench, not for an assertion here)
    assert any(len(p.running) == 2 for p in progress if p.phase == "running"), [p.running for p in progress]
    assert len({frozenset(r.pair) for r in report.results}) == 6
    assert all(r.ok and r.gbps > 0.5 for r in report.results), [(r.pair, r.gbps, r.error) for r in report.results]
    assert set(report.addresses) == set(NODES) and report.how.startswith("on 198.18.0.0/24 (eth0")
    for r in report.results:  # both ends' counters over the test
        for node in r.pair:
            assert r.counters[f"{node}.retrans"] is not None and 1.0 <= r.counters[f"{node}.window_s"] <= 3.5
            # the window starts on a sample with the per-CPU tables (asked for at the start),
            # the first round's too: its hottest CPU is known
            assert r.counters[f"{node}.softirq_cpu"] is not None, (r.pair, r.counters)
    rounds_seen = [p.round for p in progress if p.phase == "running"]
    assert sorted(set(rounds_seen)) == [1, 2, 3] and progress[-1].phase == "done"
    assert not await nothing_left(lab)


async def test_tbf_towards_node3_fails_every_test_into_node3_and_the_verdict_names_it(lab):
    monitor = lab_monitor(lab)
    task = await started_all_up(monitor)
    try:
        with shaped_towards(lab, 3):
            settings = PairSettings(duration_s=1, direction=BOTH_WAYS, threshold_gbps=1.0)
            report = await PairTest(monitor, NODES, settings).run()
    finally:
        await stop(monitor, task)
    assert report.tests_done == 12
    failing = {r.pair for r in report.verdict.failing}
    assert failing == {("node1", "node3"), ("node2", "node3"), ("node4", "node3")}, \
        [(r.pair, r.gbps) for r in report.results]
    for r in report.results:
        if r.receiver == "node3":
            assert r.ok and r.gbps < 0.25  # measured, and slow: the 200 Mb/s cap
    assert report.verdict.suspects == ["node3"]
    assert report.verdict.nodes["node3"].suspect == "receiving"
    assert report.verdict.text.startswith("suspect node3 receives slowly (3 of 3 receives fail")
    assert not await nothing_left(lab)


def sleeping(node, seconds: str) -> bool:
    """Whether `sleep SECONDS` runs in the node (a test's own, unmistakable command line)."""
    for pid in node.pids():
        try:
            if f"sleep\0{seconds}".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


async def test_guarded_commands_over_ssh_die_with_their_timeout_and_their_connection(lab):
    monitor = lab_monitor(lab, ["node2"])
    task = await started_all_up(monitor)
    node = lab.node(2)
    try:
        source = monitor.sources[0]
        shell = SshShell(source)
        result = await run_guarded(shell, "sleep 41.25", 1)
        assert result.timed_out and result.exit_status == 124
        assert not sleeping(node, "41.25")
        running = await shell.start(guarded("sleep 42.25", 60))
        deadline = time.monotonic() + 5
        while not sleeping(node, "42.25") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert sleeping(node, "42.25")
        source.connection.abort()  # the TCP connection goes: no EOF, no close from us
        deadline = time.monotonic() + 5
        while sleeping(node, "42.25") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not sleeping(node, "42.25"), "the command outlived its connection"
        running.kill()
    finally:
        await stop(monitor, task)
    with pytest.raises(CommandFailed, match="node2 is not connected"):
        await shell.start("true")


def test_headless_matrix_with_tbf_on_node3_exits_1_and_names_node3(lab):
    with shaped_towards(lab, 3):
        result = netui("bench", "iperf3", lab.host_pattern(), "--matrix", "--json", "-F", str(lab.ssh_config),
                       "--duration", "2", "--threshold-gbps", "1")
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    # --matrix tests both ways by default, in the shift pattern: every ordered pair in N-1 rounds
    assert doc["nodes"] == NODES and doc["rounds"] == 3 and doc["pattern"] == "shift"
    assert doc["verdict"]["suspects"] == ["node3"] and "suspect node3" in doc["verdict"]["text"]
    for pair in doc["pairs"]:
        into_node3 = pair["receiver"] == "node3"
        assert pair["pass"] is not into_node3 and pair["gbps"] is not None, [
            (p["sender"], p["receiver"], p["gbps"], p["retest_gbps"]) for p in doc["pairs"]]
    index = {n: i for i, n in enumerate(NODES)}
    assert doc["gbps_matrix"][index["node1"]][index["node3"]] < 0.25
    assert "round 3 of 3" in result.stderr
    assert not leftovers(lab)


def test_headless_single_pair_is_inconclusive_without_a_pass_mark_and_passes_with_one(lab):
    result = netui("bench", "iperf3", "node1", "node2", "-F", str(lab.ssh_config), "--duration", "1")
    # one pair, link speeds unknown in the lab: nothing to judge it by, and it says so
    assert result.returncode == 3, result.stdout + result.stderr
    assert "inconclusive: the pair ran at " in result.stdout
    assert "there is no other pair to compare with (--threshold-gbps sets a pass mark)" in result.stdout
    result = netui("bench", "iperf3", "node1", "node2", "-F", str(lab.ssh_config), "--duration", "1",
                   "--threshold-gbps", "0.5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "node1→node2  pass" in result.stdout and "the pair passes (≥ 500 Mb/s)" in result.stdout


async def test_ib_write_bw_without_an_rdma_device_says_so_cleanly(lab):
    if shutil.which("ib_write_bw") is None:
        pytest.skip("perftest is not installed (tests/run.sh installs it as root)")
    monitor = lab_monitor(lab, ["node1", "node2"])
    task = await started_all_up(monitor)
    try:
        report = await PairTest(monitor, ["node1", "node2"], PairSettings(tool=IB_WRITE_BW, duration_s=2),
                                matrix=False).run()
    finally:
        await stop(monitor, task)
    assert report.results == [] and report.verdict.suspects == []  # refused: nothing ran, nobody blamed
    assert report.refused == "ib_write_bw cannot run: no RDMA device on node[1-2] (/sys/class/infiniband is empty)"
    assert report.problems["node1"] == "no RDMA device on node1 (/sys/class/infiniband is empty)"
    assert report.elapsed_s < 3
    assert not await nothing_left(lab)


async def test_iperf3_missing_on_one_node_is_reported_before_anything_starts(lab):
    monitor = lab_monitor(lab)
    task = await started_all_up(monitor)
    events = []
    try:
        with without_iperf3(lab, 3):
            test = PairTest(monitor, NODES, PairSettings(duration_s=1),
                            on_progress=lambda p: events.append(("progress", p.phase)),
                            on_result=lambda r: events.append(("result", r)))
            report = await test.run()
    finally:
        await stop(monitor, task)
    first_run = events.index(("progress", "running"))
    early = [e[1] for e in events[:first_run] if e[0] == "result"]
    assert {frozenset(r.pair) for r in early} == {frozenset(("node3", n)) for n in ("node1", "node2", "node4")}
    assert all(r.error == "iperf3 missing on node3" and not r.ok for r in early)
    others = [r for r in report.results if "node3" not in r.pair]
    assert len(others) == 3 and all(r.ok and r.gbps > 0.5 for r in others)
    assert report.problems == {"node3": "iperf3 missing on node3"}
    # node3 could not run iperf3: never a suspect, and the others' results cannot clear it
    # three pairs with link speeds unknown are too few to judge by: inconclusive, or a fail when
    # one of them ran far below the others on this loaded host; never blaming node3
    v = report.verdict
    assert v.suspects == [] and v.status in ("inconclusive", "fail"), (v.status, v.text)
    assert all("node3" not in r.pair for r in v.failing)
    assert {frozenset(r.pair) for r in report.verdict.untested} == {frozenset(r.pair) for r in early}
    assert not await nothing_left(lab)


async def test_a_pair_test_staged_within_an_interval_still_knows_each_ends_hottest_cpu(lab):
    """The nodes send the sums of their per-CPU files until the test asks for the tables.
    At a 2 s interval the pair is staged before the next frame, and a 5 s test's window spans
    two intervals (the sums give the hottest CPU over one interval only): the test waits for
    the tables (at most two intervals), so its window starts on a sample that has them."""
    monitor = lab_monitor(lab, ["node1", "node2"], interval_s=2.0)
    task = await started_all_up(monitor)
    try:
        assert all(n.sample.cpu is None and n.sample.cpu_sums is not None for n in monitor.fleet)
        test = PairTest(monitor, ["node1", "node2"], PairSettings(duration_s=5))  # a window of two intervals
        t0 = time.monotonic()
        report = await test.run()
        took = time.monotonic() - t0
    finally:
        await stop(monitor, task)
    assert report.tests_done == 1 and report.results[0].ok, report.results
    counters = report.results[0].counters
    for node in ("node1", "node2"):
        assert counters[f"{node}.softirq_cpu"] is not None and counters[f"{node}.softirq_percent"] is not None, counters
    assert took <= 2 * 2.0 + 5 + 4, f"{took:.2f} s"  # the wait is bounded: two intervals, the test, staging
    assert not await nothing_left(lab)


@pytest.mark.parametrize("direction, processes", [("oneway", 4), ("both", 8)])
async def test_cancel_mid_round_leaves_no_iperf3_in_any_namespace(lab, direction, processes):
    """One way: two disjoint tests a round (two servers, two clients); both ways, the shift
    pattern: four tests a round, every node the server of one and the client of another."""
    monitor = lab_monitor(lab)
    task = await started_all_up(monitor)
    try:
        test = PairTest(monitor, NODES, PairSettings(duration_s=20, direction=direction))
        run = asyncio.ensure_future(test.run())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and iperf3_running(lab) < processes:
            await asyncio.sleep(0.1)
        assert iperf3_running(lab) == processes, leftovers(lab)
        await asyncio.sleep(1.0)  # the next round is staged by now
        test.cancel()
        report = await asyncio.wait_for(run, 5)
        assert report.cancelled and report.tests_done == 0, report.results
    finally:
        await stop(monitor, task)
    assert not await nothing_left(lab)


def test_netui_killed_mid_test_leaves_nothing_behind(lab, tmp_path):
    """SIGKILL: no cleanup code runs on our side; the nodes clean up when the connections go
    (and netui's own temp files, its reduced ssh_config, go with the test's tmp_path)."""
    proc = subprocess.Popen([sys.executable, "-m", "netui", "bench", "iperf3", lab.host_pattern(), "--matrix",
                             "-F", str(lab.ssh_config), "--duration", "30"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, TMPDIR=str(tmp_path)))
    try:
        # --matrix runs the shift pattern: 4 tests a round, each node a server and a client
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and iperf3_running(lab) < 8:
            time.sleep(0.1)
        assert iperf3_running(lab) == 8, leftovers(lab)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    deadline = time.monotonic() + 5
    while leftovers(lab) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not leftovers(lab)


async def test_a_port_already_listening_on_a_node_is_skipped(lab):
    # something of someone else's on node2, listening on the port a test would take first (a
    # server that never answers: an iperf3 client talking to it would wait, then fail)
    holder = ("import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
              "s.bind(('0.0.0.0', 5201)); s.listen(); time.sleep(60)")
    busy = lab.node(2).popen([sys.executable, "-c", holder])
    try:
        deadline = time.monotonic() + 5
        while ":5201 " not in lab.node(2).exec(["ss", "-ltnH"]).stdout:
            assert busy.poll() is None and time.monotonic() < deadline, "the holder did not listen on 5201"
            await asyncio.sleep(0.1)
        monitor = lab_monitor(lab, ["node1", "node2", "node3"])
        task = await started_all_up(monitor)
        try:
            report = await PairTest(monitor, ["node1", "node2", "node3"], PairSettings(duration_s=1)).run()
        finally:
            await stop(monitor, task)
        assert report.tests_done == 3
        assert all(r.ok for r in report.results), [(r.pair, r.error) for r in report.results]
        assert busy.poll() is None  # theirs is untouched
    finally:
        busy.kill()
        busy.wait(timeout=5)
