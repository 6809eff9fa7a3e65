"""All the nodes netui watches, in the order the user named them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from operator import attrgetter
from typing import TYPE_CHECKING

from netui.model.blame import Flows, HeldStragglers, retransmits_only
from netui.model.fabric_suspects import (FabricSuspect, HeldSuspects, LeafPressure, Paths, fabric_suspects,
                                         paused_leaves)
from netui.model.flows import AddressBook, PeerRates, labelled, peer_flows
from netui.model.health import DEFAULT_RULES, HealthRules, Threshold
from netui.model.mesh import MESH_QUIET_PAIRS, MESH_QUIET_S, NODE, HeldMesh, MeshSample, MeshSuspect, MeshVerdict
from netui.model.mesh_window import Endpoints, MeshWindow
from netui.model.node import Node, NodeState
from netui.model.peers import slower_links
from netui.model.straggler import Straggler, StragglerRules, find_stragglers

if TYPE_CHECKING:  # a topology loads when one is given, not with the first frame
    from netui.model.topology import Attachment, Topology


# the grid's per-second columns summed over the fleet (Fleet.sums), read from each summary at once
_SUM_KEYS = ("rx_bytes_per_s", "tx_bytes_per_s", "drops_per_s", "errors_per_s", "retrans_segs_per_s",
             "rdma_rx_bytes_per_s", "rdma_tx_bytes_per_s")
_SUM_COLUMNS = attrgetter(*_SUM_KEYS)
_NOT_RANKED = 1 << 30  # Node.straggler_rank of a node that is no straggler


class Fleet:
    def __init__(self, names: list[str], *, history_s: float = 900.0, interval_s: float = 1.0,
                 thresholds: dict[str, Threshold] | None = None, rules: HealthRules = DEFAULT_RULES) -> None:
        self.rules = rules
        self.interval_s = interval_s  # how often nodes are sampled: the histories are sized by it
        self.history_s = history_s
        self.nodes: dict[str, Node] = {
            n: Node(n, history_s=history_s, interval_s=interval_s, thresholds=thresholds, rules=rules) for n in names
        }
        self.straggler_rules = StragglerRules()
        self.stragglers: list[Straggler] = []  # held (model/blame.py), the first one the header names
        self.victims: list[Straggler] = []  # nodes slowed by a straggler, each with its ``slowed_by``
        self._marked: set[str] = set()  # the nodes whose straggler, victim, slow links or rank were set
        self._held = HeldStragglers(self.straggler_rules)
        self._seen: list[int] = []  # each node's samples_seen at the last interval judged
        # the fabric's suspects (model/fabric_suspects.py): a leaf's uplink named, held as
        # stragglers are, the first one before the stragglers in the header
        self.fabric_suspects: list[FabricSuspect] = []
        self._held_links = HeldSuspects(self.straggler_rules)
        # the probe mesh (model/mesh.py): what each node's probes of the others settled, over
        # a window; None until a node reports its mesh. ``mesh_verdict``: the last judgement
        self.mesh: MeshWindow | None = None
        self.mesh_verdict: MeshVerdict | None = None
        self.mesh_suspects: tuple[MeshSuspect, ...] = ()  # the verdict's suspects, held (HeldMesh)
        self._held_mesh = HeldMesh()
        self._mesh_up: list[str] = []  # the nodes up at the last judgement
        self._mesh_waited = 0  # ticks since it, with nothing named
        self._mesh_pairs = 0  # the pairs in the window at the last judgement
        self._mesh_at = Endpoints()  # (address, port) a node answers on → node
        self._mesh_of: dict[str, tuple[str, int]] = {}
        # the suspects of the last pair test that tested each node: stragglers until a later
        # test of the node clears them, or ``clear_pair_suspects``
        self.pair_suspects: dict[str, Straggler] = {}
        # where the nodes sit in the fabric: a file's (--topology FILE, or Slurm's) completed by
        # the nodes' LLDP neighbours (``topology``), and where the file came from
        self._file_topology: Topology | None = None
        self._file_source = ""
        self._topology: Topology | None = None
        self._lldp_nodes = 0  # nodes whose LLDP read placed them, in ``_topology``
        self._topology_due = False

    def observe_mesh(self, name: str, mesh: MeshSample) -> None:
        """Node ``name``'s frame's mesh: where it answers, and what its probes settled (a
        reading about an address no node answers on is passed by)."""
        if self.mesh is None:
            self.mesh = MeshWindow()
        if mesh.available and mesh.address is not None and mesh.port:
            endpoint = (mesh.address, mesh.port)
            old = self._mesh_of.get(name)
            if old != endpoint:
                if old is not None:
                    self._mesh_at.drop(old)
                self._mesh_of[name] = endpoint
                self._mesh_at.put(endpoint, name)
        self.mesh.add_readings(name, mesh.mono_s, mesh.readings, self._mesh_at)

    def hear_mesh(self, names: list[str], answered: dict[str, int]) -> None:
        """The mesh's pairs answered before its first reading here (a recording's header:
        ``MeshWindow.hear``): only the pairs of two of the fleet's nodes."""
        if self.mesh is None:
            self.mesh = MeshWindow()
        self.mesh.hear(names, answered, self.nodes)

    def update_mesh(self) -> MeshVerdict | None:
        """Judge the mesh's window over the nodes that are up (model/mesh.py ``judge``): every
        tick while the window is small (under MESH_QUIET_PAIRS pairs), while the last judgement
        named a part or one is held, when the nodes up or the pairs in the window change, else
        every MESH_QUIET_S (a 60 s window hardly moves in a second, and a judgement of a
        thousand nodes' window costs some 15-40 ms: its figures are then up to that old). A name is held after 2 of 3
        judgements in a row, which are then a tick apart."""
        if self.mesh is None:
            return None
        up = [n.name for n in self.nodes.values() if n.state is NodeState.UP]
        last = self.mesh_verdict
        quiet = not self.mesh_suspects and last is not None and not last.suspects
        # (new pairs in the window: a fleet starting, a node back; judged at once, so the cockpit
        # shows them a tick after their first probes, not up to MESH_QUIET_S later)
        if quiet and self.mesh.pair_count >= MESH_QUIET_PAIRS and up == self._mesh_up \
                and self.mesh.pair_count == self._mesh_pairs and self._mesh_waited + 1 < MESH_QUIET_S / self.interval_s:
            self._mesh_waited += 1
            return self.mesh_verdict
        self._mesh_up, self._mesh_waited, self._mesh_pairs = up, 0, self.mesh.pair_count
        # (the parts named now keep their names on half the evidence that named them)
        verdict = self.mesh_verdict = self.mesh.judge(self.topology, up, {s.name for s in self.mesh_suspects})
        held = self.mesh_suspects = self._held_mesh.update(verdict.suspects)
        # each node's pairs, and the first held suspect that explains them (its own link first:
        # the suspects come widest first, a node's link before the path between two nodes)
        explains: dict[str, MeshSuspect] = {}
        for s in sorted(held, key=lambda s: s.kind != NODE):
            for name in s.nodes:
                explains.setdefault(name, s)
        for node in self.nodes.values():
            up_now = node.state is NodeState.UP
            node.mesh = verdict.nodes.get(node.name) if up_now else None
            node.mesh_suspect = explains.get(node.name) if up_now else None
        return verdict

    @property
    def topology(self) -> Topology | None:
        """Where the nodes sit: the file's topology, with the leaf and port that LLDP saw for
        the nodes it does not place (``topology.merge``); LLDP's alone without a file."""
        if self._topology_due:
            self._topology_due = False
            from netui.model.topology import Topology, merge

            seen, ranking = self._lldp_facts()
            lldp = Topology.from_neighbours(seen, known=self._file_topology, ranking=ranking) if seen else None
            self._lldp_nodes = len(lldp.nodes) if lldp is not None else 0
            if lldp is None or not lldp.nodes:
                self._topology = self._file_topology
            elif self._file_topology is None:
                self._topology = lldp
            else:
                self._topology = merge(self._file_topology, lldp)
        return self._topology

    @topology.setter
    def topology(self, topology: Topology | None) -> None:
        self._file_topology = topology
        self._topology_due = True

    @property
    def topology_source(self) -> str:
        """Where the topology came from: the file (or "Slurm"), and LLDP when it adds to it."""
        topology = self.topology
        if topology is None:
            return ""
        if not self._lldp_nodes:
            return self._file_source
        lldp = f"LLDP ({self._lldp_nodes:,} node{'s' if self._lldp_nodes != 1 else ''})"
        return f"{self._file_source} + {lldp}" if self._file_topology is not None and self._file_source else lldp

    @topology_source.setter
    def topology_source(self, source: str) -> None:
        self._file_source = source

    def set_lldp(self, name: str, neighbours, state: str) -> None:
        """Node ``name``'s LLDP neighbours (``Node.set_lldp``); the topology takes them in."""
        node = self.nodes[name]
        before = node.lldp
        node.set_lldp(neighbours, state)
        if node.lldp != before:
            self._topology_due = True

    def _lldp_facts(self) -> tuple[dict[str, tuple], dict[str, list[str]]]:
        """The nodes' LLDP neighbours by node name, and each node's interfaces best first
        (fastest data-plane NIC, then the one that carried most bytes).

        A node is recorded under the name the topology file knows it by: the name watched, else
        the host name it reports (a node watched as 10.0.0.1 or host:port that the file names
        node1); without a file, or when the file knows neither, under the name watched. One
        name per node, so the merged topology holds no node twice."""
        from netui.model.samples import hidden

        file = self._file_topology
        seen: dict[str, tuple] = {}
        ranking: dict[str, list[str]] = {}
        for name, node in self.nodes.items():
            if not node.lldp:
                continue
            sample = node.sample
            host = sample.hostname if sample is not None else None
            key = name
            if file is not None and host and file.attachment(name) is None and file.attachment(host) is not None:
                key = host
            seen[key] = node.lldp
            if sample is not None:
                ifaces = [i for i in sample.interfaces.values() if not hidden(i.name, i.kind)]
                ifaces.sort(key=lambda i: (-(i.speed_mbps or 0), -(i.counters.rx_bytes + i.counters.tx_bytes)))
                ranking[key] = [i.name for i in ifaces]
        return seen, ranking

    def placement(self, name: str) -> Attachment | None:
        """The leaf switch (and port) node ``name`` is cabled to, when the topology places it:
        by the name watched or the host name the node reports — one the topology file places
        first (the file wins over LLDP), else the first LLDP places."""
        topology = self.topology
        if topology is None:
            return None
        node = self.nodes.get(name)
        names = [name]
        if node is not None and node.sample is not None and node.sample.hostname:
            names.append(node.sample.hostname)
        file = self._file_topology
        if file is not None:
            for n in names:
                if file.attachment(n) is not None:
                    return topology.attachment(n)
        for n in names:
            if (found := topology.attachment(n)) is not None:
                return found
        return None

    def paths(self) -> Paths | None:
        """The uplinks each flow between watched nodes crosses (``fabric_suspects.Paths``), by
        the nodes' ``placement``; None without a topology that places two leaves' nodes."""
        topology = self.topology
        if topology is None or len(topology.switches) < 2:
            return None
        switches = topology.switches

        def leaf_of(name: str) -> str | None:
            p = self.placement(name)
            return None if p is None else p.switch

        def parent_of(switch: str) -> str | None:
            s = switches.get(switch)
            return None if s is None else s.parent

        return Paths(leaf_of, parent_of)

    def _leaf_pressure(self, paths: Paths) -> list[LeafPressure]:
        """Each leaf's RDMA back-pressure (its up nodes' pause frames, CNPs and transmit waits
        summed), for the leaves whose nodes have RDMA ports; [] when fewer than three have."""
        sums: dict[str, list] = {}
        for n in self.nodes.values():
            s = n.summary
            if n.state is not NodeState.UP or s.pause_per_s is None and s.cnp_per_s is None:
                continue
            leaf = paths.leaf(n.name)
            if leaf is None:
                continue
            waits = n.fabric_rates.ports.values() if n.fabric_rates is not None else ()
            acc = sums.setdefault(leaf, [[], 0.0, 0.0, 0.0])
            acc[0].append(n.name)
            acc[1] += s.pause_per_s or 0.0
            acc[2] += s.cnp_per_s or 0.0
            acc[3] += sum(p.xmit_wait_per_s or 0.0 for p in waits)
        if len(sums) < 3:
            return []
        return [LeafPressure(leaf, tuple(names), pause, cnp, wait) for leaf, (names, pause, cnp, wait) in sums.items()]

    def _capacities(self) -> bool:
        """Whether the topology gives an uplink's capacity (what the "full" rule compares)."""
        topology = self.topology
        return topology is not None and any(s.uplink_gbps and s.parent is not None for s in topology.switches.values())

    def topology_for(self, names: list[str]) -> Topology | None:
        """The topology with ``names`` placed by the names watched (``placement``: a node found by
        the host name it reports too) and no other node; None without a topology."""
        if self.topology is None:
            return None
        from netui.model.topology import Attachment, Topology

        placed = [Attachment(n, p.switch, p.port, p.source, p.port_source)
                  for n, p in ((n, self.placement(n)) for n in names) if p is not None]
        return Topology(self.topology.switches.values(), placed, self.topology.notes)

    def set_interval(self, interval_s: float) -> None:
        """Nodes are sampled every ``interval_s`` from now on: every node's history keeps
        covering ``history_s`` seconds (``Node.set_interval``)."""
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        if interval_s == self.interval_s:
            return
        self.interval_s = interval_s
        for node in self.nodes.values():
            node.set_interval(interval_s)

    def update_stragglers(self, *, advance: bool = True, peers: Flows | None = None) -> list[Straggler]:
        """Compare the nodes with each other once per tick (``advance``: one more interval of
        the hold; False: the same interval again, as when a pair test ends), mark each node's
        straggler or victim, and its links slower than their peers'. Stragglers are held
        (model/blame.py), worst level first and, at one level, in the order they became one;
        the pair tests' suspects come after the nodes flagged by their traffic (whose reason
        then says that the pair test names them too). ``peers``: the nodes' per-peer flows,
        which make the victim rule exact (``blame.Flows``); by default the flows between
        watched nodes at their last readings (``peer_flows``)."""
        slow = slower_links(self.nodes.values())
        if advance:
            held = self._held
            held.rules = self.straggler_rules
            culprits = set(slow)
            culprits.update(self.pair_suspects)
            found = find_stragglers(self.nodes.values(), self.straggler_rules)
            paths = self.paths()
            # (the flows are only read when someone is found, or an uplink has a capacity to fill)
            if peers is None and (found or paths is not None and self._capacities()):
                peers = self.peer_flows()
            links, crossing = (), None
            if paths is not None:
                from netui.model.leafload import leaf_loads

                self._held_links.rules = self.straggler_rules
                loads = leaf_loads(self.nodes.values(), self.topology, paths.leaf) if peers or found else []
                now = fabric_suspects(loads, peers, paths, found, self.straggler_rules) if loads else []
                pressure = self._leaf_pressure(paths)  # RDMA: no socket, the leaves compared
                if pressure:
                    named = {s.switch for s in now}
                    now += [s for s in paused_leaves(pressure, self.straggler_rules) if s.switch not in named]
                self.fabric_suspects = self._held_links.update(now)
                links, crossing = self._held_links.standing(), paths.crossing
            elif self.fabric_suspects:
                self.fabric_suspects = self._held_links.update(())
            seen = [n.samples_seen for n in self.nodes.values()]
            late, readers = set(), None
            if peers and any(map(retransmits_only, found)):  # (what the wait for flows reads)
                late, readers = self._late(seen), self._readers()
            self._seen = seen
            held.update(found, culprits, peers, links, crossing, late, readers)
        live, victims = self._held.stragglers, self._held.victims
        named = {s.node for s in live}
        stragglers = [
            replace(s, reason=s.reason + "; the pair test names it too")
            if s.node in self.pair_suspects else s
            for s in live
        ]
        flagged = {s.node: s for s in stragglers}
        slowed = {s.node: s for s in victims if s.node not in self.pair_suspects}
        pairs = [s for s in self.pair_suspects.values() if s.node not in named]
        flagged.update((s.node, s) for s in pairs)
        # only the nodes marked now or at the last tick are written: the rest of a large fleet
        # keeps its defaults untouched (a tick that walked every node's object cost more than
        # judging them, among a thousand nodes' cold caches)
        nodes = self.nodes
        marked = flagged.keys() | slowed.keys() | slow.keys()
        for name in self._marked | marked:
            node = nodes.get(name)
            if node is not None:
                node.straggler = flagged.get(name)
                node.victim = slowed.get(name)
                node.slow_links = slow.get(name, ())
                node.straggler_rank = _NOT_RANKED
        self._marked = marked
        stragglers.sort(key=lambda s: -int(nodes[s.node].level))  # stable: in their order at one level
        self.stragglers = stragglers + pairs
        self.victims = [s for s in victims if s.node in slowed]
        for rank, s in enumerate(self.stragglers):
            nodes[s.node].straggler_rank = rank
        return self.stragglers

    def _late(self, seen: list[int]) -> set[str]:
        """The nodes up whose findings of this interval are still to come: their frame of it
        has not come (no sample taken since the last interval judged, ``seen`` being every
        node's count now), or only their first has (no rates yet: just connected)."""
        up = NodeState.UP
        late = {n.name for n, before, now in zip(self.nodes.values(), self._seen, seen)
                if now == before and n.state is up}
        return late.union(n.name for n in self.nodes.values() if n.state is up and n.rates is None)

    def _readers(self) -> set[str]:
        """The nodes up whose last reading of their sockets lists every peer it saw (not cut at
        the sampler's peer or socket cap): a flow between watched nodes that their reading does
        not show is one it has not read yet."""
        up = NodeState.UP
        return {n.name for n in self.nodes.values() if n.state is up and n.flows is not None
                and not n.flows.sample.capped and n.flows.sample.peers_seen <= len(n.flows.sample.peers)}

    def take_suspects(self, tested: Iterable[str], stragglers: Iterable[Straggler]) -> None:
        """A finished test (its check's ``stragglers``, checks/__init__.py): the nodes it
        tested lose their earlier suspicion, and ``stragglers``, its suspects, become
        stragglers (shown from the next ``update_stragglers``)."""
        for node in tested:
            self.pair_suspects.pop(node, None)
        for s in stragglers:
            if s.node in self.nodes:
                self.pair_suspects[s.node] = s

    def clear_pair_suspects(self) -> list[str]:
        """Forget every pair test's suspects (the user's word); the nodes that were."""
        cleared = list(self.pair_suspects)
        self.pair_suspects.clear()
        return cleared

    def frozen(self) -> Fleet:
        """The fleet as it is now, for a display that holds its frame (paused): every node
        ``Node.frozen``, the stragglers, victims and suspects as they are; later ticks change
        this fleet, not the copy. Only to be read: it is never fed."""
        import copy

        twin = copy.copy(self)
        twin.nodes = {name: node.frozen() for name, node in self.nodes.items()}
        twin.stragglers = list(self.stragglers)
        twin.victims = list(self.victims)
        twin.fabric_suspects = list(self.fabric_suspects)
        twin.pair_suspects = dict(self.pair_suspects)
        return twin

    def __iter__(self):
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    def address_book(self) -> AddressBook:
        """Remote address → watched node, from the addresses each node's sockets use and the
        nodes named by an address (``user@198.18.0.2:22``). Made again when a node's local
        addresses changed (or the fleet's names), not at every reading."""
        # (read at each tick that found someone slow, over every node: its key is each node's
        # local-addresses tuple, which the decoder shares while the field's bytes repeat, so
        # comparing it with the last is a pass of identity checks; the addresses in the names
        # are worked out once per set of names)
        nodes = self.nodes
        names = tuple(nodes)
        local = [s.peers.local_addresses if (s := n.sample) is not None and s.peers is not None else ()
                 for n in nodes.values()]
        cached = getattr(self, "_book", None)
        if cached is not None and cached[0] == names and cached[1] == local:
            return cached[2]
        named = getattr(self, "_named", None)
        if named is None or named[0] != names:
            named = self._named = (names, {a: name for name in names if (a := _address_in(name)) is not None})
        book = AddressBook(((n.name, n.sample.peers if n.sample is not None else None) for n in nodes.values()),
                           named[1])
        self._book = (names, local, book)
        return book

    def peer_flows(self) -> dict[str, dict[str, PeerRates]]:
        """The TCP flows between watched nodes at their last readings:
        ``{node: {peer node: PeerRates}}`` (model/flows.py)."""
        up = NodeState.UP
        flows = {n.name: n.flows for n in self.nodes.values() if n.flows is not None and n.state is up}
        return peer_flows(flows, self.address_book()) if flows else {}  # (no book to make without flows)

    def node_peers(self, name: str) -> dict[str, PeerRates]:
        """One node's peers by watched node name or address, busiest first ({}: no reading)."""
        node = self.nodes[name]
        if node.flows is None:
            return {}
        return labelled(node.flows, self.address_book(), name)

    def count_by_state(self) -> dict[NodeState, int]:
        """How many nodes are in each state, in the order of NodeState."""
        counts = Counter(n.state for n in self.nodes.values())
        return {s: counts[s] for s in NodeState if counts[s]}

    def sums(self, nodes=None) -> dict[str, float | None]:
        """Cluster totals of the grid's per-second columns over the nodes that are up (of
        ``nodes``, when given: those a filter shows, say)."""
        rows = [_SUM_COLUMNS(n.summary) for n in (self.nodes.values() if nodes is None else nodes)]
        out: dict[str, float | None] = dict.fromkeys(_SUM_KEYS)
        for key, column in zip(_SUM_KEYS, zip(*rows)):
            known = [v for v in column if v is not None]
            if known:
                out[key] = sum(known)  # left to right, as the fleet's nodes are ordered
        return out

    def totals(self) -> tuple[float | None, float | None]:
        """Cluster RX and TX, bytes/s, over the nodes that are up."""
        rx = [n.summary.rx_bytes_per_s for n in self if n.summary.rx_bytes_per_s is not None]
        tx = [n.summary.tx_bytes_per_s for n in self if n.summary.tx_bytes_per_s is not None]
        return (sum(rx) if rx else None, sum(tx) if tx else None)


def _address_in(name: str) -> str | None:
    """The IP address a node's name is made of (``[user@]ADDRESS[:port]``, ``[v6]:port``), or None."""
    import ipaddress

    host = name.rpartition("@")[2]
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None
