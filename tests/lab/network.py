"""The wiring of a lab: namespaces, one bridge, a veth per node — all with pyroute2.

Names are derived from the lab's short name, so two labs with different names never
collide, and a crashed lab is found (and removed) by its name alone:

    namespace   netui-<name>-node<K>
    bridge      nu-<name>-br          (root namespace)
    veth        nu-<name>-<K>         (root side, enslaved to the bridge)
                eth0                  (node side, inside the namespace)

Addresses come only from 198.18.0.0/24 (RFC 2544 benchmarking range). Every bridge holds
198.18.0.254 without a prefix route; each node gets a /32 route through its lab's bridge.
That lets two labs (say a demo lab and a test run) coexist on disjoint host numbers.
IPv6 is disabled on every lab interface so idle links stay silent (no RS/MLD chatter
in the counters netui shows).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import re
from collections.abc import Iterator

from pyroute2 import IPRoute, netns
from pyroute2.netlink.rtnl import TC_H_ROOT

SUBNET = ipaddress.ip_network("198.18.0.0/24")
BRIDGE_ADDRESS = "198.18.0.254"
LAST_NODE_HOST = 253  # .254 is the bridge, .255 broadcast
LOCK_PATH = "/run/netui-lab.lock"
IFA_F_NOPREFIXROUTE = 0x200
NAME_PATTERN = re.compile(r"^[a-z0-9]{1,6}$")


class LabNetworkError(RuntimeError):
    """The lab's network could not be built."""


def check_name(name: str) -> str:
    # Interface names are limited to 15 characters: "nu-" + name + "-253".
    if not NAME_PATTERN.match(name):
        raise ValueError(f"lab name must match {NAME_PATTERN.pattern}, got {name!r}")
    return name


def namespace_name(name: str, k: int) -> str:
    return f"netui-{name}-node{k}"


def bridge_name(name: str) -> str:
    return f"nu-{name}-br"


def veth_name(name: str, k: int) -> str:
    return f"nu-{name}-{k}"


def node_address(host: int) -> str:
    return str(SUBNET.network_address + host)


@contextlib.contextmanager
def lab_lock() -> Iterator[None]:
    """Serialise building and removing labs across processes (host numbers, names)."""
    fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def lab_namespaces(name: str) -> list[str]:
    """Namespaces of the lab called `name` that exist now, in node order."""
    pattern = re.compile(rf"^netui-{re.escape(name)}-node(\d+)$")
    found = [(int(m.group(1)), ns) for ns in netns.listnetns() if (m := pattern.match(ns))]
    return [ns for _, ns in sorted(found)]


def namespace_pids(namespaces: list[str]) -> dict[str, list[int]]:
    """Pids of every process inside each namespace (what `ip netns pids` reports).

    pyroute2's ns_pids lets ESRCH through: a process that ends between its listing of /proc
    and its stat of /proc/<pid>/ns/net (an iperf3 or a session going away, as they do all the
    time in a lab) raised ProcessLookupError, and a lab's teardown that met one left the lab
    up. The listing is taken again then: the process is gone, which is what we look for."""
    for attempt in range(20):
        try:
            by_ns = netns.ns_pids()
            break
        except ProcessLookupError:
            if attempt == 19:
                raise
    return {ns: by_ns.get(ns, []) for ns in namespaces}


def used_hosts() -> set[int]:
    """Host numbers of 198.18.0.0/24 already routed or assigned in the root namespace."""
    used: set[int] = set()
    with IPRoute() as ipr:
        for route in ipr.route("dump", family=2):
            dst = route.get("RTA_DST")
            if dst and route["dst_len"] == 32 and ipaddress.ip_address(dst) in SUBNET:
                used.add(int(ipaddress.ip_address(dst)) - int(SUBNET.network_address))
        for addr in ipr.addr("dump", family=2):
            ip = ipaddress.ip_address(addr.get("IFA_ADDRESS"))
            if ip in SUBNET and str(ip) != BRIDGE_ADDRESS:
                used.add(int(ip) - int(SUBNET.network_address))
    return used


def first_free_host(n: int) -> int:
    """Lowest host number h such that h … h+n-1 are all unused (call under lab_lock)."""
    used = used_hosts()
    for first in range(1, LAST_NODE_HOST - n + 2):
        if not used.intersection(range(first, first + n)):
            return first
    raise LabNetworkError(f"no {n} free addresses left in {SUBNET} (used: {sorted(used)})")


def _disable_ipv6_here(ifname: str) -> None:
    try:
        with open(f"/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6", "w") as f:
            f.write("1")
    except FileNotFoundError:  # a kernel without IPv6: nothing to silence
        pass


def build_bridge(name: str) -> None:
    br = bridge_name(name)
    with IPRoute() as ipr:
        ipr.link("add", ifname=br, kind="bridge")
        index = ipr.link_lookup(ifname=br)[0]
        _disable_ipv6_here(br)
        ipr.addr("add", index=index, address=BRIDGE_ADDRESS, prefixlen=24,
                 flags=IFA_F_NOPREFIXROUTE)
        ipr.link("set", index=index, state="up")


