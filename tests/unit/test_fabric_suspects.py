"""The link when it is a link (model/fabric_suspects.py): a leaf's uplink named live, held as
stragglers are, and its end nodes its victims rather than stragglers."""

from __future__ import annotations

from netui.model.fabric_suspects import (ENTERING, LEAVING, HeldSuspects, LeafPressure, Paths, fabric_suspects,
                                         paused_leaves)
from netui.model.fleet import Fleet
from netui.model.topology import Attachment, Switch, Topology
from tests.synth import node_sample

G, M = 1e9, 1e6  # bits/s


def fabric(leaves: int, per_leaf: int, gbps: dict[str, float] | None = None) -> Topology:
    """``leaves`` leaves of ``per_leaf`` nodes (n1, n2 on leaf1, …) under one spine."""
    gbps = gbps or {}
    switches = [Switch("spine")] + [Switch(f"leaf{l}", "spine", gbps.get(f"leaf{l}")) for l in range(1, leaves + 1)]
    nodes = [Attachment(f"n{(l - 1) * per_leaf + i}", f"leaf{l}") for l in range(1, leaves + 1)
             for i in range(1, per_leaf + 1)]
    return Topology(switches, nodes)


def ring(n: int, rates: dict[tuple[str, str], float], default: float = 1 * G) -> dict[tuple[str, str], float]:
    """Each node sending to the next (bits/s), ``rates`` where a flow is not at ``default``."""
    names = [f"n{i}" for i in range(1, n + 1)]
    return {(a, names[(i + 1) % n]): rates.get((a, names[(i + 1) % n]), default) for i, a in enumerate(names)}


def peers_of(flows: dict[tuple[str, str], float], retrans: dict[tuple[str, str], float] | None = None) -> dict:
    """Per-peer flows as the fleet reads them (bytes/s; the ACKs back at 2 %), ``retrans`` the
    share of each flow's segments sent again."""
    retrans = retrans or {}
    out: dict = {}
    for (a, b), bits in flows.items():
        data = bits / 8
        seg = data / 1448
        out.setdefault(a, {})[b] = (data, data * 0.02, 0.0002, retrans.get((a, b), 0.0) * seg, 1)
        out.setdefault(b, {})[a] = (data * 0.02, data, 0.0002, 0.0, 1)
    return out


def node_rates(flows: dict[tuple[str, str], float]) -> dict[str, tuple[float, float]]:
    rates: dict[str, list[float]] = {}
    for (a, b), bits in flows.items():
        rates.setdefault(a, [0.0, 0.0])[1] += bits
        rates.setdefault(b, [0.0, 0.0])[0] += bits
    return {n: (rx, tx) for n, (rx, tx) in rates.items()}


class Cluster:
    def __init__(self, topology: Topology, n: int) -> None:
        self.fleet = Fleet([f"n{i}" for i in range(1, n + 1)], history_s=30)
        self.fleet.topology = topology
        self.k = 0

    def tick(self, flows: dict[tuple[str, str], float], retrans=None):
        rates = node_rates(flows)
        for name, (rx, tx) in rates.items():
            if self.fleet[name].samples_seen == 0:
                self.fleet[name].observe(node_sample(0, rx_bps=rx, tx_bps=tx))
        self.k += 1
        for name, (rx, tx) in rates.items():
            self.fleet[name].observe(node_sample(self.k, rx_bps=rx, tx_bps=tx))
        self.fleet.update_stragglers(peers=peers_of(flows, retrans))
        f = self.fleet
        return ([s.name for s in f.fabric_suspects], [s.node for s in f.stragglers],
                {v.node: v.slowed_by for v in f.victims})


SHAPED = {("n2", "n3"): 300 * M, ("n4", "n5"): 300 * M}  # the two flows across leaf2's uplink (3 × 2)


