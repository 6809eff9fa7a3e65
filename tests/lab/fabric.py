"""The two-tier wiring of a lab: leaf switches and a spine, each a namespace with a bridge.

    root namespace       spine              leaf1                     nodes
    nu-<name>-br ─────── mgmt
    198.18.0.254         br0 ── swp1 ────── uplink   br0 ── swp1 ────── eth0 node1
                            └── swp2 ──┐                └── swp2 ────── eth0 node2
                                       │    leaf2
                                       └─── uplink   br0 ── swp1 ────── eth0 node3
                                                        └── swp2 ────── eth0 node4

Every switch is a plain Linux bridge (`br0`, no address, STP off) in a namespace of its own:
netui-<name>-spine, netui-<name>-leaf<L>. A leaf's ports towards its nodes are swp1, swp2, …
(in the leaf's order), its port towards the spine `uplink`; the spine's port towards leaf L is
swp<L>, and its `mgmt` port joins the root namespace's bridge, which keeps the lab's usual
198.18.0.254 and a /32 route per node: the host reaches every node over SSH as in the flat lab,
through spine and leaf. Nodes on different leaves reach each other over the spine (one L2
domain, 198.18.0.0/24). Linux bridges never forward LLDP (01:80:c2:00:00:0e), so each node's
LLDP neighbour is its own leaf, as on a real fabric.

`shape_uplink` puts a tbf on both ends of one leaf↔spine link (leaf's `uplink`, spine's
`swp<L>`): every cross-leaf flow of that leaf, in either direction, shares the rate.
"""

from __future__ import annotations

import contextlib
import re
import subprocess

from pyroute2 import IPRoute, netns
from pyroute2.netlink.rtnl import TC_H_ROOT

from . import network

SWITCH_BRIDGE = "br0"
UPLINK = "uplink"
MGMT = "mgmt"
IP_TIMEOUT_S = 30


def spine_namespace(name: str) -> str:
    return f"netui-{name}-spine"


def leaf_namespace(name: str, leaf: int) -> str:
    return f"netui-{name}-leaf{leaf}"


def switch_namespaces(name: str) -> list[str]:
    """The lab's switch namespaces that exist now: leaves in order, then the spine."""
    pattern = re.compile(rf"^netui-{re.escape(name)}-(leaf(\d+)|spine)$")
    found = []
    for ns in netns.listnetns():
        if m := pattern.match(ns):
            found.append((int(m.group(2)) if m.group(2) else 1 << 30, ns))
    return [ns for _, ns in sorted(found)]


def build(name: str, leaves: int, nodes: list[tuple[int, int, int, int]]) -> None:
    """Spine, `leaves` leaves and the nodes, `nodes` as (k, leaf, port, host) tuples.

    With `ip -batch` (one process per namespace, run side by side) rather than pyroute2:
    opening a netlink socket in a namespace costs ~50 ms here, and a fabric needs dozens.
    Every link is created straight in its namespace under its final name.
    """
    spine = spine_namespace(name)
    leaf_ns = {leaf: leaf_namespace(name, leaf) for leaf in range(1, leaves + 1)}
    node_ns = {k: network.namespace_name(name, k) for k, *_ in nodes}
    namespaces = [spine, *leaf_ns.values(), *node_ns.values()]
    _ip_batch(None, [f"netns add {ns}" for ns in namespaces])
    for ns in namespaces:  # before any link exists there: "default" covers them all
        netns.pushns(ns)
        try:
            for conf in ("all", "default"):
                network._disable_ipv6_here(conf)
        finally:
            netns.popns()
    mgmt = f"nu-{name}-s"
    root = [f"link add {mgmt} type veth peer name {MGMT} netns {spine}",
            f"link add {SWITCH_BRIDGE} netns {spine} type bridge"]
    per_ns: dict[str, list[str]] = {
        spine: ["link set lo up", f"link set {SWITCH_BRIDGE} up",
                f"link set {MGMT} master {SWITCH_BRIDGE} up"]}
    for leaf, ns in leaf_ns.items():
        root += [f"link add {SWITCH_BRIDGE} netns {ns} type bridge",
                 f"link add {UPLINK} netns {ns} type veth peer name swp{leaf} netns {spine}"]
        per_ns[spine].append(f"link set swp{leaf} master {SWITCH_BRIDGE} up")
        per_ns[ns] = ["link set lo up", f"link set {SWITCH_BRIDGE} up",
                      f"link set {UPLINK} master {SWITCH_BRIDGE} up"]
    root_after = [f"link set {mgmt} master {network.bridge_name(name)} up"]
    for k, leaf, port, host in nodes:
        address = network.node_address(host)
        root.append(f"link add swp{port} netns {leaf_ns[leaf]} type veth "
                    f"peer name eth0 netns {node_ns[k]}")
        per_ns[leaf_ns[leaf]].append(f"link set swp{port} master {SWITCH_BRIDGE} up")
        per_ns[node_ns[k]] = ["link set lo up",
                              f"addr add {address}/{network.SUBNET.prefixlen} dev eth0",
                              "link set eth0 up"]
        root_after.append(f"route add {address}/32 dev {network.bridge_name(name)} "
                          f"src {network.BRIDGE_ADDRESS} scope link")
    _ip_batch(None, root)
    network._disable_ipv6_here(mgmt)
    _ip_batches({None: root_after, **per_ns})


