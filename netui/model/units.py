"""How numbers are shown: auto-scaled, fixed width, "—" for unknown; and node names, folded."""

from __future__ import annotations

import math
import re
from functools import lru_cache

UNKNOWN = "—"

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# each prefix with the least value shown with it: its factor rounded (999.6e6 is "1 G", not "1000 M")
_SI_FROM = tuple((factor * 0.9995, factor, prefix) for factor, prefix in _SI)


def si(value: float | None, unit: str = "", *, width: int = 0) -> str:
    """Auto-scaled SI value, 3 significant digits: ``si(2.5e9, "b/s") == "2.5 Gb/s"``,
    ``si(123456, "b/s") == "123 kb/s"``; None, NaN or an infinity → "—"."""
    if value is None or not -math.inf < value < math.inf:
        text = UNKNOWN
    else:
        size = abs(value)
        for least, factor, prefix in _SI_FROM:
            # pick the prefix after rounding, so 999.6e6 is "1 G", not "1000 M"
            if size >= least:
                scaled = value / factor
                text = f"{scaled:.3g}" if scaled < 99.95 else f"{scaled:.0f}"
                text = f"{text} {prefix}{unit}"
                break
        else:
            text = f"{value:.3g} {unit}" if value else f"0 {unit}"
        text = text.rstrip()
    return text.rjust(width) if width else text


def bits_per_s(bytes_per_s: float | None, *, as_bytes: bool = False, width: int = 0) -> str:
    """Throughput from bytes/s, in bits/s (default) or bytes/s, auto-scaled."""
    if bytes_per_s is None:
        return si(None, width=width)
    return si(bytes_per_s, "B/s", width=width) if as_bytes else si(bytes_per_s * 8, "b/s", width=width)


def gbps(value: float | None, *, width: int = 0) -> str:
    """A rate given in Gbit/s (a pair test's goodput, a link's speed) in the grid's words:
    ``gbps(9.41) == "9.41 Gb/s"``, ``gbps(0.0917) == "91.7 Mb/s"``; None → "—"."""
    return si(None if value is None else value * 1e9, "b/s", width=width)


def mbps(value: float | None, *, width: int = 0) -> str:
    """A rate given in Mbit/s (/sys/class/net/*/speed) in the grid's words: ``mbps(10000)
    == "10 Gb/s"``; None → "—"."""
    return si(None if value is None else value * 1e6, "b/s", width=width)


def cpu(number: int | str) -> str:
    """A CPU as the kernel names it in /proc/stat and the grid, panels and exports do: "cpu1"."""
    return f"cpu{number}"


def softirq(percent: float, number: int | str | None, *, short: bool = False) -> str:
    """The hottest CPU's softirq share: "softirq 73% on cpu1" (``short``: "softirq 73% cpu1",
    the Why column's 18 cells); without a CPU "softirq 73%"."""
    words = f"softirq {percent:.0f}%"
    if number is None:
        return words
    return f"{words} {cpu(number)}" if short else f"{words} on {cpu(number)}"


def per_s(value: float | None, *, width: int = 0) -> str:
    """An event rate (packets, drops, errors per second): "0", "3.5", "250", "12.3 k";
    None → "—"."""
    if value is None:
        text = UNKNOWN
    elif value == 0:
        text = "0"
    elif value < 10:
        text = f"{value:.1f}"
    elif value < 999.5:  # (as si words it, without a prefix: findings are worded every second)
        text = f"{value:.3g}"
    else:
        text = si(value)
    return text.rjust(width) if width else text


def percent(value: float | None, *, digits: int = 0, width: int = 0) -> str:
    text = UNKNOWN if value is None else f"{value:.{digits}f}%"
    return text.rjust(width) if width else text


def ratio_percent(value: float | None, *, width: int = 0) -> str:
    """A 0..1 ratio as a percentage with enough digits for small loss ratios."""
    if value is None:
        text = UNKNOWN
    elif value == 0:
        text = "0%"
    elif value < 0.001:
        text = f"{value * 100:.3f}%"
    else:
        text = f"{value * 100:.2f}%"
    return text.rjust(width) if width else text


def speed(mbps: int | None) -> str:
    if mbps is None:
        return UNKNOWN
    return f"{mbps // 1000}G" if mbps >= 1000 and mbps % 1000 == 0 else f"{mbps}M"


def fold(nodes: list[str]) -> str:
    """Node names as a range where they make one: "node[1-2,4]" (ClusterShell)."""
    if len(nodes) < 2:
        return ",".join(nodes)
    try:
        from ClusterShell.NodeSet import NodeSet

        return str(NodeSet.fromlist(nodes))
    except Exception:  # noqa: BLE001 - a name ClusterShell cannot fold is shown as it is
        return ",".join(nodes)


_DIGITS = re.compile(r"(\d+)")


@lru_cache(maxsize=65536)
def name_key(name: str) -> tuple:
    """A node name's natural sort key: its runs of digits compared as numbers, so node9
    comes before node10 (as ClusterShell ranges and Slurm list them); names alike but for
    leading zeros keep a fixed order (the name itself breaks the tie)."""
    parts = _DIGITS.split(name)
    return tuple((0, int(p), "") if i % 2 else (1, 0, p) for i, p in enumerate(parts) if p) + ((-1, 0, name),)
