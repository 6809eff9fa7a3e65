"""Frozen, typed samples: what one read of a node's counters saw.

A sample holds raw counters, never rates. Every collector (local, SSH, replay) produces these
types, so everything downstream runs the same code whatever the source. Per-CPU data is kept
in columns (one sequence per counter, indexed like ``cpus``): packed ``array``s of u64 (or
u32), which the constructors make of whatever sequence they are given when its values fit
(a tuple of floats stays a tuple). A 128-CPU node is 128 numbers per column rather than 128
objects, which keeps parsing and memory cheap at fleet size. Compare a column with a tuple
through ``tuple(column)``. Interfaces are kept the same way, in an InterfaceTable.

Unknown is ``None``, never 0.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from netui.model.fabric import FabricSample
from netui.model.flows import PeerSample
from netui.model.limits import link_ceiling_bytes_per_s
from netui.model.mesh import MeshSample
from netui.model.text import MESSAGE_CHARS, is_safe, safe_line, safe_names, safe_text


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


class CounterMap(Mapping):
    """Named counters in one packed array: a read-only mapping of name → value over ``keys``
    (a tuple shared by the samples of one layout) and ``values`` (array 'Q'; 'q' for the
    Tcp pair, where MaxConn is -1). The parsers make these for the TCP counters; a dict
    works wherever one is expected. ``index`` (name → position), when given, is shared by
    the maps of one layout."""

    __slots__ = ("keys_", "values_", "_index")

    def __init__(self, keys: tuple[str, ...], values: array, index: dict[str, int] | None = None) -> None:
        if len(keys) != len(values):
            raise ValueError(f"{len(values)} values for {len(keys)} names")
        self.keys_ = keys
        self.values_ = values
        self._index = index

    def __getitem__(self, key: str) -> int:
        index = self._index
        if index is None:
            index = self._index = {k: i for i, k in enumerate(self.keys_)}
        return self.values_[index[key]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_)

    def __len__(self) -> int:
        return len(self.keys_)

    def items(self) -> list[tuple[str, int]]:  # no lookup per key
        return list(zip(self.keys_, self.values_))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.items())!r})"


# Hidden by default in the UI, and not counted in a node's totals unless it has nothing else.
HIDDEN_KINDS = SOFTWARE_KINDS

_NCOUNTERS = 16  # InterfaceCounters per interface


def _flat_counters(rows: list) -> array:
    """Counter rows as one flat array: u64 ('Q') when they fit, else float ('d', e.g. an
    exporter's floats or a synthetic negative)."""
    flat = [v for row in rows for v in row]
    try:
        return array("Q", flat)
    except (OverflowError, TypeError):
        return array("d", map(float, flat))


class CounterTable(Mapping):
    """/proc/net/dev as columns: the interface names and their 16 counters each, in one flat
    array (``flat[i * 16 : i * 16 + 16]`` are the counters of ``names[i]``).

    A mapping of name → InterfaceCounters, built on access: a fleet reads thousands of
    interfaces a second and looks at few of them one by one.
    """

    __slots__ = ("names", "flat", "_index")

    def __init__(self, names: tuple[str, ...], values: array) -> None:
        if len(values) != _NCOUNTERS * len(names):
            raise ValueError(f"{len(values)} counters for {len(names)} interfaces")
        self.names = names
        self.flat = values
        self._index: dict[str, int] | None = None

    @classmethod
    def from_counters(cls, counters: Mapping[str, Sequence[int]]) -> CounterTable:
        return cls(tuple(counters), _flat_counters(list(counters.values())))

    def _positions(self) -> dict[str, int]:
        """name → row, built on first use."""
        if self._index is None:
            self._index = {n: i for i, n in enumerate(self.names)}
        return self._index

    def position(self, name: str) -> int:
        """Row of ``name``; KeyError when there is none."""
        index = self._index if self._index is not None else self._positions()
        return index[name]

    def __getitem__(self, name: str) -> InterfaceCounters:
        i = self.position(name) * _NCOUNTERS
        return InterfaceCounters._make(self.flat[i : i + _NCOUNTERS])

    def __contains__(self, name: object) -> bool:
        try:
            return name in self._positions()
        except TypeError:  # unhashable
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.items())!r})"

    def __or__(self, other: Mapping) -> dict:
        return dict(self) | dict(other)


class IfaceMeta(NamedTuple):
    """What sysfs says of an interface (InterfaceSample's fields after the counters)."""

    mtu: int | None = None
    operstate: str | None = None
    carrier: bool | None = None
    speed_mbps: int | None = None
    ifindex: int | None = None
    kind: str | None = None