def _ip_batch(ns: str | None, lines: list[str]) -> None:
    _ip_batches({ns: lines})


def _ip_batches(batches: dict[str | None, list[str]]) -> None:
    """Run `ip [-n NS] -batch -` for every namespace at once; LabNetworkError on failure."""
    procs = []
    for ns, lines in batches.items():
        argv = ["ip", *(["-n", ns] if ns else []), "-batch", "-"]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        procs.append((ns, proc, "\n".join(lines) + "\n"))
    failures = []
    for ns, proc, script in procs:
        _, err = proc.communicate(script, timeout=IP_TIMEOUT_S)
        if proc.returncode != 0:
            failures.append(f"{ns or 'root namespace'}: {err.strip()}")
    if failures:
        raise network.LabNetworkError("; ".join(failures))


def remove_switch_links(name: str) -> None:
    """Delete every veth of the lab's switches (their peers, the nodes' eth0, go with them).

    Done before the namespaces are removed, like the flat lab's root-side veths (lab-notes
    pitfall 9): a namespace's veths are otherwise freed asynchronously.
    """
    for ns in switch_namespaces(name):
        with contextlib.suppress(Exception), IPRoute(netns=ns, flags=0) as inside:
            for link in inside.link("dump"):
                if link.get_attr("IFLA_IFNAME") not in ("lo", SWITCH_BRIDGE):
                    with contextlib.suppress(Exception):
                        inside.link("del", index=link["index"])


def shape_uplink(name: str, leaf: int, rate: str | int, latency_ms: int = 50) -> None:
    """Cap leaf `leaf`'s link to the spine to `rate` in both directions (tbf at each end)."""
    rate_bps = network._rate_bytes_per_s(rate)
    if not 0 < rate_bps < 2**32:
        raise ValueError(f"tbf rate must be between 1 bit/s and ~34 Gbit/s, got {rate!r}")
    burst = max(64 * 1024, rate_bps // 200)
    for ns, port in _uplink_ends(name, leaf):
        with IPRoute(netns=ns, flags=0) as ipr:
            index = ipr.link_lookup(ifname=port)[0]
            ipr.tc("replace", "tbf", index, 0x10000, rate=rate_bps, burst=burst,
                   latency=f"{latency_ms}ms")


def clear_uplink(name: str, leaf: int) -> None:
    """Remove the tbf of shape_uplink from both ends; fine when there is none."""
    for ns, port in _uplink_ends(name, leaf):
        with IPRoute(netns=ns, flags=0) as ipr:
            index = ipr.link_lookup(ifname=port)[0]
            for qdisc in ipr.tc("dump", index=index):
                if qdisc["parent"] == TC_H_ROOT and qdisc.get("TCA_KIND") == "tbf":
                    ipr.tc("del", index=index, handle=qdisc["handle"], parent=TC_H_ROOT)


def _uplink_ends(name: str, leaf: int) -> list[tuple[str, str]]:
    leaf_ns = leaf_namespace(name, leaf)
    if leaf_ns not in netns.listnetns():
        raise ValueError(f"lab {name!r} has no leaf{leaf}")
    return [(leaf_ns, UPLINK), (spine_namespace(name), f"swp{leaf}")]


def remove_switch_namespaces(name: str) -> None:
    for ns in switch_namespaces(name):
        with contextlib.suppress(FileNotFoundError):
            netns.remove(ns)


def all_leaf_namespaces() -> list[str]:
    """Leaf namespaces of every lab on the machine (who else needs lldp's mount point)."""
    return [ns for ns in netns.listnetns() if re.match(r"^netui-[a-z0-9]{1,6}-leaf\d+$", ns)]
