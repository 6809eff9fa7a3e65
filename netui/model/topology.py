"""Where each node sits in the fabric: a tree of switches, nodes on leaf switches (no I/O).

A ``Topology`` is built by the parsers (``collectors/topology_files.py``: Slurm's
``topology.conf``, ``scontrol show topology``, netui's TOML map) or from LLDP neighbours
(``Topology.from_neighbours``); ``merge`` combines a file with LLDP facts. Every fact keeps
the source it came from ("topology.conf:3", "lldp"...), so a screen can say why it believes it.

The ring order check (``ring_check``) counts, for an all-reduce ring in the given rank order
(the wrap-around from the last rank to the first included), the hops whose two ends sit on
different leaf switches, and which switch each such hop has to climb to; it compares them
with the fewest possible (each leaf's nodes contiguous) and proposes that order.

Node names match without regard to case and by short name both ways: a fully qualified name
(``node1.cluster``) matches a topology that names only ``node1``, and ``node1`` the one
``node1.…`` a topology names. Switch names as LLDP reports them are matched to a file's by
``Topology.switch_named`` (case and domain aside).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

LLDP = "lldp"


@dataclass(frozen=True, slots=True)
class Switch:
    """One switch. ``parent`` is the switch its uplink goes to (None: a root, e.g. the spine or
    core). ``uplink_gbps`` is the uplink's capacity in Gbit/s where known; ``link_speed`` is
    Slurm's ``LinkSpeed`` as written (arbitrary units, Slurm says: never taken for Gbit/s)."""

    name: str
    parent: str | None = None
    uplink_gbps: float | None = None
    link_speed: int | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class Attachment:
    """A node cabled to a switch: ``switch`` (its leaf), ``port`` on that switch when known, and
    where each came from (``source`` for the switch, ``port_source`` for the port)."""

    node: str
    switch: str
    port: str | None = None
    source: str = ""
    port_source: str | None = None


class Neighbour(Protocol):
    """What ``from_neighbours`` reads of an LLDP neighbour (collectors/lldp.py LldpNeighbour)."""

    interface: str
    switch: str | None
    port: str | None


def _key(name: str) -> str:
    return name.lower()


def _short(name: str) -> str | None:
    """``node1.cluster.example`` → ``node1``; None for an address or a name without a dot."""
    if "." not in name or ":" in name or name.replace(".", "").isdigit():  # no dot, IPv6, IPv4
        return None
    return name.split(".", 1)[0]


