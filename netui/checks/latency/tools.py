"""The latency test's settings, its two tools' command lines, and their results.

A sender pings all its targets from one command on one SSH channel: ``fping`` pings them
together (one process, its own pacing), ``ping`` runs one process per target, at most
``PING_PARALLEL`` at a time, every output line prefixed with its target so the outputs can
be told apart. Both bind the sender's test address (``-S`` / ``-I``), so the probes take the
data-plane path, not the SSH one. Addresses come from ``ipaddress`` and are quoted anyway.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from netui.checks.latency.parse_ping import EXIT_MARK, FPING, IPUTILS, PingOutput, fping_failure, parse_fping, parse_ping, \
    split_by_target
from netui.collectors.shell import CommandResult
from netui.checks.latency.model import LatencyResult
from netui.checks.tools_settings import DictSettings
from netui.checks.pairs.model_addresses import parse_test_net
from netui.model.text import safe_line

AUTO = "auto"  # fping where the sender has it, else ping
PING = IPUTILS  # "ping" (iputils or BusyBox: the output says which)
PING_TOOLS = (AUTO, FPING, PING)

REPLY_TIMEOUT_S = 1.0  # how long a probe's reply is waited for (ping -W, fping -t)
PING_PARALLEL = 8  # ping processes at once on one sender
FPING_GAP_S = 0.01  # fping's default gap between probes to different targets (-i 10 ms)
MARGIN_S = 5.0  # start-up, the last replies, the exit


@dataclass(frozen=True)
class LatencySettings(DictSettings):
    """What a latency test runs with: the dialog's fields, ``netui bench ping``'s options.

    ``count`` probes per pair, ``interval_s`` apart. A pair fails above
    ``max_loss_percent`` loss, or above ``threshold_ms`` average RTT when given, else as an
    RTT outlier (``rtt_factor`` × the typical RTT; checks/latency/model.py).
    """

    count: int = 20
    interval_s: float = 0.2
    test_net: str = ""
    tool: str = AUTO
    max_loss_percent: float = 0.0
    rtt_factor: float = 5.0
    threshold_ms: float | None = None

    def check(self) -> LatencySettings:
        """Self, or ValueError saying what is wrong (in the user's words)."""
        if not 1 <= self.count <= 1000:
            raise ValueError("the probe count must be 1 to 1000")
        if not 0.2 <= self.interval_s <= 10:
            raise ValueError("the interval must be 0.2 to 10 seconds (ping refuses less to users)")
        if self.count * self.interval_s > 600:
            raise ValueError("count × interval must be at most 600 seconds")
        if self.tool not in PING_TOOLS:
            raise ValueError(f"the tool must be one of {', '.join(PING_TOOLS)}")
        if not 0 <= self.max_loss_percent < 100:
            raise ValueError("the loss allowed must be 0 to below 100 %")
        if not self.rtt_factor > 1:
            raise ValueError("the RTT outlier factor must be above 1")
        if self.threshold_ms is not None and not self.threshold_ms > 0:
            raise ValueError("the RTT threshold must be above 0 ms")
        parse_test_net(self.test_net)  # raises ValueError with its words
        return self

    def run_timeout_s(self, tool: str, targets: int) -> float:
        """How long one sender's command may take with ``targets`` targets."""
        targets = max(1, targets)
        if tool == FPING:
            period = max(self.interval_s, targets * FPING_GAP_S)
            return self.count * period + REPLY_TIMEOUT_S + MARGIN_S
        batches = math.ceil(targets / PING_PARALLEL)
        return batches * (self.count * self.interval_s + REPLY_TIMEOUT_S) + MARGIN_S

    def expected_s(self, targets: int = 1) -> float:
        """About how long a sender takes (for the ETA)."""
        return self.run_timeout_s(FPING if self.tool != PING else PING, targets) - MARGIN_S + 0.5


def choose_tool(settings: LatencySettings, node: str, paths: Mapping[str, str | None]) -> tuple[str | None, str | None]:
    """(the tool a sender uses, None) or (None, why it cannot send), from its probe."""
    has_fping, has_ping = paths.get(FPING) is not None, paths.get(PING) is not None
    if settings.tool == FPING:
        return (FPING, None) if has_fping else (None, f"fping missing on {node}")
    if settings.tool == PING:
        return (PING, None) if has_ping else (None, f"ping missing on {node}")
    if has_fping:
        return FPING, None
    if has_ping:
        return PING, None
    return None, f"neither fping nor ping on {node}"


def _ms(seconds: float) -> str:
    return str(max(1, round(seconds * 1000)))


def fping_command(settings: LatencySettings, source: str, targets: Sequence[str]) -> str:
    """fping every target together: per-target RTT lists on stderr (-C), ICMP errors too."""
    return shlex.join([FPING, "-C", str(settings.count), "-p", _ms(settings.interval_s),
                       "-t", _ms(REPLY_TIMEOUT_S), "-S", source, *targets])


def ping_command(settings: LatencySettings, source: str, targets: Sequence[str]) -> str:
    """One ping per target, ``PING_PARALLEL`` at a time; each line as ``<target> <line>``,
    and ``<target> @exit <status>`` last. A ``sh -c`` command line."""
    ping = shlex.join([PING, "-n", "-c", str(settings.count), "-i", f"{settings.interval_s:g}",
                       "-W", f"{REPLY_TIMEOUT_S:g}", "-I", source])
    script = "\n".join([
        "n=0",
        'for t in "$@"; do',
        f'  {{ {ping} "$t" 2>&1; echo "{EXIT_MARK} $?"; }} | while IFS= read -r l; do printf \'%s %s\\n\' "$t" "$l"; done &',
        f'  n=$((n+1)); if [ "$n" -ge {PING_PARALLEL} ]; then wait; n=0; fi',
        "done",
        "wait",
    ])
    return shlex.join(["sh", "-c", script, "sh", *targets])


def sender_command(tool: str, settings: LatencySettings, source: str, targets: Sequence[str]) -> str:
    return (fping_command if tool == FPING else ping_command)(settings, source, targets)


def sender_results(tool: str, sender: str, receivers: Mapping[str, Sequence[str]], result: CommandResult,
                   timeout_s: float) -> list[LatencyResult]:
    """One result per (sender, receiver) from one sender command's end.

    ``receivers``: target address → the receiving nodes at that address (nodes may share
    one, as ``--local`` nodes on this host do).
    """
    def every(make) -> list[LatencyResult]:
        return [make(address, node) for address, nodes in receivers.items() for node in nodes]

    if result.timed_out:
        return every(lambda a, n: LatencyResult.failed(sender, n, tool, f"{tool} timed out: no result within "
                                                       f"{timeout_s:.0f} s", "timeout"))
    outputs: dict[str, PingOutput] = {}
    if tool == FPING:
        parsed = parse_fping(result.stderr, result.stdout, result.exit_status)
        outputs = {target: out for target, out in parsed.items() if target}
        general = fping_failure(parsed)
    else:
        general = None
        for target, (text, status) in split_by_target(result.stdout).items():
            outputs[target] = parse_ping(text, "", status)
        if result.stderr.strip():
            general = safe_line(result.stderr.strip().splitlines()[-1], 200)
    if not outputs and general is None and result.exit_status not in (0, 1):
        general = f"{tool} ended with exit status {result.exit_status}"
    return every(lambda a, n: LatencyResult.of(sender, n, outputs[a]) if a in outputs else
                 LatencyResult.failed(sender, n, tool, general or f"no result from {tool} for {a}"))
