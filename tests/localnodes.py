"""This host as several nodes: a Monitor of local sources under other names, and the
processes a test started (pair and latency tests on loopback, tests/integration/)."""

from __future__ import annotations

import os

from netui.collectors.local import LiveReader
from netui.engine.monitor import Monitor
from netui.engine.sources import LocalSource


def local_monitor(names=("a", "b", "c")) -> Monitor:
    """This host under each of ``names``, polled every 0.5 s; not started."""
    sources = []
    for name in names:
        source = LocalSource(LiveReader())
        source.name = name
        sources.append(source)
    return Monitor(sources, interval_s=0.5, history_s=30)


def descendants(root: int) -> dict[int, str]:
    """Our process tree: pid → command line."""
    parents, cmdlines = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read().rpartition(")")[2].split()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if stat[0] not in ("Z", "X"):
                parents[int(entry)], cmdlines[int(entry)] = int(stat[1]), cmdline
    found = {}
    for pid in parents:
        p = pid
        while p in parents and p != root:
            p = parents[p]
        if p == root and pid != root:
            found[pid] = cmdlines[pid]
    return found


async def ready(monitor: Monitor) -> None:
    """Two polls: every node has rates."""
    for _ in range(2):
        await monitor.tick()