class Topology:
    """Switches (in the order first defined) and the nodes attached to them.

    Built already checked: every parent and every node's switch is a known switch, and the
    parent links hold no cycle (the parsers raise, with file and line, before building one).
    """

    def __init__(self, switches: Iterable[Switch] = (), nodes: Iterable[Attachment] = (),
                 notes: Iterable[str] = ()) -> None:
        self.switches: dict[str, Switch] = {s.name: s for s in switches}
        self._nodes: dict[str, Attachment] = {}
        for a in nodes:
            self._nodes.setdefault(_key(a.node), a)
        # "node1" finds the one node named "node1.cluster…" (None: several such)
        self._by_short: dict[str, Attachment | None] = {}
        for k, a in self._nodes.items():
            if (short := _short(k)) is not None and short not in self._nodes:
                self._by_short[short] = None if short in self._by_short else a
        self._on: dict[str, list[str]] = {}  # switch → its nodes, in the order given
        for a in self._nodes.values():
            self._on.setdefault(a.switch, []).append(a.node)
        self.notes: tuple[str, ...] = tuple(notes)  # conflicts seen while merging sources
        self._children: dict[str | None, list[str]] = {}
        for s in self.switches.values():
            self._children.setdefault(s.parent, []).append(s.name)
        self._check_loops()  # raises on a cycle, so no later walk can loop
        self._levels: dict[str, int] | None = None
        self._up: dict[str, tuple[str, ...]] = {}
        self._switch_index: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None

    def _check_loops(self) -> None:
        """Every switch's uplinks end at a root: each switch walked once (linear in switches)."""
        done: set[str] = set()
        for name in self.switches:
            walk: list[str] = []
            on_walk: set[str] = set()
            cur: str | None = name
            while cur is not None and cur in self.switches and cur not in done:
                if cur in on_walk:
                    raise ValueError(f"switch {cur!r}: its uplinks loop back to {cur!r} "
                                     f"({' → '.join(walk[walk.index(cur):] + [cur])})")
                on_walk.add(cur)
                walk.append(cur)
                cur = self.switches[cur].parent
            done.update(walk)

    # --- nodes --------------------------------------------------------------------------------

    @property
    def nodes(self) -> list[Attachment]:
        return list(self._nodes.values())

    def attachment(self, node: str) -> Attachment | None:
        """Where ``node`` is placed, found without regard to case and by short name both ways:
        ``node1.cluster`` finds a topology's ``node1``, and ``node1`` finds its only
        ``node1.…`` (not when it has several)."""
        key = _key(node)
        a = self._nodes.get(key)
        if a is None and (short := _short(key)) is not None:
            a = self._nodes.get(short)
        if a is None:
            a = self._by_short.get(key)
        return a

    def leaf_of(self, node: str) -> str | None:
        """The switch ``node`` is cabled to, None when the topology does not place it."""
        a = self.attachment(node)
        return None if a is None else a.switch

    def port_of(self, node: str) -> str | None:
        """The switch port ``node`` is cabled to, when a source gave it."""
        a = self.attachment(node)
        return None if a is None else a.port

    def same_leaf(self, a: str, b: str) -> bool:
        """Both placed, on the same leaf switch."""
        la = self.leaf_of(a)
        return la is not None and la == self.leaf_of(b)

    # --- switches -----------------------------------------------------------------------------

    def _ancestry(self, name: str) -> tuple[str, ...]:
        up = self._up.get(name)
        if up is None:
            out = [name]
            parent = self.switches[name].parent if name in self.switches else None
            while parent is not None:  # no loop: checked when built
                out.append(parent)
                parent = self.switches[parent].parent if parent in self.switches else None
            up = self._up[name] = tuple(out)
        return up

    def ancestry(self, switch: str) -> list[str]:
        """``switch``, its parent, its parent's parent… up to a root."""
        return list(self._ancestry(switch))

    def switch_named(self, name: str) -> str | None:
        """This topology's switch that ``name`` (as LLDP reports it, say) means: the same name,
        else the only one equal without regard to case, else the only one with the same short
        name (``leaf1.example.com`` ↔ ``leaf1``). None when none or several match."""
        if name in self.switches:
            return name
        if self._switch_index is None:
            by_key: dict[str, list[str]] = {}
            by_short: dict[str, list[str]] = {}
            for s in self.switches:
                by_key.setdefault(s.lower(), []).append(s)
                by_short.setdefault(_short(s.lower()) or s.lower(), []).append(s)
            self._switch_index = (by_key, by_short)
        by_key, by_short = self._switch_index
        key = name.lower()
        for hits in (by_key.get(key), by_short.get(_short(key) or key)):
            if hits:
                return hits[0] if len(hits) == 1 else None
        return None

    def children(self, switch: str | None) -> list[str]:
        """The switches whose uplink goes to ``switch`` (None: the roots), in definition order."""
        return list(self._children.get(switch, ()))

    def level(self, switch: str) -> int:
        """0 for a switch with no child switch (a leaf), else one more than its highest child
        (as Slurm numbers them: a spine above leaves is level 1)."""
        if self._levels is None:
            levels: dict[str, int] = {}
            for top in self.switches:  # children before parents, iteratively: chains may be deep
                stack = [(top, False)]
                while stack:
                    name, kids_done = stack.pop()
                    if name in levels:
                        continue
                    kids = self._children.get(name, ())
                    if kids_done:
                        levels[name] = 1 + max(levels[k] for k in kids) if kids else 0
                    else:
                        stack.append((name, True))
                        stack.extend((k, False) for k in kids if k not in levels)
            self._levels = levels
        return self._levels.get(switch, 0)

    def tree_order(self) -> list[str]:
        """Every switch, depth first from the roots, children in definition order."""
        out: list[str] = []
        stack = list(reversed(self.children(None)))
        while stack:
            name = stack.pop()
            out.append(name)
            stack.extend(reversed(self.children(name)))
        return out

    def leaves(self) -> list[str]:
        """The switches nodes are attached to, in tree order."""
        return [s for s in self.tree_order() if s in self._on]

    def nodes_on(self, switch: str) -> list[str]:
        """The nodes attached to ``switch``, in the order the source gave them."""
        return list(self._on.get(switch, ()))

    def path(self, a: str, b: str) -> Path:
        """How traffic between nodes ``a`` and ``b`` crosses the tree (see ``Path``)."""
        la, lb = self.leaf_of(a), self.leaf_of(b)
        if la is None or lb is None:
            return Path(a, b, la, lb, None, ())
        if la == lb:
            return Path(a, b, la, lb, la, ())
        up_a, up_b = self._ancestry(la), self._ancestry(lb)
        on_b = set(up_b)
        common = next((s for s in up_a if s in on_b), None)
        if common is None:  # two separate trees: every uplink of both
            return Path(a, b, la, lb, None, (*up_a, *up_b))
        return Path(a, b, la, lb, common, (*up_a[:up_a.index(common)], *up_b[:up_b.index(common)]))

    # --- building -----------------------------------------------------------------------------

    @classmethod
    def from_neighbours(cls, neighbours: Mapping[str, Iterable[Neighbour]], source: str = LLDP, *,
                        known: Topology | None = None,
                        ranking: Mapping[str, Sequence[str]] | None = None) -> Topology:
        """Each node on one of the switches its LLDP neighbours name, on that port.

        ``neighbours``: node name → its LLDP neighbours (``.interface``, ``.switch``, ``.port``).
        A node whose NICs reach several switches (a management NIC, or a rail-optimised fabric
        with a leaf per NIC) is placed on the first of: a switch ``known`` (the file's
        topology) has, by ``switch_named``; the switch of its best ranked interface
        (``ranking``: node → its interfaces, fastest data-plane NIC first); its first
        neighbour's. A note (``notes``) names each such node, its NICs and the choice.
        LLDP sees only node↔leaf cables: every switch is a root here, named as LLDP says;
        ``merge`` puts them in a file's tree. A node whose neighbours name no switch is not placed.
        """
        switches: dict[str, Switch] = {}
        nodes = []
        notes = []
        for node, found in neighbours.items():
            named = [n for n in found if n.switch]
            if not named:
                continue
            chosen, why = named[0], "by its first NIC"
            if len({n.switch.lower() for n in named}) > 1:
                on_file = {n: known.switch_named(n.switch) for n in named} if known is not None else {}
                pool = [n for n in named if on_file.get(n) is not None] or named
                rank = {iface: i for i, iface in enumerate((ranking or {}).get(node, ()))}
                chosen = min(pool, key=lambda n: rank.get(n.interface, len(rank)))
                several = len({on_file.get(n) or n.switch.lower() for n in pool}) > 1  # NICs on several leaves
                if not several:
                    why = "(the only one the topology file has)"
                elif chosen.interface in rank:
                    why = "by its fastest NIC"
                nics = ", ".join(f"{n.interface}→{n.switch}" for n in named)
                notes.append(f"{'rail-optimised? ' if several else ''}{node}: {nics}; placed on {chosen.switch} {why}")
            switches.setdefault(chosen.switch, Switch(chosen.switch, source=source))
            where = f"{source} {chosen.interface}"
            nodes.append(Attachment(node, chosen.switch, chosen.port or None, source=where,
                                    port_source=where if chosen.port else None))
        return cls(switches.values(), nodes, notes)


