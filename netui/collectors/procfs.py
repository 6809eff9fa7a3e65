"""Pure parsers for the /proc files netui reads.

Each parser takes the file's text and returns typed values; none does I/O. Garbage raises
``ParseError`` (or yields a partial result where the rest of the file is still sound); no
other exception escapes. The traps of these formats are handled here:

- /proc/net/dev: ``drop``/``frame``/``carrier`` are sums of kernel counters; widths are
  minimums, so fields are split on whitespace after the first ``:``.
- /proc/net/snmp and /proc/net/netstat: name line + value line with the same prefix; zip
  by name, never by position (field sets change between kernels).
- /proc/stat: softirq is the 7th number after the label; guest is already in user/nice;
  CPU ids come from the label (offline CPUs have no line); old kernels print fewer columns.
- /proc/softirqs: the header lists every *possible* CPU; values are u32.
- /proc/net/softnet_stat: hex, 9 to 15+ columns; the CPU id is column 13 when present,
  the line number otherwise (offline CPUs are skipped).
"""

from __future__ import annotations

import binascii
import json
import re
import sys
from array import array
from functools import lru_cache

from netui.model.samples import (
    CpuTimes,
    InterfaceCounters,
    SoftirqCounts,
    SoftnetStat,
)


class ParseError(ValueError):
    """The text is not in the format the parser expects."""


_json_loads = json.JSONDecoder().decode


def ints(tokens: list[str]) -> list[int]:
    """Decimal integers from whitespace-free tokens; ValueError for anything else.

    The fast path hands the whole batch to the C JSON decoder (about twice as fast as
    ``map(int, ...)``, which matters at a thousand nodes × 128 CPUs); the ``isdigit``
    check first keeps floats, exponents, NaN and signs other than '-' out of it.
    """
    if not tokens:
        return []
    joined = ",".join(tokens)
    if joined.isascii() and not joined.encode().translate(None, b"0123456789,-"):
        try:
            values = _json_loads("[" + joined + "]")
            if len(values) == len(tokens):
                return values
        except ValueError:
            pass
    return list(map(int, tokens))  # leading zeros, unicode digits ...; raises on garbage


@lru_cache(maxsize=256)
def _cpu_ids(labels: tuple[str, ...], prefix_len: int) -> tuple[int, ...]:
    """CPU numbers from labels such as ``cpu12`` or ``CPU12`` (cached: they rarely change)."""
    return tuple(int(label[prefix_len:]) for label in labels)


@lru_cache(maxsize=64)
def _softirq_header(line: str) -> tuple[int, ...]:
    labels = line.split()
    if not all(label.startswith("CPU") for label in labels):
        raise ValueError("not a CPUn header")
    return _cpu_ids(tuple(labels), 3)


_LITTLE_ENDIAN = sys.byteorder == "little"


def parse_net_dev(text: str) -> dict[str, InterfaceCounters]:
    """Parse /proc/net/dev into counters per interface name.

    Lines that are not ``name: 16 numbers`` are skipped (a truncated last line is lost,
    the others are kept). Raises ParseError when no interface line is valid and the text
    is not empty of interfaces in the kernel's own layout.
    """
    names: list[str] = []
    tokens: list[str] = []
    fast = True
    for line in text.split("\n"):
        if "|" in line:
            continue  # the two header lines
        name, sep, rest = line.partition(":")
        values = rest.split()
        if not sep or len(values) != 16:
            if line.strip():
                fast = False
                break
            continue
        names.append(name.strip())
        tokens += values
    if fast and names and "" not in names:
        try:
            numbers = ints(tokens)
        except ValueError:
            numbers = None
        if numbers is not None and min(numbers) >= 0:
            make = InterfaceCounters._make
            return {name: make(numbers[i * 16 : i * 16 + 16]) for i, name in enumerate(names)}
    return _parse_net_dev_lines(text)


def _parse_net_dev_lines(text: str) -> dict[str, InterfaceCounters]:
    """Line by line, keeping every valid line (the careful path for odd input)."""
    result: dict[str, InterfaceCounters] = {}
    bad = 0
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if not sep or "|" in line:
            continue  # the two header lines, blank lines
        name = name.strip()
        values = rest.split()
        if not name or len(values) != 16:
            bad += 1
            continue
        try:
            counters = InterfaceCounters._make(map(int, values))
        except ValueError:
            bad += 1
            continue
        if min(counters) < 0:
            bad += 1
            continue
        result[name] = counters
    if not result and bad:
        raise ParseError("/proc/net/dev: no valid interface line")
    return result


