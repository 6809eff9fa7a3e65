"""The doctor over the fleet: one probe per node, then the rules across all of them.

    report = await examine(monitor, ["node1", "node2"])   # nodes of monitor.fleet; None: all
    report.failed, report.findings, doctor_document(report)   # checks/doctor/report.py

Each node is probed once over its live connection (a guarded command, collectors/shell.py:
it dies with its timeout or its channel); the interfaces come from the monitor's latest
sample of the node, so the doctor and the grid never disagree about an MTU. A node that
is not up is reported, not probed; a node that cannot run commands (a replay, a node read
through node_exporter or Prometheus) is checked on its interfaces only. A captured ``--procfs``/``--sysfs`` tree is probed on this host
with the script pointed at the tree.
"""

from __future__ import annotations

import asyncio
import shlex
from collections import Counter
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from netui.checks.doctor.probe import doctor_script, parse_doctor_probe
from netui.collectors.shell import CommandFailed, run_guarded
from netui.checks.doctor.rules import Finding, NodeFacts, diagnose, grouped, rtt_by_node
from netui.checks.doctor.rules_sysctl import Recommendations
from netui.model.health import Level
from netui.model.node import Node, data_plane
from netui.model.text import safe_line

PROBE_TIMEOUT_S = 10.0
CONCURRENT_PROBES = 64  # channels opened at once over the fleet's connections


@dataclass
class DoctorReport:
    """What the doctor found. ``findings`` worst first (``checks.doctor.rules.diagnose``)."""

    nodes: list[str]
    findings: list[Finding] = field(default_factory=list)
    facts: dict[str, NodeFacts] = field(default_factory=dict)
    started_wall_s: float = 0.0
    elapsed_s: float = 0.0

    @property
    def failed(self) -> bool:
        """Whether a finding is a warning or worse, or a node could not be examined (then
        nothing can be said to be well)."""
        return any(f.failed for f in self.findings) or bool(self.not_examined)

    @property
    def not_examined(self) -> dict[str, str]:
        """Node → why the doctor could not examine it (down, its probe failed): no finding,
        at no level (``checks.doctor.rules.not_examined`` words them)."""
        return {n: f.unreachable for n, f in self.facts.items() if f.unreachable}

    @property
    def problems(self) -> list[Finding]:
        """The findings that are not ok."""
        return [f for f in self.findings if f.severity > Level.OK]

    def counts(self) -> dict[str, int]:
        """How many findings at each level, one per node they are about, worst first, levels
        with none left out."""
        return _tally(self.findings)

    def line_counts(self) -> dict[str, int]:
        """How many lines at each level as the report shows them: alike findings on several
        nodes are one line (``checks.doctor.rules.grouped``)."""
        return _tally(f for f, _ in grouped(self.findings))


def _tally(findings) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    return {level.label: counts[level] for level in sorted(Level, reverse=True) if counts[level]}


def _shells(sources) -> dict[str, tuple[object, object]]:
    """A shell and the probe script per node whose source runs commands: a live node's
    script is made from its data-plane interfaces (``doctor_script``'s ``interfaces``: tc
    and ethtool too); a captured tree's reads the tree's files only."""

    def live(interfaces: list[str]) -> str:
        return doctor_script(interfaces=interfaces)

    out: dict[str, tuple[object, object]] = {}
    for source in sources:
        commands = source.commands()
        if commands is not None:
            out[source.name] = (commands.shell, live if commands.live
                                else doctor_script(commands.procfs, commands.sysfs))
    return out


def _interfaces(node: Node):
    sample = node.sample
    if sample is None:
        return None, {}
    errors = {}
    rates = node.rates
    for name in sample.interfaces:
        r = rates.interfaces.get(name) if rates is not None else None
        errors[name] = None if r is None else _add(r.rx_errors_per_s, r.tx_errors_per_s)
    return sample.interfaces, errors


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


