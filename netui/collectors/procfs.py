"""Pure parsers for the /proc files netui reads, as text (the remote sampler's number tables:
collectors/frame_tables.py; the sysfs values of an interface: collectors/sysfs.py).

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

import json
import re
import sys
from array import array
from collections.abc import Mapping, Sequence
from functools import lru_cache
from operator import itemgetter

from netui.speedups import columns, parse_rows, u64s
from netui.model.samples import (
    CounterMap,
    CounterTable,
    CpuTimes,
    InterfaceCounters,
    SoftirqCounts,
    SoftnetStat,
)


_U64_MAX = (1 << 64) - 1
_U32_MAX = (1 << 32) - 1


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
    if len(tokens) < 24:  # a few: int() each is cheaper than setting up the decoder
        return list(map(int, tokens))
    joined = ",".join(tokens)  # (a tuple of tokens too)
    if joined.isascii() and not joined.encode().translate(None, b"0123456789,-"):
        try:
            values = _json_loads("[" + joined + "]")
            if len(values) == len(tokens):
                return values
        except ValueError:
            pass
    return list(map(int, tokens))  # leading zeros, unicode digits ...; raises on garbage


@lru_cache(maxsize=64)
def cpu_range(n: int) -> tuple[int, ...]:
    """CPU ids 0..n-1: one shared tuple per n, so that the ids of two tables compare by identity."""
    return tuple(range(n))


@lru_cache(maxsize=64)
def _range_typed(n: int, typecode: str) -> array:
    return array(typecode, range(n))


def cpu_ids(values: array) -> tuple[int, ...]:
    """CPU ids decoded from a table: the shared ``cpu_range(n)`` for 0..n-1 (compared in C;
    other columns' ids are compared with it by identity), else their tuple."""
    n = len(values)
    if n and values[-1] == n - 1 and values == _range_typed(n, values.typecode):
        return cpu_range(n)
    return tuple(values)


@lru_cache(maxsize=256)
def _cpu_ids(labels: tuple[str, ...], prefix_len: int) -> tuple[int, ...]:
    """CPU numbers from labels such as ``cpu12`` or ``CPU12`` (cached: they rarely change).
    CPUs 0..n-1 give the shared ``cpu_range(n)``, which other columns' ids are compared with."""
    ids = tuple(int(label[prefix_len:]) for label in labels)
    return cpu_range(len(ids)) if ids == cpu_range(len(ids)) else ids


_LAST_HEADER: list = [None, None]  # the last /proc/softirqs header line and its CPUs


def _softirq_cpus(line: str) -> tuple[int, ...]:
    """_softirq_header, first compared with the last header (a memcmp: a fresh string's
    hash would walk its 1.4 KB at 128 CPUs)."""
    last = _LAST_HEADER
    if line == last[0]:
        return last[1]
    cpus = _softirq_header(line)
    last[0], last[1] = line, cpus
    return cpus


@lru_cache(maxsize=64)
def _softirq_header(line: str) -> tuple[int, ...]:
    labels = line.split()
    if not all(label.startswith("CPU") for label in labels):
        raise ValueError("not a CPUn header")
    return _cpu_ids(tuple(labels), 3)


_LITTLE_ENDIAN = sys.byteorder == "little"


def parse_net_dev(text: str) -> CounterTable:
    """Parse /proc/net/dev into counters per interface name (a CounterTable: a mapping of
    name → InterfaceCounters).

    Lines that are not ``name: 16 numbers`` are skipped (a truncated last line is lost,
    the others are kept). Raises ParseError when no interface line is valid and the text
    is not empty of interfaces in the kernel's own layout.
    """
    start = 0
    for _ in range(2):  # the kernel's two header lines
        nl = text.find("\n", start)
        if nl < 0 or "|" not in text[start:nl]:
            return _parse_net_dev_lines(text)
        start = nl + 1
    try:
        names, _, raw = parse_rows(text, ":", 1, 16, 10, -1, _U64_MAX, start)
    except ValueError:
        return _parse_net_dev_lines(text)
    if names and "" not in names and len(set(names)) == len(names):
        return CounterTable(tuple(names), u64s(raw))
    return _parse_net_dev_lines(text)


def _parse_net_dev_lines(text: str) -> CounterTable:
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
    return CounterTable.from_counters(result)


@lru_cache(maxsize=256)
def _pair_layout(names: str, fields: frozenset[str] | None):
    """(kept names, a function picking their values from the split values line, width, the
    kept columns as a parse_rows ``keep`` or None) of a names line — cached: a kernel
    prints the same names line every time, so consecutive samples share the names tuple
    (CounterMap rates rely on that)."""
    keys = names.split()
    if len(set(keys)) != len(keys):  # a name twice: the last one counts, as in a dict
        last = {k: i for i, k in enumerate(keys)}
        if fields is not None:
            last = {k: i for k, i in last.items() if k in fields}
        pos = list(last.values())
        return tuple(last), lambda vals: [vals[i] for i in pos], len(keys), None
    if fields is None:
        return tuple(keys), list, len(keys), -1
    pos = [i for i, k in enumerate(keys) if k in fields]
    kept = tuple(keys[i] for i in pos)
    mask = bytes(1 if k in fields else 0 for k in keys)
    if len(pos) == 1:
        only = pos[0]
        return kept, lambda vals: [vals[only]], len(keys), mask
    return kept, (itemgetter(*pos) if pos else lambda vals: []), len(keys), mask


_LAST_PAIR: dict = {}  # (prefix, fields) → (the last names line, its _pair_layout)


def _one_pair(text: str, head: str, fields: frozenset[str] | None) -> Mapping[str, int] | None:
    """The first ``head:`` pair of lines, found directly (the common case of one wanted
    prefix); None when it is missing or not sound (the careful path then decides)."""
    key = head + ":"
    at = 0 if text.startswith(key) else text.find("\n" + key) + 1
    if at <= 0 and not text.startswith(key):
        return None
    names_end = text.find("\n", at)
    if names_end < 0 or not text.startswith(key, names_end + 1):
        return None
    names_at = at + len(key)
    last = _LAST_PAIR.get((head, fields))
    if last is not None and len(last[0]) == names_end - names_at and text.startswith(last[0], names_at):
        keys, pick, width, keep = last[1]  # the same names line as last time (a memcmp)
    else:
        names = text[names_at:names_end]
        layout = _pair_layout(names, fields)
        _LAST_PAIR[head, fields] = (names, layout)
        keys, pick, width, keep = layout
    if not width:
        return None
    values_at = names_end + 1 + len(key)
    values_end = text.find("\n", values_at)
    if values_end < 0:
        values_end = len(text)
    if keep is not None and text.find("-", values_at, values_end) < 0:  # unsigned: in C
        try:  # (Tcp's MaxConn is -1: below)
            _, _, raw = parse_rows(text, ":", 0, width, 10, keep, _U64_MAX, values_at, values_end)
        except ValueError:
            return None
        if len(raw) != len(keys):  # no values line at all (a file cut after "Tcp:")
            return None
        return CounterMap(keys, u64s(raw))
    vals = text[values_at:values_end].split()
    if len(vals) != width:
        return None
    try:
        return dict(zip(keys, ints(pick(vals))))
    except ValueError:
        return None


def parse_keyed_pairs(text: str, only: tuple[str, ...] | None = None,
                      fields: frozenset[str] | None = None) -> dict[str, dict[str, int]]:
    """Parse /proc/net/snmp or /proc/net/netstat into {prefix: {field: value}}.

    Each protocol is a names line followed by a values line with the same ``Prefix:``.
    A pair whose lengths differ or whose values are not integers is dropped (truncated
    file); the other pairs are kept. ``only`` limits the result to those prefixes and
    ``fields`` to those field names (the others are not converted). Raises ParseError if
    no wanted pair is valid.
    """
    if only is not None and len(only) == 1:
        found = _one_pair(text, only[0], fields)
        if found is not None:
            return {only[0]: found}
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
            keys, pick, width, _ = _pair_layout(names, fields)
            vals = values.split()
            if len(vals) == width and width:
                try:
                    result[head] = dict(zip(keys, ints(pick(vals))))
                except ValueError:
                    pass
        i += 2
    if not result:
        raise ParseError("no valid name/value line pair" if seen_any else "no name/value lines")
    return result


_CPU_COLUMNS = 8  # user nice system idle iowait irq softirq steal
_CPU_KEEP = (1 << _CPU_COLUMNS) - 1


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
        if cpu < 0 or min(values) < 0 or max(values) > _U64_MAX:
            continue
        if len(values) < _CPU_COLUMNS:
            values.extend([0] * (_CPU_COLUMNS - len(values)))
        cpus.append(cpu)
        rows.append(values)
    if not rows:
        raise ParseError("/proc/stat: no cpuN line")
    cols = [array("Q", c) for c in zip(*rows)]
    total = array("Q", [sum(r) & _U64_MAX for r in rows])  # modulo 2**64, as the fast path
    return CpuTimes(tuple(cpus), *cols, total)


_CPU_BLOCK_END = re.compile(r"\n(?!cpu)")


def _stat_cpus_fast(text: str) -> CpuTimes | None:
    """The cpuN block decoded at once (netui.speedups) when its lines share one width;
    None: the careful path."""
    start = text.find("\ncpu")
    if start < 0 or not text.startswith("cpu "):
        return None
    stop = text.find("\nintr ", start)  # the kernel's next line, found without a regex
    if stop < 0:
        end = _CPU_BLOCK_END.search(text, start + 1)
        stop = end.start() if end else len(text)
    try:  # guest and guest_nice (columns 8, 9) are already in user and nice: not read
        raw_ids, width, raw = parse_rows(text, " ", 2, -1, 10, _CPU_KEEP, _U64_MAX, start + 1, stop)
    except ValueError:
        return None
    ids = u64s(raw_ids)
    n = len(ids)
    if width < 4 or not n:
        return None
    cpus = cpu_ids(ids)
    ncols = min(width, _CPU_COLUMNS)
    flat = u64s(columns(u64s(raw), ncols, ncols))  # column after column, then the totals
    cols = [flat[c * n : (c + 1) * n] for c in range(ncols)]
    total = flat[ncols * n :]
    zeros = None
    while len(cols) < _CPU_COLUMNS:  # old kernels: no steal, irq, softirq (not split out)
        zeros = zeros or array("Q", bytes(8 * n))
        cols.append(zeros)
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
    rows: dict[str, tuple[int, int]] = {}  # name → (start, stop) of its numbers in text
    after = 0
    for name in ("NET_TX", "NET_RX"):  # the kernel's order: NET_RX is looked for after NET_TX
        at = text.find(f"{name}:", after)
        if at < 0 and after:
            at = text.find(f"{name}:")
        after = max(at, 0)
        if at > 0 and text[at - 1] in " \n":
            end = text.find("\n", at)
            rows[name] = (at + len(name) + 1, end if end >= 0 else len(text))
    try:
        cpus = _softirq_cpus(header_line)
    except ValueError as exc:
        raise ParseError(f"/proc/softirqs: bad header: {exc}") from None
    out: dict[str, Sequence[int]] = {}
    for name in ("NET_RX", "NET_TX"):
        span = rows.get(name)
        if span is None:
            raise ParseError(f"/proc/softirqs: no {name} row")
        row = _u32_row(text, len(cpus), *span)
        if row is not None:
            out[name] = row
            continue
        values = text[span[0] : span[1]].split()
        if len(values) != len(cpus):
            raise ParseError(f"/proc/softirqs: {name} has {len(values)} values for {len(cpus)} CPUs")
        try:
            numbers = ints(values)
        except ValueError:
            raise ParseError(f"/proc/softirqs: {name} is not numeric") from None
        if numbers and (min(numbers) < 0 or max(numbers) > _U64_MAX):
            raise ParseError(f"/proc/softirqs: {name} has a count out of range")
        out[name] = array("Q", numbers)
    return SoftirqCounts(cpus, out["NET_RX"], out["NET_TX"])


def _u32_row(text: str, n: int, start: int, stop: int) -> array | None:
    """``n`` decimal numbers of at most 32 bits (a /proc/softirqs row, text[start:stop]) as
    array('Q'); None when the text is anything else."""
    try:
        _, _, raw = parse_rows(text, ":", 0, n, 10, -1, _U32_MAX, start, stop)  # (positional: cheaper)
    except ValueError:
        return None
    if len(raw) != 8 * n or not n:
        return None
    return u64s(raw)


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
        if min(p, d, s, cpu) < 0 or max(p, d, s) > _U64_MAX:
            continue
        cpus.append(cpu)
        processed.append(p)
        dropped.append(d)
        squeeze.append(s)
    if not cpus:
        raise ParseError("/proc/net/softnet_stat: no valid row")
    return SoftnetStat(tuple(cpus), array("Q", processed), array("Q", dropped), array("Q", squeeze))


_SOFTNET_KEEP = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 12  # processed, dropped, time_squeeze, CPU id


def _softnet_fast(text: str) -> SoftnetStat | None:
    """Rows of one width decoded in one go (netui.speedups: hex u32, only the columns netui
    uses); None: the careful path."""
    try:
        _, width, raw = parse_rows(text, " ", 0, -1, 16, _SOFTNET_KEEP, _U32_MAX)
    except ValueError:
        return None
    if width < 9 or not raw:
        return None
    values = u64s(raw)
    if width >= 13:
        return SoftnetStat(cpu_ids(values[3::4]), values[0::4], values[1::4], values[2::4])
    return SoftnetStat(cpu_range(len(values) // 3), values[0::3], values[1::3], values[2::3])
