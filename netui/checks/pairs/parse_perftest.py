"""Pure parser for the text report of perftest (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``,
and the ``*_lat`` latency tests).

``parse_perftest`` never raises. The traps of this format:

- Units: the header names them. ``--report_gbits`` gives ``Gb/sec`` (10^9 bit/s); without it
  ``MiB/sec``, printed ``MB/sec`` before perftest's 2024 rename (Debian 12's perftest 4.5
  still prints ``MB/sec``) -- both mean 2^20 bytes/s.
- Rows are printed with tabs inside and several float formats (2 decimals, or 6 when the
  values are tiny): columns are found by name in the header and values split on whitespace.
- ``BW peak`` is ``0.00`` when it was not measured (duration mode, ``-N``): that is "unknown".
- Extra columns (``CPU_Util[%]``, ``BW Port1``/``Port2``, ``#sl``) are skipped by name.
- Errors go to stderr, exit status 1; the device ones are the common case on nodes without
  RDMA ("Did not detect devices ... Unable to find the Infiniband/RoCE device").
- stderr is not a failure by itself: perftest warns there about CPU frequency on success.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from netui.model.text import safe_fields

NO_DEVICE = "no-device"
CONNECT = "connect"
GID = "gid"
ERROR = "error"

# MiB/s (and the older "MB/sec", also 2^20 bytes) to Gbit/s
MIB_PER_S_TO_GBPS = 8 * 2**20 / 1e9
_UNIT_TO_GBPS = {"gb/sec": 1.0, "gbit/sec": 1.0, "mib/sec": MIB_PER_S_TO_GBPS, "mb/sec": MIB_PER_S_TO_GBPS}


@dataclass(frozen=True, slots=True)
class PerftestRow:
    """One row of the result table. Bandwidths in Gbit/s (10^9 bit/s), latencies in µs.

    BW tests fill the ``bw_*`` and ``msg_rate_mpps`` fields, latency tests the ``t_*`` ones
    (``tps_avg`` in duration mode); the others stay None.
    """

    size_bytes: int
    iterations: int | None = None
    bw_peak_gbps: float | None = None  # None when perftest did not measure it (0.00)
    bw_avg_gbps: float | None = None
    msg_rate_mpps: float | None = None
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_typical_us: float | None = None
    t_avg_us: float | None = None
    t_stdev_us: float | None = None
    t_p99_us: float | None = None
    t_p999_us: float | None = None
    tps_avg: float | None = None


@dataclass(frozen=True, slots=True)
class PerftestResult:
    """One perftest run (either side). ``error`` is the tool's own words when not ok."""

    ok: bool
    error: str | None = None
    kind: str | None = None  # None when ok; else no-device / connect / gid / error
    rows: tuple[PerftestRow, ...] = ()
    test: str | None = None  # "RDMA_Write BW Test", "RDMA_Write Bidirectional BW Test", ...
    device: str | None = None
    link_type: str | None = None  # "IB" or "Ethernet" (RoCE)
    gid_index: int | None = None
    unit: str | None = None  # the header's bandwidth unit as printed ("Gb/sec", "MB/sec")
    settings: tuple[tuple[str, str], ...] = ()  # every "key : value" of the header block
    warnings: tuple[str, ...] = ()
    diagnostic: str = ""  # stderr and stray lines, stripped

    def __post_init__(self) -> None:
        safe_fields(self, multiline=("diagnostic",))  # the tool's (or a node's) words: shown, never obeyed

    @property
    def is_latency(self) -> bool:
        return any(r.t_avg_us is not None for r in self.rows)

    @property
    def main_row(self) -> PerftestRow | None:
        """The row of the largest message size (the last such one), or None without rows."""
        best = None
        for row in self.rows:
            if best is None or row.size_bytes >= best.size_bytes:
                best = row
        return best

    @property
    def bw_avg_gbps(self) -> float | None:
        """Average bandwidth in Gbit/s of the largest message size (``-a`` prints them all)."""
        row = self.main_row
        return None if row is None else row.bw_avg_gbps

    gbps = bw_avg_gbps  # the name pair results read

    @property
    def retransmits(self) -> None:
        return None  # RDMA has no TCP retransmissions; the fabric counters tell instead

    def setting(self, key: str) -> str | None:
        """A header value by its key as printed, e.g. ``setting("Number of qps")``."""
        return next((v for k, v in self.settings if k == key), None)