class IfaceLayout:
    """The interfaces of a node and what sysfs says of them, with what the model derives from
    that: the data-plane rows (sorted by name) and the link speeds that % of link uses.

    Built once per distinct layout (``layout_of`` is cached), so consecutive samples of a
    node share one object and ``prev.layout is cur.layout`` tells that nothing changed.
    """

    __slots__ = ("names", "meta", "index", "data_plane", "data_plane_names", "link_mbps", "link_rows",
                 "dp_rows", "link_idx", "link_speeds", "rate_ceilings", "__weakref__")

    def __init__(self, names: tuple[str, ...], meta: tuple[IfaceMeta, ...]) -> None:
        if not all(map(is_safe, names)):  # every source's interface names enter here
            names = safe_names(names)
        self.names = names
        self.meta = meta
        self.index = {n: i for i, n in enumerate(names)}
        shown = data_plane_rows(names, [m.kind for m in meta])
        self.data_plane = tuple(shown)
        self.data_plane_names = tuple(names[i] for i in shown)
        # % of link: not for software devices (a veth's 10000 is nominal)
        self.link_mbps = tuple(None if m.kind in SOFTWARE_KINDS else m.speed_mbps for m in meta)
        # data-plane rows with a link speed: (row, bytes/s that make 100 %)
        self.link_rows = tuple((i, self.link_mbps[i] * 1e6 / 8) for i in shown if self.link_mbps[i])
        # the same as arrays, for speedups.iface_totals
        self.dp_rows = array("Q", shown)
        self.link_idx = array("Q", [i for i, _ in self.link_rows])
        self.link_speeds = array("d", [full for _, full in self.link_rows])
        # per interface, the most bytes/s (and packets/s) a rate may be: above it, a counter reset
        self.rate_ceilings = array("d", map(link_ceiling_bytes_per_s, self.link_mbps))


def hidden(name: str, kind: str | None) -> bool:
    """Loopback and software devices are hidden by default (and not in a node's totals)."""
    return kind in HIDDEN_KINDS or (kind is None and name == "lo")


def data_plane_rows(names: Sequence[str], kinds: Sequence[str | None]) -> list[int]:
    """The data plane, the interfaces that carry the node's traffic (its totals count them):
    the rows of those not hidden, sorted by name; when a node has none (a container, a lab
    node with only a veth), every interface but loopback."""
    rows = [i for i, kind in enumerate(kinds) if not hidden(names[i], kind)]
    if not rows:
        rows = [i for i, kind in enumerate(kinds) if kind != "loopback" and names[i] != "lo"]
    rows.sort(key=names.__getitem__)
    return rows


@lru_cache(maxsize=4096)
def layout_of(names: tuple[str, ...], meta: tuple[IfaceMeta, ...]) -> IfaceLayout:
    """The shared IfaceLayout of these interfaces (cached: a fleet's layouts rarely change)."""
    return IfaceLayout(names, meta)


class LayoutMapping(Mapping):
    """A mapping keyed by the interface names of an IfaceLayout (``self.layout``), whose
    values subclasses build on access from a flat array (``self.flat``)."""

    __slots__ = ()

    def __contains__(self, name: object) -> bool:
        try:
            return name in self.layout.index
        except TypeError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self.layout.names)

    def __len__(self) -> int:
        return len(self.layout.names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.items())!r})"

    def __or__(self, other: Mapping) -> dict:
        return dict(self) | dict(other)


class InterfaceTable(LayoutMapping):
    """A node's interfaces in columns: a layout (names, sysfs facts) and the counters in one
    flat array as in CounterTable. A mapping of name → InterfaceSample, built on access.
    """

    __slots__ = ("layout", "flat")

    def __init__(self, layout: IfaceLayout, values: array) -> None:
        if len(values) != _NCOUNTERS * len(layout.names):
            raise ValueError(f"{len(values)} counters for {len(layout.names)} interfaces")
        self.layout = layout
        self.flat = values

    @classmethod
    def from_samples(cls, interfaces: Mapping[str, InterfaceSample]) -> InterfaceTable:
        names = tuple(interfaces)
        rows = list(interfaces.values())
        meta = tuple(IfaceMeta._make(r[2:]) for r in rows)
        return cls(layout_of(names, meta), _flat_counters([r.counters for r in rows]))

    @property
    def names(self) -> tuple[str, ...]:
        return self.layout.names

    def __getitem__(self, name: str) -> InterfaceSample:
        i = self.layout.index[name]
        at = i * _NCOUNTERS
        return InterfaceSample(name, InterfaceCounters._make(self.flat[at : at + _NCOUNTERS]), *self.layout.meta[i])


_NO_INTERFACES = InterfaceTable(layout_of((), ()), array("Q"))


@dataclass(slots=True)
class TcpSample:
    """TCP counters keyed by the kernel's own names. Never changed once made (not frozen:
    a frozen dataclass's ``__init__`` costs a ``object.__setattr__`` a field, and a fleet
    makes one of these per node per second).

    ``tcp`` holds the ``Tcp:`` pair of /proc/net/snmp (RetransSegs, OutSegs, InSegs, ...;
    CurrEstab is a gauge, MaxConn is -1), ``ext`` the retransmission- and loss-related
    counters of the ``TcpExt:`` pair of /proc/net/netstat (collectors.assemble.TCPEXT_FIELDS).
    """

    tcp: Mapping[str, int]
    ext: Mapping[str, int] = field(default_factory=dict)


