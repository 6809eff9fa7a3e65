"""Latency tests against the real lab: OpenSSH in network namespaces, fping 5.1 and iputils
ping on every node (the host's binaries).

Traffic only between lab namespaces (198.18.0.0/15); every run is a few seconds of 84-byte
probes; every rule, qdisc, mount and background flow is undone in ``finally``. Faults:
random loss with nftables in node3's namespace (no netem in this kernel), queueing delay with
tbf on node3's root-side veth and a bounded UDP flow into node3, ping and fping hidden on one
node. After each test no ping or fping is left in any namespace.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from contextlib import contextmanager

import pytest

from netui.checks.latency.runner import LatencyTest
from netui.checks.latency.tools import LatencySettings
from tests.command import netui
from tests.lab.network import veth_name
from tests.lab.watch import NODES, iperf3_servers, lab_monitor, pings_left, started_all_up, stop

pytestmark = pytest.mark.skipif(shutil.which("ping") is None or shutil.which("fping") is None,
                                reason="ping and fping are not installed (tests/run.sh installs them as root)")

async def no_pings_left(lab, within_s: float = 4.0) -> dict[str, list[str]]:
    deadline = time.monotonic() + within_s
    while (left := pings_left(lab)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return left


@contextmanager
def lossy(lab, k: int, percent: int = 40):
    """nftables in node k's namespace drops ``percent`` % of the ICMP echoes it receives
    (requests and replies): every ping to or from node k loses some."""
    if shutil.which("nft") is None:
        pytest.skip("nft is not installed (Debian nftables; tests/run.sh installs it as root)")
    ns = lab.node(k).namespace
    rules = ("table inet netui_loss {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
             f"  icmp type {{ echo-request, echo-reply }} numgen random mod 100 < {percent} drop\n }}\n}}\n")
    subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=rules, text=True, check=True,
                   capture_output=True, timeout=10)
    try:
        yield
    finally:
        subprocess.run(["ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "netui_loss"],
                       capture_output=True, timeout=10)


@contextmanager
def queue_towards(lab, k: int, seconds: int):
    """A standing queue in front of node k: tbf at 10 Mbit/s on its root-side veth and a
    12 Mbit/s UDP flow from node 1 into it for ``seconds``; every packet to node k waits."""
    dev = veth_name(lab.name, k)
    target = lab.node(k)
    subprocess.run(["tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", "10mbit", "burst", "64kb",
                    "latency", "50ms"], check=True, capture_output=True, timeout=10)
    flows = []
    try:
        flows += iperf3_servers([target], 5399)
        flows.append(lab.node(1).popen(["iperf3", "-u", "-b", "12M", "-t", str(seconds), "-p", "5399",
                                        "-c", target.address]))
        time.sleep(1.0)  # the queue fills
        yield
    finally:
        for flow in flows:
            if flow.poll() is None:
                flow.kill()
            flow.wait(timeout=10)
        subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"], capture_output=True, timeout=10)


@contextmanager
def hidden(lab, k: int, *names: str):
    """Binaries hidden on node k only: /dev/null bound over them in the mount namespace that
    node k's sshd and its sessions share."""
    pid = str(lab.node(k).sshd_pid)
    paths = [shutil.which(n) for n in names]
    done = []
    try:
        for path in paths:
            subprocess.run(["nsenter", "-t", pid, "-m", "mount", "--bind", "/dev/null", path], check=True,
                           capture_output=True, timeout=10)
            done.append(path)
        yield
    finally:
        for path in done:
            subprocess.run(["nsenter", "-t", pid, "-m", "umount", path], capture_output=True, timeout=10)


async def test_four_node_matrix_every_pair_has_an_rtt_and_no_loss(lab):
    monitor = lab_monitor(lab)
    task = await started_all_up(monitor)
    progress = []
    try:
        t0 = time.monotonic()
        report = await LatencyTest(monitor, NODES, LatencySettings(count=20), on_progress=progress.append).run()
        took = time.monotonic() - t0
    finally:
        await stop(monitor, task)
    assert report.tools == {n: "fping" for n in NODES} and not report.problems
    assert report.how.startswith("on 198.18.0.0/24 (eth0")
    assert len(report.results) == 12 and {r.pair for r in report.results} == \
           {(a, b) for a in NODES for b in NODES if a != b}
    for r in report.results:
        assert r.ok and (r.sent, r.received, r.loss_percent) == (20, 20, 0.0), r
        assert 0 < r.rtt_p50_ms <= r.rtt_p99_ms < 50 and r.rtt_avg_ms > 0
    assert report.verdict.passed, report.verdict.text
    assert took < 20 * 0.2 + 3, f"{took:.1f} s: the senders should run at once"
    assert progress[-1].phase == "done" and progress[-1].done == 12
    assert not await no_pings_left(lab)