_NO_DEVICE = re.compile(
    r"Did not detect devices|Unable to find the Infiniband/RoCE device|No IB devices found"
    r"|IB device \S+ not found"
)
_CONNECT = re.compile(r"Couldn't connect to")
_GID = re.compile(r"Incompatibility issue with GID types")
_WAITING = re.compile(r"Waiting for client( rdma_cm QP)? to connect")
# column names in a table header: "#bytes", "BW peak[Gb/sec]", "99% percentile[usec]", ...
_COLUMN = re.compile(r"#\w+|tps average|[\w.%]+(?: [\w.%]+)?\[[^\]]*\]")
# real header lines are < 200 chars; the cap keeps the regexes linear on garbage
_MAX_HEADER_CHARS = 1000
_SETTING = re.compile(r"([A-Za-z][^:\t]*?)\s*:\s*([^\t]*?)\s*(?=\t|$)")

_LATENCY_FIELDS = {
    "t_min[usec]": "t_min_us",
    "t_max[usec]": "t_max_us",
    "t_typical[usec]": "t_typical_us",
    "t_avg[usec]": "t_avg_us",
    "t_stdev[usec]": "t_stdev_us",
    "99% percentile[usec]": "t_p99_us",
    "99.9% percentile[usec]": "t_p999_us",
    "tps average": "tps_avg",
}


def classify_perftest_error(text: str) -> str | None:
    """The kind of failure named in perftest's words, or None when no known error is there."""
    if _NO_DEVICE.search(text):
        return NO_DEVICE
    if _GID.search(text):
        return GID
    if _CONNECT.search(text):
        return CONNECT
    return None


def perftest_waiting(text: str) -> bool:
    """Whether a perftest server printed its "Waiting for client ... to connect" banner.

    The runner starts the client only after this (perftest servers listen from then on).
    """
    return isinstance(text, str) and _WAITING.search(text) is not None


def _is_rule(line: str) -> bool:
    s = line.strip()
    return len(s) >= 10 and s.strip("-") == ""


