"""The remote sampler's number tables, as a frame carries them (docs/protocol.md): little-endian
u64 and u32 arrays taken as they are, never parsed number by number. Each parser takes the
field's bytes and returns the same types as the text parsers of collectors/procfs.py; a
table that does not hold together raises ``ParseError``.
"""

from __future__ import annotations

import sys
from array import array

from netui.collectors.procfs import ParseError, cpu_ids
from netui.collectors.protocol import CPUSUM as _CPUSUM  # the remote sampler's "cpusum"
from netui.collectors.protocol import SUM_HOT as _SUM_HOT, SUM_IRQ as _SUM_IRQ
from netui.collectors.protocol import SUM_SOFTNET as _SUM_SOFTNET, SUM_STAT as _SUM_STAT
from netui.model.samples import CounterMap, CounterTable, CpuSums, CpuTimes, SoftirqCounts, SoftnetStat, TcpSample

_LITTLE_ENDIAN = sys.byteorder == "little"

_U32 = "I" if array("I").itemsize == 4 else "L"


def parse_u64s(raw: bytes | memoryview, width: int, what: str, typecode: str = "Q") -> array:
    """The remote sampler's number tables: little-endian u64 values (u32 with ``typecode``
    _U32), ``width`` per row, taken as they are. Raises ParseError unless they are a whole
    number of rows, at least one.
    """
    values = array(typecode)
    if not raw or len(raw) % (values.itemsize * width):
        raise ParseError(f"{what}: not rows of {width} {8 * values.itemsize}-bit values")
    values.frombytes(raw)
    if not _LITTLE_ENDIAN:
        values.byteswap()
    return values


def parse_cpu_compact(raw: bytes) -> CpuTimes:
    """The remote sampler's per-CPU summary of /proc/stat: u64s of (CPU, SOFTIRQ, TOTAL).

    The remote parsers keep the counter columns as the arrays they were decoded into (8
    bytes a counter instead of a 40-byte int and its pointer: a fleet keeps a sample per
    node); ``cpus`` stays a tuple.
    """
    v = parse_u64s(raw, 3, "cpu summary")
    return CpuTimes(cpu_ids(v[0::3]), None, None, None, None, None, None, v[1::3], None, v[2::3])


def parse_netirq_compact(raw: bytes) -> SoftirqCounts:
    """The remote sampler's NET rows of /proc/softirqs: u32s of (CPU, NET_RX, NET_TX)."""
    v = parse_u64s(raw, 3, "NET softirqs", _U32)
    return SoftirqCounts(cpu_ids(v[0::3]), v[1::3], v[2::3])


_NETDEV_NAMES: dict[bytes, tuple[str, ...]] = {}  # names lines of the sampler's net/dev → their names


def parse_netdev_compact(raw: bytes) -> CounterTable:
    """The remote sampler's /proc/net/dev: names, a newline, u64s of 16 counters each. The
    tables with one names line share its tuple of names (a fleet's nodes are alike)."""
    cut = raw.find(b"\n")
    if cut < 0:
        raise ParseError("net/dev summary: no interface names")
    names_line = raw[:cut]
    names = _NETDEV_NAMES.get(names_line)
    if names is None:
        split = names_line.decode("utf-8", "replace").split()
        if not split or len(set(split)) != len(split):
            raise ParseError("net/dev summary: no interface names")
        if len(_NETDEV_NAMES) >= 1024:
            _NETDEV_NAMES.clear()
        names = _NETDEV_NAMES[names_line] = tuple(split)
    v = parse_u64s(memoryview(raw)[cut + 1 :], 16, "net/dev summary")  # (the counters read in place, not copied first)
    if len(v) != 16 * len(names):
        raise ParseError(f"net/dev summary: {len(v) // 16} counter rows for {len(names)} names")
    return CounterTable(names, v)


_TCP_LAYOUTS: dict[bytes, tuple] = {}  # the names lines of a tcp table → their keys and indexes


