"""Links slower than their peers': a port or NIC that trained down to a lower rate.

In a training cluster the nodes are alike, so a link's expected speed is what the same link
runs at on the other nodes: an interface is compared with the interfaces of the same name
on the other nodes, an ACTIVE RDMA port with the same port (HCA name and number) on the
other nodes — never with another kind of port on the same node. The
expected speed is the most common one (ties: the fastest); a link below it is a warning
(issue 5: "link slower than its peers"). A link with fewer than one peer is not judged.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable

from netui.model.node import Node, NodeState, data_plane
from netui.model.samples import IfaceLayout, InterfaceTable
from netui.model.units import speed


def _expected(values: list[float]) -> float | None:
    counts = Counter(values)
    if len(values) < 2:
        return None
    top = max(counts.values())
    return max(v for v, c in counts.items() if c == top)


def _physical_links_up(interfaces) -> tuple[tuple[str, int], ...]:
    """(name, Mbit/s) of the node's data-plane NICs that are up with a known speed — from
    the shared layout when the interfaces are an InterfaceTable (once per layout, not per
    tick: this runs for every node at every tick)."""
    if isinstance(interfaces, InterfaceTable):
        return _layout_links(interfaces.layout)
    return tuple((name, i.speed_mbps) for name in data_plane(interfaces)
                 if (i := interfaces[name]).kind == "physical" and i.speed_mbps and i.operstate == "up")


_LINKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # IfaceLayout → its links


def _layout_links(layout: IfaceLayout) -> tuple[tuple[str, int], ...]:
    links = _LINKS.get(layout)
    if links is None:
        links = _LINKS[layout] = tuple(
            (layout.names[i], m.speed_mbps) for i in layout.data_plane
            if (m := layout.meta[i]).kind == "physical" and m.speed_mbps and m.operstate == "up")
    return links


def slower_links(nodes: Iterable[Node]) -> dict[str, tuple[str, ...]]:
    """Per node (only those with one), its links slower than their peers', in words:
    ``"eth2 at 25G, its peers at 100G"``, ``"mlx5_0/1 at 50 Gb/s, its peers at 200 Gb/s"``.

    This runs at every tick for the whole fleet, so nodes whose NICs are alike (the same
    layout, hence the very same tuple of links) are counted as one group.
    """
    up_state = NodeState.UP  # read once: an Enum member read is slow on CPython 3.11
    up = [n for n in nodes if n.state is up_state and n.sample is not None]
    layouts: dict[int, tuple[IfaceLayout, list[str]]] = {}  # nodes by the layout of their NICs
    groups: dict[int, tuple[tuple[tuple[str, int], ...], list[str]]] = {}
    ports: dict[str, list[tuple[str, float]]] = {}

    def join(links: tuple, names: list[str]) -> None:
        group = groups.get(id(links))
        if group is None:
            groups[id(links)] = (links, names)
        else:
            group[1].extend(names)

    for n in up:
        layout = n.iface_layout  # (the node's: its sample is not reached into, unless needed)
        if layout is not None:
            seen = layouts.get(id(layout))
            if seen is None:
                layouts[id(layout)] = (layout, [n.name])
            else:
                seen[1].append(n.name)
        else:
            links = _physical_links_up(n.sample.interfaces)
            if links:
                join(links, [n.name])
        if n.has_fabric:
            for p in n.sample.fabric.ports.values():
                if p.active and p.rate_gbps:
                    ports.setdefault(p.label, []).append((n.name, p.rate_gbps))
    for layout, names in layouts.values():
        links = _layout_links(layout)
        if links:
            join(links, names)
    found: dict[str, list[str]] = {}
    _below_peers_grouped(list(groups.values()), speed, found)
    _below_peers(ports, lambda v: f"{v:g} Gb/s", found)
    return {node: tuple(reasons) for node, reasons in found.items()}


def _below_peers_grouped(groups: list[tuple[tuple[tuple[str, int], ...], list[str]]], show,
                         found: dict[str, list[str]]) -> None:
    """``_below_peers`` for groups of nodes with the same links: (links, node names)."""
    counts: dict[str, Counter] = {}  # label → speed → how many nodes
    for links, names in groups:
        for label, value in links:
            counts.setdefault(label, Counter())[value] += len(names)
    expected = {}
    for label, c in counts.items():
        if sum(c.values()) >= 2:
            top = max(c.values())
            expected[label] = max(v for v, k in c.items() if k == top)
    below: dict[str, list[tuple[list[str], int]]] = {}
    for links, names in groups:
        for label, value in links:
            e = expected.get(label)
            if e is not None and value < e:
                below.setdefault(label, []).append((names, value))
    for label in counts:  # labels in the order nodes first showed them, as _below_peers
        for names, value in below.get(label, ()):
            for node in names:
                found.setdefault(node, []).append(f"{label} at {show(value)}, its peers at {show(expected[label])}")


def _below_peers(links: dict[str, list[tuple[str, float]]], show, found: dict[str, list[str]]) -> None:
    """Add to ``found`` each node whose link runs below what most nodes' same link runs at."""
    for label, seen in links.items():
        expected = _expected([v for _, v in seen])
        if expected is None:
            continue
        for node, v in seen:
            if v < expected:
                found.setdefault(node, []).append(f"{label} at {show(v)}, its peers at {show(expected)}")