@dataclass(frozen=True, slots=True)
class Path:
    """The way between two nodes: their leaves, the lowest switch both reach (``top``; the leaf
    itself when they share it, None when either is unplaced or the trees are separate), and
    the uplinks crossed (each named by the switch whose uplink it is)."""

    a: str
    b: str
    leaf_a: str | None
    leaf_b: str | None
    top: str | None
    uplinks: tuple[str, ...]

    @property
    def placed(self) -> bool:
        return self.leaf_a is not None and self.leaf_b is not None

    @property
    def same_leaf(self) -> bool:
        return self.placed and self.leaf_a == self.leaf_b


def merge(file: Topology, lldp: Topology) -> Topology:
    """A file's topology completed by LLDP facts.

    The file wins for the switch tree and for any node it places; LLDP gives the leaf and port
    of nodes the file does not place, and the port of a node the file places on the switch
    LLDP saw too. LLDP's switch names are matched to the file's (``switch_named``: case and
    domain aside), node names by ``attachment``. Where LLDP sees a node on another switch than
    the file says, the file's word stands and a note says so (``Topology.notes``); so does a
    note for each switch LLDP sees that the file does not have (a root of its own: paths from
    its nodes have no common switch with the file's).
    """
    switches = dict(file.switches)
    notes = list(file.notes) + list(lldp.notes)
    nodes = []
    for a in file.nodes:
        seen = lldp.attachment(a.node)
        switch = None if seen is None else file.switch_named(seen.switch) or seen.switch
        if seen is not None and switch != a.switch:
            notes.append(f"{a.node}: {a.source or 'the file'} puts it on {a.switch}, "
                         f"{seen.source or 'LLDP'} sees {seen.switch}{' port ' + seen.port if seen.port else ''}")
        elif seen is not None and a.port is None and seen.port is not None:
            a = Attachment(a.node, a.switch, seen.port, a.source, seen.port_source)
        nodes.append(a)
    unknown: dict[str, list[str]] = {}
    for seen in lldp.nodes:
        if file.attachment(seen.node) is not None:
            continue
        switch = file.switch_named(seen.switch)
        if switch is None:
            switches.setdefault(seen.switch, lldp.switches.get(seen.switch, Switch(seen.switch, source=LLDP)))
            unknown.setdefault(seen.switch, []).append(seen.node)
        elif switch != seen.switch:
            seen = Attachment(seen.node, switch, seen.port, seen.source, seen.port_source)
        nodes.append(seen)
    for switch, names in unknown.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3:,} more" if len(names) > 3 else "")
        notes.append(f"LLDP sees switch {switch} ({shown}), which the topology file does not have: "
                     "its nodes' paths to the file's nodes have no common switch")
    return Topology(switches.values(), nodes, notes)


