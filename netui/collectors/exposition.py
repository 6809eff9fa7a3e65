"""node_exporter series → NodeSample: the mapping shared by the node-exporter and Prometheus sources.

Pure: text or series in, a frozen sample out. The Prometheus text format is parsed by
prometheus_client's parser (``text_string_to_metric_families``) after ``keep_lines`` has
dropped every line whose metric name netui does not use: a node_exporter scrape is
50–60 KB of which netui needs a few KB, and the parser costs ~15–20 µs per sample line.

What maps to what (node_exporter 1.5 names; absent series leave their field None, never 0):

- ``node_network_{receive,transmit}_*_total{device}`` → ``InterfaceCounters`` (the
  /proc/net/dev columns under the same names: bytes packets errs drop fifo frame compressed
  multicast, colls carrier). An interface needs its bytes, packets, errs and drop in both
  directions (what rates use); a missing other column is None.
- ``node_network_mtu_bytes``, ``node_network_speed_bytes`` (bytes/s → Mbit/s, ≤ 0 unknown),
  ``node_network_info{operstate}`` (else ``node_network_up``), ``node_network_carrier``,
  ``node_network_iface_id`` (ifindex), ``node_network_protocol_type`` (772 = loopback).
- ``node_netstat_Tcp_*`` → ``TcpSample.tcp``; ``node_netstat_TcpExt_*`` → ``TcpSample.ext``
  (the fields of ``TCPEXT_FIELDS`` that the exporter gives: by default only a few).
- ``node_cpu_seconds_total{cpu,mode}`` → ``CpuTimes`` in USER_HZ ticks (seconds × 100, as
  node_exporter divided them). A series with ``mode="total"`` (the Prometheus source sums
  the modes on the server) stands in for the sum.
- ``node_softnet_{processed,dropped,times_squeezed}_total{cpu}`` → ``SoftnetStat``.
- ``node_softirqs_functions_total{cpu,type="NET_RX"|"NET_TX"}`` → ``SoftirqCounts`` (only
  when the exporter runs its softirqs collector, off by default and absent before 1.6).
- ``node_boot_time_seconds`` → the boot identity, ``node_uname_info{nodename}`` → hostname,
  ``node_time_seconds`` → the node's clock (see ``NodeClock`` in collectors/node_exporter.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from netui.collectors.assemble import TCPEXT_FIELDS, kind_from_sysfs
from netui.collectors.sysfs import parse_operstate
from netui.model.samples import (
    CpuTimes,
    InterfaceCounters,
    InterfaceSample,
    NodeSample,
    SoftirqCounts,
    SoftnetStat,
    TcpSample,
)

# Every series netui reads starts with one of these (the exposition line starts with its name).
WANTED_PREFIXES: tuple[str, ...] = (
    "node_network_",
    "node_netstat_Tcp_",
    "node_netstat_TcpExt_",
    "node_cpu_seconds_total",
    "node_softnet_",
    "node_softirqs_functions_total",
    "node_boot_time_seconds",
    "node_time_seconds",
    "node_uname_info",
)

# The node_exporter collectors that produce them: asked for with ?collect[]=… so the node
# does not read disks, filesystems and the rest for nothing.
COLLECTORS: tuple[str, ...] = ("netdev", "netclass", "netstat", "cpu", "softnet", "softirqs",
                               "stat", "time", "uname")

USER_HZ = 100  # node_exporter divides /proc/stat ticks by 100
ARPHRD_LOOPBACK = 772
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

# node_network_<direction>_<column>_total → InterfaceCounters field
_RENAMED = {"errs": "errors", "drop": "dropped"}
_COUNTER_FIELDS: dict[str, str] = {
    f"node_network_{direction}_{col}_total": f"{short}_{_RENAMED.get(col, col)}"
    for direction, short in (("receive", "rx"), ("transmit", "tx"))
    for col in ("bytes", "packets", "errs", "drop", "fifo", "frame", "compressed", "multicast", "colls", "carrier")
    if f"{short}_{_RENAMED.get(col, col)}" in InterfaceCounters._fields
}
# the columns rates are computed from: an interface without them is left out
_REQUIRED = ("rx_bytes", "rx_packets", "rx_errors", "rx_dropped",
             "tx_bytes", "tx_packets", "tx_errors", "tx_dropped")

Series = tuple[str, Mapping[str, str], float]  # (metric name, labels, value)


class ExpositionError(ValueError):
    """The body is not Prometheus text exposition format."""


def keep_lines(text: str) -> str:
    """Only the sample lines of the series netui maps (HELP/TYPE and the rest dropped)."""
    return "\n".join([line for line in text.split("\n") if line.startswith(WANTED_PREFIXES)]) + "\n"


def parse_exposition(text: str) -> list[Series]:
    """The samples of the series netui uses, parsed by prometheus_client.

    Raises ExpositionError when prometheus_client rejects the text (an HTML error page,
    a truncated body).
    """
    from prometheus_client.parser import text_string_to_metric_families

    out: list[Series] = []
    try:
        for family in text_string_to_metric_families(keep_lines(text)):
            for s in family.samples:
                out.append((s.name, s.labels, s.value))
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise ExpositionError(f"not Prometheus text format: {exc}") from None
    return out


def _int(value: float) -> int | None:
    """A counter's float as an int; None for NaN/inf."""
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return int(round(value))


