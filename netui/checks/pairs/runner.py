"""The pair-test runner: one pair or the all-pairs matrix, over the monitor's connections.

    test = PairTest(monitor, ["node1", "node2", "node3", "node4"], PairSettings(duration_s=2))
    report = await test.run()          # test.cancel() from elsewhere ends it early

Before anything starts, every node is probed once (one guarded command): the tool is there,
its IPv4 addresses (the test address is chosen from them), its RDMA ports for perftest.
A node that fails the probe fails its pairs with the reason ("iperf3 missing on node3");
the other pairs still run.

Then the rounds (``checks.pairs.model``): a round's tests run at once and the next round
starts when this one has ended. With disjoint pairs (the circle method) a node is in at most
one test at a time; with the shift pattern it is in two, the server of the flow coming in
and the client of the flow going out, each test on its own port (taken on both of its
nodes, so a node's two tests never share one). Each
test starts its server, waits until it listens, then starts the client. While a round
runs, the next round's commands are already *staged*: their SSH channels and shells are
up and wait for ``go`` (collectors/shell.py), so a round starts without a channel open or a
shell start-up on its critical path. Staged commands hold no port, use no CPU, and die
with their channel like everything else.

Progress and results are reported through callbacks as they happen; the report at the end
holds every result and the verdict. Cancel (``cancel()`` or cancelling the task) kills
both ends of every test, running or staged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from netui.checks.pairs.probe import parse_probe, probe_command
from netui.checks.pairs.tools import (
    BIDIR,
    BOTH_WAYS,
    ONE_WAY,
    PORT_SPAN,
    IB_WRITE_BW,
    IPERF3,
    PAIRS,
    SHIFT,
    Endpoint,
    PairSettings,
    client_command,
    client_tail,
    pair_failed,
    pair_results,
    server_command,
    server_failure,
    server_ready,
    server_tail,
)
from netui.collectors.shell import CommandFailed, Running, guarded
from netui.engine.sources import shells_for
from netui.model.node import NodeState
from netui.checks.pairs.counters import pair_counters
from netui.checks.pairs.parse_iperf3 import iperf3_interval
from netui.checks.pairs.model import (Pair, PairResult, PortAllocator, all_pairs_rounds, one_at_a_time,
                                      shift_rounds)
from netui.checks.pairs.verdict import Verdict, judge
from netui.checks.pairs.verdict_confirm import CONFIRM_WAVES, RETEST_LIMIT, confirmed, pairs_to_confirm
from netui.checks.report_common import CheckReport
from netui.checks.pairs.model_addresses import Probe, choose_addresses, choose_rdma, link_speeds_mbps, nominal_speeds_mbps
from netui.model.topology import Topology
from netui.model.text import safe_line

PROBE_TIMEOUT_S = 10.0
STAGE_TIMEOUT_S = PROBE_TIMEOUT_S + 5  # for a staged command's shell to come up (and probe)


def node_unavailable(monitor, shells: dict, node: str) -> str | None:
    """Why ``node`` cannot take part in a test run over ``shells`` (not watched, no shell,
    not up), in words; None when it can."""
    fleet = monitor.fleet
    if node not in fleet.nodes:
        return f"{node} is not one of the watched nodes"
    if node not in shells:
        return f"{node} cannot run commands (a replay or a captured tree)"
    n = fleet[node]
    if not n.state.reachable:
        return f"{node} is {n.state.value}" + (f" ({n.failure_words()})" if n.error or n.last_failure else "")
    return None


def plan_rounds(nodes: Sequence[str], *, matrix: bool, direction: str, one_by_one: bool,
                pattern: str = PAIRS) -> list[list[Pair]]:
    """The rounds of tests: all pairs (matrix) or the first two nodes; both ways doubles them,
    but for the shift pattern (every ordered pair in N−1 rounds)."""
    nodes = list(dict.fromkeys(nodes))
    if len(nodes) < 2:
        return []
    if matrix and direction == BOTH_WAYS and pattern == SHIFT:
        rounds = shift_rounds(nodes)
    elif matrix:
        rounds = all_pairs_rounds(nodes, directed=direction == BOTH_WAYS)
    else:
        a, b = nodes[0], nodes[1]
        rounds = [[(a, b)], [(b, a)]] if direction == BOTH_WAYS else [[(a, b)]]
    return one_at_a_time(rounds) if one_by_one else rounds


def refusal(tool: str, nodes: Sequence[str], problems: dict[str, str]) -> str:
    """Why a test cannot start, in one line: the nodes that cannot run ``tool``, grouped by
    reason ("no RDMA device on node[1-4]"); a node's name inside its reason is folded into
    the group."""
    from netui.model.units import fold

    groups: dict[str, list[str]] = {}
    for node in nodes:
        why = problems.get(node)
        if why is None:
            continue
        groups.setdefault(re.sub(rf"(?<![\w.-]){re.escape(node)}(?![\w.-])", "\0", why), []).append(node)
    able = [n for n in nodes if n not in problems]
    words = []
    for template, members in groups.items():
        words.append(template.replace("\0", fold(members)) if "\0" in template else f"{fold(members)}: {template}")
    head = f"{tool} cannot run: "
    if len(able) == 1:
        head = f"{tool} cannot run: only {able[0]} can take part; "
    return head + "; ".join(words) if words else f"{tool} cannot run: fewer than two nodes"


@dataclass(frozen=True)
class PairProgress:
    """Where a test is. ``round`` counts from 1 (0 while checking the nodes)."""

    phase: str  # "checking", "running", "confirming" (the retests), "done", "cancelled"
    round: int  # while confirming: the retest under way
    rounds: int  # while confirming: how many retests
    done: int  # tests finished (a bidirectional test counts once), retests apart
    total: int
    elapsed_s: float
    eta_s: float | None  # seconds left, estimated from the rounds so far
    running: tuple[Pair, ...] = ()
    retests_done: int = 0
    retests: int = 0

    @property
    def words(self) -> str:
        if self.phase == "checking":
            return "checking the nodes…"
        eta = "" if self.eta_s is None else f" · about {self.eta_s:.0f} s left"
        head = {"running": f"round {self.round} of {self.rounds}", "done": "done",
                "confirming": f"retest {self.round} of {self.rounds}",
                "cancelled": "cancelled"}.get(self.phase, self.phase)
        retests = f" · {self.retests_done}/{self.retests} retests" if self.retests else ""
        return (f"{head} · {self.done}/{self.total} tests{retests} · {self.elapsed_s:.0f} s"
                f"{eta if self.phase in ('running', 'confirming') else ''}")


@dataclass
class PairTestReport(CheckReport[PairSettings, PairResult, Verdict]):
    """What a pair test found: CheckReport's fields (``tests_done`` counts a bidirectional
    test once; ``refused``: no pair had two nodes able to run the tool), then these."""

    link_speeds_mbps: dict[str, int | None] = field(default_factory=dict)
    rounds: int = 0
    # where the nodes sit (their names as tested): the verdict then judges the fabric too
    topology: Topology | None = None
    topology_source: str = ""
    # node → (Mbit/s, kind): a software device's nominal speed (a veth's 10000), never a mark
    nominal_speeds_mbps: dict[str, tuple[int, str]] = field(default_factory=dict)
    pattern: str = PAIRS  # the schedule that ran (tools.SHIFT or tools.PAIRS)
    # the pairs rerun alone to confirm a blame (checks/pairs/verdict_confirm.py), apart from the matrix
    retests: list[PairResult] = field(default_factory=list)
    retests_total: int = 0
    first_verdict: Verdict | None = None  # the verdict on the matrix alone, before the retests

    def judge(self) -> Verdict:
        s = self.settings

        def on(results: list[PairResult]) -> Verdict:
            return judge(results, threshold_gbps=s.threshold_gbps, threshold_percent=s.threshold_percent,
                         link_speed_mbps=self.link_speeds_mbps, topology=self.topology,
                         nominal_mbps=self.nominal_speeds_mbps)

        self.first_verdict = on(self.results)
        self.verdict = (confirmed(self.first_verdict, self.results, self.retests, on) if self.retests
                        else self.first_verdict)
        return self.verdict


@dataclass
class _Staged:
    pair: Pair
    port: int
    server: Running | None = None
    client: Running | None = None
    error: str | None = None  # could not stage
    went: bool = False  # the client was told to go (or the test ended without it)


class NodeCommands:
    """The guarded commands a test started on its nodes: each one is tracked from its start,
    ``cancel()`` kills them all at once, and ``_reap`` waits (a little) for the killed ones.
    Shared by the pair tests and the latency test (checks/latency/runner.py), which hold the
    ``report`` (a CheckReport), ``_t0`` (when the run started, monotonic) and ``_progress``."""

    def __init__(self, shells: dict) -> None:
        self.shells = shells
        self._cancel = asyncio.Event()
        self._live: set[Running] = set()  # everything started and not yet stopped
        self._killed: list[Running] = []  # killed by cancel(), to be reaped

    def cancel(self) -> None:
        """End the test early: every command is killed; ``run`` returns what it has."""
        self._cancel.set()
        self._kill_all()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    async def _start(self, node: str, script: str) -> Running:
        running = await self.shells[node].start(script)
        self._live.add(running)
        if self.cancelled:
            running.kill()
        return running

    async def _until_cancelled(self, awaitable):
        """Await ``awaitable`` unless ``cancel()`` comes first (then it is cancelled and
        the answer is None)."""
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._cancel.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not work.done():
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
        if work.cancelled() or (self.cancelled and isinstance(work.exception(), asyncio.CancelledError)):
            return None
        return work.result()

    def _kill_all(self) -> None:
        for running in list(self._live):
            running.kill()
            self._killed.append(running)
        self._live.clear()

    async def _probe(self, node: str) -> tuple[str, str | None]:
        """A node's probe output (the script ``_probe_script()`` gives), or None when it
        failed -- then the reason is in ``self.report.problems[node]``."""
        command = "sh -c " + shlex.quote(self._probe_script())
        try:
            running = await self._start(node, guarded(command, PROBE_TIMEOUT_S, line_buffered=False))
        except CommandFailed as exc:
            self.report.problems[node] = str(exc)
            return node, None
        try:
            result = await running.result(PROBE_TIMEOUT_S + 2)
        finally:
            await running.stop()
            self._live.discard(running)
        if result.exit_status != 0 or result.timed_out:
            words = (result.stderr or result.stdout).strip().splitlines()
            why = "timed out" if result.timed_out else (safe_line(words[-1]) if words else f"exit status {result.exit_status}")
            self.report.problems[node] = f"cannot check {node}: {why}"
            return node, None
        return node, result.stdout

    async def _reap(self, wait_s: float = 2.0) -> None:
        """Wait (a little) for what was killed to end, so no process is left unreaped."""
        killed, self._killed = self._killed, []
        if killed:
            await asyncio.gather(*(r.stop(wait_s=wait_s) for r in killed), return_exceptions=True)

    async def _stopped(self) -> None:
        """However the run ended: every command killed and reaped, the report's elapsed time
        (since ``self._t0``) and whether it was cancelled."""
        self._kill_all()
        await self._reap()
        self.report.elapsed_s = time.monotonic() - self._t0
        self.report.cancelled = self.cancelled

    def _judged(self):
        """The report, judged; the progress says done or cancelled."""
        self.report.judge()
        self._progress("cancelled" if self.cancelled else "done")
        return self.report


class PairTest(NodeCommands):
    """One run of pair tests over ``nodes`` (names of ``monitor.fleet``)."""

    def __init__(self, monitor, nodes: Sequence[str], settings: PairSettings, *, matrix: bool = True,
                 shells: dict | None = None,
                 on_progress: Callable[[PairProgress], None] | None = None,
                 on_result: Callable[[PairResult], None] | None = None) -> None:
        self.monitor = monitor
        self.nodes = list(dict.fromkeys(nodes))
        self.settings = settings.check()
        self.matrix = matrix
        super().__init__(shells if shells is not None else shells_for(monitor.sources))
        self.on_progress = on_progress
        self.on_result = on_result
        fleet = monitor.fleet
        self.report = PairTestReport(settings, self.nodes, matrix, topology=fleet.topology_for(self.nodes),
                                     topology_source=fleet.topology_source)
        self._ports = PortAllocator(settings.first_port, PORT_SPAN)
        self._t0 = 0.0
        self._round = 0
        self._rounds = 0
        self._done = 0
        self._total = 0
        self._round_times: list[float] = []
        self._round_started = 0.0
        self._running: tuple[Pair, ...] = ()
        self._retesting = False
        self._retests_done = 0
        self._going: dict[Pair, _Staged] = {}  # the tests whose client was told to go, until they end

    # the run ------------------------------------------------------------------------------
    async def run(self) -> PairTestReport:
        report = self.report
        report.started_wall_s = time.time()
        self._t0 = time.monotonic()
        s = self.settings
        rounds = plan_rounds(self.nodes, matrix=self.matrix, direction=s.direction, one_by_one=s.one_at_a_time,
                             pattern=s.pattern)
        self._total = report.tests_total = sum(len(r) for r in rounds)
        self._rounds = report.rounds = len(rounds)
        report.pattern = s.pattern_used(self.matrix)
        # the per-CPU tables of the nodes under test: the hottest CPU over each test's window
        self.monitor.want_detail(self.nodes, True)
        try:
            self._progress("checking")
            for node in self.nodes:
                problem = self._unavailable(node)
                if problem:
                    report.problems[node] = problem
            # the first round is staged and its nodes probed in the same sessions
            first = [p for p in rounds[0] if not self._blocked(p)] if rounds else []
            checked = await self._until_cancelled(self._check_nodes(first))
            endpoints, staged = checked if checked is not None else ({}, [])
            runnable: list[list[Pair]] = []
            blocked: list[Pair] = []
            for pairs in rounds:  # pairs with a node that cannot take part are not tested
                keep = []
                for pair in pairs:
                    (blocked if self._blocked(pair) else keep).append(pair)
                if keep:
                    runnable.append(keep)
            if not runnable and not self.cancelled:
                # nothing can run: the test does not start, and says why in one line
                report.refused = refusal(s.tool, self.nodes, report.problems)
            else:
                for pair in blocked:
                    self._finished(pair_failed(s, *pair, self._blocked(pair) or "", "unavailable"))
            self._rounds = report.rounds = len(runnable)
            # staged tests whose pair cannot run are dropped; if the first round lost every
            # pair, the next one is staged afresh
            # a staged test keeps its port unless the probe found something listening on it at
            # the server's end (a port taken before the probes came back)
            keep = [st for st in staged if runnable and st.pair in runnable[0]
                    and not self._ports.busy(st.pair[1], st.port)]
            for st in staged:
                if st not in keep:
                    self._discard(st)
            if runnable and len(keep) != len(runnable[0]):
                for st in keep:
                    self._discard(st)
                keep = []
            if not self.cancelled and runnable:
                await self._until_cancelled(self._tables_arrived({n for pairs in runnable for p in pairs for n in p}))
            if not self.cancelled:
                await self._run_rounds(runnable, keep, endpoints)
            if not self.cancelled and runnable and s.confirm and self.matrix:
                await self._confirm(endpoints)
        finally:
            self.monitor.want_detail(self.nodes, False)
            await self._stopped()
        return self._judged()

    def _blocked(self, pair: Pair) -> str | None:
        """Why a pair cannot run (its nodes' problems), or None."""
        why = [self.report.problems[n] for n in pair if n in self.report.problems]
        return "; ".join(why) or None

    async def _check_nodes(self, first: list[Pair]) -> tuple[dict[str, Endpoint], list[_Staged]]:
        """Probe every node once and stage the first round; record who cannot take part.

        A node of the first round is probed by the preamble of its staged command (one SSH
        session per node before the start, not two); the others by a probe of their own.
        """
        s = self.settings
        report = self.report
        staging = asyncio.ensure_future(self._stage_round(first, probe=True))
        in_first = {n for pair in first for n in pair}
        others = [n for n in self.nodes if n not in report.problems and n not in in_first]
        texts: dict[str, str] = {}
        try:
            for node, text in await asyncio.gather(*(self._probe(n) for n in others)):
                if text is not None:
                    texts[node] = text
        finally:
            staged = await staging
        for st in staged:
            for node, running in ((st.pair[1], st.server), (st.pair[0], st.client)):
                if running is not None and running.preamble is not None:
                    texts[node] = running.preamble
                else:
                    report.problems.setdefault(node, st.error or f"cannot check {node}")
        probes: dict[str, Probe] = {}
        for node, text in texts.items():
            parsed = parse_probe(text)
            self._ports.reserve(node, parsed.listening)
            if parsed.tool_path is None:
                report.problems[node] = f"{s.tool} missing on {node}"
            else:
                probes[node] = parsed
        samples = {n: self.monitor.fleet[n].sample for n in probes}
        choice = choose_addresses(probes, s.test_net, samples)
        report.how = choice.how
        report.addresses = dict(choice.addresses)
        report.interfaces = dict(choice.interfaces)
        for node, problem in choice.problems.items():
            report.problems.setdefault(node, problem)
        report.link_speeds_mbps = link_speeds_mbps(samples, choice.interfaces)
        report.nominal_speeds_mbps = nominal_speeds_mbps(samples, choice.interfaces)
        endpoints: dict[str, Endpoint] = {}
        for node in self.nodes:
            if node in report.problems or node not in choice.addresses:
                continue
            rdma = None
            if s.tool == IB_WRITE_BW:
                rdma = choose_rdma(node, probes[node], device=s.device, ib_port=s.ib_port,
                                   gid_index=s.gid_index, address=choice.addresses[node])
                if rdma.problem:
                    report.problems[node] = rdma.problem
                    continue
            endpoints[node] = Endpoint(node, choice.addresses[node], rdma)
        return endpoints, staged

    async def _tables_arrived(self, nodes: set[str]) -> None:
        """Until the last sample of each node of a runnable pair that is up and sends sums
        only carries its per-CPU tables (asked for when the test began), for at most two
        intervals (5 s at most): a test's window then starts on a sample with them, and its
        hottest CPU is known."""
        fleet = self.monitor.fleet
        interval_s = self.monitor.interval_s
        deadline = time.monotonic() + min(2 * interval_s + 0.5, 5.0)

        def waiting() -> bool:
            for name in nodes:
                node = fleet.nodes.get(name)
                if node is None or node.state is not NodeState.UP:
                    continue  # (a node down or stale sends nothing to wait for)
                sample = node.sample
                if sample is not None and sample.cpu is None and sample.cpu_sums is not None:
                    return True
            return False

        while waiting() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    def _probe_script(self) -> str:
        s = self.settings
        return probe_command(s.tool, rdma=s.tool == IB_WRITE_BW)

    def _unavailable(self, node: str) -> str | None:
        return node_unavailable(self.monitor, self.shells, node)

    async def _run_rounds(self, rounds: list[list[Pair]], staged: list[_Staged],
                          endpoints: dict[str, Endpoint], *, first: int = 0) -> None:
        """Run ``rounds`` one after the other (``staged``: the first round, if staged already);
        ``first``: how many rounds of this phase ran before, for the progress line."""
        if not rounds:
            return
        if not staged:
            staged = await self._until_cancelled(self._stage_round(rounds[0]))
        for k, pairs in enumerate(rounds):
            if self.cancelled:
                break
            self._round = first + k + 1
            self._running = tuple(pairs)
            started = self._round_started = time.monotonic()
            self._progress("confirming" if self._retesting else "running")
            tests = [asyncio.ensure_future(self._run_test(st, endpoints)) for st in staged]
            upcoming = None
            if k + 1 < len(rounds):
                # stage the next round while this one runs (once its tests have been told to go)
                upcoming = asyncio.ensure_future(self._stage_after_start(rounds[k + 1], staged))
            try:
                await self._until_cancelled(asyncio.gather(*tests))
            finally:
                for t in tests:
                    t.cancel()
                await asyncio.gather(*tests, return_exceptions=True)
                if upcoming is not None and self.cancelled:
                    upcoming.cancel()
            self._round_times.append(time.monotonic() - started)
            if upcoming is None or self.cancelled:
                break
            staged = await upcoming
        if self.cancelled:
            for st in staged:
                self._discard(st)

    async def _confirm(self, endpoints: dict[str, Endpoint]) -> None:
        """Rerun, each alone, the pairs that decide a failing verdict: those of a node or a link
        it names, or the few failing pairs of one that names no one
        (checks/pairs/verdict_confirm.py); their results go to ``report.retests``. When the
        verdict on the confirmed numbers names what the matrix's did not, its deciding pairs are
        rerun in turn: at most ``CONFIRM_WAVES`` waves, ``RETEST_LIMIT`` pairs in all. A
        bidirectional matrix's pairs are rerun one way: one direction, one number."""
        for _ in range(CONFIRM_WAVES):
            budget = RETEST_LIMIT - self.report.retests_total
            verdict = self.report.judge()
            chosen = pairs_to_confirm(verdict, budget)
            pairs = [p for p in chosen if all(n in endpoints for n in p)]
            if len(pairs) < len(chosen) and not verdict.suspects and not verdict.fabric:
                return  # (a failure naming no one is rerun whole or not at all: one left out still fails it)
            if not pairs or self.cancelled:
                return
            first = self.report.retests_total
            self.report.retests_total += len(pairs)
            self._retesting = True
            self._rounds = self.report.retests_total
            if self.settings.direction == BIDIR:
                self.settings = dataclasses.replace(self.settings, direction=ONE_WAY)
            await self._run_rounds([[p] for p in pairs], [], endpoints, first=first)

    async def _stage_after_start(self, pairs: list[Pair], current: list[_Staged]) -> list[_Staged]:
        """Stage ``pairs`` once every test of the current round has been told to go."""
        deadline = time.monotonic() + self.settings.ready_timeout_s
        while time.monotonic() < deadline and not self.cancelled:
            if all(st.went for st in current):
                break
            await asyncio.sleep(0.02)
        return await self._stage_round(pairs)

    async def _stage_round(self, pairs: list[Pair], *, probe: bool = False) -> list[_Staged]:
        return list(await asyncio.gather(*(self._stage(p, probe=probe) for p in pairs)))

    async def _stage(self, pair: Pair, *, probe: bool = False) -> _Staged:
        """Open both ends' channels and shells, gated; a port taken on both nodes. With
        ``probe``, each end probes its node first (the preamble)."""
        s = self.settings
        a, b = pair
        port = self._ports.acquire(a, b)
        st = _Staged(pair, port)
        # long enough to wait for the probes or the round in progress, then to run
        gate_s = 2 * (s.server_timeout_s + 5) + PROBE_TIMEOUT_S
        preamble = self._probe_script() if probe else None
        try:
            st.server = await self._start(b, guarded(server_command(s, port), s.server_timeout_s,
                                                     gate_timeout_s=gate_s, preamble=preamble,
                                                     preamble_timeout_s=PROBE_TIMEOUT_S))
            st.client = await self._start(a, guarded(client_command(s, port), s.client_timeout_s,
                                                     gate_timeout_s=gate_s, preamble=preamble,
                                                     preamble_timeout_s=PROBE_TIMEOUT_S))
            ups = await asyncio.gather(st.server.wait_gated(STAGE_TIMEOUT_S), st.client.wait_gated(STAGE_TIMEOUT_S))
            if not all(ups):
                late = [r.node for r, up in zip((st.server, st.client), ups) if not up]
                st.error = f"could not start a shell on {', '.join(late)} within {STAGE_TIMEOUT_S:g} s"
        except CommandFailed as exc:
            st.error = str(exc)
        return st

    def _discard(self, st: _Staged) -> None:
        """Kill a staged test that will not run (reaped at the end) and give its port back."""
        for running in (st.server, st.client):
            if running is not None:
                running.kill()
                self._live.discard(running)
                self._killed.append(running)
        self._ports.release(st.port, *st.pair)

    async def _run_test(self, st: _Staged, endpoints: dict[str, Endpoint]) -> None:
        s = self.settings
        a, b = st.pair
        fleet = self.monitor.fleet
        try:
            if st.error:
                self._finished(pair_failed(s, a, b, st.error, "unavailable"))
                return
            assert st.server is not None and st.client is not None
            before = {n: fleet[n].sample for n in (a, b)}
            st.server.go(*server_tail(s, endpoints[b]))
            ready = await st.server.wait_for(lambda out, err: server_ready(s.tool, out, err), s.ready_timeout_s)
            if not ready:
                server = await st.server.result(1.0) if st.server.output_ended else None
                self._finished(server_failure(s, a, b, server, "exited" if server is not None else "timeout"))
                return
            st.client.go(*client_tail(s, endpoints[a], endpoints[b]))
            st.went = True
            self._going[st.pair] = st
            client = await st.client.result(s.client_timeout_s + 2)
            # a server whose client failed may wait for it forever: hear its words, not more
            server = await st.server.result(3.0 if client.exit_status == 0 else 0.5)
            results = pair_results(s, a, b, client, server)
            after = {n: fleet[n].sample for n in (a, b)}
            counters = pair_counters(a, before[a], after[a]) | pair_counters(b, before[b], after[b])
            self._finished([dataclasses.replace(r, counters=dict(counters)) for r in results])
        finally:
            st.went = True
            self._going.pop(st.pair, None)
            for running in (st.server, st.client):
                if running is not None:
                    await running.stop(wait_s=1.0)
                    self._live.discard(running)
            self._ports.release(st.port, a, b)

    def tool_gbps(self) -> dict[Pair, float]:
        """What the running tests' tool reports now, in Gbit/s, by data direction (sender,
        receiver): iperf3's last interval as its server counted it (a bidirectional test
        gives both directions, the reverse as the server sent it). ib_write_bw prints nothing
        before its end: none. A test shows here from its first interval report to its end."""
        if self.settings.tool != IPERF3:
            return {}
        out: dict[Pair, float] = {}
        for (a, b), st in list(self._going.items()):
            if st.server is None:
                continue
            report = iperf3_interval(st.server.stdout)
            if report is None:
                continue
            out[(a, b)] = report.received_bits_per_s / 1e9
            if report.reverse_sent_bits_per_s is not None:
                out[(b, a)] = report.reverse_sent_bits_per_s / 1e9
        return out

    # plumbing ------------------------------------------------------------------------------
    def _finished(self, results: list[PairResult]) -> None:
        if self.cancelled:
            # what ends after the cancel was ended by it (its commands killed, its checks
            # cut short): not a result. The cancel usually reaches a test's task as a
            # CancelledError first, but not always: on Python 3.11 ``asyncio.wait_for``
            # returns the awaited result instead when both come in the same moment
            return
        self._running = tuple(p for p in self._running if p != results[0].pair)
        if self._retesting:  # a retest: kept apart from the matrix's results
            self._retests_done += 1
            self.report.retests.extend(results)
            self._progress("confirming")
            return
        self._done += 1
        self.report.tests_done = self._done
        self.report.results.extend(results)
        if self.on_result is not None:
            for r in results:
                self.on_result(r)
        self._progress("running" if self._round else "checking")

    def _eta_s(self) -> float:
        """Rounds left times the mean round so far (the duration plus ½ s before the first)."""
        if self._round_times:
            per_round = sum(self._round_times) / len(self._round_times)
        else:
            per_round = self.settings.duration_s + 0.5
        if self._round == 0:
            return per_round * self._rounds
        in_this_one = time.monotonic() - self._round_started
        return per_round * (self._rounds - self._round) + max(0.0, per_round - in_this_one)

    def _progress(self, phase: str) -> None:
        if self.on_progress is None:
            return
        eta = self._eta_s() if phase in ("running", "checking", "confirming") else None
        self.on_progress(PairProgress(phase, self._round, self._rounds, self._done, self._total,
                                      time.monotonic() - self._t0, eta, self._running,
                                      self._retests_done, self.report.retests_total))
