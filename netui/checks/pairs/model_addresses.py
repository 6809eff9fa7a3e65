"""Which address each node is tested on: the data-plane network, not the SSH host name.

Pure: the probes (checks/pairs/probe.py) and the monitor's samples in, choices out.

The user names the network by subnet (``198.18.0.0/24``) or by interface name (``ib0``);
with neither, the suggestion is the subnet every node has an address in, on the fastest
up interface (the slowest node's speed counts), physical before software devices.
Interface names may differ between node generations; a subnet does not, so the
suggestion is a subnet.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

from netui.model.samples import SOFTWARE_KINDS, NodeSample


# --- what a node offers (parsed by checks/pairs/probe.py) ------------------------------------


@dataclass(frozen=True, slots=True)
class Gid:
    index: int
    gid: str  # "0000:0000:0000:0000:0000:ffff:c612:0009"
    kind: str  # "RoCE v2", "IB/RoCE v1"

    @property
    def ipv4(self) -> str | None:
        """The IPv4 address of an IPv4-mapped GID (RoCE), else None."""
        try:
            address = ipaddress.IPv6Address(self.gid)
        except ValueError:
            return None
        mapped = address.ipv4_mapped
        return str(mapped) if mapped is not None else None


@dataclass(frozen=True, slots=True)
class RdmaPort:
    device: str
    port: int
    state: str  # "ACTIVE", "DOWN", … (the name after "4: "), "" when unreadable
    link_layer: str  # "InfiniBand", "Ethernet", ""
    gids: tuple[Gid, ...] = ()


@dataclass(frozen=True)
class Probe:
    """One node's answer. ``tool_path`` None: the tool is missing (or the probe failed)."""

    tool: str | None = None
    tool_path: str | None = None
    # interface name → its IPv4 addresses with prefix, in the order ip printed them
    addresses: dict[str, list[ipaddress.IPv4Interface]] = field(default_factory=dict)
    rdma: tuple[RdmaPort, ...] = ()
    rdma_probed: bool = False
    problems: tuple[str, ...] = ()  # lines that made no sense (ip's own errors among them)
    listening: frozenset[int] = frozenset()  # TCP ports something listens on already
    listen_probed: bool = False


@dataclass(frozen=True)
class AddressChoice:
    """Per node: the address to test on and the interface that holds it; or a problem."""

    addresses: dict[str, str] = field(default_factory=dict)
    interfaces: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    how: str = ""  # in words: "on 198.18.0.0/24 (suggested: …)"


def parse_test_net(text: str) -> ipaddress.IPv4Network | str | None:
    """A subnet, an interface name, or None for "suggest one". ValueError on a bad value."""
    text = (text or "").strip()
    if not text:
        return None
    if "/" in text or text.replace(".", "").isdigit():
        try:
            return ipaddress.IPv4Network(text, strict=False)
        except ValueError as exc:
            raise ValueError(f"not an IPv4 subnet: {text!r} ({exc})") from None
    if len(text) > 15 or any(c.isspace() or c in "/:" for c in text):
        raise ValueError(f"not an interface name: {text!r}")
    return text


def _is_loopback(interface: ipaddress.IPv4Interface) -> bool:
    return interface.ip.is_loopback


def _iface(sample: NodeSample | None, name: str):
    return None if sample is None else sample.interfaces.get(name)


def _rank(samples: Mapping[str, NodeSample | None], holders: Mapping[str, str]) -> tuple:
    """Sort key of a candidate network (smaller is better): all up, physical, fastest."""
    up = physical = True
    speeds = []
    for node, ifname in holders.items():
        iface = _iface(samples.get(node), ifname)
        if iface is None:
            speeds.append(0)
            continue
        if iface.operstate not in (None, "up", "unknown"):
            up = False
        if iface.kind in SOFTWARE_KINDS:
            physical = False
        speeds.append(iface.speed_mbps if iface.speed_mbps and iface.speed_mbps > 0 and
                      iface.kind not in SOFTWARE_KINDS else 0)
    return (not up, not physical, -min(speeds, default=0))


def suggest_test_net(probes: Mapping[str, Probe], samples: Mapping[str, NodeSample | None] | None = None,
                     ) -> tuple[ipaddress.IPv4Network, dict[str, str]] | None:
    """The subnet every probed node has an address in (loopback excluded), best ranked,
    with the interface holding it on each node; None when the nodes share none."""
    samples = samples or {}
    shared: dict[ipaddress.IPv4Network, dict[str, str]] | None = None
    for node, probe in probes.items():
        mine: dict[ipaddress.IPv4Network, str] = {}
        for ifname, interfaces in probe.addresses.items():
            for interface in interfaces:
                if not _is_loopback(interface):
                    mine.setdefault(interface.network, ifname)
        if shared is None:
            shared = {net: {node: ifname} for net, ifname in mine.items()}
        else:
            shared = {net: holders | {node: mine[net]} for net, holders in shared.items() if net in mine}
    if not shared:
        return None
    best = min(shared, key=lambda net: (_rank(samples, shared[net]), net.prefixlen == 32, str(net)))
    return best, shared[best]


