"""Pure parser for the output of an iperf3 client run with ``-J`` (or ``--json-stream``).

``parse_iperf3`` never raises: whatever the text, it returns an ``Iperf3Result`` whose
``ok`` says whether the test measured a number that can be trusted, and whose ``error`` is
the tool's own words when it did not. The traps it handles:

- An ``"error"`` key means failure whatever the exit status: iperf3 3.7-3.18 print the JSON
  with the error and exit 0 on connect failures and "server is busy" (seen with 3.12 on this
  machine); 3.19+ exit 0 on SIGTERM with "interrupt - the client has terminated by signal".
- Plain text may precede the JSON ("warning: JSON data length overflow") or follow it
  ("iperf3: error - unable to send control message: Broken pipe", esnet/iperf#1143); a
  document may be printed twice (esnet/iperf#1716). Documents are read one after another
  with ``raw_decode``; the text around them is kept as ``diagnostic``.
- ``--json-stream`` (3.17+) prints one ``{"event": ..., "data": ...}`` object per line.
- 3.12's ``test_start`` has no ``bidir`` key even with ``--bidir``: the
  ``sum_sent_bidir_reverse`` block is what tells.
- Numbers are bits per second (floats, e.g. ``9.50062e+08`` from 3.0.x).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from netui.model.text import safe_fields

# kinds of failure the runner and the UI word differently
REFUSED = "refused"
BUSY = "busy"
NO_ROUTE = "no-route"
INTERRUPTED = "interrupted"
ERROR = "error"


@dataclass(frozen=True, slots=True)
class Iperf3Result:
    """One iperf3 client run. Rates are bits per second, as iperf3 reports them.

    From the client's point of view: ``sent_bits_per_s`` is ``end.sum_sent`` and
    ``received_bits_per_s`` (the goodput) is ``end.sum_received``; with ``-R`` the server is
    the one sending, and these still describe that one data direction. With ``--bidir`` the
    other direction is in the ``bidir_reverse_*`` fields. Fields the output does not carry
    are None (``retransmits`` needs TCP_INFO on the sender, i.e. Linux).
    """

    ok: bool
    error: str | None = None
    kind: str | None = None  # None when ok; else refused / busy / no-route / interrupted / error
    sent_bits_per_s: float | None = None
    received_bits_per_s: float | None = None
    retransmits: int | None = None
    cpu_host_percent: float | None = None
    cpu_remote_percent: float | None = None
    seconds: float | None = None
    streams: int | None = None  # parallel streams per direction (-P)
    protocol: str | None = None
    reverse: bool = False
    bidir: bool = False
    bidir_reverse_sent_bits_per_s: float | None = None
    bidir_reverse_received_bits_per_s: float | None = None
    bidir_reverse_retransmits: int | None = None
    version: str | None = None  # "3.12", from "iperf 3.12"
    diagnostic: str = ""  # text outside the JSON (stdout) and stderr, stripped

    def __post_init__(self) -> None:
        safe_fields(self, multiline=("diagnostic",))  # the tool's (or a node's) words: shown, never obeyed

    @property
    def gbps(self) -> float | None:
        """Goodput in Gbit/s (10^9 bit/s), or None when nothing was received."""
        if self.received_bits_per_s is None:
            return None
        return self.received_bits_per_s / 1e9


def classify_iperf3_error(text: str) -> str:
    """The kind of a failure from iperf3's words (see the constants above)."""
    low = text.lower()
    if "no route to host" in low:
        return NO_ROUTE
    if "server is busy" in low:
        return BUSY
    if "interrupt" in low or "terminated by signal" in low:
        return INTERRUPTED
    if "connection refused" in low or "unable to connect" in low:
        return REFUSED
    return ERROR


_decode = json.JSONDecoder().raw_decode
# a document starts at the start of a line; nested objects of cJSON's pretty print are indented
_OBJECT_START = re.compile(r"^\{", re.MULTILINE)
_PROGRAM_PREFIX = re.compile(r"^iperf3:\s*", re.MULTILINE)


# each failed decode costs O(len(text)) (the error counts lines), so garbage made of many
# "{" lines would be quadratic: give up after a few and keep the rest as text
_MAX_DECODE_FAILURES = 20


