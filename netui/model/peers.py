"""Links slower than their peers': a port or NIC that trained down to a lower rate.

In a training cluster the nodes are alike, so a link's expected speed is what the same link
runs at on the other nodes: an interface is compared with the interfaces of the same name
on the other nodes, an ACTIVE RDMA port with the same port (HCA name and number) on the
other nodes — never with another kind of port on the same node. The
expected speed is the most common one (ties: the fastest); a link below it is a warning
(issue 5: "link slower than its peers"). A link with fewer than one peer is not judged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from netui.model.node import Node, NodeState, data_plane
from netui.model.units import speed


def _expected(values: list) -> object | None:
    counts = Counter(values)
    if len(values) < 2:
        return None
    top = max(counts.values())
    return max(v for v, c in counts.items() if c == top)


def slower_links(nodes: Iterable[Node]) -> dict[str, tuple[str, ...]]:
    """Per node (only those with one), its links slower than their peers', in words:
    ``"eth2 at 25G, its peers at 100G"``, ``"mlx5_0/1 at 50 Gb/s, its peers at 200 Gb/s"``."""
    up = [n for n in nodes if n.state is NodeState.UP and n.sample is not None]
    ifaces: dict[str, list[tuple[str, int]]] = {}
    ports: dict[str, list[tuple[str, float]]] = {}
    for n in up:
        s = n.sample
        for name in data_plane(s.interfaces):
            i = s.interfaces[name]
            if i.kind == "physical" and i.speed_mbps and i.operstate == "up":
                ifaces.setdefault(name, []).append((n.name, i.speed_mbps))
        if s.fabric is not None:
            for p in s.fabric.ports.values():
                if p.active and p.rate_gbps:
                    ports.setdefault(p.label, []).append((n.name, p.rate_gbps))
    found: dict[str, list[str]] = {}
    _below_peers(ifaces, speed, found)
    _below_peers(ports, lambda v: f"{v:g} Gb/s", found)
    return {node: tuple(reasons) for node, reasons in found.items()}


def _below_peers(links: dict[str, list[tuple[str, float]]], show, found: dict[str, list[str]]) -> None:
    """Add to ``found`` each node whose link runs below what most nodes' same link runs at."""
    for label, seen in links.items():
        expected = _expected([v for _, v in seen])
        if expected is None:
            continue
        for node, v in seen:
            if v < expected:  # type: ignore[operator]
                found.setdefault(node, []).append(f"{label} at {show(v)}, its peers at {show(expected)}")
