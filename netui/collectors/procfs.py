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

from netui.model.samples import (
    CpuTimes,
    InterfaceCounters,
    SoftirqCounts,
    SoftnetStat,
)


class ParseError(ValueError):
    """The text is not in the format the parser expects."""


def parse_net_dev(text: str) -> dict[str, InterfaceCounters]:
    """Parse /proc/net/dev into counters per interface name.

    Lines that are not ``name: 16 numbers`` are skipped (a truncated last line is lost,
    the others are kept). Raises ParseError when no interface line is valid and the text
    is not empty of interfaces in the kernel's own layout.
    """
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
            result[name] = InterfaceCounters(*map(int, values))
        except ValueError:
            bad += 1
    if not result and bad:
        raise ParseError("/proc/net/dev: no valid interface line")
    return result


def parse_keyed_pairs(text: str) -> dict[str, dict[str, int]]:
    """Parse /proc/net/snmp or /proc/net/netstat into {prefix: {field: value}}.

    Each protocol is a names line followed by a values line with the same ``Prefix:``.
    A pair whose lengths differ or whose values are not integers is dropped (truncated
    file); the other pairs are kept. Raises ParseError if no pair is valid.
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
        keys = names.split()
        vals = values.split()
        if len(keys) == len(vals) and keys:
            try:
                result[head] = dict(zip(keys, map(int, vals)))
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
    cpus: list[int] = []
    rows: list[list[int]] = []
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
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
    header: list[str] | None = None
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if header is None and stripped.startswith("CPU"):
            header = stripped.split()
            continue
        name, sep, rest = stripped.partition(":")
        if sep and name in ("NET_RX", "NET_TX"):
            rows[name] = rest.split()
    if header is None:
        raise ParseError("/proc/softirqs: no CPU header")
    try:
        cpus = tuple(int(h[3:]) for h in header)
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
            out[name] = tuple(map(int, values))
        except ValueError:
            raise ParseError(f"/proc/softirqs: {name} is not numeric") from None
    return SoftirqCounts(cpus, out["NET_RX"], out["NET_TX"])


def parse_softnet_stat(text: str) -> SoftnetStat:
    """Parse /proc/net/softnet_stat (hex, u32) into processed/dropped/time_squeeze per CPU.

    Rows of any width >= 9 are accepted; rows with 13 or more columns carry the CPU id in
    column 13, older rows are numbered by line. A malformed row is skipped. Raises
    ParseError when no row is valid.
    """
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