def _tcp_layout(names: bytes) -> tuple:
    layout = _TCP_LAYOUTS.get(names)
    if layout is None:
        tcp_line, _, ext_line = names.decode("utf-8", "replace").partition("\n")
        tcp, ext = tuple(tcp_line.split()), tuple(ext_line.split())
        if not tcp or len(set(tcp)) != len(tcp) or len(set(ext)) != len(ext):
            raise ParseError("tcp summary: not two lines of distinct counter names")
        if len(_TCP_LAYOUTS) >= 64:
            _TCP_LAYOUTS.clear()
        layout = _TCP_LAYOUTS[names] = (tcp, ext, {k: i for i, k in enumerate(tcp)}, {k: i for i, k in enumerate(ext)})
    return layout


_LAST_TCP: tuple = (b"", None)  # the names block of the last tcp table read, and its layout


def parse_tcp_compact(raw: bytes) -> TcpSample:
    """The remote sampler's TCP table: the Tcp names, a newline, the TcpExt names, a newline,
    then i64s of the Tcp values and u64s of the TcpExt ones. The samples of one layout
    share its names and index."""
    global _LAST_TCP
    last, layout = _LAST_TCP
    second = len(last)
    # (a fleet's nodes send one names block: the last one's layout, when the frame starts with it)
    if not (second and raw.startswith(last) and raw[second : second + 1] == b"\n"):
        first = raw.find(b"\n")
        second = raw.find(b"\n", first + 1) if first >= 0 else -1
        if second < 0:
            raise ParseError("tcp summary: no names")
        names = raw[:second]
        layout = _tcp_layout(names)
        _LAST_TCP = names, layout
    tcp_keys, ext_keys, tcp_index, ext_index = layout
    split = second + 1 + 8 * len(tcp_keys)
    if len(raw) - split != 8 * len(ext_keys):
        raise ParseError(f"tcp summary: {len(raw) - second - 1} bytes of values for "
                         f"{len(tcp_keys) + len(ext_keys)} names")
    tcp, ext = array("q"), array("Q")
    tcp.frombytes(raw[second + 1 : split])
    ext.frombytes(raw[split:])
    if not _LITTLE_ENDIAN:
        tcp.byteswap()
        ext.byteswap()
    return TcpSample(CounterMap(tcp_keys, tcp, tcp_index), CounterMap(ext_keys, ext, ext_index))


def tcp_layout_of(raw: bytes) -> tuple[bytes, tuple]:
    """The names block of a TCP table that parse_tcp_compact read (its two names lines) and
    their layout: (Tcp names, TcpExt names, their indexes), as the samples of that table share them."""
    second = raw.find(b"\n", raw.find(b"\n") + 1)
    return raw[:second], _tcp_layout(raw[:second])


_make_sums = CpuSums._make


def parse_cpusum(raw: bytes) -> CpuSums:
    """The remote sampler's "cpusum": its sums of the per-CPU tables (see CpuSums)."""
    if len(raw) != _CPUSUM.size:
        raise ParseError(f"cpu sums: {len(raw)} bytes, not {_CPUSUM.size}")
    values = _CPUSUM.unpack(raw)
    mask, ncpus, rx, tx, processed, dropped, squeeze, hot, hot_soft, hot_total, since = values
    if mask > 15 or (mask & _SUM_HOT and not (mask & _SUM_STAT and 0 <= hot_soft <= hot_total and hot_total > 0)):
        raise ParseError(f"cpu sums: bad mask or hottest CPU ({mask}, {hot_soft}/{hot_total})")
    if mask == 15:  # the usual: everything summed
        return _make_sums(values[1:])
    irq, net = mask & _SUM_IRQ, mask & _SUM_SOFTNET
    if mask & _SUM_HOT:
        return CpuSums(ncpus if mask & _SUM_STAT else None, rx if irq else None, tx if irq else None,
                       processed if net else None, dropped if net else None, squeeze if net else None,
                       hot, hot_soft, hot_total, since)
    return CpuSums(ncpus if mask & _SUM_STAT else None, rx if irq else None, tx if irq else None,
                   processed if net else None, dropped if net else None, squeeze if net else None)


def parse_softnet_compact(raw: bytes) -> SoftnetStat:
    """The remote sampler's softnet summary: u32s of (PROCESSED, DROPPED, SQUEEZE, CPU)."""
    v = parse_u64s(raw, 4, "softnet summary", _U32)
    return SoftnetStat(cpu_ids(v[3::4]), v[0::4], v[1::4], v[2::4])
