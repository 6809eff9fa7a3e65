"""The latency test: RTT and loss between nodes, one pair or the all-pairs matrix.

    test = LatencyTest(monitor, ["node1", "node2", "node3", "node4"], LatencySettings(count=20))
    report = await test.run()          # test.cancel() from elsewhere ends it early

Before anything starts every node is probed once (one guarded command, as for the bandwidth
tests): whether it has fping and ping, and its IPv4 addresses, from which the test address
is chosen the same way (``--test-net`` or the fastest shared subnet). A node that cannot
send (no fping, no ping) fails its own pairs with that reason; the others still run, and
its address is still pinged.

Then every sender pings all its receivers with one guarded command (checks/latency/tools.py):
fping where present, else ping. Ping is light -- 84-byte probes, five a second per pair --
so the senders run at once rather than in rounds; at most ``MAX_SENDERS`` commands at a
time keep a big cluster's start bounded. The matrix is every ordered pair (a row is what
its node measured), a pair test one direction. Cancel kills every command.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from netui.checks.pairs.probe import parse_probe, tool_paths, tools_probe_command
from netui.checks.pairs.runner import NodeCommands, node_unavailable, refusal
from netui.checks.latency.tools import FPING, PING, LatencySettings, choose_tool, sender_command, sender_results
from netui.collectors.shell import CommandFailed, guarded
from netui.engine.sources import shells_for
from netui.checks.latency.model import LatencyResult, LatencyVerdict, judge_latency
from netui.checks.report_common import CheckReport
from netui.checks.pairs.model import Pair
from netui.checks.pairs.model_addresses import choose_addresses

MAX_SENDERS = 64


def plan_pairs(nodes: Sequence[str], *, matrix: bool) -> list[Pair]:
    """Every ordered pair (matrix), or the first node to the second."""
    nodes = list(dict.fromkeys(nodes))
    if len(nodes) < 2:
        return []
    if not matrix:
        return [(nodes[0], nodes[1])]
    return [(a, b) for a in nodes for b in nodes if a != b]


@dataclass(frozen=True)
class LatencyProgress:
    """Where a latency test is: checking the nodes, pinging, done or cancelled."""

    phase: str  # "checking", "running", "done", "cancelled"
    done: int  # pairs with a result
    total: int
    elapsed_s: float
    eta_s: float | None
    running: tuple[Pair, ...] = ()

    @property
    def words(self) -> str:
        if self.phase == "checking":
            return "checking the nodes…"
        head = {"running": "pinging", "done": "done", "cancelled": "cancelled"}.get(self.phase, self.phase)
        eta = f" · about {self.eta_s:.0f} s left" if self.phase == "running" and self.eta_s is not None else ""
        return f"{head} · {self.done}/{self.total} pairs · {self.elapsed_s:.0f} s{eta}"


@dataclass
class LatencyReport(CheckReport[LatencySettings, LatencyResult, LatencyVerdict]):
    """What a latency test found: CheckReport's fields (``tests_done``: pairs with a result;
    ``refused``: no pair had a sender able to ping and a receiver up), then these."""

    tools: dict[str, str] = field(default_factory=dict)  # sender → the tool it used
    # node → why it cannot send (no fping, no ping): its own pairs fail, it is still pinged
    cannot_send: dict[str, str] = field(default_factory=dict)

    def judge(self) -> LatencyVerdict:
        s = self.settings
        self.verdict = judge_latency(self.results, max_loss_percent=s.max_loss_percent, rtt_factor=s.rtt_factor,
                                     threshold_ms=s.threshold_ms)
        return self.verdict


class LatencyTest(NodeCommands):
    """One latency test over ``nodes`` (names of ``monitor.fleet``)."""

    def __init__(self, monitor, nodes: Sequence[str], settings: LatencySettings, *, matrix: bool = True,
                 shells: dict | None = None,
                 on_progress: Callable[[LatencyProgress], None] | None = None,
                 on_result: Callable[[LatencyResult], None] | None = None) -> None:
        super().__init__(shells if shells is not None else shells_for(monitor.sources))
        self.monitor = monitor
        self.nodes = list(dict.fromkeys(nodes))
        self.settings = settings.check()
        self.matrix = matrix
        self.on_progress = on_progress
        self.on_result = on_result
        self.report = LatencyReport(self.settings, self.nodes, matrix)
        self._t0 = 0.0
        self._phase = "checking"
        self._expected_s = 0.0
        self._send_started = 0.0
        self._running: set[Pair] = set()

    def _probe_script(self) -> str:
        return tools_probe_command([FPING, PING])

    async def run(self) -> LatencyReport:
        report = self.report
        report.started_wall_s = time.time()
        self._t0 = time.monotonic()
        pairs = plan_pairs(self.nodes, matrix=self.matrix)
        report.tests_total = len(pairs)
        try:
            self._progress("checking")
            for node in self.nodes:
                problem = node_unavailable(self.monitor, self.shells, node)
                if problem:
                    report.problems[node] = problem
            checked = await self._until_cancelled(self._check_nodes())
            if checked is not None and not self.cancelled:
                if pairs and not any(self._runnable(pair) for pair in pairs):
                    # nothing can run: the test does not start, and says why in one line
                    report.refused = refusal("ping", self.nodes, report.problems | report.cannot_send)
                else:
                    await self._until_cancelled(self._ping_all(pairs))
        finally:
            await self._stopped()
        return self._judged()

    async def _check_nodes(self) -> bool:
        """Probe every available node at once: its tools and its test address."""
        report = self.report
        nodes = [n for n in self.nodes if n not in report.problems]
        texts = dict(await asyncio.gather(*(self._probe(n) for n in nodes)))
        probes = {n: parse_probe(t) for n, t in texts.items() if t is not None}
        samples = {n: self.monitor.fleet[n].sample for n in probes}
        choice = choose_addresses(probes, self.settings.test_net, samples)
        report.how = choice.how
        report.addresses = dict(choice.addresses)
        report.interfaces = dict(choice.interfaces)
        for node, problem in choice.problems.items():
            report.problems.setdefault(node, problem)
        for node, text in texts.items():
            if text is None or node in report.problems:
                continue
            tool, why = choose_tool(self.settings, node, tool_paths(text))
            if tool is None:
                report.cannot_send[node] = why
            else:
                report.tools[node] = tool
        return True

    def _runnable(self, pair: Pair) -> bool:
        a, b = pair
        r = self.report
        return a not in r.problems and a not in r.cannot_send and b not in r.problems

    async def _ping_all(self, pairs: list[Pair]) -> None:
        report = self.report
        by_sender: dict[str, list[str]] = {}
        for a, b in pairs:
            why = report.problems.get(a) or report.cannot_send.get(a) or report.problems.get(b)
            if why:
                tool = report.tools.get(a) or (FPING if self.settings.tool == FPING else PING)
                self._finished([LatencyResult.failed(a, b, tool, why, "unavailable")])
            else:
                by_sender.setdefault(a, []).append(b)
        if not by_sender:
            return
        self._expected_s = max(self.settings.expected_s(len(r)) for r in by_sender.values())
        self._phase = "running"
        self._send_started = time.monotonic()
        self._progress("running")
        gate = asyncio.Semaphore(MAX_SENDERS)
        await asyncio.gather(*(self._sender(a, receivers, gate) for a, receivers in by_sender.items()))

    async def _sender(self, sender: str, receivers: list[str], gate: asyncio.Semaphore) -> None:
        """One sender's command: all its receivers at once, then one result per pair."""
        report = self.report
        tool = report.tools[sender]
        targets: dict[str, list[str]] = {}
        for b in receivers:
            targets.setdefault(report.addresses[b], []).append(b)
        timeout_s = self.settings.run_timeout_s(tool, len(targets))
        command = sender_command(tool, self.settings, report.addresses[sender], list(targets))
        async with gate:
            if self.cancelled:
                return
            pairs = {(sender, b) for b in receivers}
            self._running |= pairs
            try:
                running = await self._start(sender, guarded(command, timeout_s, line_buffered=False))
            except CommandFailed as exc:
                self._running -= pairs
                self._finished([LatencyResult.failed(sender, b, tool, str(exc), "unavailable") for b in receivers])
                return
            try:
                result = await running.result(timeout_s + 2)
            finally:
                await running.stop(wait_s=1.0)
                self._live.discard(running)
                self._running -= pairs
        self._finished(sender_results(tool, sender, targets, result, timeout_s))

    # plumbing ------------------------------------------------------------------------------
    def _finished(self, results: list[LatencyResult]) -> None:
        if self.cancelled:
            return  # ended by the cancel (killed, or cut short): not a result, as in PairTest
        self.report.results.extend(results)
        self.report.tests_done += len(results)
        if self.on_result is not None:
            for r in results:
                self.on_result(r)
        self._progress(self._phase)

    def _progress(self, phase: str) -> None:
        if self.on_progress is None:
            return
        elapsed = time.monotonic() - self._t0
        eta = None
        if phase == "running":
            eta = max(0.0, self._expected_s - (time.monotonic() - self._send_started))
        self.on_progress(LatencyProgress(phase, self.report.tests_done, self.report.tests_total, elapsed, eta,
                                         tuple(sorted(self._running))))
