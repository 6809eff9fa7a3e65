"""The two tools of a pair test: their settings, command lines, readiness and results.

The sender is the client and the receiver the server, for both tools: an iperf3 client
sends (no ``-R``), an ib_write_bw client writes into the server's memory. Command lines are
built from argv lists and ``shlex.join``ed: addresses and device names that come from nodes
or users never reach a shell unquoted.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from netui.checks.pairs.parse_iperf3 import parse_iperf3
from netui.checks.pairs.parse_perftest import NO_DEVICE, parse_perftest, perftest_waiting
from netui.collectors.shell import CommandResult
from netui.checks.pairs.model import PairResult
from netui.checks.tools_settings import DictSettings
from netui.checks.pairs.model_addresses import RdmaChoice, parse_test_net
from netui.model.text import safe_line

IPERF3 = "iperf3"
IB_WRITE_BW = "ib_write_bw"
TOOLS = (IPERF3, IB_WRITE_BW)

ONE_WAY = "oneway"  # each pair once, one direction (senders alternate)
BOTH_WAYS = "both"  # each direction its own test (twice the rounds)
BIDIR = "bidir"  # both directions at once (iperf3 --bidir), two results per test
DIRECTIONS = (ONE_WAY, BOTH_WAYS, BIDIR)
DIRECTION_LABELS = {ONE_WAY: "one way", BOTH_WAYS: "both ways", BIDIR: "bidirectional"}

# how a matrix both ways is scheduled (checks/pairs/model.py)
SHIFT = "shift"  # round k: every node i sends to i+k and receives from i−k at once (N−1 rounds)
PAIRS = "pairs"  # disjoint one-way pairs, each direction in its own round (2(N−1) rounds)
PATTERNS = (SHIFT, PAIRS)
PATTERN_LABELS = {SHIFT: "shift", PAIRS: "disjoint pairs"}


def default_direction(matrix: bool) -> str:
    """The direction a test starts with, the same in the UI (t, T, r, R) and ``netui bench``:
    a matrix both ways (every node tested sending and receiving), one pair one way."""
    return BOTH_WAYS if matrix else ONE_WAY

FIRST_PORT = {IPERF3: 5201, IB_WRITE_BW: 18515}
PORT_SPAN = 200  # ports tried from the first one: concurrent tests, and ports already taken
CONNECT_TIMEOUT_MS = 5000  # iperf3 --connect-timeout


@dataclass(frozen=True)
class PairSettings(DictSettings):
    """Everything a pair test is run with; the dialog's fields, the CLI's options.

    Units: seconds, bytes, Gbit/s. ``test_net``: a subnet ("198.18.0.0/24"), an interface
    name, or "" for the suggested subnet. perftest fields left at None/"" are suggested per
    node from /sys/class/infiniband.
    """

    tool: str = IPERF3
    duration_s: int = 10
    streams: int = 1  # iperf3 -P
    direction: str = ONE_WAY
    one_at_a_time: bool = False
    test_net: str = ""
    size_bytes: int = 65536  # perftest -s
    qps: int = 1  # perftest -q
    device: str = ""  # perftest -d
    ib_port: int | None = None  # perftest -i
    gid_index: int | None = None  # perftest -x
    threshold_gbps: float | None = None
    threshold_percent: float = 90.0
    port: int | None = None  # the first TCP port tried (None: the tool's own, FIRST_PORT)
    pattern: str = SHIFT  # a matrix both ways: shift or pairs (one way and bidir run pairs)
    confirm: bool = True  # rerun alone the pairs that decide a failing verdict (verdict_confirm.py)

    def pattern_used(self, matrix: bool) -> str:
        """The schedule a test with these settings runs: shift only for a matrix both ways
        (and not one at a time), else pairs."""
        if matrix and self.direction == BOTH_WAYS and self.pattern == SHIFT and not self.one_at_a_time:
            return SHIFT
        return PAIRS

    @property
    def first_port(self) -> int:
        return self.port if self.port is not None else FIRST_PORT[self.tool]

    def check(self) -> PairSettings:
        """Self, or ValueError saying what is wrong (in the user's words)."""
        if self.tool not in TOOLS:
            raise ValueError(f"unknown tool {self.tool!r} (iperf3 or ib_write_bw)")
        if not 1 <= self.duration_s <= 3600:
            raise ValueError("duration must be 1 to 3600 seconds")
        if not 1 <= self.streams <= 128:
            raise ValueError("parallel streams (-P) must be 1 to 128")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}")
        if self.pattern not in PATTERNS:
            raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}")
        if self.tool == IB_WRITE_BW and self.direction == BIDIR:
            raise ValueError("bidirectional is for iperf3; ib_write_bw runs one way or both ways")
        if not 1 <= self.size_bytes <= 1 << 30:
            raise ValueError("message size must be 1 byte to 1 GiB")
        if not 1 <= self.qps <= 65536:
            raise ValueError("QPs must be 1 to 65536")
        if self.device and (len(self.device) > 64 or any(c.isspace() or c in "/'\"" for c in self.device)):
            raise ValueError(f"not an RDMA device name: {self.device!r}")
        if self.ib_port is not None and not 1 <= self.ib_port <= 255:
            raise ValueError("RDMA port must be 1 to 255")
        if self.gid_index is not None and not 0 <= self.gid_index <= 65535:
            raise ValueError("GID index must be 0 to 65535")
        if self.threshold_gbps is not None and not self.threshold_gbps > 0:
            raise ValueError("the Gb/s threshold must be above 0")
        if not 0 < self.threshold_percent <= 100:
            raise ValueError("the % threshold must be above 0 and at most 100")
        if self.port is not None and not 1024 <= self.port <= 65535 - PORT_SPAN + 1:
            raise ValueError(f"the first port must be 1024 to {65535 - PORT_SPAN + 1}")
        parse_test_net(self.test_net)  # raises ValueError with its words
        return self

    # time budget ------------------------------------------------------------------------
    @property
    def margin_s(self) -> float:
        """Beyond the duration: connection set-up, results exchange; perftest's QP set-up."""
        return 10.0 if self.tool == IPERF3 else 15.0

    @property
    def ready_timeout_s(self) -> float:
        """How long a server may take to listen once started."""
        return 5.0 if self.tool == IPERF3 else 10.0

    @property
    def client_timeout_s(self) -> float:
        return self.duration_s + self.margin_s

    @property
    def server_timeout_s(self) -> float:
        return self.ready_timeout_s + self.client_timeout_s + 5.0