def build_node(name: str, k: int, host: int) -> None:
    """Namespace netui-<name>-node<k> with lo and eth0 = 198.18.0.<host>/24 on the bridge."""
    ns = namespace_name(name, k)
    root_side, peer = veth_name(name, k), f"nu-{name}-p{k}"
    address = node_address(host)
    netns.create(ns)
    # /proc/sys/net belongs to the calling thread's namespace: enter, write, leave.
    # "default" makes the eth0 that moves in below start with IPv6 off too.
    netns.pushns(ns)
    try:
        for conf in ("all", "default"):
            _disable_ipv6_here(conf)
    finally:
        netns.popns()
    with IPRoute() as ipr:
        bridge_index = ipr.link_lookup(ifname=bridge_name(name))[0]
        ipr.link("add", ifname=root_side, kind="veth", peer=peer)
        _disable_ipv6_here(root_side)
        root_index = ipr.link_lookup(ifname=root_side)[0]
        ipr.link("set", index=root_index, master=bridge_index, state="up")
        ipr.link("set", index=ipr.link_lookup(ifname=peer)[0], net_ns_fd=ns)
        with IPRoute(netns=ns, flags=0) as inside:
            index = inside.link_lookup(ifname=peer)[0]
            inside.link("set", index=index, ifname="eth0")
            inside.addr("add", index=index, address=address, prefixlen=SUBNET.prefixlen)
            inside.link("set", index=index, state="up")
            inside.link("set", index=inside.link_lookup(ifname="lo")[0], state="up")
        ipr.route("add", dst=f"{address}/32", oif=bridge_index, prefsrc=BRIDGE_ADDRESS,
                  scope="link")


def remove_network(name: str) -> None:
    """Delete the lab's veths, then its namespaces, then its bridge; missing parts are fine.

    The root-side veths go first: `ip netns del` frees a veth asynchronously, and a
    lingering one would block the next lab of the same name (lab-notes pitfall 9).
    Kill the processes inside the namespaces before calling this.
    """
    veth = re.compile(rf"^nu-{re.escape(name)}-(p?\d+|p?s|[uv]\d+)$")
    with IPRoute() as ipr:
        for link in ipr.link("dump"):
            ifname = link.get("IFLA_IFNAME")
            if ifname and veth.match(ifname):
                with contextlib.suppress(Exception):
                    ipr.link("del", index=link["index"])
        for ns in lab_namespaces(name):
            with contextlib.suppress(FileNotFoundError):
                netns.remove(ns)
        for index in ipr.link_lookup(ifname=bridge_name(name)):
            ipr.link("del", index=index)


def lab_links(name: str) -> list[str]:
    """Root-namespace interfaces that belong to the lab (bridge and veths)."""
    mine = re.compile(rf"^nu-{re.escape(name)}-(br|p?\d+|p?s|[uv]\d+)$")
    with IPRoute() as ipr:
        names = [link.get("IFLA_IFNAME") for link in ipr.link("dump")]
    return [n for n in names if n and mine.match(n)]


def _rate_bytes_per_s(rate: str | int) -> int:
    """'100mbit', '1gbit', '500kbit' or an int in bits per second → bytes per second."""
    if isinstance(rate, int):
        return rate // 8
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)bit", rate.strip().lower())
    if not m:
        raise ValueError(f"rate must look like '100mbit', got {rate!r}")
    scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[m.group(2)]
    return int(float(m.group(1)) * scale) // 8


def shape_egress(ns: str, rate: str | int, latency_ms: int = 50) -> None:
    """Cap eth0's transmit rate in `ns` with a tbf root qdisc (replaces any earlier one).

    `latency 50ms` on the sender's own interface caps the rate without drops (TCP small
    queues hold the sender back; lab-notes pitfall 14).
    """
    rate_bps = _rate_bytes_per_s(rate)
    if not 0 < rate_bps < 2**32:
        raise ValueError(f"tbf rate must be between 1 bit/s and ~34 Gbit/s, got {rate!r}")
    burst = max(64 * 1024, rate_bps // 200)  # ≥ one GSO packet, ~5 ms at rate
    with IPRoute(netns=ns, flags=0) as ipr:
        index = ipr.link_lookup(ifname="eth0")[0]
        ipr.tc("replace", "tbf", index, 0x10000, rate=rate_bps, burst=burst,
               latency=f"{latency_ms}ms")


def clear_egress(ns: str) -> None:
    """Remove the root qdisc of eth0 in `ns` (back to the default); fine if none is set."""
    with IPRoute(netns=ns, flags=0) as ipr:
        index = ipr.link_lookup(ifname="eth0")[0]
        for qdisc in ipr.tc("dump", index=index):
            if qdisc["parent"] == TC_H_ROOT and qdisc.get("TCA_KIND") == "tbf":
                ipr.tc("del", index=index, handle=qdisc["handle"], parent=TC_H_ROOT)