def _json_documents(text: str) -> tuple[list[dict], str]:
    """Every JSON object in ``text`` (in order) and the text outside them."""
    docs: list[dict] = []
    rest: list[str] = []
    pos = 0
    failures = 0
    while failures < _MAX_DECODE_FAILURES:
        m = _OBJECT_START.search(text, pos)
        if m is None:
            break
        start = m.start()
        try:
            value, end = _decode(text, start)
        except (ValueError, RecursionError):
            # not JSON after all (or truncated): keep it as text and look further on
            failures += 1
            rest.append(text[pos : m.end()])
            pos = m.end()
            continue
        rest.append(text[pos:start])
        docs.append(value)  # a dict: it starts with "{"
        pos = end
    rest.append(text[pos:])
    return docs, "".join(rest).strip()


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _is_report(doc: dict) -> bool:
    return isinstance(doc.get("start"), dict) or isinstance(doc.get("end"), dict) or "error" in doc


def _from_stream_events(events: list[dict]) -> dict:
    """Rebuild a ``-J``-shaped document from ``--json-stream`` events."""
    doc: dict = {}
    for event in events:
        name, data = event.get("event"), event.get("data")
        if name == "start" and isinstance(data, dict):
            doc["start"] = data
        elif name == "end" and isinstance(data, dict):
            doc["end"] = data
        elif name == "error" and "error" not in doc:
            doc["error"] = str(data)
    return doc


def _error_lines(text: str) -> list[str]:
    """iperf3's own error lines in plain text ("iperf3: error - ...", "interrupt - ...")."""
    found = []
    for line in text.splitlines():
        line = _PROGRAM_PREFIX.sub("", line.strip())
        if line.startswith(("error", "interrupt", "parameter error")) or "error - " in line:
            found.append(line)
    return found


_DIAGNOSTIC_MAX_CHARS = 2000


def _clip(text: str, limit: int = _DIAGNOSTIC_MAX_CHARS) -> str:
    """At most a screenful of stray text: a runaway tool must not bloat every result."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _failed(error: str, diagnostic: str, **fields) -> Iperf3Result:
    return Iperf3Result(
        ok=False, error=error, kind=classify_iperf3_error(error), diagnostic=diagnostic, **fields
    )


def parse_iperf3(stdout: str, stderr: str = "", exit_status: int | None = 0) -> Iperf3Result:
    """Parse an iperf3 client's ``-J`` or ``--json-stream`` output; never raises.

    ``exit_status`` None means unknown (not judged). ``ok`` is True only when the JSON has
    an ``end.sum_received`` (or UDP ``end.sum``), no ``error`` key, no error line around it,
    and the exit status is 0 or unknown. When not ok, ``error`` holds iperf3's words (or a
    plain description of what was missing) and the measured fields hold whatever the
    output still carried (e.g. the partial stats dumped on SIGTERM).
    """
    stdout = stdout if isinstance(stdout, str) else ""
    stderr = (stderr if isinstance(stderr, str) else "").strip()
    docs, outside = _json_documents(stdout)
    diagnostic = _clip("\n".join(part for part in (outside, stderr) if part))
    stderr_words = _clip(_PROGRAM_PREFIX.sub("", stderr).strip(), 300)

    events = [d for d in docs if "event" in d and "data" in d]
    if events:
        doc: dict | None = _from_stream_events(events)
    else:
        doc = next((d for d in docs if _is_report(d)), None)

    if doc is None:
        if stderr_words:
            lines = _error_lines(stderr)
            return _failed(_clip(lines[0], 300) if lines else stderr_words, diagnostic)
        if not stdout.strip():
            status = "" if exit_status is None else f" (exit status {exit_status})"
            return _failed(f"iperf3 printed nothing{status}", diagnostic)
        if _OBJECT_START.search(stdout):
            return _failed("iperf3's JSON output is cut short or malformed", diagnostic)
        first = stdout.strip().splitlines()[0][:120]
        return _failed(f"not iperf3 JSON output: {first!r}", diagnostic)

    start = _dict(doc.get("start"))
    end = _dict(doc.get("end"))
    test_start = _dict(start.get("test_start"))
    sum_sent = _dict(end.get("sum_sent"))
    sum_received = _dict(end.get("sum_received"))
    if not sum_received and _dict(end.get("sum")):  # UDP on old versions: one sum only
        sum_received = _dict(end.get("sum"))
    reverse_sent = _dict(end.get("sum_sent_bidir_reverse"))
    reverse_received = _dict(end.get("sum_received_bidir_reverse"))
    cpu = _dict(end.get("cpu_utilization_percent"))
    bidir = bool(test_start.get("bidir")) or bool(reverse_sent or reverse_received)
    streams = _count(test_start.get("num_streams"))
    if streams is None and isinstance(start.get("connected"), list) and start["connected"]:
        streams = len(start["connected"]) // (2 if bidir else 1)
    version = start.get("version")
    if isinstance(version, str):
        version = version.removeprefix("iperf").strip() or None
    else:
        version = None
    protocol = test_start.get("protocol")

    fields = dict(
        sent_bits_per_s=_number(sum_sent.get("bits_per_second")),
        received_bits_per_s=_number(sum_received.get("bits_per_second")),
        retransmits=_count(sum_sent.get("retransmits")),
        cpu_host_percent=_number(cpu.get("host_total")),
        cpu_remote_percent=_number(cpu.get("remote_total")),
        seconds=_number(sum_received.get("seconds", sum_sent.get("seconds"))),
        streams=streams,
        protocol=protocol if isinstance(protocol, str) else None,
        reverse=bool(test_start.get("reverse")),
        bidir=bidir,
        bidir_reverse_sent_bits_per_s=_number(reverse_sent.get("bits_per_second")),
        bidir_reverse_received_bits_per_s=_number(reverse_received.get("bits_per_second")),
        bidir_reverse_retransmits=_count(reverse_sent.get("retransmits")),
        version=version,
    )

    error = doc.get("error")
    if error is not None:
        return _failed(str(error).strip() or "iperf3 reported an empty error", diagnostic, **fields)
    around = _error_lines(outside) or _error_lines(stderr)
    if around:
        return _failed(around[0], diagnostic, **fields)
    if exit_status not in (0, None):
        error = stderr_words or f"iperf3 exited with status {exit_status}"
        return _failed(error, diagnostic, **fields)
    if fields["received_bits_per_s"] is None:
        return _failed("no end summary in iperf3's output (the test did not finish)", diagnostic, **fields)
    return Iperf3Result(ok=True, diagnostic=diagnostic, **fields)


# --- the server's interval reports while a test runs -----------------------------------------

# "[  5]   1.00-2.00   sec  59.6 MBytes   500 Mbits/sec", "[SUM][RX-S]   0.00-1.00   sec …"; a
# closing summary ends in "sender" or "receiver" and is left out
_INTERVAL = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\](?:\[(?P<role>[RT]X)-S\])?\s+(?P<start>\d+(?:\.\d+)?)-(?P<end>\d+(?:\.\d+)?)\s+sec\s+"
    r"\S+\s+\S*Bytes\s+(?P<rate>\d+(?:\.\d+)?)\s+(?P<prefix>[KMGT]?)bits/sec(?P<rest>.*)$")
_CONNECTED = re.compile(r"^\[\s*\d+\] local \S+ port \d+ connected to ", re.MULTILINE)
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@dataclass(frozen=True, slots=True)
class Iperf3Interval:
    """The last whole interval an iperf3 server printed while its test runs (bits per second,
    as it counted them): ``received_bits_per_s`` what it received (the test's own data
    direction), ``reverse_sent_bits_per_s`` what it sent back with ``--bidir`` (None
    without); ``end_s``: the interval's end, seconds into the test."""

    end_s: float
    received_bits_per_s: float
    reverse_sent_bits_per_s: float | None = None


