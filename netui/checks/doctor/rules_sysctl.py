"""The sysctls the doctor checks, as data: each rule judges a node's value against the
usual tuning for fast, long links (``Recommendations``) and says what to set instead.

Pure; used by ``checks.doctor.rules`` (which also compares the values across nodes) and by the
probe (``SYSCTL_KEYS``: the files it reads).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from netui.model import units
from netui.model.health import Level
from netui.checks.latency.model import rtt_text

MIB = 1 << 20
# the round trip a buffer is judged against when no latency test measured one: an idle
# data-centre path is 10–100 µs, but the queues of a loaded fabric (an all-reduce's incast)
# add up to a millisecond and more
DEFAULT_RTT_MS = 1.0


@dataclass(frozen=True)
class Recommendations:
    """What the checks compare against: the usual tuning for fast, long links."""

    buffer_max_bytes: int = 128 * MIB  # net.core.[rw]mem_max and the max of tcp_[rw]mem
    reference_gbps: float = 100.0  # the link a buffer must fill where a node's link speed is unknown
    min_local_ports: int = 28232  # the kernel's default range, 32768–60999
    notsent_lowat_bytes: int = 131072  # a bound for tcp_notsent_lowat (default: unbounded)
    good_congestion: tuple[str, ...] = ("bbr", "htcp", "dctcp")
    fair_congestion: tuple[str, ...] = ("cubic",)  # fine on a LAN, careful on long links


@dataclass(frozen=True)
class BufferPath:
    """What one flow of a node must keep in flight: its link and its round trip.

    ``link_gbps``: the node's fastest data-plane link (its ``link_name``); None: unknown (a
    veth, no speed), ``Recommendations.reference_gbps`` is assumed. ``rtt_ms``: the round
    trip the last latency test measured (``checks.doctor.rules.rtt_by_node``); None:
    ``DEFAULT_RTT_MS`` is assumed.
    """

    link_gbps: float | None = None
    link_name: str | None = None
    rtt_ms: float | None = None

    def needed_bytes(self, rec: Recommendations) -> float:
        """The bandwidth-delay product: link speed × round trip, in bytes."""
        gbps = self.link_gbps or rec.reference_gbps
        rtt_ms = self.rtt_ms if self.rtt_ms is not None else DEFAULT_RTT_MS
        return gbps * 1e9 / 8 * rtt_ms / 1000


def size_text(n: int) -> str:
    """Bytes in binary units: 134217728 → "128 MiB", 212992 → "208 KiB"."""
    for factor, unit in ((1 << 30, "GiB"), (MIB, "MiB"), (1 << 10, "KiB")):
        if n >= factor:
            value = n / factor
            return f"{value:.0f} {unit}" if value == int(value) or value >= 100 else f"{value:.1f} {unit}"
    return f"{n} B"


def sysctl_command(key: str, value: str) -> str:
    """``sysctl -w key=value``; a value with spaces in double quotes (tab-separated values
    are written with single spaces: sysctl accepts either)."""
    value = " ".join(value.split())
    return f'sysctl -w {key}="{value}"' if " " in value else f"sysctl -w {key}={value}"


# (level, evidence, the value to set) from the value and the recommendations; None: ok
Verdict = tuple[Level, str, str | None]


def _ints(value: str) -> list[int] | None:
    try:
        return [int(v) for v in value.split()]
    except ValueError:
        return None


def _window(rec: Recommendations, path: BufferPath, n: int) -> tuple[Level, str]:
    """How far a window of ``n`` bytes carries on the node's link, and what its round trip
    needs: a warning when ``n`` is below the bandwidth-delay product, else careful (enough
    here, short of the usual tuning for longer round trips)."""
    gbps = path.link_gbps or rec.reference_gbps
    link = f"{path.link_name}'s {units.gbps(gbps)}" if path.link_gbps and path.link_name else \
        units.gbps(gbps) + ("" if path.link_gbps else " (no link speed known)")
    fills_ms = n * 8 / (gbps * 1e9) * 1000
    if path.rtt_ms is not None:
        rtt = f"the {rtt_text(path.rtt_ms)} round trip of the latency test's slowest pair"
    else:
        rtt = f"a {DEFAULT_RTT_MS:g} ms round trip (assumed: no latency test measured one)"
    needed = path.needed_bytes(rec)
    words = f"one flow fills {link} only up to a {fills_ms:.2g} ms round trip; {rtt} needs {size_text(int(needed))}"
    return (Level.WARNING, words) if n < needed else (Level.CAREFUL, words + ": enough here, not for longer ones")


def _core_max(what: str) -> Callable[[str, Recommendations, BufferPath], Verdict | None]:
    def judge(value: str, rec: Recommendations, path: BufferPath) -> Verdict | None:
        v = _ints(value)
        if not v or v[0] >= rec.buffer_max_bytes:
            return None
        level, window = _window(rec, path, v[0])
        return (level,
                f"{size_text(v[0])} ({v[0]}), below {size_text(rec.buffer_max_bytes)}: a socket that sets "
                f"{what} (iperf3 -w, some collective libraries) gets at most that: {window}",
                str(rec.buffer_max_bytes))
    return judge


def _tcp_mem(direction: str) -> Callable[[str, Recommendations, BufferPath], Verdict | None]:
    def judge(value: str, rec: Recommendations, path: BufferPath) -> Verdict | None:
        v = _ints(value)
        if v is None or len(v) != 3 or v[2] >= rec.buffer_max_bytes:
            return None
        level, window = _window(rec, path, v[2])
        return (level,
                f"max {size_text(v[2])} ({' '.join(map(str, v))}), below {size_text(rec.buffer_max_bytes)}: "
                f"a TCP flow's {direction} buffer stops growing there: {window}",
                f"{v[0]} {v[1]} {rec.buffer_max_bytes}")
    return judge


def _port_range(value: str, rec: Recommendations, path: BufferPath | None = None) -> Verdict | None:
    v = _ints(value)
    if v is None or len(v) != 2:
        return None
    low, high = v
    ports = high - low + 1
    if low < 1024:
        return (Level.CAREFUL, f"{low}–{high} reaches into the privileged ports below 1024",
                f"1024 {max(high, 65535 if high < 1024 else high)}")
    if ports < rec.min_local_ports:
        return (Level.CAREFUL, f"{low}–{high}: {ports} ephemeral ports, fewer than the kernel's default "
                               f"{rec.min_local_ports} — many connections per peer run out", "32768 60999")
    return None


def _slow_start(value: str, rec: Recommendations, path: BufferPath | None = None) -> Verdict | None:
    if value.strip() == "0":
        return None
    return (Level.WARNING, f"{value.strip()} (the kernel's default): a connection idle for one retransmit "
                           "timeout, as between two all-reduce steps, starts again from a small window", "0")


def _notsent_lowat(value: str, rec: Recommendations, path: BufferPath | None = None) -> Verdict | None:
    v = _ints(value)
    if not v or v[0] <= rec.notsent_lowat_bytes:
        return None
    unbounded = v[0] >= 0xFFFFFFFF
    return (Level.CAREFUL,
            f"{'unbounded' if unbounded else size_text(v[0])} ({v[0]}): with large send buffers, megabytes "
            f"of unsent data queue in each socket; {rec.notsent_lowat_bytes} keeps the queue short",
            str(rec.notsent_lowat_bytes))


def _congestion(value: str, rec: Recommendations, path: BufferPath | None = None) -> Verdict | None:
    cc = value.strip()
    if cc in rec.good_congestion:
        return None
    best = rec.good_congestion[0]
    if cc in rec.fair_congestion:
        return (Level.CAREFUL, f"{cc}: fine on a LAN; on long links {best} refills the pipe faster after a loss",
                best)
    return Level.WARNING, f"{cc}: halves its window on every loss and grows it slowly", best


@dataclass(frozen=True)
class SysctlRule:
    key: str
    judge: Callable[[str, Recommendations, BufferPath], Verdict | None]  # (value, tuning, the node's path)
    ok_words: str


SYSCTL_RULES: tuple[SysctlRule, ...] = (
    SysctlRule("net.core.rmem_max", _core_max("SO_RCVBUF"), "≥ 128 MiB"),
    SysctlRule("net.core.wmem_max", _core_max("SO_SNDBUF"), "≥ 128 MiB"),
    SysctlRule("net.ipv4.tcp_rmem", _tcp_mem("receive"), "max ≥ 128 MiB"),
    SysctlRule("net.ipv4.tcp_wmem", _tcp_mem("send"), "max ≥ 128 MiB"),
    SysctlRule("net.ipv4.ip_local_port_range", _port_range, "wide enough"),
    SysctlRule("net.ipv4.tcp_slow_start_after_idle", _slow_start, "= 0"),
    SysctlRule("net.ipv4.tcp_notsent_lowat", _notsent_lowat, "bounded"),
    SysctlRule("net.ipv4.tcp_congestion_control", _congestion, "for long links"),
)
# read by the probe besides the rules: what a congestion-control fix may choose from
SYSCTL_EXTRA = ("net.ipv4.tcp_available_congestion_control",)
SYSCTL_KEYS = tuple(r.key for r in SYSCTL_RULES) + SYSCTL_EXTRA