def test_the_uplink_the_slow_flows_have_in_common_is_named_and_its_nodes_are_its_victims():
    """3 leaves of 2 in a ring, leaf2's uplink holding its two cross-leaf flows at 300 Mbit/s
    (no capacity in the topology: the votes alone). Without the topology, n2 and n4 would be
    the stragglers (slow senders), n3 and n5 their victims."""
    c = Cluster(fabric(3, 2), 6)
    seen = [c.tick(ring(6, SHAPED)) for _ in range(4)]
    assert seen[0][0] == [] and seen[1][0] == ["leaf2 uplink"]  # two intervals: held
    links, stragglers, victims = seen[-1]
    assert links == ["leaf2 uplink"] and stragglers == []
    assert victims == {n: ("leaf2 uplink",) for n in ("n2", "n3", "n4", "n5")}
    [s] = c.fleet.fabric_suspects
    assert s.flows == (("n2", "n3"), ("n4", "n5")) and set(s.ways) == {LEAVING, ENTERING}
    assert "common" in s.reason and "n2→n3, n4→n5" in s.reason
    # the same traffic without a topology: the slow senders are named (what the fabric rule fixes)
    flat = Fleet([f"n{i}" for i in range(1, 7)], history_s=30)
    bare = Cluster.__new__(Cluster)
    bare.fleet, bare.k = flat, 0
    for _ in range(4):
        links, stragglers, _ = bare.tick(ring(6, SHAPED))
    assert links == [] and set(stragglers) == {"n2", "n4"}
    # healed: cleared after clear_intervals clean intervals
    for _ in range(3):
        links, stragglers, victims = c.tick(ring(6, {}))
    assert links == [] and stragglers == [] and victims == {}


def test_with_four_nodes_a_leaf_the_uplink_is_named_too():
    c = Cluster(fabric(3, 4), 12)
    slow = {("n4", "n5"): 300 * M, ("n8", "n9"): 300 * M}
    for _ in range(3):
        links, stragglers, victims = c.tick(ring(12, slow))
    assert links == ["leaf2 uplink"] and stragglers == [] and set(victims) == {"n4", "n5", "n8", "n9"}


def test_a_full_uplink_with_its_capacity_is_named_with_two_leaves_where_votes_tie():
    """2 leaves of 2 in a ring: both cross-leaf flows cross both uplinks (a tie, for votes);
    leaf2's uplink is 0.3 Gbit/s in the topology and carries them at 97 %: it is full. Half
    the flows slow: the straggler rules name nobody, the uplink is named."""
    slow = {("n2", "n3"): 290 * M, ("n4", "n1"): 290 * M}
    c = Cluster(fabric(2, 2, {"leaf1": 10, "leaf2": 0.3}), 4)
    for _ in range(3):
        links, stragglers, victims = c.tick(ring(4, slow))
    assert links == ["leaf2 uplink"] and stragglers == []
    [s] = c.fleet.fabric_suspects
    assert s.rule == "full" and s.share is not None and s.share > 0.9
    assert "full" in s.reason and "97 %" in s.reason and s.headline.startswith("leaf2 uplink: ↑97 %")
    # without a capacity: a tie, nothing named (one cannot tell leaf1's uplink from leaf2's)
    c = Cluster(fabric(2, 2), 4)
    for _ in range(3):
        links, _, _ = c.tick(ring(4, slow))
    assert links == []


def test_a_full_uplink_whose_flows_keep_the_pace_is_busy_not_at_fault():
    flows = ring(4, {})  # every flow at 1 Gbit/s; leaf2's uplink 1 Gbit/s: full both ways
    c = Cluster(fabric(2, 2, {"leaf1": 10, "leaf2": 1}), 4)
    for _ in range(3):
        links, stragglers, victims = c.tick(flows)
    assert links == [] and stragglers == [] and victims == {}


def test_a_slow_node_on_a_fabric_is_the_node_not_its_uplink():
    """n3's own link slow both ways: its two flows are slow, and its node link is on both, its
    leaf's uplink on one: the node is named."""
    slow = {("n2", "n3"): 150 * M, ("n3", "n4"): 150 * M}
    c = Cluster(fabric(3, 2), 6)
    for _ in range(3):
        links, stragglers, victims = c.tick(ring(6, slow))
    assert links == [] and stragglers == ["n3"] and victims == {"n2": ("n3",), "n4": ("n3",)}