def sample_from_series(series: Iterable[Series], *, wall_s: float, mono_s: float,
                       problems: Iterable[str] = ()) -> NodeSample:
    """Map node_exporter series (one node, one moment) onto a NodeSample.

    ``wall_s``/``mono_s`` are the caller's: the sources decide which clock a sample carries.
    Never raises on odd values; what is missing stays None. When neither interfaces nor CPU
    times are found, ``problems`` says so (the node then shows as a parse error).
    """
    counters: dict[str, dict[str, int | None]] = {}
    meta: dict[str, dict[str, object]] = {}
    tcp: dict[str, int] = {}
    ext: dict[str, int] = {}
    cpu: dict[int, dict[str, int]] = {}
    softnet: dict[int, dict[str, int]] = {}
    softirq: dict[int, dict[str, int]] = {}
    boot_time = hostname = None
    problems = list(problems)

    for name, labels, value in series:
        field = _COUNTER_FIELDS.get(name)
        if field is not None:
            device = labels.get("device")
            if device:
                counters.setdefault(device, {})[field] = _int(value)
            continue
        if name.startswith("node_network_"):
            device = labels.get("device")
            if not device:
                continue
            m = meta.setdefault(device, {})
            if name == "node_network_info":
                m["operstate"] = parse_operstate(labels.get("operstate"))  # a state word, or unknown
            elif name == "node_network_up":
                m["up"] = value == 1
            elif name == "node_network_carrier":
                m["carrier"] = None if _int(value) is None else value >= 1
            elif name == "node_network_mtu_bytes":
                m["mtu"] = _int(value)
            elif name == "node_network_speed_bytes":
                m["speed"] = _int(value * 8 / 1e6) if value > 0 else None
            elif name == "node_network_iface_id":
                m["ifindex"] = _int(value)
            elif name == "node_network_protocol_type":
                m["type"] = _int(value)
        elif name.startswith("node_netstat_TcpExt_"):
            key = name[len("node_netstat_TcpExt_"):]
            if key in TCPEXT_FIELDS and _int(value) is not None:
                ext[key] = _int(value)
        elif name.startswith("node_netstat_Tcp_"):
            if _int(value) is not None:
                tcp[name[len("node_netstat_Tcp_"):]] = _int(value)
        elif name == "node_cpu_seconds_total":
            c, mode = _cpu_label(labels), labels.get("mode")
            if c is not None and mode and _int(value) is not None:
                cpu.setdefault(c, {})[mode] = _int(value * USER_HZ)
        elif name.startswith("node_softnet_"):
            c = _cpu_label(labels)
            key = {"node_softnet_processed_total": "processed", "node_softnet_dropped_total": "dropped",
                   "node_softnet_times_squeezed_total": "time_squeeze"}.get(name)
            if c is not None and key and _int(value) is not None:
                softnet.setdefault(c, {})[key] = _int(value)
        elif name == "node_softirqs_functions_total":
            c, kind = _cpu_label(labels), labels.get("type")
            if c is not None and kind in ("NET_RX", "NET_TX") and _int(value) is not None:
                softirq.setdefault(c, {})[kind] = _int(value)
        elif name == "node_boot_time_seconds":
            boot_time = _int(value)
        elif name == "node_uname_info":
            hostname = labels.get("nodename") or None

    interfaces = _interfaces(counters, meta)
    cpu_times = _cpu_times(cpu)
    if not interfaces and cpu_times is None:
        problems.append("no node_network_*_total and no node_cpu_seconds_total series")
    return NodeSample(
        wall_s=wall_s,
        mono_s=mono_s,
        boot_id=None if boot_time is None else f"btime:{boot_time}",
        interfaces=interfaces,
        tcp=TcpSample(tcp, ext) if tcp else None,
        cpu=cpu_times,
        softirqs=_softirqs(softirq),
        softnet=_softnet(softnet),
        hostname=hostname,
        problems=tuple(problems),
    )


