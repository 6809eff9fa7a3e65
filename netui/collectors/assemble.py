"""Turn the raw texts read from a node into a NodeSample.

Every transport gathers the same texts under the same keys (``protocol.PROC_FILES`` plus, per
interface, the ``IFACE_ATTRS`` of /sys/class/net/<if>), so the local file reader, the SSH
sampler and a replayed capture all meet here and run the same parsers. A text that is
missing (None) or does not parse leaves its part of the sample None and adds a line to
``NodeSample.problems``; it never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from netui.collectors import frame_tables, procfs, protocol, sysfs
from netui.collectors.ethtool import parse_ethtool_stats, pfc_view, without_per_queue
from netui.collectors.infiniband import parse_infiniband
from netui.model.fabric import FabricSample
from netui.model.flows import PeerSample
from netui.model.text import safe_text
from netui.model.samples import (CounterTable, IfaceLayout, IfaceMeta, InterfaceCounters, InterfaceSample,
                                 InterfaceTable, NodeSample, TcpSample, layout_of)

PROC_FILES = protocol.PROC_FILES  # key -> path under the procfs root

# files read under /sys/class/net/<if>/ ; "link" is where the class symlink points
IFACE_ATTRS: tuple[str, ...] = protocol.IFACE_ATTRS

ARPHRD_LOOPBACK = 772

_VIRTUAL_PREFIXES = (
    ("veth", "veth"),
    ("docker", "bridge"),
    ("br-", "bridge"),
    ("virbr", "bridge"),
    ("cni", "bridge"),
    ("ifb", "ifb"),
    ("dummy", "dummy"),
    ("tun", "tun"),
    ("tap", "tun"),
)


def kind_from_sysfs(name: str, link: str | None, type_: int | None, extras: frozenset[str]) -> str | None:
    """Classify an interface from what /sys/class/net/<if> shows.

    ``link`` is the target of the class symlink (None in a copied tree, where the entry is
    a plain directory); ``extras`` names the marker entries present (``bridge``, ``bonding``,
    ``device``).
    """
    if type_ == ARPHRD_LOOPBACK or name == "lo":
        return "loopback"
    if "bridge" in extras:
        return "bridge"
    if "bonding" in extras:
        return "bond"
    if "device" in extras:
        return "physical"
    if link is not None and "/devices/virtual/" not in link:
        return "physical"
    for prefix, kind in _VIRTUAL_PREFIXES:
        if name.startswith(prefix):
            return kind
    # a software device, or (copied tree, no link) nothing tells us
    return "virtual" if link is not None else None


_ATTR_KEYS = protocol.IFACE_FIELDS  # the sysfs attributes, the class symlink, the markers


@lru_cache(maxsize=32768)  # 1,024 nodes × 16 interfaces, twice over
def _iface_meta(name: str, mtu, operstate, carrier, speed, ifindex, type_, link, bridge, bonding, device) -> tuple:
    """(mtu, operstate, carrier, speed_mbps, ifindex, kind) from sysfs texts.

    Cached on the texts: they rarely change between samples, and a fleet has many.
    """
    extras = frozenset(k for k, v in (("bridge", bridge), ("bonding", bonding), ("device", device)) if v is not None)
    kind = kind_from_sysfs(name, link, sysfs.parse_int_file(type_), extras)
    return (
        sysfs.parse_int_file(mtu),
        sysfs.parse_operstate(operstate),
        sysfs.parse_carrier(carrier),
        sysfs.parse_speed_mbps(speed),
        sysfs.parse_int_file(ifindex),
        kind,
    )


_NO_ATTRS: dict[str, str | None] = {}

# The remote sampler sends an interface's sysfs texts as one record in this order,
# separated by \x1f, with \x1e for a file it could not read (collectors/protocol.py).
PACKED_ATTRS = protocol.IFACE_FIELDS


@lru_cache(maxsize=32768)  # 1,024 nodes × 16 interfaces, twice over
def unpack_attrs(record: str) -> tuple | None:
    """The sampler's packed interface record as _iface_meta arguments, or None if malformed.

    Cached on the record's text: it changes only when a link changes.
    """
    if record.count("\x1f") != len(PACKED_ATTRS) - 1:  # before splitting: a record may be megabytes
        return None
    parts = record.split("\x1f")
    if len(parts) != len(PACKED_ATTRS):
        return None
    return tuple(None if p == "\x1e" else p for p in parts)


def kept_interfaces(table: CounterTable) -> tuple[CounterTable, str | None]:
    """The first ``protocol.MAX_IFACES`` interfaces of a /proc/net/dev table, and when it had
    more, the problem that says so (``too many interfaces: 100000 > 4096 (first 4096 kept)``):
    one node's rates, history and screen stay bounded whatever it lists."""
    n, cap = len(table.names), protocol.MAX_IFACES
    if n <= cap:
        return table, None
    kept = CounterTable(table.names[:cap], table.flat[: cap * (len(table.flat) // n)])
    return kept, f"too many interfaces: {n} > {cap} (first {cap} kept)"


def interfaces_from_texts(
    net_dev: Mapping[str, InterfaceCounters],
    attrs: Mapping[str, Mapping[str, str | None] | tuple],
) -> InterfaceTable:
    """Join /proc/net/dev counters with each interface's sysfs attributes.

    ``attrs[name]`` is a mapping of attribute texts, or a tuple in PACKED_ATTRS order.
    """
    if not isinstance(net_dev, CounterTable):
        net_dev = CounterTable.from_counters(net_dev)
    names = net_dev.names
    get = attrs.get
    packed = tuple([_packed(get(name, _NO_ATTRS)) for name in names])
    # the texts are read anew each sample, so their hashes are not cached: compare them
    # with the last ones seen for these names (a memcmp) before hashing them for _layout
    last = _LAST_LAYOUT.get(names)
    if last is not None and last[0] == packed:
        return InterfaceTable(last[1], net_dev.flat)
    layout = _layout(names, packed)
    if len(_LAST_LAYOUT) >= 4096:
        _LAST_LAYOUT.clear()
    _LAST_LAYOUT[names] = (packed, layout)
    return InterfaceTable(layout, net_dev.flat)


_LAST_LAYOUT: dict[tuple[str, ...], tuple[tuple, IfaceLayout]] = {}


def _packed(a: Mapping[str, str | None] | tuple) -> tuple:
    return a if isinstance(a, tuple) else tuple(map(a.get, _ATTR_KEYS))


@lru_cache(maxsize=8192)
def _layout(names: tuple[str, ...], packed: tuple[tuple, ...]) -> IfaceLayout:
    """The layout of interfaces with these sysfs texts (cached: they rarely change)."""
    return layout_of(names, tuple(IfaceMeta._make(_iface_meta(n, *p)) for n, p in zip(names, packed)))


# The TcpExt counters netui keeps (the sampler's too): collectors/protocol.py
TCPEXT_FIELDS = protocol.TCPEXT_FIELDS


def _TCP_ONLY(text: str) -> dict[str, dict[str, int]]:
    return procfs.parse_keyed_pairs(text, ("Tcp",))


def sample_from_texts(
    texts: Mapping[str, str | None],
    iface_attrs: Mapping[str, Mapping[str, str | None]],
    *,
    wall_s: float,
    mono_s: float,
    interfaces: dict[str, InterfaceSample] | None = None,
    problems: list[str] | None = None,
    ib_texts: Mapping[str, str | None] | None = None,
    ethtool_texts: Mapping[str, str] | None = None,
    ethtool_mono_s: float | None = None,
    peers: PeerSample | None = None,
) -> NodeSample:
    """Build a NodeSample from raw texts keyed as in PROC_FILES.

    ``interfaces`` may be given by a collector that has them from another source (netlink);
    /proc/net/dev is then not needed. ``ib_texts`` are those of
    ``collectors.infiniband.read_infiniband``, ``ethtool_texts`` the ``ethtool -S`` output
    per netdev, read at ``ethtool_mono_s``: together the sample's ``fabric``. ``peers``: the
    node's TCP peers (collectors/peers.py), as they are.
    """
    problems = list(problems or ())

    def parse(key, parser):
        text = texts.get(key)
        if text is None:
            problems.append(f"{PROC_FILES.get(key, key)}: not readable")
            return None
        try:
            return parser(text)
        except procfs.ParseError as exc:
            problems.append(f"{PROC_FILES.get(key, key)}: {exc}")
            return None

    if interfaces is None:
        if texts.get("netdev") is not None:  # the remote sampler's table
            net_dev = parse("netdev", frame_tables.parse_netdev_compact)
        else:
            net_dev = parse("net/dev", procfs.parse_net_dev)
        if net_dev is not None:
            if not isinstance(net_dev, CounterTable):
                net_dev = CounterTable.from_counters(net_dev)
            net_dev, cut = kept_interfaces(net_dev)
            if cut is not None:
                problems.append(cut)
        interfaces = interfaces_from_texts(net_dev, iface_attrs) if net_dev is not None else {}

    if texts.get("tcp") is not None:  # the remote sampler's table
        tcp = parse("tcp", frame_tables.parse_tcp_compact)
    else:
        tcp = _tcp_from_texts(texts, parse, problems)

    # the remote sampler's tables stand in for /proc/stat, softirqs and softnet_stat, and
    # its sums of them when the tables were not asked for (a file it could not sum: its text)
    sums = parse("cpusum", frame_tables.parse_cpusum) if texts.get("cpusum") is not None else None
    cpu = softirqs = softnet = None
    if texts.get("cpu") is not None:
        cpu = parse("cpu", frame_tables.parse_cpu_compact)
    elif sums is None or sums.ncpus is None or texts.get("stat") is not None:
        cpu = parse("stat", procfs.parse_stat_cpus)
    if texts.get("softnet") is not None:
        softnet = parse("softnet", frame_tables.parse_softnet_compact)
    elif sums is None or sums.dropped is None or texts.get("net/softnet_stat") is not None:
        softnet = parse("net/softnet_stat", procfs.parse_softnet_stat)
    if texts.get("netirq") is not None:
        softirqs = parse("netirq", frame_tables.parse_netirq_compact)
    elif sums is None or sums.net_rx is None or texts.get("softirqs") is not None:
        softirqs = parse("softirqs", procfs.parse_softirqs)
    boot_id = (texts.get("boot_id") or "").strip() or None
    hostname = (texts.get("hostname") or "").strip() or None  # made safe by NodeSample
    return NodeSample(
        wall_s=wall_s,
        mono_s=mono_s,
        boot_id=boot_id,
        interfaces=interfaces,
        tcp=tcp,
        cpu=cpu,
        softirqs=softirqs,
        softnet=softnet,
        hostname=hostname,
        problems=tuple(problems),
        fabric=fabric_from_texts(ib_texts, ethtool_texts, mono_s=mono_s, ethtool_mono_s=ethtool_mono_s,
                                 boot_id=boot_id),
        cpu_sums=sums,
        peers=peers,
    )


def _tcp_from_texts(texts: Mapping[str, str | None], parse, problems: list[str]) -> TcpSample | None:
    """The Tcp pair of /proc/net/snmp and the TcpExt counters of /proc/net/netstat."""
    snmp = parse("net/snmp", _TCP_ONLY)
    netstat = texts.get("net/netstat")
    ext: dict[str, int] = {}
    if netstat is not None:
        try:
            ext = procfs.parse_keyed_pairs(netstat, ("TcpExt",), TCPEXT_FIELDS).get("TcpExt", {})
        except procfs.ParseError as exc:
            problems.append(f"net/netstat: {exc}")
    if snmp is None:
        return None
    if "Tcp" not in snmp:
        problems.append("net/snmp: no Tcp: lines")
        return None
    return TcpSample(snmp["Tcp"], ext)


def fabric_from_texts(ib_texts: Mapping[str, str | None] | None, ethtool_texts: Mapping[str, str] | None, *,
                      mono_s: float, ethtool_mono_s: float | None, boot_id: str | None) -> FabricSample | None:
    """The node's FabricSample, or None when it has no RDMA port and no ethtool counters.

    An ``ethtool -S`` text that does not parse leaves its netdev out and says so in
    ``problems``; per-queue counters are dropped (as the remote sampler does).
    """
    ports = parse_infiniband(ib_texts) if ib_texts else {}
    stats: dict[str, dict[str, int]] = {}
    problems = []
    for netdev, text in (ethtool_texts or {}).items():
        netdev = safe_text(netdev)  # as the interface of that name is shown (IfaceLayout)
        try:
            stats[netdev] = without_per_queue(parse_ethtool_stats(text))
        except procfs.ParseError as exc:
            problems.append(f"ethtool -S {netdev}: {exc}")
    if not ports and not stats:
        return None
    return FabricSample(
        mono_s=mono_s,
        ports=ports,
        pfc={n: pfc_view(s) for n, s in stats.items()},
        ethtool=stats,
        ethtool_mono_s=ethtool_mono_s if stats else None,
        boot_id=boot_id,
        problems=tuple(problems),
    )