def parse_keyed_pairs(text: str, only: tuple[str, ...] | None = None,
                      fields: frozenset[str] | None = None) -> dict[str, dict[str, int]]:
    """Parse /proc/net/snmp or /proc/net/netstat into {prefix: {field: value}}.

    Each protocol is a names line followed by a values line with the same ``Prefix:``.
    A pair whose lengths differ or whose values are not integers is dropped (truncated
    file); the other pairs are kept. ``only`` limits the result to those prefixes and
    ``fields`` to those field names (the others are not converted). Raises ParseError if
    no wanted pair is valid.
    """
    result: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    seen_any = False
    i = 0
    while i + 1 < len(lines):
        head, sep, names = lines[i].partition(":")
        head2, sep2, values = lines[i + 1].partition(":")
        if not sep or not sep2 or head != head2 or not head:
            i += 1
            continue
        seen_any = True
        if only is None or head in only:
            keys = names.split()
            vals = values.split()
            if len(keys) == len(vals) and keys:
                if fields is not None:
                    kept = [(k, v) for k, v in zip(keys, vals) if k in fields]
                    keys, vals = [k for k, _ in kept], [v for _, v in kept]
                try:
                    result[head] = dict(zip(keys, ints(vals)))
                except ValueError:
                    pass
        i += 2
    if not result:
        raise ParseError("no valid name/value line pair" if seen_any else "no name/value lines")
    return result


_CPU_COLUMNS = 8  # user nice system idle iowait irq softirq steal


def parse_stat_cpus(text: str) -> CpuTimes:
    """Parse the per-CPU ``cpuN`` lines of /proc/stat (ticks of USER_HZ).

    Missing trailing columns (old kernels: no steal, irq, softirq) count as 0 — they were
    not accounted separately there. Lines that do not parse are skipped. Raises ParseError
    when there is no valid ``cpuN`` line.
    """
    fast = _stat_cpus_fast(text)
    if fast is not None:
        return fast
    lines = [line for line in text.split("\n") if line.startswith("cpu") and not line.startswith("cpu ")]
    cpus: list[int] = []
    rows: list[list[int]] = []
    for line in lines:
        parts = line.split()
        if len(parts) < 5:
            continue
        try:
            cpu = int(parts[0][3:])
            values = list(map(int, parts[1 : _CPU_COLUMNS + 1]))
        except ValueError:
            continue
        if cpu < 0 or min(values) < 0:
            continue
        if len(values) < _CPU_COLUMNS:
            values.extend([0] * (_CPU_COLUMNS - len(values)))
        cpus.append(cpu)
        rows.append(values)
    if not rows:
        raise ParseError("/proc/stat: no cpuN line")
    cols = tuple(zip(*rows))
    total = tuple(map(sum, rows))
    return CpuTimes(tuple(cpus), *cols, total)


_CPU_BLOCK_END = re.compile(r"\n(?!cpu)")


def _stat_cpus_fast(text: str) -> CpuTimes | None:
    """The cpuN block decoded at once when its lines share one width; None: careful path."""
    start = text.find("\ncpu")
    if start < 0 or not text.startswith("cpu "):
        return None
    end = _CPU_BLOCK_END.search(text, start + 1)
    block = text[start + 1 : end.start() if end else len(text)]
    first = block[: block.find("\n")] if "\n" in block else block
    width = first.count(" ") + 1
    n = block.count("\n") + (0 if block.endswith("\n") else 1)
    tokens = block.split()
    if width < 5 or len(tokens) != width * n:
        return None
    labels = tuple(tokens[::width])
    if "".join(labels).count("cpu") != n:
        return None
    del tokens[::width]
    step = width - 1
    if step > _CPU_COLUMNS:  # guest and guest_nice are already in user and nice
        for _ in range(step - _CPU_COLUMNS):
            del tokens[_CPU_COLUMNS::step]
            step -= 1
    try:
        cpus = _cpu_ids(labels, 3)
        values = ints(tokens)
    except ValueError:
        return None
    if min(values) < 0 or min(cpus) < 0:
        return None
    cols = [tuple(values[c::step]) for c in range(step)]
    while len(cols) < _CPU_COLUMNS:
        cols.append((0,) * n)
    total = tuple([a + b + c + d + e + f + g + h for a, b, c, d, e, f, g, h in zip(*cols)])
    return CpuTimes(cpus, *cols, total)