def iperf3_interval(server_stdout: str) -> Iperf3Interval | None:
    """The last whole interval report of an iperf3 server's text output (``iperf3 -s``, 1 s
    intervals), summed over its streams ([SUM] where iperf3 printed one); None before the
    first. Output comes a line at a time: an interval some of whose streams (or its [SUM]) are
    not printed yet is passed over, as is one of no length (a test's last may be "2.00-2.00").
    Never raises."""
    head, mark, _ = server_stdout.partition("[ ID]")
    if not mark:
        return None
    streams = len(_CONNECTED.findall(head))  # both directions' with --bidir
    if streams == 0:
        return None
    # interval end → role ("RX", "TX") → stream id → bits/s; the last reports are at the end
    seen: dict[float, dict[str, dict[str, float]]] = {}
    for line in server_stdout.splitlines()[-4 * (streams + 4):]:
        m = _INTERVAL.match(line.strip())
        if m is None or m["rest"].strip() in ("sender", "receiver"):
            continue
        start, end = float(m["start"]), float(m["end"])
        if end <= start:
            continue
        bits = float(m["rate"]) * _PREFIX[m["prefix"]]
        seen.setdefault(end, {}).setdefault(m["role"] or "RX", {})[m["id"]] = bits
    for end in sorted(seen, reverse=True):
        roles = seen[end]
        ids = sum(len([i for i in r if i != "SUM"]) for r in roles.values())
        per_role = streams // max(1, len(roles))
        if ids < streams or (per_role > 1 and any("SUM" not in r for r in roles.values())):
            continue  # not all of it printed yet

        def total(role: str) -> float | None:
            r = roles.get(role)
            if not r:
                return None
            return r["SUM"] if "SUM" in r else sum(r.values())

        received = total("RX")
        if received is not None:
            return Iperf3Interval(end, received, total("TX"))
    return None
