"""Frozen, typed samples: what one read of a node's counters saw.

A sample holds raw counters, never rates. Every collector (local, SSH, replay) produces these
types, so everything downstream runs the same code whatever the source. Per-CPU data is kept
in columns (one sequence per counter, indexed like ``cpus``: a tuple, or an ``array`` where a
remote sampler's table was decoded into one): a 128-CPU node is 128 numbers per column
rather than 128 objects, which keeps parsing and memory cheap at fleet size. Compare a
column with a tuple through ``tuple(column)``.

Unknown is ``None``, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from netui.model.fabric import FabricSample


class InterfaceCounters(NamedTuple):
    """The 16 columns of /proc/net/dev (u64, since boot or since the device was created).

    ``rx_dropped`` is the kernel's rx_dropped + rx_missed_errors, ``rx_frame`` sums the
    length/over/crc/frame errors and ``tx_carrier`` the carrier/aborted/window/heartbeat
    errors, exactly as /proc/net/dev prints them.
    """

    rx_bytes: int
    rx_packets: int
    rx_errors: int
    rx_dropped: int
    rx_fifo: int
    rx_frame: int
    rx_compressed: int
    rx_multicast: int
    tx_bytes: int
    tx_packets: int
    tx_errors: int
    tx_dropped: int
    tx_fifo: int
    tx_colls: int
    tx_carrier: int
    tx_compressed: int


# Names of InterfaceCounters in /proc/net/dev column order.
INTERFACE_COUNTER_NAMES: tuple[str, ...] = InterfaceCounters._fields


# Software devices: no wire of their own, and a nominal "speed" (veth says 10000).
SOFTWARE_KINDS = frozenset({"loopback", "virtual", "veth", "bridge", "ifb", "dummy", "tun"})


class InterfaceSample(NamedTuple):
    """One network interface as seen in one sample.

    (Counters and interfaces are NamedTuples: immutable and typed like the dataclasses
    here, and several times cheaper to build — a fleet builds thousands per second.)
    """

    name: str
    counters: InterfaceCounters
    mtu: int | None = None
    operstate: str | None = None  # RFC 2863: up, down, unknown, lowerlayerdown, ...
    carrier: bool | None = None
    speed_mbps: int | None = None  # None when the kernel does not know (EINVAL, -1, empty)
    ifindex: int | None = None  # a new ifindex under the same name = the device was recreated
    # "physical", "loopback", "veth", "bridge", "bond", "vlan", "ifb", "dummy", "tun",
    # "virtual" (some other software device) or None (cannot tell, e.g. a copied tree)
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class TcpSample:
    """TCP counters keyed by the kernel's own names.

    ``tcp`` holds the ``Tcp:`` pair of /proc/net/snmp (RetransSegs, OutSegs, InSegs, ...;
    CurrEstab is a gauge, MaxConn is -1), ``ext`` the retransmission- and loss-related
    counters of the ``TcpExt:`` pair of /proc/net/netstat (collectors.assemble.TCPEXT_FIELDS).
    """

    tcp: dict[str, int]
    ext: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """Per-CPU times from /proc/stat in USER_HZ ticks, one tuple per column.

    ``total`` is user+nice+system+idle+iowait+irq+softirq+steal (guest time is already in
    user/nice and is not added again). ``softirq`` and ``total`` are always there; the other
    columns are None when the source sent only those two (the remote sampler sums each
    CPU's line on the node, so a 128-CPU node costs the monitor 256 numbers, not 1,280).
    """

    cpus: tuple[int, ...]
    user: tuple[int, ...] | None
    nice: tuple[int, ...] | None
    system: tuple[int, ...] | None
    idle: tuple[int, ...] | None
    iowait: tuple[int, ...] | None
    irq: tuple[int, ...] | None
    softirq: Sequence[int]
    steal: tuple[int, ...] | None
    total: Sequence[int]


@dataclass(frozen=True, slots=True)
class SoftirqCounts:
    """NET_RX and NET_TX softirq invocations per CPU from /proc/softirqs (u32, they wrap)."""

    cpus: tuple[int, ...]
    net_rx: Sequence[int]
    net_tx: Sequence[int]


@dataclass(frozen=True, slots=True)
class SoftnetStat:
    """Per-CPU /proc/net/softnet_stat columns we use (u32, they wrap).

    ``dropped``: packets dropped because the CPU's input backlog was full;
    ``time_squeeze``: NET_RX processing stopped with work left.
    """

    cpus: tuple[int, ...]
    processed: Sequence[int]
    dropped: Sequence[int]
    time_squeeze: Sequence[int]


@dataclass(frozen=True, slots=True)
class NodeSample:
    """Everything read from one node at one moment.

    ``mono_s`` is CLOCK_MONOTONIC on the node, taken where the counters were read: rates use
    it, so transport delays never bend a rate. ``wall_s`` is the node's wall clock, for
    display and recordings. ``problems`` lists what could not be read or parsed; the
    corresponding fields are None (a partial sample). ``fabric`` holds the RDMA ports and
    ``ethtool -S`` counters of the node's RDMA netdevs; None when it has neither.
    """

    wall_s: float
    mono_s: float
    boot_id: str | None
    interfaces: dict[str, InterfaceSample]
    tcp: TcpSample | None = None
    cpu: CpuTimes | None = None
    softirqs: SoftirqCounts | None = None
    softnet: SoftnetStat | None = None
    hostname: str | None = None
    problems: tuple[str, ...] = ()
    fabric: FabricSample | None = None