# --- the ring order check ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RingCheck:
    """An all-reduce ring in rank order, judged against the topology.

    ``hops`` are the ring's hops between placed nodes (rank i → i+1, and the last back to the
    first), unplaced nodes left out of the ring; ``cross_switch`` counts the hops whose ends
    sit on different leaves, ``minimum`` the fewest any order of the same nodes can have (the
    number of leaves, when there are two or more). ``crossing`` counts cross-switch hops by the
    switch they climb to (None: no common switch). ``better`` is the order with each leaf's
    nodes contiguous — leaves in tree order, the given order kept within a leaf — and the
    unplaced nodes at the end: a hostfile, one host per line.
    """

    order: tuple[str, ...]
    hops: tuple[Path, ...]
    unplaced: tuple[str, ...]
    better: tuple[str, ...]
    better_hops: tuple[Path, ...]

    @property
    def cross_switch(self) -> int:
        return sum(1 for h in self.hops if not h.same_leaf)

    @property
    def minimum(self) -> int:
        return sum(1 for h in self.better_hops if not h.same_leaf)

    @property
    def crossing(self) -> dict[str | None, int]:
        return _tops(self.hops)

    @property
    def minimum_crossing(self) -> dict[str | None, int]:
        return _tops(self.better_hops)

    @property
    def worse_than_minimum(self) -> bool:
        """More cross-switch hops than needed, at the leaves or at any higher switch."""
        if self.cross_switch > self.minimum:
            return True
        best = self.minimum_crossing
        return any(n > best.get(top, 0) for top, n in self.crossing.items())