def _cpu_label(labels: Mapping[str, str]) -> int | None:
    text = labels.get("cpu")
    # isdecimal, not isdigit: "²" is a digit that int() refuses
    return int(text) if text is not None and text.isascii() and text.isdecimal() else None


def _interfaces(counters: dict[str, dict[str, int | None]],
                meta: dict[str, dict[str, object]]) -> dict[str, InterfaceSample]:
    out: dict[str, InterfaceSample] = {}
    for device in sorted(counters):
        c = counters[device]
        if any(c.get(f) is None for f in _REQUIRED):
            continue
        m = meta.get(device, {})
        operstate = m.get("operstate")
        if operstate is None and "up" in m:
            operstate = "up" if m["up"] else None  # 0 may be down, dormant, unknown …
        type_ = m.get("type")
        kind = "loopback" if type_ == ARPHRD_LOOPBACK else kind_from_sysfs(device, None, type_, frozenset())
        out[device] = InterfaceSample(
            name=device,
            counters=InterfaceCounters(**{f: c.get(f) for f in InterfaceCounters._fields}),
            mtu=m.get("mtu"),
            operstate=operstate,
            carrier=m.get("carrier"),
            speed_mbps=m.get("speed") or None,
            ifindex=m.get("ifindex"),
            kind=kind,
        )
    return out


def _cpu_times(cpu: dict[int, dict[str, int]]) -> CpuTimes | None:
    """Per-CPU ticks; a CPU needs its softirq time and either every mode or a "total"."""
    ids, soft, total, columns = [], [], [], {m: [] for m in CPU_MODES}
    complete = True
    for c in sorted(cpu):
        modes = cpu[c]
        if "softirq" not in modes:
            continue
        if "total" in modes:
            t = modes["total"]
        elif all(m in modes for m in CPU_MODES):
            t = sum(modes[m] for m in CPU_MODES)
        else:
            continue
        ids.append(c)
        soft.append(modes["softirq"])
        total.append(t)
        complete &= all(m in modes for m in CPU_MODES)
        for m in CPU_MODES:
            columns[m].append(modes.get(m, 0))
    if not ids:
        return None
    col = {m: tuple(v) if complete else None for m, v in columns.items()}
    return CpuTimes(cpus=tuple(ids), user=col["user"], nice=col["nice"], system=col["system"],
                    idle=col["idle"], iowait=col["iowait"], irq=col["irq"], softirq=tuple(soft),
                    steal=col["steal"], total=tuple(total))


def _softnet(softnet: dict[int, dict[str, int]]) -> SoftnetStat | None:
    rows = [(c, v) for c, v in sorted(softnet.items()) if len(v) == 3]
    if not rows:
        return None
    return SoftnetStat(cpus=tuple(c for c, _ in rows), processed=tuple(v["processed"] for _, v in rows),
                       dropped=tuple(v["dropped"] for _, v in rows),
                       time_squeeze=tuple(v["time_squeeze"] for _, v in rows))


def _softirqs(softirq: dict[int, dict[str, int]]) -> SoftirqCounts | None:
    rows = [(c, v) for c, v in sorted(softirq.items()) if len(v) == 2]
    if not rows:
        return None
    return SoftirqCounts(cpus=tuple(c for c, _ in rows), net_rx=tuple(v["NET_RX"] for _, v in rows),
                         net_tx=tuple(v["NET_TX"] for _, v in rows))


def steady_boot_id(previous: str | None, new: str | None, *, tolerance_s: int = 2) -> str | None:
    """The boot identity to record: ``previous`` when ``new`` is the same boot seen again.

    /proc/stat's btime is recomputed from the wall clock at every read, so it wobbles by a
    second when NTP adjusts the clock; only a jump of more than ``tolerance_s`` is a reboot.
    """
    if previous is None or new is None or previous == new:
        return new
    try:
        if abs(int(previous.removeprefix("btime:")) - int(new.removeprefix("btime:"))) <= tolerance_s:
            return previous
    except ValueError:
        pass
    return new


def node_time_s(series: Iterable[Series]) -> float | None:
    """node_time_seconds (the node's wall clock at collection), or None."""
    for name, _labels, value in series:
        if name == "node_time_seconds" and -1e11 < value < 1e11:  # NaN and infinities are no time
            return value
    return None