def parse_boot_time(text: str) -> int | None:
    """The ``btime`` line of /proc/stat (boot time, seconds since the epoch), or None."""
    for line in text.splitlines():
        if line.startswith("btime "):
            try:
                return int(line.split()[1])
            except (ValueError, IndexError):
                return None
    return None


def parse_softirqs(text: str) -> SoftirqCounts:
    """Parse the NET_RX and NET_TX rows of /proc/softirqs (u32 per CPU).

    The text may be the whole file or just the header and the two NET rows (what the
    remote sampler sends). Raises ParseError when the header or a NET row is missing or
    the row is not as wide as the header.
    """
    head_end = text.find("\n")
    header_line = text[:head_end] if head_end >= 0 else text
    if not header_line.strip().startswith("CPU"):
        raise ParseError("/proc/softirqs: no CPU header")
    rows: dict[str, list[str]] = {}
    for name in ("NET_RX", "NET_TX"):
        at = text.find(f"{name}:")
        if at >= 0 and text[:at].endswith((" ", "\n")):
            end = text.find("\n", at)
            rows[name] = text[at + len(name) + 1 : end if end >= 0 else len(text)].split()
    try:
        cpus = _softirq_header(header_line)
    except ValueError as exc:
        raise ParseError(f"/proc/softirqs: bad header: {exc}") from None
    out: dict[str, tuple[int, ...]] = {}
    for name in ("NET_RX", "NET_TX"):
        values = rows.get(name)
        if values is None:
            raise ParseError(f"/proc/softirqs: no {name} row")
        if len(values) != len(cpus):
            raise ParseError(f"/proc/softirqs: {name} has {len(values)} values for {len(cpus)} CPUs")
        try:
            out[name] = tuple(ints(values))
        except ValueError:
            raise ParseError(f"/proc/softirqs: {name} is not numeric") from None
        if out[name] and min(out[name]) < 0:
            raise ParseError(f"/proc/softirqs: {name} has a negative count")
    return SoftirqCounts(cpus, out["NET_RX"], out["NET_TX"])


def parse_softnet_stat(text: str) -> SoftnetStat:
    """Parse /proc/net/softnet_stat (hex, u32) into processed/dropped/time_squeeze per CPU.

    Rows of any width >= 9 are accepted; rows with 13 or more columns carry the CPU id in
    column 13, older rows are numbered by line. A malformed row is skipped. Raises
    ParseError when no row is valid.
    """
    fast = _softnet_fast(text)
    if fast is not None:
        return fast
    cpus: list[int] = []
    processed: list[int] = []
    dropped: list[int] = []
    squeeze: list[int] = []
    for n, line in enumerate(text.splitlines()):
        parts = line.split()
        if len(parts) < 9:
            continue
        try:
            cpu = int(parts[12], 16) if len(parts) >= 13 else n
            p, d, s = int(parts[0], 16), int(parts[1], 16), int(parts[2], 16)
        except ValueError:
            continue
        if min(p, d, s, cpu) < 0:
            continue
        cpus.append(cpu)
        processed.append(p)
        dropped.append(d)
        squeeze.append(s)
    if not cpus:
        raise ParseError("/proc/net/softnet_stat: no valid row")
    return SoftnetStat(tuple(cpus), tuple(processed), tuple(dropped), tuple(squeeze))


def _softnet_fast(text: str) -> SoftnetStat | None:
    """Rows of one width decoded in one go (every value is 8 hex digits: a big-endian u32)."""
    lines = text.rstrip("\n").split("\n")
    length = len(lines[0])
    if (length + 1) % 9 or any(len(line) != length for line in lines):
        return None
    width = (length + 1) // 9
    if width < 9:
        return None
    try:
        values = array("I", bytes.fromhex(text))
    except ValueError:
        return None
    if len(values) != width * len(lines) or values.itemsize != 4:
        return None
    if _LITTLE_ENDIAN:
        values.byteswap()
    cpus = tuple(values[12::width]) if width >= 13 else tuple(range(len(lines)))
    return SoftnetStat(cpus, tuple(values[0::width]), tuple(values[1::width]), tuple(values[2::width]))