def _tops(hops: Iterable[Path]) -> dict[str | None, int]:
    out: dict[str | None, int] = {}
    for h in hops:
        if not h.same_leaf:
            out[h.top] = out.get(h.top, 0) + 1
    return out


def ring_hops(topology: Topology, order: Iterable[str]) -> tuple[Path, ...]:
    """The hops of a ring through ``order`` (the wrap-around included): none for fewer than two."""
    ring = list(order)
    if len(ring) < 2:
        return ()
    return tuple(topology.path(ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring)))


def topology_order(topology: Topology, order: Iterable[str]) -> list[str]:
    """``order`` with each leaf's nodes contiguous: leaves in tree order, the given relative
    order kept within a leaf, unplaced nodes last in their given order. A host given twice
    (spelled alike, or as the topology finds it: ``A1``, ``a1.cluster``) appears once, as first given."""
    by_leaf: dict[str, list[str]] = {}
    unplaced: list[str] = []
    for node in distinct_hosts(topology, order):
        leaf = topology.leaf_of(node)
        (unplaced if leaf is None else by_leaf.setdefault(leaf, [])).append(node)
    rank = {s: i for i, s in enumerate(topology.tree_order())}
    out = [n for leaf in sorted(by_leaf, key=lambda s: rank.get(s, len(rank))) for n in by_leaf[leaf]]
    return out + unplaced


def leaf_sections(topology: Topology | None, order: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """``order`` leaf by leaf (``topology_order``) and the leaf each group starts with: first
    node → leaf ("" for the unplaced), for a matrix's rows; ``order`` as it is and no groups
    without a topology that places one of them."""
    given = list(order)
    if topology is None or not any(topology.leaf_of(n) for n in given):
        return given, {}
    ordered = topology_order(topology, given)
    starts: dict[str, str] = {}
    last: str | None = None
    for node in ordered:
        leaf = topology.leaf_of(node) or ""
        if leaf != last:
            starts[node] = leaf
            last = leaf
    return ordered, starts


def distinct_hosts(topology: Topology, order: Iterable[str]) -> list[str]:
    """``order`` with each host once, as first given: names the topology finds as one node
    (``A1``, ``a1``, ``a1.cluster``) are one host, and so are unplaced names alike but for case
    and domain (``B1``, ``b1.cluster``)."""
    seen: set[str] = set()
    out = []
    for name in order:
        a = topology.attachment(name)
        key = _key(a.node) if a is not None else _short(_key(name)) or _key(name)
        if key not in seen:
            seen.add(key)
            out.append(name)
    return out


def ring_check(topology: Topology, order: Iterable[str]) -> RingCheck:
    """The ring order check of ``order`` (rank order; a host given twice counts once, see
    ``distinct_hosts``)."""
    given = distinct_hosts(topology, order)
    placed = [n for n in given if topology.leaf_of(n) is not None]
    unplaced = tuple(n for n in given if topology.leaf_of(n) is None)
    better = topology_order(topology, given)
    return RingCheck(order=tuple(given), hops=ring_hops(topology, placed), unplaced=unplaced,
                     better=tuple(better), better_hops=ring_hops(topology, better[:len(placed)]))


__all__ = ["Attachment", "LLDP", "Neighbour", "Path", "RingCheck", "Switch", "Topology", "distinct_hosts", "leaf_sections",
           "merge", "ring_check", "ring_hops", "topology_order"]