def test_headless_matrix_with_loss_at_node3_exits_1_and_names_node3(lab):
    with lossy(lab, 3):
        result = netui("bench", "ping", lab.host_pattern(), "--matrix", "--json", "-F", str(lab.ssh_config))
    assert result.returncode == 1, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["kind"] == "latency-test" and doc["nodes"] == NODES
    assert doc["verdict"]["suspects"] == ["node3"]
    assert "node3 is in 3 of 3 failing pairs — suspect node3's link (loss" in doc["verdict"]["text"]
    for pair in doc["pairs"]:
        with_node3 = "node3" in (pair["sender"], pair["receiver"])
        assert pair["ok"] and pair["rtt_avg_ms"] is not None
        assert (pair["loss_percent"] > 0) is with_node3 and pair["pass"] is not with_node3, pair
    index = {n: i for i, n in enumerate(NODES)}
    assert doc["loss_percent_matrix"][index["node1"]][index["node3"]] > 0
    assert doc["loss_percent_matrix"][index["node1"]][index["node2"]] == 0
    assert "done · 12/12 pairs" in result.stderr
    assert not pings_left(lab)


def test_headless_single_pair_passes_and_exits_0(lab):
    result = netui("bench", "ping", "node1", "node2", "-F", str(lab.ssh_config), "--count", "5",
                   "--ping-tool", "ping")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "node1→node2  pass  avg " in result.stdout and "loss 0 % (5/5)" in result.stdout
    assert "the pair passes" in result.stdout and "latency (ping)" in result.stdout


async def test_a_queue_in_front_of_node3_makes_its_rtts_outliers_and_names_node3(lab):
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed")
    monitor = lab_monitor(lab)
    task = await started_all_up(monitor)
    try:
        with queue_towards(lab, 3, seconds=9):
            report = await LatencyTest(monitor, NODES, LatencySettings(count=15)).run()
    finally:
        await stop(monitor, task)
    verdict = report.verdict
    slow = {r.pair for r in verdict.outliers}
    assert slow == {(a, b) for a in NODES for b in NODES if a != b and "node3" in (a, b)}, \
        [(r.pair, r.rtt_p50_ms) for r in report.results]
    assert verdict.baseline_ms < 1 and all(r.rtt_p50_ms > 5 for r in verdict.outliers)
    assert verdict.suspects == ["node3"] and "high RTT" in verdict.text
    assert "node3 is in 3 of 3 failing pairs — suspect node3's link" in verdict.text
    assert not await no_pings_left(lab)


async def test_ping_and_fping_missing_are_reported_and_ping_stands_in_for_fping(lab):
    monitor = lab_monitor(lab)
    task = await started_all_up(monitor)
    try:
        with hidden(lab, 3, "ping", "fping"), hidden(lab, 2, "fping"):
            report = await LatencyTest(monitor, NODES, LatencySettings(count=5)).run()
    finally:
        await stop(monitor, task)
    assert report.cannot_send == {"node3": "neither fping nor ping on node3"}
    assert report.tools == {"node1": "fping", "node2": "ping", "node4": "fping"}
    for r in report.results:
        if r.sender == "node3":
            assert not r.ok and r.error == "neither fping nor ping on node3"
        else:
            assert r.ok and r.received == 5, r  # node3 is still pinged; node2 pings with ping
    # node3's own probes could not be sent: untested, not blamed (its link answered the others)
    v = report.verdict
    assert v.suspects == [] and v.passed and len(v.untested) == 3
    assert "Not tested: 3 pairs (neither fping nor ping on node3)" in v.text
    assert not await no_pings_left(lab)


async def test_cancel_leaves_no_ping_or_fping_in_any_namespace(lab):
    monitor = lab_monitor(lab)
    task = await started_all_up(monitor)
    try:
        with hidden(lab, 4, "fping"):  # node4 cancels ping processes, the others fping
            test = LatencyTest(monitor, NODES, LatencySettings(count=200))
            run = asyncio.ensure_future(test.run())
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and len(pings_left(lab)) < 4:
                await asyncio.sleep(0.1)
            assert len(pings_left(lab)) == 4, pings_left(lab)
            await asyncio.sleep(0.5)
            test.cancel()
            report = await asyncio.wait_for(run, 5)
            assert report.cancelled and report.results == []
            assert not await no_pings_left(lab)
    finally:
        await stop(monitor, task)