@dataclass(frozen=True)
class Endpoint:
    node: str
    address: str  # the test address (data plane)
    rdma: RdmaChoice | None = None


def _perftest_options(settings: PairSettings, port: int) -> list[str]:
    """The options both sides get alike (device, port and GID may differ: see the tails)."""
    return [IB_WRITE_BW, "-s", str(settings.size_bytes), "-q", str(settings.qps), "-D", str(settings.duration_s),
            "--report_gbits", "-F", "-p", str(port)]


def _rdma_tail(end: Endpoint) -> list[str]:
    rdma = end.rdma or RdmaChoice()
    tail = []
    if rdma.device:
        tail += ["-d", rdma.device]
    if rdma.ib_port is not None:
        tail += ["-i", str(rdma.ib_port)]
    if rdma.gid_index is not None:
        tail += ["-x", str(rdma.gid_index)]
    return tail


# A test's command line is known in two steps: the fixed part when it is staged (before the
# nodes are probed), the tail -- addresses, RDMA device and GID, chosen from the probes --
# when it is told to go (collectors/shell.py passes it as "$@").

def server_command(settings: PairSettings, port: int) -> str:
    if settings.tool == IPERF3:
        return shlex.join([IPERF3, "-s", "-1", "-p", str(port)])
    return shlex.join(_perftest_options(settings, port))


def server_tail(settings: PairSettings, receiver: Endpoint) -> list[str]:
    if settings.tool == IPERF3:
        return ["-B", receiver.address]
    return _rdma_tail(receiver)


def client_command(settings: PairSettings, port: int) -> str:
    if settings.tool == IPERF3:
        argv = [IPERF3, "-p", str(port), "-t", str(settings.duration_s), "-P", str(settings.streams), "-J",
                "--connect-timeout", str(CONNECT_TIMEOUT_MS)]
        if settings.direction == BIDIR:
            argv.append("--bidir")
        return shlex.join(argv)
    return shlex.join(_perftest_options(settings, port))


def client_tail(settings: PairSettings, sender: Endpoint, receiver: Endpoint) -> list[str]:
    if settings.tool == IPERF3:
        return ["-c", receiver.address, "-B", sender.address]
    return _rdma_tail(sender) + [receiver.address]