def _number(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass(slots=True)
class _Table:
    columns: list[str]
    unit: str | None
    factor: float | None  # to Gbit/s; None when the unit is unknown


def _table(header: str) -> _Table:
    columns = _COLUMN.findall(header)
    unit = None
    for name in columns:
        if name.startswith("BW average[") or name.startswith("BW peak["):
            unit = name[name.index("[") + 1 : -1]
            break
    factor = _UNIT_TO_GBPS.get(unit.lower()) if unit else None
    return _Table(columns, unit, factor)


def _row(table: _Table, tokens: list[str]) -> PerftestRow | None:
    """A row from its tokens, or None when it is cut short or not numbers.

    Every row format of perftest prints one value per header column (``CPU_Util`` adds
    both), so fewer tokens than columns means a line cut short: its last number may be too.
    """
    if len(table.columns) < 2 or len(tokens) < len(table.columns):
        return None
    try:
        size = int(tokens[0])
    except ValueError:
        return None
    fields: dict[str, float | int | None] = {}
    for name, token in zip(table.columns[1:], tokens[1:]):
        value = _number(token)
        if value is None:
            return None
        if name == "#iterations":
            fields["iterations"] = int(value)
        elif name.startswith("BW peak["):
            if table.factor is not None:
                fields["bw_peak_gbps"] = value * table.factor if value > 0 else None
        elif name.startswith("BW average["):
            if table.factor is not None:
                fields["bw_avg_gbps"] = value * table.factor
        elif name == "MsgRate[Mpps]":
            fields["msg_rate_mpps"] = value
        elif name in _LATENCY_FIELDS:
            fields[_LATENCY_FIELDS[name]] = value
        # anything else (CPU_Util, per-port columns, #sl) is not needed
    return PerftestRow(size_bytes=size, **fields)


def _clip(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_perftest(stdout: str, stderr: str = "", exit_status: int | None = 0) -> PerftestResult:
    """Parse one perftest run's report; never raises.

    ``ok`` is True when a result table has at least one complete row, no known error was
    printed, and the exit status is 0 or unknown (None). When not ok, ``error`` is
    perftest's own lines (stderr first) or a plain description of what is missing, and
    ``rows`` keeps whatever complete rows were printed.
    """
    stdout = stdout if isinstance(stdout, str) else ""
    stderr = stderr if isinstance(stderr, str) else ""
    lines = stdout.splitlines()

    test = None
    settings: list[tuple[str, str]] = []
    warnings: list[str] = []
    stray: list[str] = []
    rows: list[PerftestRow] = []
    table: _Table | None = None
    rules = 0  # dashed lines seen
    in_table = False
    unit = None
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if _is_rule(line):
            rules += 1
            in_table = False
            continue
        if stripped.startswith("#bytes"):
            table = _table(stripped[:_MAX_HEADER_CHARS])
            unit = unit or table.unit
            in_table = True
            continue
        if stripped.startswith("WARNING"):
            warnings.append(stripped)
            continue
        if in_table and table is not None:
            row = _row(table, stripped.split())
            if row is not None:
                rows.append(row)
            else:
                stray.append(stripped)
            continue
        if rules == 1 and table is None:  # the header block: title, then "key : value"
            if test is None and ":" not in stripped:
                test = stripped
                continue
            for key, value in _SETTING.findall(line[:_MAX_HEADER_CHARS]):
                settings.append((key.strip(), value))
            continue
        if rules == 0 and (stripped.startswith("*") or _WAITING.search(stripped)):
            continue  # the server's banner box
        if not stripped.startswith(("local address", "remote address", "GID:")):
            stray.append(stripped)

    setting = dict(settings)
    gid = setting.get("GID index", "")
    stderr_lines = [s.strip() for s in stderr.splitlines() if s.strip()]
    diagnostic = _clip("\n".join(stderr_lines + stray))
    header = dict(
        test=test,
        device=setting.get("Device") or None,
        link_type=setting.get("Link type") or None,
        gid_index=int(gid) if gid.isascii() and gid.isdigit() else None,
        unit=unit,
        settings=tuple(settings),
        warnings=tuple(warnings),
        diagnostic=diagnostic,
    )

    kind = classify_perftest_error(stderr) or classify_perftest_error("\n".join(stray))
    error = None
    if kind is not None:
        words = stderr_lines or [s for s in stray if classify_perftest_error(s)]
        error = "; ".join(words)
    elif exit_status not in (0, None):
        kind = ERROR
        error = "; ".join(stderr_lines) or f"perftest exited with status {exit_status}"
    elif table is not None and table.factor is None and table.unit is not None:
        kind, error = ERROR, f"unknown bandwidth unit {table.unit!r} in the table header"
    elif table is None:
        kind = ERROR
        if stderr_lines:
            error = "; ".join(stderr_lines)
        elif stdout.strip():
            error = "no result table in perftest's output (not a perftest report?)"
        else:
            error = "perftest printed nothing"
    elif not rows:
        kind, error = ERROR, "no result rows: the output ends at the table header"
    if error is not None:
        return PerftestResult(ok=False, error=_clip(error, 500), kind=kind, rows=tuple(rows), **header)
    return PerftestResult(ok=True, rows=tuple(rows), **header)
