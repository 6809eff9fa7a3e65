"""The latency runner on this host: three "nodes" that are all this host (--local), pinging
127.0.0.1. No root, no lab: the probe, the tool choice, both tools' commands and parsers, the
missing-tool path and cancel with real ping/fping processes. Every run is a few probes."""

from __future__ import annotations

import asyncio
import os
import shutil
import time

import pytest

from netui.checks.latency.runner import LatencyTest, plan_pairs
from netui.checks.latency.tools import LatencySettings
from tests.localnodes import descendants, local_monitor, ready

pytestmark = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed (Debian iputils-ping)")

LOOPBACK = "127.0.0.0/8"


def pings_of_ours() -> list[int]:
    return [pid for pid, cmd in descendants(os.getpid()).items() if cmd.split(" ", 1)[0] in ("ping", "fping")]


def test_a_matrix_is_every_ordered_pair_and_a_pair_one_direction():
    assert plan_pairs(["a", "b", "c"], matrix=True) == [("a", "b"), ("a", "c"), ("b", "a"), ("b", "c"),
                                                        ("c", "a"), ("c", "b")]
    assert plan_pairs(["a", "b", "c"], matrix=False) == [("a", "b")]
    assert plan_pairs(["a"], matrix=True) == []


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["ping", pytest.param("fping", marks=pytest.mark.skipif(
    shutil.which("fping") is None, reason="fping is not installed (Debian fping)"))])
async def test_three_local_nodes_all_pairs_on_loopback(tool):
    monitor = local_monitor()
    await ready(monitor)
    seen, progress = [], []
    test = LatencyTest(monitor, ["a", "b", "c"], LatencySettings(count=4, test_net=LOOPBACK, tool=tool),
                    on_result=seen.append, on_progress=progress.append)
    t0 = time.monotonic()
    report = await test.run()
    took = time.monotonic() - t0
    assert report.tools == {"a": tool, "b": tool, "c": tool} and not report.problems
    assert len(report.results) == 6 and seen == report.results
    for r in report.results:
        assert r.ok and r.sent == 4 and r.received == 4 and r.loss_percent == 0.0, r
        assert 0 < r.rtt_avg_ms < 5 and r.rtt_p99_ms >= r.rtt_p50_ms
    assert report.verdict.passed and report.verdict.text.startswith("all 3 pairs pass")
    assert took < 4 * 0.2 + 3  # the senders run at once
    assert progress[0].phase == "checking" and progress[-1].phase == "done" and progress[-1].done == 6


@pytest.mark.slow
async def test_a_node_without_ping_or_fping_leaves_its_own_pairs_untested():
    monitor = local_monitor()
    await ready(monitor)
    test = LatencyTest(monitor, ["a", "b", "c"], LatencySettings(count=2, test_net=LOOPBACK))
    real = test._probe_script()
    calls = []

    def probe() -> str:  # the second node probed answers as a node without either tool
        calls.append(1)
        if len(calls) == 2:
            return real.replace("command -v fping", "command -v no-fping-here").replace(
                "command -v ping", "command -v no-ping-here")
        return real

    test._probe_script = probe
    report = await test.run()
    (lame,) = report.cannot_send
    assert report.cannot_send[lame] == f"neither fping nor ping on {lame}"
    for r in report.results:
        if r.sender == lame:
            assert not r.ok and r.error == f"neither fping nor ping on {lame}" and r.kind == "unavailable"
        else:
            assert r.ok and r.received == 2  # the node without tools is still pinged
    # a missing tool says nothing about the network: not a failure, and nobody to blame
    v = report.verdict
    assert v.suspects == [] and v.failing == [] and v.passed and len(v.untested) == 2
    assert f"Not tested: 2 pairs (neither fping nor ping on {lame})" in v.text
    assert not report.refused


async def test_no_node_able_to_ping_refuses_the_test_in_one_line():
    from netui.cli.bench import exit_status
    from netui.checks.latency.report import report_document, summary

    monitor = local_monitor()
    await ready(monitor)
    test = LatencyTest(monitor, ["a", "b", "c"], LatencySettings(count=2, test_net=LOOPBACK))
    real = test._probe_script()
    test._probe_script = lambda: real.replace("command -v fping", "command -v no-fping-here").replace(
        "command -v ping", "command -v no-ping-here")
    report = await test.run()
    assert report.results == [] and not pings_of_ours()
    assert report.refused == "ping cannot run: neither fping nor ping on a, b, c" or report.refused.startswith(
        "ping cannot run: neither fping nor ping on "), report.refused
    assert "\n" not in report.refused and summary(report) == report.refused
    assert report.verdict.status == "untested" and report.verdict.suspects == []
    doc = report_document(report)
    assert doc["refused"] == report.refused and doc["verdict"]["status"] == "untested"
    assert exit_status(report) == 2


@pytest.mark.slow
async def test_cancel_leaves_no_ping_running():
    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    test = LatencyTest(monitor, ["a", "b"], LatencySettings(count=200, test_net=LOOPBACK))
    task = asyncio.ensure_future(test.run())
    deadline = time.monotonic() + 5
    while len(pings_of_ours()) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    running = pings_of_ours()
    assert len(running) == 2, "both senders should be pinging"
    t0 = time.monotonic()
    test.cancel()
    report = await asyncio.wait_for(task, 5)
    assert time.monotonic() - t0 < 2.5 and report.cancelled and report.results == []
    deadline = time.monotonic() + 3
    while pings_of_ours() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not pings_of_ours()


async def test_a_sender_that_cannot_start_as_the_cancel_comes_is_no_result():
    """The cancel cuts what was starting short: a sender whose command fails to start in
    that moment is not a failed pair."""
    from netui.collectors.shell import CommandFailed

    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    test = LatencyTest(monitor, ["a", "b"], LatencySettings(count=200, test_net=LOOPBACK))

    async def start_as_the_cancel_comes(node, script):
        test.cancel()
        raise CommandFailed(f"{node}: the channel closed")

    ping_all = test._ping_all

    async def ping_all_then_race(pairs):  # the nodes were checked: now the senders start
        test._start = start_as_the_cancel_comes
        await ping_all(pairs)

    test._ping_all = ping_all_then_race
    report = await asyncio.wait_for(test.run(), 10)
    assert report.cancelled and report.results == [] and report.tests_done == 0