def test_an_uplink_that_loses_is_named_through_the_retransmitting_flows_not_a_node():
    """leaf2's uplink drops 2 % of what crosses it: the two cross-leaf flows of leaf2
    retransmit at full pace; no node link is on both."""
    c = Cluster(fabric(3, 2), 6)
    lossy = {("n2", "n3"): 0.02, ("n4", "n5"): 0.02}
    for _ in range(3):
        links, stragglers, victims = c.tick(ring(6, {}), retrans=lossy)
    [s] = c.fleet.fabric_suspects
    assert links == ["leaf2 uplink"] and s.rule == "retransmits" and "retransmitting" in s.reason
    assert "n2" not in stragglers and "n4" not in stragglers


def test_a_blip_is_never_named_and_a_rule_that_changes_does_not_restart_the_count():
    paths = Paths({"n1": "leaf1", "n2": "leaf1", "n3": "leaf2", "n4": "leaf2", "n5": "leaf3", "n6": "leaf3"}.get,
                  {"leaf1": "spine", "leaf2": "spine", "leaf3": "spine"}.get)
    peers = peers_of(ring(6, SHAPED))
    now = fabric_suspects([], peers, paths)
    assert [s.name for s in now] == ["leaf2 uplink"] and now[0].rule == "slow flows"
    held = HeldSuspects()
    assert held.update(now) == [] and held.update([]) == [] and held.update([]) == []  # a blip
    assert held.update(now) == [] and [s.switch for s in held.update(now)] == ["leaf2"]
    for _ in range(2):
        assert held.update([]) != []  # within clear_intervals
    assert held.update([]) == []


def test_paths_name_the_uplinks_each_way():
    paths = Paths({"a": "leaf1", "b": "leaf2", "c": "leaf1", "x": None}.get,
                  {"leaf1": "pod1", "leaf2": "pod2", "pod1": "core", "pod2": "core"}.get)
    assert paths.crossing("a", "b") == (("leaf1", LEAVING), ("pod1", LEAVING), ("leaf2", ENTERING),
                                        ("pod2", ENTERING))
    assert paths.crossing("a", "c") == () and paths.crossing("a", "x") == ()


def test_a_leaf_whose_rdma_nodes_are_all_paused_is_named():
    pressure = [LeafPressure(f"leaf{i}", (f"n{i}a", f"n{i}b"), 2.0, 0.0, 10.0) for i in range(1, 5)]
    assert paused_leaves(pressure) == []
    pressure[2] = LeafPressure("leaf3", ("n3a", "n3b"), 40_000.0, 0.0, 10.0)
    [s] = paused_leaves(pressure)
    assert s.name == "leaf3" and s.kind == "leaf" and s.nodes == ("n3a", "n3b") and "pause frames" in s.reason
    assert paused_leaves(pressure[:2]) == []  # two leaves: nothing to compare


def test_a_leaf_whose_rdma_nodes_are_paused_is_named_through_the_fleet_and_they_are_its_victims():
    """Four leaves of two RoCE nodes, all moving data; leaf3's nodes paused 5,000 times a
    second (PFC from the fabric above them), the others a little. leaf3 is named; its two
    nodes, found for their pause frames, are slowed by it."""
    fleet = Fleet([f"n{i}" for i in range(1, 9)], history_s=30)
    fleet.topology = fabric(4, 2)

    def sample(name: str, k: int):
        pause = 5000 if name in ("n5", "n6") else 2
        return node_sample(k, rx_bps=10 * G, tx_bps=10 * G,
                           rdma={"rx_bps": 40 * G, "tx_bps": 40 * G, "pause_per_s": pause})

    for k in range(5):
        for name in fleet.nodes:
            fleet[name].observe(sample(name, k))
        fleet.update_stragglers(peers={})
    assert [(s.name, s.kind, s.rule) for s in fleet.fabric_suspects] == [("leaf3", "leaf", "pause")]
    assert "pause frames" in fleet.fabric_suspects[0].reason
    assert [s.node for s in fleet.stragglers] == []
    assert {v.node: v.slowed_by for v in fleet.victims} == {"n5": ("leaf3",), "n6": ("leaf3",)}