def server_ready(tool: str, stdout: str, stderr: str) -> bool:
    """Whether the server listens: iperf3's "Server listening" line, perftest's banner."""
    if tool == IPERF3:
        return "Server listening" in stdout
    return perftest_waiting(stdout)


def _words(text: str, limit: int = 300) -> str:
    """A tool's own words on one line: its last non-empty lines, joined."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return safe_line("; ".join(lines[-3:]), limit)  # the node's words: shown, never obeyed


def server_failure(settings: PairSettings, sender: str, receiver: str, server: CommandResult | None,
                   why: str) -> list[PairResult]:
    """The pair's results when its server never got ready (``why``: "exited", "timeout")."""
    tool = settings.tool
    if server is not None and tool == IB_WRITE_BW:
        parsed = parse_perftest(server.stdout, server.stderr, server.exit_status)
        if parsed.kind == NO_DEVICE:
            return _failed(settings, sender, receiver, f"no RDMA device on {receiver}: {parsed.error}", NO_DEVICE)
    words = _words(server.stderr or server.stdout) if server is not None else ""
    if why == "timeout":
        error = f"{tool} server on {receiver} not listening after {settings.ready_timeout_s:g} s"
        kind = "timeout"
    else:
        status = "" if server is None or server.exit_status is None else f" (exit status {server.exit_status})"
        error = f"{tool} server on {receiver} did not start{status}"
        kind = "error"
    return _failed(settings, sender, receiver, f"{error}: {words}" if words else error, kind)


def _failed(settings: PairSettings, sender: str, receiver: str, error: str, kind: str) -> list[PairResult]:
    results = [PairResult(sender, receiver, settings.tool, None, False, error=error, kind=kind)]
    if settings.direction == BIDIR:
        results.append(PairResult(receiver, sender, settings.tool, None, False, error=error, kind=kind))
    return results


def pair_failed(settings: PairSettings, sender: str, receiver: str, error: str, kind: str = "error") -> list[PairResult]:
    """The results of a test that could not run (both directions for a bidirectional one)."""
    return _failed(settings, sender, receiver, error, kind)


def _gbps(bits_per_s: float | None) -> float | None:
    return None if bits_per_s is None else bits_per_s / 1e9


def pair_results(settings: PairSettings, sender: str, receiver: str, client: CommandResult,
                 server: CommandResult | None) -> list[PairResult]:
    """Parse the client's output into the pair's result(s); failures in the tools' words."""
    tool = settings.tool
    if client.timed_out:
        return _failed(settings, sender, receiver,
                       f"{tool} timed out: no result within {settings.client_timeout_s:g} s", "timeout")
    if tool == IPERF3:
        parsed = parse_iperf3(client.stdout, client.stderr, client.exit_status)
        if not parsed.ok:
            error = parsed.error or "iperf3 failed"
            extra = _words(server.stderr) if server is not None and server.stderr.strip() else ""
            if extra and extra not in error:
                error += f" (server on {receiver}: {extra})"
            return _failed(settings, sender, receiver, error, parsed.kind or "error")
        forward = PairResult(sender, receiver, tool, parsed.gbps, True, retransmits=parsed.retransmits,
                             sent_gbps=_gbps(parsed.sent_bits_per_s))
        if settings.direction != BIDIR:
            return [forward]
        back = parsed.bidir_reverse_received_bits_per_s
        reverse = PairResult(receiver, sender, tool, None if back is None else back / 1e9, back is not None,
                             error=None if back is not None else "no reverse summary in iperf3's --bidir output",
                             retransmits=parsed.bidir_reverse_retransmits,
                             sent_gbps=_gbps(parsed.bidir_reverse_sent_bits_per_s))
        return [forward, reverse]
    parsed = parse_perftest(client.stdout, client.stderr, client.exit_status)
    if not parsed.ok:
        if parsed.kind == NO_DEVICE:
            return _failed(settings, sender, receiver, f"no RDMA device on {sender}: {parsed.error}", NO_DEVICE)
        error = parsed.error or "ib_write_bw failed"
        if server is not None:
            theirs = parse_perftest(server.stdout, server.stderr, server.exit_status)
            if not theirs.ok and theirs.error and theirs.error not in error:
                error += f" (server on {receiver}: {theirs.error})"
        return _failed(settings, sender, receiver, error, parsed.kind or "error")
    return [PairResult.of(sender, receiver, tool, parsed)]
