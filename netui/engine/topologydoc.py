"""A topology and its ring order check as documents: JSON (``netui topology --json``, see
docs/topology.md) and plain text for the terminal and the UI.

Field names never change meaning; new fields may be added.
"""

from __future__ import annotations

from netui.model import units
from netui.model.topology import RingCheck, Topology

SCHEMA_VERSION = 1
HOPS_SHOWN = 20  # cross-switch hops listed in the text; the JSON has all
NOTES_SHOWN = 10  # notes listed in the text (a note per node on a rail-optimised fabric); the JSON has all


def _via(topo: Topology, top: str | None) -> str:
    return "no common switch" if top is None else top


def topology_document(topo: Topology, source: str) -> dict:
    """The switches (tree order, then any outside the tree) and every placed node."""
    in_tree = topo.tree_order()
    placed = set(in_tree)  # once: a switch per name, not the tree per switch
    names = in_tree + [s for s in topo.switches if s not in placed]
    return {
        "source": source,
        "switches": [{"name": s.name, "parent": s.parent, "level": topo.level(s.name), "uplink_gbps": s.uplink_gbps,
                      "link_speed": s.link_speed, "source": s.source,
                      "nodes": topo.nodes_on(s.name)} for s in (topo.switches[n] for n in names)],
        "nodes": [{"name": a.node, "leaf": a.switch, "port": a.port, "source": a.source,
                   "port_source": a.port_source} for a in topo.nodes],
        "notes": list(topo.notes),
    }


def ring_document(check: RingCheck, topo: Topology, source: str) -> dict:
    rank = {n: i for i, n in enumerate(check.order)}
    best = check.minimum_crossing
    now = check.crossing
    tops = list(dict.fromkeys([*now, *best]))
    return {
        "kind": "netui-topology-ring",
        "version": SCHEMA_VERSION,
        "topology_source": source,
        "order": list(check.order),
        "hops": len(check.hops),
        "cross_switch_hops": check.cross_switch,
        "minimum_cross_switch_hops": check.minimum,
        "worse_than_minimum": check.worse_than_minimum,
        "crossing": [{"switch": t, "level": None if t is None else topo.level(t), "hops": now.get(t, 0),
                      "minimum": best.get(t, 0)} for t in tops],
        "cross_switch": [{"rank": rank[h.a], "from": h.a, "to": h.b, "from_leaf": h.leaf_a, "to_leaf": h.leaf_b,
                          "via": h.top, "uplinks": list(h.uplinks)} for h in check.hops if not h.same_leaf],
        "unplaced": list(check.unplaced),
        "better_order": list(check.better),
        "placement": [{"name": n, "leaf": topo.leaf_of(n), "port": topo.port_of(n)} for n in check.order],
        "notes": list(topo.notes),
    }


def ring_text(check: RingCheck, topo: Topology, source: str) -> str:
    """What a person reads: the count, the minimum, the crossings by switch, the hops, the
    better order (a hostfile, with the leaves as comments)."""
    n = len(check.order)
    placed = n - len(check.unplaced)
    lines = [f"Ring of {n} host{'s' if n != 1 else ''} in the given rank order (the last back to the first), "
             f"topology from {source}"]
    if placed < 2:
        lines.append(f"  {placed} host{'s' if placed != 1 else ''} placed in the topology: no ring to judge")
    else:
        lines.append(f"  cross-switch hops: {check.cross_switch} of {len(check.hops)}"
                     f" (fewest possible: {check.minimum})")
        best = check.minimum_crossing
        highest_first = sorted(check.crossing.items(), key=lambda kv: (-(topo.level(kv[0]) if kv[0] else 99), -kv[1]))
        for top, count in highest_first:
            level = "" if top is None else f", level {topo.level(top)}"
            lines.append(f"    via {_via(topo, top)}{level}: {count} (fewest possible: {best.get(top, 0)})")
    if check.unplaced:
        lines.append(f"  unplaced (not in the topology, left out of the ring, last in the order below): "
                     f"{' '.join(check.unplaced)}")
    lines.extend(notes_text(topo.notes))
    crossing = [h for h in check.hops if not h.same_leaf]
    if crossing and check.worse_than_minimum:
        rank = {name: i for i, name in enumerate(check.order)}
        lines.append("")
        lines.append("Hops that cross switches:")
        for h in crossing[:HOPS_SHOWN]:
            lines.append(f"  rank {rank[h.a]:>4} {h.a} ({h.leaf_a}) → {h.b} ({h.leaf_b}) via {_via(topo, h.top)}")
        if len(crossing) > HOPS_SHOWN:
            lines.append(f"  … and {len(crossing) - HOPS_SHOWN:,} more (--json lists every hop)")
    lines.append("")
    if check.worse_than_minimum:
        lines.append(f"Worse than needed. A topology-ordered hostfile ({check.minimum} cross-switch hops; "
                     "--hostfile prints only the hosts):")
    else:
        lines.append("The order already keeps each leaf's hosts together. Topology-ordered hostfile:")
    leaf = object()
    for name in check.better:
        here = topo.leaf_of(name)
        if here != leaf:
            lines.append(f"# {here}" if here is not None else "# unplaced")
            leaf = here
        lines.append(name)
    return "\n".join(lines)


def topology_text(topo: Topology, source: str) -> str:
    """The tree as netui reads it: each switch indented under its parent, its nodes and ports."""
    lines = [f"Topology from {source}: {len(topo.switches)} switches, {len(topo.nodes)} nodes"]
    depth: dict[str, int] = {}
    for name in topo.tree_order():
        s = topo.switches[name]
        depth[name] = 0 if s.parent is None else depth.get(s.parent, 0) + 1
        extra = []
        if s.uplink_gbps is not None:
            extra.append(f"uplink {units.gbps(s.uplink_gbps)}")
        if s.link_speed is not None:
            extra.append(f"LinkSpeed {s.link_speed}")
        extra.append(s.source or "?")
        lines.append(f"{'  ' * (depth[name] + 1)}{name}  ({', '.join(extra)})")
        attached = [topo.attachment(node) for node in topo.nodes_on(name)]
        if attached:
            shown = [f"{a.node}:{a.port}" if a.port else a.node for a in attached if a is not None]
            lines.append(f"{'  ' * (depth[name] + 2)}{' '.join(shown)}")
    lines.extend(notes_text(topo.notes))
    return "\n".join(lines)


def notes_text(notes: tuple[str, ...] | list[str], shown: int = NOTES_SHOWN) -> list[str]:
    """``  note: …`` lines for the first ``shown`` notes, and how many more there are."""
    lines = [f"  note: {note}" for note in notes[:shown]]
    if len(notes) > shown:
        lines.append(f"  … and {len(notes) - shown:,} more notes (the JSON lists them all)")
    return lines