async def _probe(shell, script: str, timeout_s: float, gate: asyncio.Semaphore) -> tuple[str | None, str | None]:
    """(the probe's output, None) or (None, why it failed)."""
    async with gate:
        try:
            result = await run_guarded(shell, "sh -c " + shlex.quote(script), timeout_s)
        except CommandFailed as exc:
            return None, str(exc)
    if result.timed_out:
        return None, f"the probe timed out after {timeout_s:g} s"
    if result.exit_status != 0 and "@end" not in result.stdout:
        words = (result.stderr or result.stdout).strip().splitlines()
        return None, safe_line(words[-1]) if words else f"the probe ended with status {result.exit_status}"
    return result.stdout, None


async def examine(monitor, nodes: Sequence[str] | None = None, *, shells: dict | None = None,
                  timeout_s: float = PROBE_TIMEOUT_S, recommendations: Recommendations | None = None,
                  rtt_ms: Mapping[str, float] | None = None) -> DoctorReport:
    """Probe ``nodes`` (default: the whole fleet) at once and judge them together.

    ``shells``: node → (shell, script), default from the monitor's sources; a script is
    text, or a function of the node's data-plane interface names that returns it.
    ``rtt_ms``: node → the RTT the last latency test measured (``checks.doctor.rules.rtt_by_node``),
    for the buffer advice. Never raises for a node's failure: it becomes a finding. Takes at
    most ``timeout_s`` + a few seconds.
    """
    fleet = monitor.fleet
    names = list(dict.fromkeys(nodes if nodes is not None else [n.name for n in fleet]))
    shells = shells if shells is not None else _shells(monitor.sources)
    # why a node without a shell runs no commands: its source says (HTTP, a replay)
    no_commands = {s.name: s.no_commands for s in monitor.sources}
    report = DoctorReport(names, started_wall_s=time.time())
    t0 = time.monotonic()
    gate = asyncio.Semaphore(CONCURRENT_PROBES)
    jobs: dict[str, asyncio.Future] = {}
    facts: dict[str, NodeFacts] = {}
    for name in names:
        node = fleet[name]
        if not node.state.reachable:
            why = f"{name} is {node.state.value}" + (f" ({node.failure_words()})" if node.error or node.last_failure
                                                      else "")
            facts[name] = NodeFacts(name, unreachable=why)
        elif name not in shells:
            interfaces, errors = _interfaces(node)
            facts[name] = NodeFacts(name, interfaces, errors,
                                    no_commands=no_commands.get(name) or "a replay cannot run commands")
        else:
            shell, script = shells[name]
            if callable(script):
                sample = node.sample
                script = script(data_plane(sample.interfaces) if sample is not None else [])
            jobs[name] = asyncio.ensure_future(_probe(shell, script, timeout_s, gate))
    if jobs:
        await asyncio.gather(*jobs.values(), return_exceptions=True)
    for name, job in jobs.items():
        interfaces, errors = _interfaces(fleet[name])  # the sample nearest the probe
        text, why = job.result() if not job.exception() else (None, f"{type(job.exception()).__name__}")
        if text is None:
            facts[name] = NodeFacts(name, interfaces, errors, unreachable=why)
        else:
            facts[name] = NodeFacts(name, interfaces, errors, probe=parse_doctor_probe(text))
    rtts = rtt_ms or {}
    report.facts = {n: replace(facts[n], rtt_ms=rtts.get(n)) for n in names}
    report.findings = diagnose(list(report.facts.values()), recommendations)
    report.elapsed_s = time.monotonic() - t0
    return report


def latency_rtt_ms(document: dict | None) -> dict[str, float]:
    """Node → the RTT (ms) its flows must cover, from a latency test's document (the app's
    last one; ``checks.latency.report``); {} without one, or when it cannot be read."""
    if not document:
        return {}
    from netui.checks.latency.report import load_report

    try:
        return rtt_by_node(load_report(document).results)
    except (ValueError, KeyError, TypeError):
        return {}
