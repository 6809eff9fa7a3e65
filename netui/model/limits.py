"""What a number from a node can be: the bounds every rate and counter is held to.

A rate is a finite number within what the link can carry, or unknown (None): never an
infinity, never 10¹⁹ bytes a second. A node's counters are unsigned 64-bit, its clocks
finite; a sample with anything else is refused (``Node.observe``: the node's state says
why). The checks are comparisons, made where the numbers are made (model/rates.py,
model/fabric.py, the C speedups), so they cost next to nothing per node-sample.
"""

from __future__ import annotations

U64_MAX = (1 << 64) - 1  # the largest value of a kernel counter
MAX_TIME_S = 1e11  # a node clock beyond ±this many seconds (year 5138) is no time

# Two samples closer than this on the node's clock give no rates: a counter read twice
# within a millisecond says nothing per second, and a clock that advanced by 1e-300 s
# would turn any increase into infinity.
MIN_INTERVAL_S = 1e-3

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
