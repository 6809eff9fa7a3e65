"""The pair-test runner on this host: three "nodes" that are all this host (--local), tested
on loopback. No root, no lab: the scheduler, the gate, the parsers and the cancel path with
real iperf3 processes. Traffic stays on 127.0.0.1; every test is 1 s and bounded."""

from __future__ import annotations

import asyncio
import os
import shutil
import time

import pytest

from netui.cli.bench import exit_status
from netui.checks.pairs.report import summary
from netui.checks.pairs.runner import PairTest
from netui.checks.pairs.tools import BIDIR, PairSettings
from netui.collectors.shell import LocalShell
from tests.localnodes import descendants, local_monitor, ready

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")


def iperf3_of_ours() -> list[int]:
    return [pid for pid, cmd in descendants(os.getpid()).items() if cmd.startswith("iperf3 ")]


def still_alive(pids) -> list[int]:
    """Those of ``pids`` that still run, whoever their parent is now (an orphan is
    reparented and would escape ``descendants``)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                is_iperf3 = f.read().startswith(b"iperf3\0")
        except OSError:
            continue
        if is_iperf3 and state not in ("Z", "X"):
            alive.append(pid)
    return alive


async def watch_iperf3(seen: set[int]) -> None:
    """Collect every iperf3 this test starts, until cancelled."""
    while True:
        seen.update(iperf3_of_ours())
        await asyncio.sleep(0.05)


async def all_gone(pids, within_s: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while still_alive(pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return still_alive(pids)


@pytest.mark.slow
async def test_three_local_nodes_all_pairs_on_loopback():
    monitor = local_monitor()
    await ready(monitor)
    seen = []
    test = PairTest(monitor, ["a", "b", "c"], PairSettings(duration_s=1, test_net="127.0.0.0/8"),
                    on_result=seen.append)
    assert set(test.shells) == {"a", "b", "c"} and all(isinstance(s, LocalShell) for s in test.shells.values())
    started: set[int] = set()
    watcher = asyncio.ensure_future(watch_iperf3(started))
    try:
        report = await test.run()
    finally:
        watcher.cancel()
    assert report.addresses == {"a": "127.0.0.1", "b": "127.0.0.1", "c": "127.0.0.1"}
    assert report.rounds == 3 and report.tests_done == 3 and not report.problems
    assert len(report.results) == 3
    assert {frozenset(r.pair) for r in report.results} == {frozenset("ab"), frozenset("ac"), frozenset("bc")}
    assert all(r.ok and r.gbps > 0.1 for r in report.results), [r.error for r in report.results]
    assert seen == report.results  # every result was reported as it came
    assert report.elapsed_s < 3 * 1 * 1.15 + 1.5  # three 1-s rounds, one at a time (3 nodes)
    assert len(started) >= 6 and not await all_gone(started)


@pytest.mark.slow
async def test_bidirectional_fills_both_cells():
    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    report = await PairTest(monitor, ["a", "b"], PairSettings(duration_s=1, test_net="lo", direction=BIDIR),
                            matrix=False).run()
    assert sorted(r.pair for r in report.results) == [("a", "b"), ("b", "a")]
    assert all(r.ok for r in report.results)
    grid = report.verdict.matrix(["a", "b"])
    assert grid[0][1] and grid[1][0]


async def test_a_missing_tool_refuses_the_test_before_anything_starts():
    """No node can run iperf3: the test does not start, says why in one line, and blames
    no node (it used to run every pair as a failure and name suspects)."""
    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    test = PairTest(monitor, ["a", "b"], PairSettings(duration_s=1, test_net="127.0.0.0/8"))
    test._probe_script = lambda: "echo @tool iperf3; echo -"  # as a node without iperf3 answers
    report = await test.run()
    assert report.results == [] and report.rounds == 0
    assert report.refused == "iperf3 cannot run: iperf3 missing on a,b"
    assert report.verdict.suspects == [] and not report.verdict.passed
    assert summary(report) == report.refused
    assert exit_status(report) == 2


@pytest.mark.slow
async def test_cancel_mid_round_leaves_no_iperf3():
    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    test = PairTest(monitor, ["a", "b"], PairSettings(duration_s=10, test_net="127.0.0.0/8"), matrix=False)
    task = asyncio.ensure_future(test.run())
    deadline = time.monotonic() + 5
    while len(iperf3_of_ours()) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    running = iperf3_of_ours()
    assert len(running) == 2, "server and client should be running"
    await asyncio.sleep(0.5)
    t0 = time.monotonic()
    test.cancel()
    report = await asyncio.wait_for(task, 5)
    assert time.monotonic() - t0 < 2
    assert report.cancelled and report.tests_done == 0
    assert not await all_gone(running)


@pytest.mark.slow
async def test_cancelling_the_task_kills_everything_too():
    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    test = PairTest(monitor, ["a", "b"], PairSettings(duration_s=10, test_net="127.0.0.0/8"), matrix=False)
    task = asyncio.ensure_future(test.run())
    deadline = time.monotonic() + 5
    while len(iperf3_of_ours()) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    running = iperf3_of_ours()
    assert len(running) == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not await all_gone(running)


@pytest.mark.slow
@pytest.mark.parametrize("end", ["client", "server"])
async def test_a_command_ending_in_the_same_moment_as_the_cancel_is_no_result(end):
    """The cancel kills the commands; when a command's end reaches the test before the
    cancel does (Python 3.11's ``asyncio.wait_for`` then returns the result and swallows the
    cancellation), the killed command must not count as a test done, failed or not: the
    client's end, or the server's while the test waits for it to listen."""
    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    test = PairTest(monitor, ["a", "b"], PairSettings(duration_s=10, test_net="127.0.0.0/8"), matrix=False)
    start = test._start

    async def start_racing(node, script):
        running = await start(node, script)
        if end == "client" and node == "a":  # the client (a sends to b)
            result = running.result

            async def result_as_the_cancel_comes(timeout_s):
                ended = asyncio.ensure_future(result(timeout_s))
                await asyncio.sleep(0.5)  # the test runs
                test.cancel()  # kills both ends
                try:
                    return await asyncio.shield(ended)
                except asyncio.CancelledError:  # swallowed, as wait_for does in that moment
                    return await ended

            running.result = result_as_the_cancel_comes
        elif end == "server" and node == "b":
            go, wait_for = running.go, running.wait_for
            told = []

            def go_noted(*args):
                told.append(args)
                go(*args)

            async def not_ready_as_the_cancel_comes(ready, timeout_s):
                if not told:  # (staging: its shell coming up)
                    return await wait_for(ready, timeout_s)
                test.cancel()  # kills both ends before the server listened
                try:
                    await asyncio.sleep(0.3)
                except asyncio.CancelledError:  # swallowed, as wait_for does in that moment
                    pass
                return False

            running.go, running.wait_for = go_noted, not_ready_as_the_cancel_comes
        return running

    test._start = start_racing
    report = await asyncio.wait_for(test.run(), 10)
    assert report.cancelled
    assert report.tests_done == 0 and report.results == [], [r.error for r in report.results]
    assert not await all_gone(iperf3_of_ours())