def parse_u64s(text: str, width: int, what: str) -> array:
    """The remote sampler's number tables: base64 of little-endian u64 values, ``width``
    per row. Decoded in C (a 128-CPU node's table is a few microseconds, not a hundred).
    Raises ParseError unless it is a whole number of rows, at least one.
    """
    try:
        raw = binascii.a2b_base64(text)
    except (binascii.Error, ValueError):
        raise ParseError(f"{what}: not base64") from None
    if not raw or len(raw) % (8 * width):
        raise ParseError(f"{what}: not rows of {width} u64 values")
    values = array("Q")
    values.frombytes(raw)
    if not _LITTLE_ENDIAN:
        values.byteswap()
    return values


def parse_cpu_compact(text: str) -> CpuTimes:
    """The remote sampler's per-CPU summary of /proc/stat: u64s of (CPU, SOFTIRQ, TOTAL).

    The remote parsers keep the counter columns as the arrays they were decoded into (8
    bytes a counter instead of a 40-byte int and its pointer: a fleet keeps a sample per
    node); ``cpus`` stays a tuple.
    """
    v = parse_u64s(text, 3, "cpu summary")
    return CpuTimes(tuple(v[0::3]), None, None, None, None, None, None, v[1::3], None, v[2::3])


def parse_netirq_compact(text: str) -> SoftirqCounts:
    """The remote sampler's NET rows of /proc/softirqs: u64s of (CPU, NET_RX, NET_TX)."""
    v = parse_u64s(text, 3, "NET softirqs")
    rx, tx = v[1::3], v[2::3]
    if max(rx, default=0) >= 1 << 32 or max(tx, default=0) >= 1 << 32:
        raise ParseError("NET softirqs: a count above 32 bits")
    return SoftirqCounts(tuple(v[0::3]), rx, tx)


def parse_netdev_compact(text: str) -> dict[str, InterfaceCounters]:
    """The remote sampler's /proc/net/dev: names, a newline, u64s of 16 counters each."""
    names_line, sep, packed = text.partition("\n")
    names = names_line.split()
    if not sep or not names or len(set(names)) != len(names):
        raise ParseError("net/dev summary: no interface names")
    v = parse_u64s(packed, 16, "net/dev summary")
    if len(v) != 16 * len(names):
        raise ParseError(f"net/dev summary: {len(v) // 16} counter rows for {len(names)} names")
    make = InterfaceCounters._make
    return {name: make(v[i * 16 : i * 16 + 16]) for i, name in enumerate(names)}


def parse_softnet_compact(text: str) -> SoftnetStat:
    """The remote sampler's softnet summary: hex lines ``PROCESSED DROPPED SQUEEZE CPU``."""
    body = text.rstrip("\n")
    rows = body.count("\n") + 1
    try:
        values = array("I", bytes.fromhex(body))
    except ValueError:
        raise ParseError("softnet summary: not hex") from None
    # 4 values of 8 digits a row: the sizes tell a well-formed table from a ragged one
    if not body or len(body) != 36 * rows - 1 or len(values) != 4 * rows:
        raise ParseError("softnet summary: not 4 columns of 8 hex digits")
    if _LITTLE_ENDIAN:
        values.byteswap()
    return SoftnetStat(tuple(values[3::4]), values[0::4], values[1::4], values[2::4])


def parse_int_file(text: str | None) -> int | None:
    """A sysfs integer file (mtu, speed, carrier, ifindex): None when empty or not a number."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def parse_speed_mbps(text: str | None) -> int | None:
    """/sys/class/net/<if>/speed: Mbit/s, or None for an empty file, EINVAL or -1."""
    value = parse_int_file(text)
    return value if value is not None and value > 0 else None


def parse_carrier(text: str | None) -> bool | None:
    value = parse_int_file(text)
    return None if value not in (0, 1) else bool(value)


def parse_operstate(text: str | None) -> str | None:
    if text is None:
        return None
    value = text.strip()
    return value if value and value.isprintable() and len(value) < 32 else None