def _packed(column):
    """A counter column as the model keeps it: an array as it is, anything else packed as
    u64 when every value fits (floats, negatives and the like stay a tuple)."""
    if column is None or type(column) is array:
        return column
    try:
        return array("Q", column)
    except (OverflowError, TypeError):
        return tuple(column)


def _pack_columns(obj, names: tuple[str, ...]) -> None:
    """Normalise a per-CPU dataclass: ``cpus`` a tuple, counter columns packed (so samples
    compare equal however they were made: parsed, decoded or read back from a recording)."""
    if type(obj.cpus) is not tuple:
        object.__setattr__(obj, "cpus", tuple(obj.cpus))
    for name in names:
        value = getattr(obj, name)
        if value is not None and type(value) is not array:
            object.__setattr__(obj, name, _packed(value))


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

    def __post_init__(self) -> None:
        _pack_columns(self, ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "total"))


@dataclass(frozen=True, slots=True)
class SoftirqCounts:
    """NET_RX and NET_TX softirq invocations per CPU from /proc/softirqs (u32, they wrap)."""

    cpus: tuple[int, ...]
    net_rx: Sequence[int]
    net_tx: Sequence[int]

    def __post_init__(self) -> None:
        _pack_columns(self, ("net_rx", "net_tx"))


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

    def __post_init__(self) -> None:
        _pack_columns(self, ("processed", "dropped", "time_squeeze"))


class CpuSums(NamedTuple):
    """A node's per-CPU counters summed over its CPUs, on the node (the remote sampler's
    "cpusum"): what the grid needs of them when the per-CPU tables were not sent.

    ``net_rx``/``net_tx`` (NET_RX/NET_TX softirqs) and ``processed``/``dropped``/
    ``time_squeeze`` (softnet) are running sums of each CPU's increase, its 32-bit wraps
    counted, from the counters' plain sum when the sampler started: u64 counters that
    rates are made of. ``hot_cpu`` is the CPU with the largest share of softirq time since
    the sampler's reading at ``hot_since_s`` (node CLOCK_MONOTONIC), with its softirq and
    total ticks in that time. None: the file was not summed (unreadable, or odd: then the
    sample has its table), or no hottest CPU yet. ``ncpus``: the CPUs of /proc/stat.
    """

    ncpus: int | None
    net_rx: int | None
    net_tx: int | None
    processed: int | None
    dropped: int | None
    time_squeeze: int | None
    hot_cpu: int | None = None
    hot_softirq: int | None = None
    hot_total: int | None = None
    hot_since_s: float | None = None


@dataclass(slots=True)
class NodeSample:
    """Everything read from one node at one moment. Never changed once made: a new one is made
    with ``dataclasses.replace`` (not frozen, as ``TcpSample``: ~1.5 µs less per sample).

    ``mono_s`` is CLOCK_MONOTONIC on the node, taken where the counters were read: rates use
    it, so transport delays never bend a rate. ``wall_s`` is the node's wall clock, for
    display and recordings. ``problems`` lists what could not be read or parsed; the
    corresponding fields are None (a partial sample). ``fabric`` holds the RDMA ports and
    ``ethtool -S`` counters of the node's RDMA netdevs; None when it has neither. ``peers``:
    its TCP peers (a reading the sampler may repeat over a few frames: see its ``mono_s``).
    """

    wall_s: float
    mono_s: float
    boot_id: str | None
    interfaces: InterfaceTable  # a dict of InterfaceSample given here becomes one
    tcp: TcpSample | None = None
    cpu: CpuTimes | None = None
    softirqs: SoftirqCounts | None = None
    softnet: SoftnetStat | None = None
    hostname: str | None = None
    problems: tuple[str, ...] = ()
    fabric: FabricSample | None = None
    cpu_sums: CpuSums | None = None  # the remote sampler's sums of the per-CPU tables
    peers: PeerSample | None = None  # its TCP peers from sock_diag (model/flows.py); None: not read
    mesh: MeshSample | None = None  # what its probes of its peers settled (model/mesh.py); None: mesh off

    def __post_init__(self) -> None:
        if not isinstance(self.interfaces, InterfaceTable):
            table = InterfaceTable.from_samples(self.interfaces) if self.interfaces else _NO_INTERFACES
            object.__setattr__(self, "interfaces", table)
        # the node's own words enter here, from every source: shown as text, never obeyed
        hostname = self.hostname
        if hostname is not None and not is_safe(hostname):
            object.__setattr__(self, "hostname", safe_text(hostname))
        if self.problems and not all(is_safe(p, MESSAGE_CHARS) for p in self.problems):
            object.__setattr__(self, "problems", tuple(safe_line(p) for p in self.problems))
