"""What a number from a node can be: the bounds every rate and counter is held to.

A rate is a finite number within what the link can carry, or unknown (None): never an
infinity, never 10¹⁹ bytes a second. A node's counters are unsigned 64-bit, its clocks
finite; a sample with anything else is refused (``Node.observe``: the node's state says
why). The checks are comparisons, made where the numbers are made (model/rates.py,
model/fabric.py, the C speedups), so they cost next to nothing per node-sample.
"""

from __future__ import annotations

import math
from typing import Protocol

_INF = math.inf

U64_MAX = (1 << 64) - 1  # the largest value of a kernel counter
MAX_TIME_S = 1e11  # a node clock beyond ±this many seconds (year 5138) is no time

# Two samples closer than this on the node's clock give no rates: a counter read twice
# within a millisecond says nothing per second, and a clock that advanced by 1e-300 s
# would turn any increase into infinity.
MIN_INTERVAL_S = 1e-3


def counted_interval_s(prev_s: float, cur_s: float) -> float | None:
    """Seconds from ``prev_s`` to ``cur_s`` on a node's clock when a rate may be taken over
    them (at least MIN_INTERVAL_S, finite), else None."""
    dt = cur_s - prev_s
    return dt if MIN_INTERVAL_S <= dt < _INF else None


class Timed(Protocol):
    """A sample of one node as rates see it: when it was taken on the node's clock, and in
    which boot."""

    @property
    def mono_s(self) -> float: ...

    @property
    def boot_id(self) -> str | None: ...


def rate_interval_s(prev: Timed | None, cur: Timed) -> float | None:
    """The interval between two samples of one node (anything with ``mono_s`` and ``boot_id``:
    a NodeSample, a FabricSample) over which their counters give rates, or None when they
    are not comparable: no previous sample, another boot id (the node rebooted), a node clock
    that advanced by less than MIN_INTERVAL_S or not at all (``counted_interval_s``)."""
    if prev is None:
        return None
    if prev.boot_id is not None and cur.boot_id is not None and prev.boot_id != cur.boot_id:
        return None
    return counted_interval_s(prev.mono_s, cur.mono_s)

# An interface whose speed is unknown (a software device, a virtual NIC, a node_exporter
# without the speed) carries at most 3.2 Tbit/s: twice the fastest Ethernet port (1.6 Tbit/s).
MAX_LINK_BITS_PER_S = 3.2e12
MAX_LINK_BYTES_PER_S = MAX_LINK_BITS_PER_S / 8  # 400 GB/s

# An interface of known speed: 10 × its speed (counters that a driver updates in bursts
# can show a few times the speed over a short interval; ten times is no traffic).
LINK_CEILING_FACTOR = 10

# Packets, segments, softirqs, drops and the like per second: each is at least one byte at
# 3.2 Tbit/s. (An interface's packet counters are held to its own byte ceiling.)
MAX_EVENTS_PER_S = MAX_LINK_BYTES_PER_S


def link_ceiling_bytes_per_s(link_mbps: int | None) -> float:
    """The largest bytes/s an interface of ``link_mbps`` (None: unknown) is believed to
    carry; a rate above it is a counter reset, not traffic."""
    if link_mbps and link_mbps > 0:  # (a node that says 10¹² Mbit/s gets no more than ten of ours)
        return LINK_CEILING_FACTOR * min(link_mbps * 1e6 / 8, MAX_LINK_BYTES_PER_S)
    return MAX_LINK_BYTES_PER_S