def choose_addresses(probes: Mapping[str, Probe], test_net: str = "",
                     samples: Mapping[str, NodeSample | None] | None = None) -> AddressChoice:
    """The test address of every probed node, by subnet, interface name, or suggestion.

    A node without a matching address gets a problem instead, in words that name it.
    ValueError when ``test_net`` is neither a subnet nor an interface name.
    """
    wanted = parse_test_net(test_net)
    addresses: dict[str, str] = {}
    interfaces: dict[str, str] = {}
    problems: dict[str, str] = {}
    how = ""
    if wanted is None:
        suggestion = suggest_test_net(probes, samples)
        if suggestion is None:
            for node in probes:
                problems[node] = (f"no subnet shared by all nodes for the test on {node}: "
                                  "name one with --test-net CIDR or an interface")
            return AddressChoice(problems=problems, how="no shared subnet")
        wanted, _ = suggestion
        names = sorted(set(suggestion[1].values()))
        how = f"on {wanted} ({'/'.join(names)}, suggested)"
    elif isinstance(wanted, ipaddress.IPv4Network):
        how = f"on {wanted}"
    else:
        how = f"on {wanted}"
    for node, probe in probes.items():
        found = None
        for ifname, ifaddrs in probe.addresses.items():
            for interface in ifaddrs:
                if isinstance(wanted, ipaddress.IPv4Network):
                    hit = interface.ip in wanted
                else:
                    hit = ifname == wanted  # named by the user: even lo
                if hit:
                    found = (str(interface.ip), ifname)
                    break
            if found:
                break
        if found is None:
            what = f"in {wanted}" if isinstance(wanted, ipaddress.IPv4Network) else f"on {wanted}"
            problems[node] = f"no IPv4 address {what} on {node}"
        else:
            addresses[node], interfaces[node] = found
    return AddressChoice(addresses, interfaces, problems, how)


def suggest_interface(samples: Mapping[str, NodeSample | None]) -> str | None:
    """The fastest up interface every sampled node has by name (loopback and software
    devices only when nothing else is shared), for the settings dialog; None when none."""
    common: set[str] | None = None
    for sample in samples.values():
        if sample is None:
            continue
        names = {n for n, i in sample.interfaces.items() if i.kind != "loopback" and n != "lo"}
        common = names if common is None else common & names
    if not common:
        return None
    holders = {name: {node: name for node, s in samples.items() if s is not None} for name in common}
    return min(sorted(common), key=lambda name: _rank(samples, holders[name]))


def link_speeds_mbps(samples: Mapping[str, NodeSample | None], interfaces: Mapping[str, str]) -> dict[str, int | None]:
    """Each node's link speed (Mbit/s) on its test interface; None when unknown or when the
    interface is a software device (a veth says 10000 whatever it carries)."""
    speeds: dict[str, int | None] = {}
    for node, ifname in interfaces.items():
        iface = _iface(samples.get(node), ifname)
        if iface is None or iface.kind in SOFTWARE_KINDS or not iface.speed_mbps or iface.speed_mbps <= 0:
            speeds[node] = None
        else:
            speeds[node] = iface.speed_mbps
    return speeds


def nominal_speeds_mbps(samples: Mapping[str, NodeSample | None],
                        interfaces: Mapping[str, str]) -> dict[str, tuple[int, str]]:
    """The nodes whose test interface is a software device that reports a speed anyway (a
    veth's 10000): node → (Mbit/s, kind). Nominal only: never a pass mark, shown as nominal."""
    out: dict[str, tuple[int, str]] = {}
    for node, ifname in interfaces.items():
        iface = _iface(samples.get(node), ifname)
        if iface is not None and iface.kind in SOFTWARE_KINDS and iface.speed_mbps and iface.speed_mbps > 0:
            out[node] = (iface.speed_mbps, iface.kind)
    return out


@dataclass(frozen=True)
class RdmaChoice:
    """perftest's ``-d``/``-i``/``-x`` for one node, and why (or the problem)."""

    device: str | None = None
    ib_port: int | None = None
    gid_index: int | None = None
    problem: str | None = None
    why: str = ""


def choose_rdma(node: str, probe: Probe, *, device: str = "", ib_port: int | None = None,
                gid_index: int | None = None, address: str | None = None) -> RdmaChoice:
    """The RDMA device, port and GID index for ``node``: what the user gave, else suggested
    from /sys/class/infiniband: an ACTIVE port, on RoCE the ``RoCE v2`` GID (the one
    mapping ``address`` when there is one), on InfiniBand no GID index."""
    ports = list(probe.rdma)
    if probe.rdma_probed and not ports:
        return RdmaChoice(problem=f"no RDMA device on {node} (/sys/class/infiniband is empty)")
    if device:
        mine = [p for p in ports if p.device == device]
        if probe.rdma_probed and not mine:
            have = ", ".join(sorted({p.device for p in ports}))
            return RdmaChoice(problem=f"RDMA device {device} not found on {node} (it has {have})")
        ports = mine
    if ib_port is not None:
        ports = [p for p in ports if p.port == ib_port] or ([] if probe.rdma_probed else ports)
        if probe.rdma_probed and not ports:
            return RdmaChoice(problem=f"no RDMA port {ib_port} on {node}")
    if not ports:  # not probed: leave it all to perftest
        return RdmaChoice(device or None, ib_port, gid_index, why="as given")
    port = min(ports, key=lambda p: (p.state != "ACTIVE", p.device, p.port))
    chosen_gid = gid_index
    why = f"{port.device} port {port.port} ({port.state or 'state unknown'}, {port.link_layer or 'link layer unknown'})"
    if chosen_gid is None and port.link_layer == "Ethernet":
        chosen_gid = _roce_gid(port, address)
        if chosen_gid is not None:
            why += f", GID {chosen_gid}"
    return RdmaChoice(port.device, port.port, chosen_gid, why=why)


def _roce_gid(port: RdmaPort, address: str | None) -> int | None:
    """RoCE v2 before v1; the GID that maps the test address before any other IPv4 one."""
    def key(g):
        return (g.kind != "RoCE v2", address is None or g.ipv4 != address, g.ipv4 is None, g.index)

    candidates = [g for g in port.gids if g.kind]
    return min(candidates, key=key).index if candidates else None
