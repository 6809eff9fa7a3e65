"""ping and fping output, parsed: pure functions of the text the tools print.

Three tools, as they really print (captured in tests/data/tool-output/):

- iputils ``ping`` (Debian ``iputils-ping``): one line per reply
  ``64 bytes from 198.18.1.2: icmp_seq=3 ttl=64 time=0.038 ms`` (``(DUP!)`` after a
  duplicate), ``From 198.18.1.1 icmp_seq=1 Destination Host Unreachable`` for an ICMP error,
  then ``20 packets transmitted, 12 received, +3 errors, 40% packet loss, time 3904ms`` and
  ``rtt min/avg/max/mdev = 0.024/0.050/0.243/0.059 ms`` (no rtt line when nothing came
  back). A failure before the first packet is one line on stderr:
  ``ping: connect: Network is unreachable`` (exit status 2).
- BusyBox ``ping``: ``seq=0`` instead of ``icmp_seq=1``, ``20 packets transmitted, 11 packets
  received, 45% packet loss`` and ``round-trip min/avg/max = …`` (no mdev).
- ``fping``: ``-C N`` prints on stderr one line per target with every probe's RTT in ms, ``-``
  for a probe without reply (``198.18.1.2 : 0.038 0.037 - 0.047``; names are padded to one
  width when there are several targets); ``-c N`` prints
  ``127.0.0.1 : xmt/rcv/%loss = 20/12/40%, min/avg/max = 0.022/0.028/0.042`` instead.
  Without ``-q`` there are per-probe lines on stdout
  (``127.0.0.1 : [2], 64 bytes, 0.034 ms (0.034 avg, 0% loss)`` or ``… [0], timed out …``)
  and ICMP errors on stderr (``ICMP Host Unreachable from 198.18.1.1 for ICMP Echo sent to
  198.18.1.3``).

The parsers never raise and never compute statistics (checks/latency/model.py does): they give the
counts, every reply's RTT and the tool's own summary and words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from netui.model.text import safe_fields

IPUTILS = "ping"
BUSYBOX = "busybox ping"
FPING = "fping"

# kinds of failure, for the verdict and the tests
NO_REPLY = "no-reply"  # probes went out, none came back
UNREACHABLE = "unreachable"  # the network or host is unreachable (the tool says so)
ERROR = "error"  # anything else that left no count


@dataclass(frozen=True)
class PingOutput:
    """One target's probes as a tool reported them. Times are milliseconds.

    ``sent`` is None when the tool gave no count (it failed before or without a summary).
    ``rtts_ms`` holds every (non-duplicate) reply's RTT in the order printed. The summary
    fields are the tool's own, None where it printed none. ``error`` is the tool's words
    about what went wrong (ICMP errors, a failure), None when it said nothing.
    """

    tool: str
    target: str | None = None
    sent: int | None = None
    received: int | None = None
    loss_percent: float | None = None
    rtts_ms: tuple[float, ...] = ()
    summary_min_ms: float | None = None
    summary_avg_ms: float | None = None
    summary_max_ms: float | None = None
    summary_mdev_ms: float | None = None
    duplicates: int = 0
    errors: int = 0  # ICMP errors the tool counted or printed
    error: str | None = None
    kind: str | None = None

    def __post_init__(self) -> None:
        safe_fields(self)  # the tool's (or a node's) words: shown, never obeyed

    @property
    def counted(self) -> bool:
        """Whether probes were sent and counted (loss may still be 100 %)."""
        return self.sent is not None and self.sent > 0


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None  # NaN (fping's "NaN avg") is unknown


def _words(lines: list[str], limit: int = 200) -> str | None:
    joined = "; ".join(dict.fromkeys(line.strip() for line in lines if line.strip()))
    if not joined:
        return None
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


# --- ping (iputils, BusyBox) -------------------------------------------------------------------

_REPLY = re.compile(r"^\d+ bytes from .*?\b(?:icmp_)?seq=(\d+)\b.*?\btime[=<]\s*([\d.]+)\s*ms(.*)$")
_HEADER = re.compile(r"^PING (\S+) \((\S+?)\)")
_TRANSMITTED = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")
_DUPLICATES = re.compile(r"\+(\d+) duplicates")
_ERRORS = re.compile(r"\+(\d+) errors")
_LOSS = re.compile(r"([\d.]+)% packet loss")
_RTT = re.compile(r"^(?:rtt|round-trip) min/avg/max(/mdev)? = ([\d.]+)/([\d.]+)/([\d.]+)(?:/([\d.]+))? ms")
_FROM_ERROR = re.compile(r"^From (\S+?):? (?:icmp_seq=\d+ )?(.+)$")
_STATISTICS = re.compile(r"^--- (\S+) ping statistics ---$")


def parse_ping(stdout: str, stderr: str = "", exit_status: int | None = None) -> PingOutput:
    """One ``ping`` run (iputils or BusyBox, quiet or not) against one target.

    A run that printed no summary is a failure in the tool's words (``kind`` says which);
    100 % loss is a count (``sent`` > 0, ``received`` 0, kind ``no-reply``).
    """
    stdout = stdout if isinstance(stdout, str) else ""
    stderr = stderr if isinstance(stderr, str) else ""
    tool = IPUTILS
    target = None
    rtts: list[float] = []
    sent = received = None
    loss = None
    duplicates = errors = 0
    summary: tuple[float | None, ...] = (None, None, None, None)
    icmp_errors: list[str] = []
    other: list[str] = []
    for raw in (stdout + "\n" + stderr).splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := _REPLY.match(line):
            if "(DUP!)" in m.group(3):
                continue  # counted in the summary's "+N duplicates"
            value = _float(m.group(2))
            if value is not None:
                rtts.append(value)
            continue
        if m := _HEADER.match(line):
            target = m.group(2)
            if line.endswith("data bytes"):
                tool = BUSYBOX
            continue
        if m := _STATISTICS.match(line):
            target = target or m.group(1)
            continue
        if m := _TRANSMITTED.search(line):
            sent, received = int(m.group(1)), int(m.group(2))
            if "packets received" in line:
                tool = BUSYBOX
            if d := _DUPLICATES.search(line):
                duplicates = int(d.group(1))
            if e := _ERRORS.search(line):
                errors = int(e.group(1))
            if lo := _LOSS.search(line):
                loss = _float(lo.group(1))
            continue
        if m := _RTT.match(line):
            if line.startswith("round-trip"):
                tool = BUSYBOX
            summary = (_float(m.group(2)), _float(m.group(3)), _float(m.group(4)), _float(m.group(5)))
            continue
        if m := _FROM_ERROR.match(line):
            icmp_errors.append(f"{m.group(2)} (from {m.group(1)})")
            continue
        if line.startswith("pipe ") or line.startswith("PING "):
            continue  # iputils' "pipe 4": probes in flight at once
        other.append(line)
    if sent is not None and loss is None and sent > 0 and received is not None:
        loss = 100.0 * (sent - received) / sent
    error = _words(icmp_errors + other)
    if sent is None:
        unreachable = error is not None and "unreachable" in error.lower()
        if error is None:
            error = f"{tool} printed no summary" + ("" if exit_status is None else f" (exit status {exit_status})")
        kind = UNREACHABLE if unreachable else ERROR
    elif received == 0 and sent > 0:
        kind = UNREACHABLE if error is not None and "unreachable" in error.lower() else NO_REPLY
        error = error or f"no reply to {sent} probes"
    else:
        kind = None
    return PingOutput(tool, target, sent, received, loss, tuple(rtts), *summary,
                      duplicates=duplicates, errors=max(errors, len(icmp_errors)), error=error, kind=kind)


# --- fping ------------------------------------------------------------------------------------

# "198.18.1.2 : 0.038 - 0.047" (-C), "127.0.0.1 : xmt/rcv/%loss = 20/12/40%, min/avg/max = …" (-c)
_FPING_LINE = re.compile(r"^(\S+)\s+:\s+(.*)$")
_FPING_COUNTS = re.compile(r"^xmt/rcv/%loss = (\d+)/(\d+)/([\d.]+)%(?:, min/avg/max = ([\d.]+)/([\d.]+)/([\d.]+))?")
_FPING_PROBE = re.compile(r"^\[(\d+)\], (?:\d+ bytes, ([\d.]+) ms|timed out)")
_FPING_ICMP = re.compile(r"^(ICMP .+?) for ICMP Echo sent to (\S+)")
_CELL = re.compile(r"^(?:-|[\d.]+)$")


def parse_fping(stderr: str, stdout: str = "", exit_status: int | None = None) -> dict[str, PingOutput]:
    """One ``fping -C N`` or ``fping -c N`` run (quiet or not): target as printed → output.

    RTTs come from ``-C``'s per-target line when there is one, else from the per-probe
    lines of a non-quiet run. Lines fping printed about no target in particular (a bad
    option, no raw socket) are the ``error`` of every target that got no count; a target
    missing from the output altogether is the caller's to notice.
    """
    stdout = stdout if isinstance(stdout, str) else ""
    stderr = stderr if isinstance(stderr, str) else ""
    lists: dict[str, list[float | None]] = {}
    counts: dict[str, tuple[int, int, float | None, tuple]] = {}
    probes: dict[str, dict[int, float | None]] = {}
    icmp: dict[str, list[str]] = {}
    other: list[str] = []
    order: list[str] = []
    for raw in (stderr + "\n" + stdout).splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := _FPING_ICMP.match(line):
            icmp.setdefault(m.group(2), []).append(m.group(1))
            continue
        m = _FPING_LINE.match(line)
        if m is None:
            other.append(line)
            continue
        target, rest = m.group(1), m.group(2).strip()
        if target not in order:
            order.append(target)
        if c := _FPING_COUNTS.match(rest):
            summary = (_float(c.group(4)), _float(c.group(5)), _float(c.group(6)))
            counts[target] = (int(c.group(1)), int(c.group(2)), _float(c.group(3)), summary)
        elif p := _FPING_PROBE.match(rest):
            probes.setdefault(target, {})[int(p.group(1))] = _float(p.group(2))
        elif rest and all(_CELL.match(cell) for cell in rest.split()):
            lists[target] = [None if cell == "-" else _float(cell) for cell in rest.split()]
        else:
            other.append(line)
    general = _words(other)
    found: dict[str, PingOutput] = {}
    for target in order + [t for t in icmp if t not in order]:
        words = _words(icmp.get(target, []))
        summary: tuple = (None, None, None)
        if target in lists:
            cells = lists[target]
            rtts = [v for v in cells if v is not None]
            sent, received = len(cells), len(rtts)
            loss = 100.0 * (sent - received) / sent if sent else None
        elif target in counts:
            sent, received, loss, summary = counts[target]
            rtts = [v for _, v in sorted(probes.get(target, {}).items()) if v is not None]
        elif target in probes:
            seen = probes[target]
            rtts = [v for _, v in sorted(seen.items()) if v is not None]
            sent, received = len(seen), len(rtts)
            loss = 100.0 * (sent - received) / sent if sent else None
        else:
            found[target] = PingOutput(FPING, target, error=words or general or "no result from fping",
                                       kind=UNREACHABLE if words else ERROR, errors=len(icmp.get(target, [])))
            continue
        kind = None
        error = words
        if sent and received == 0:
            kind = UNREACHABLE if words and "unreachable" in words.lower() else NO_REPLY
            error = words or f"no reply to {sent} probes"
        found[target] = PingOutput(FPING, target, sent, received, loss, tuple(rtts), *summary,
                                   errors=len(icmp.get(target, [])), error=error, kind=kind)
    if not found and general:
        found[""] = PingOutput(FPING, None, error=general, kind=ERROR)
    return found


def fping_failure(outputs: dict[str, PingOutput]) -> str | None:
    """fping's words when it said nothing about any target (the ``""`` entry)."""
    general = outputs.get("")
    return general.error if general is not None else None


# --- several pings at once, one shell -------------------------------------------------------

EXIT_MARK = "@exit"


def split_by_target(text: str) -> dict[str, tuple[str, int | None]]:
    """The output of concurrent pings whose every line was prefixed with its target
    (``<target> <line>``), the last one ``<target> @exit <status>``: target → (its
    output, its exit status or None when it never said). Order of first appearance."""
    lines: dict[str, list[str]] = {}
    status: dict[str, int | None] = {}
    for raw in (text if isinstance(text, str) else "").splitlines():
        target, _, line = raw.partition(" ")
        if not target:
            continue
        lines.setdefault(target, [])
        status.setdefault(target, None)
        if line.startswith(EXIT_MARK + " "):
            try:
                status[target] = int(line[len(EXIT_MARK) + 1:].strip())
            except ValueError:
                pass
        else:
            lines[target].append(line)
    return {t: ("\n".join(ls) + "\n", status[t]) for t, ls in lines.items()}
