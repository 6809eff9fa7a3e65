"""Straggler detection: the busy node unlike its busy peers, said in words with the rule."""

from __future__ import annotations

from dataclasses import replace

from netui.model.fleet import Fleet
from netui.model.node import Node, NodeState
from netui.checks.pairs.model import PairResult
from netui.checks.pairs.verdict import judge
from netui.model.straggler import StragglerRules, find_stragglers
from netui.checks.pairs.verdict_stragglers import pair_stragglers
from tests.synth import counters, node_sample

G, M = 1e9, 1e6  # bits/s


def flows(spec: dict[str, tuple[float, float]], **extra) -> list[Node]:
    """Nodes moving at constant (RX, TX) bits/s."""
    nodes = []
    for name, (rx, tx) in spec.items():
        n = Node(name, history_s=10)
        for k in range(3):
            n.observe(node_sample(k, rx_bps=rx, tx_bps=tx, **extra.get(name, {})))
        nodes.append(n)
    return nodes


def cluster(rates_gbps: dict[str, float], **extra) -> list[Node]:
    """Two-way traffic: each node receives what it sends."""
    return flows({name: (g * G, g * G) for name, g in rates_gbps.items()}, **extra)


def names(found) -> list[str]:
    return [s.node for s in found]


# --- idle nodes and idle fleets -----------------------------------------------------------------

def test_an_idle_fleet_flags_nobody_whatever_its_noise():
    idle = {f"n{i}": (0.0, 0.0) for i in range(8)}
    idle["n3"] = (80e3, 80e3)  # ssh and monitoring
    # an idle node dropping LLDP frames or retransmitting on its ssh stream is no straggler
    noise = {"n5": {"drops_per_s": 3}, "n6": {"out_segs_per_s": 2_000, "retrans_per_s": 600}}
    assert find_stragglers(flows(idle, **noise)) == []
    # chatter above the idle floor on every node is still no busy cluster (median below 100 Mbit/s)
    assert find_stragglers(flows({f"n{i}": (15 * M, 15 * M + i * M) for i in range(6)}, **noise)) == []


def test_one_busy_node_among_idle_ones_flags_nobody():
    # one pair moves data, two nodes are idle: two busy nodes cannot say who is odd, and the
    # idle ones are not in the traffic
    spec = {"n1": (0.002 * G, 3 * G), "n2": (3 * G, 0.002 * G), "n3": (0.0, 0.0), "n4": (0.0, 0.0)}
    assert find_stragglers(flows(spec)) == []
    spec = {"n1": (3 * G, 3 * G), "n2": (0.0, 0.0), "n3": (0.0, 0.0), "n4": (0.0, 0.0)}
    assert find_stragglers(flows(spec)) == []


def test_idle_nodes_beside_a_busy_cluster_are_not_compared_and_the_reason_says_so():
    spec = {f"node{i}": (3 * G, 3 * G) for i in range(1, 5)}
    spec["node3"] = (3 * G, 0.191 * G)
    spec["node4"] = (0.191 * G, 3 * G)
    spec["node5"] = spec["node6"] = (0.0, 0.0)  # not in the job
    found = find_stragglers(flows(spec))
    assert names(found) == ["node3", "node4"]
    assert found[0].reason == ("node3: TX 191 Mb/s, 6 % of the busy nodes' median 3 Gb/s "
                               "(flagged below 25 %; 4 busy; node5, node6 idle, not compared)")


# --- slow links ---------------------------------------------------------------------------------

def test_one_shaped_node_of_four_is_named_first_with_numbers_and_rule():
    # the 4-node lab ring at 3 Gbit/s with node3's eth0 capped to 200 Mbit/s by tbf: node3
    # sends 191 Mbit/s, node4 receives only that; node2's flow to node3 suffers from node3's
    # delayed ACKs (a real sample: before, the traffic counted as one-way and nobody was named)
    spec = {"node1": (3.002 * G, 3.003 * G), "node2": (3.006 * G, 1.140 * G),
            "node3": (1.329 * G, 0.192 * G), "node4": (0.192 * G, 3.004 * G)}
    found = find_stragglers(flows(spec))
    assert names(found) == ["node3", "node4"]  # the slow sender first: the cause
    node3, node4 = found
    assert node3.metric == "tx" and round(node3.value * 8 / M) == 192
    assert node3.reason == ("node3: TX 192 Mb/s, 9 % of the busy nodes' median 2.07 Gb/s "
                            "(flagged below 25 %; all 4 busy)")
    assert node3.headline == "node3: TX 192 Mb/s, 9 % of median 2.07 Gb/s"  # for the status bar
    assert node4.metric == "rx"
    assert node4.reason.endswith("; node3 sending slowly may starve it")


def test_the_slow_node_of_eight_is_named_with_every_low_direction():
    speeds = {f"node{i:02d}": 92.0 + (i % 3) for i in range(1, 9)}
    speeds["node07"] = 11.0
    found = find_stragglers(cluster(speeds))
    assert names(found) == ["node07"]
    assert found[0].reason == ("node07: TX 11 Gb/s, 12 % of the busy nodes' median 93 Gb/s "
                               "(flagged below 25 %; all 8 busy); also RX 11 Gb/s (12 %)")


def test_two_shaped_nodes_of_four_are_both_named():
    # a ring 1→2→3→4→1 at 3 Gbit/s; node1 and node3 send at 191 Mbit/s: every node now has
    # one fast and one slow direction, which is no longer "one-way" at 6 %
    slow, fast = 0.191 * G, 3 * G
    spec = {"node1": (fast, slow), "node2": (slow, fast), "node3": (fast, slow), "node4": (slow, fast)}
    found = find_stragglers(flows(spec))
    assert names(found) == ["node1", "node3", "node2", "node4"]
    assert [s.metric for s in found] == ["tx", "tx", "rx", "rx"]
    assert "node1, node3 sending slowly may starve it" in found[2].reason
    # neighbours shaped: node2 and node3 send slowly
    spec = {"node1": (fast, fast), "node2": (fast, slow), "node3": (slow, slow), "node4": (slow, fast)}
    found = find_stragglers(flows(spec))
    assert names(found)[:2] == ["node2", "node3"] and {s.metric for s in found[:2]} == {"tx"}
    assert set(names(found)) == {"node2", "node3", "node4"}


def test_a_uniform_fleet_flags_nobody():
    assert find_stragglers(cluster({f"n{i}": 50.0 + i * 0.5 for i in range(8)})) == []
    assert find_stragglers(cluster({f"n{i}": 0.191 for i in range(4)})) == []  # uniformly slow


def test_two_of_three_cannot_outvote_and_down_nodes_do_not_count():
    nodes = cluster({"a": 90.0, "b": 90.0, "c": 5.0})
    assert names(find_stragglers(nodes)) == ["c"]
    nodes[0].fail(NodeState.DOWN, "gone")
    assert find_stragglers(nodes) == []  # two nodes up: too few to tell who is odd
    assert find_stragglers(cluster({"a": 90.0, "b": 90.0, "c": 5.0}), StragglerRules(min_nodes=4)) == []


# --- one-way traffic ----------------------------------------------------------------------------

def test_one_way_flows_compare_senders_tx_and_receivers_rx_not_acks():
    # iperf3 pairs: a receiver's TX is its ACKs (the lab: 2 Mbit/s for 3 Gbit/s), nobody is a
    # straggler for that
    spec = {"s1": (2 * M, 3 * G), "r1": (3 * G, 2 * M), "s2": (2 * M, 2.9 * G), "r2": (2.95 * G, 2 * M)}
    assert find_stragglers(flows(spec)) == []
    # the lab: node1→node2 at 3 Gbit/s, node3→node4 with node3 capped to 200 Mbit/s
    spec = {"node1": (2 * M, 3.005 * G), "node2": (3.005 * G, 2 * M),
            "node3": (0.2 * M, 0.191 * G), "node4": (0.191 * G, 0.2 * M)}
    found = find_stragglers(flows(spec))
    assert names(found) == ["node3", "node4"] and [s.metric for s in found] == ["tx", "rx"]
    assert found[0].reason == ("node3: TX 191 Mb/s, 12 % of the busy nodes' median flow 1.6 Gb/s "
                               "(one-way traffic; flagged below 25 %; all 4 busy)")
    assert found[1].reason.startswith("node4: RX 191 Mb/s, 12 % of the busy nodes' median flow")
    assert found[1].reason.endswith("node3 sending slowly may starve it")


def test_a_slow_sender_is_named_before_the_receivers_it_starves():
    # one sender feeds three receivers (one-way), and is capped: its TX is low against the
    # other senders', so are the receivers' RX; the sender comes first
    spec = {f"s{i}": (1 * M, 9 * G) for i in range(1, 4)}
    spec |= {f"r{i}": (3 * G, 1 * M) for i in range(1, 10)}
    spec["s2"] = (1 * M, 0.3 * G)
    spec |= {"r4": (0.1 * G, 1 * M), "r5": (0.1 * G, 1 * M), "r6": (0.1 * G, 1 * M)}
    found = find_stragglers(flows(spec))
    assert names(found)[0] == "s2" and found[0].metric == "tx"
    assert set(names(found)[1:]) == {"r4", "r5", "r6"}
    assert all(s.reason.endswith("s2 sending slowly may starve it") for s in found[1:])


# --- excesses -----------------------------------------------------------------------------------

def test_a_retransmitting_node_is_flagged_even_at_full_speed():
    speeds = {f"n{i}": 40.0 for i in range(6)}
    found = find_stragglers(cluster(speeds, n4={"retrans_per_s": 8000}))
    assert names(found) == ["n4"]
    assert found[0].reason == ("n4: TCP retransmits 10.00% vs the busy nodes' median 0% "
                               "(flagged 3.5 σ above it; all 6 busy)")


def test_a_slow_node_that_also_retransmits_is_named_by_its_throughput():
    speeds = {f"n{i}": 40.0 for i in range(6)}
    speeds["n2"] = 2.0
    found = find_stragglers(cluster(speeds, n2={"retrans_per_s": 8000}))
    assert names(found) == ["n2"] and found[0].metric == "tx"
    # its other findings follow, the worst first (10 % retransmits are critical)
    assert found[0].reason.endswith("; also TCP retransmits 10.00%, RX 2 Gb/s (5 %)")


def test_a_ratio_over_a_handful_of_segments_names_nobody():
    busy = {f"n{i}": 5.0 for i in range(5)}
    quiet = {name: {"out_segs_per_s": 20} for name in busy}
    quiet["n2"] = {"out_segs_per_s": 2, "retrans_per_s": 1}  # 1 of its 2 segments: 50 %
    assert find_stragglers(cluster(busy, **quiet)) == []
    # the same ratio over real traffic is a straggler
    many = {name: {"out_segs_per_s": 20_000} for name in busy}
    many["n2"] = {"out_segs_per_s": 20_000, "retrans_per_s": 10_000}
    assert names(find_stragglers(cluster(busy, **many))) == ["n2"]



def test_retransmits_the_receivers_already_had_name_nobody():
    """The two-tier lab under its ring with leaf2's uplink shaped (test_scenarios_lab.py,
    2x2-full): node1 and node3 send 1 Gbit/s within their leaf, node2 and node4 190 Mbit/s
    across the uplink. For a second node3's flow within the leaf retransmits 135 of its 87,000
    segments, and node4's D-SACKs report every one of them as a segment it already had (veth
    reorders): nothing was lost, and node3 is no straggler. The same retransmits without
    D-SACKs are losses, 0.16 %: node3 is named, as a lossy node must be."""
    ring = {"node1": (190 * M, 1 * G), "node2": (1 * G, 190 * M), "node3": (190 * M, 1 * G),
            "node4": (1 * G, 190 * M)}
    segs = {"node1": 87_000, "node2": 17_600, "node3": 87_000, "node4": 17_600}
    quiet = {name: {"out_segs_per_s": n} for name, n in segs.items()}
    spurious = {**quiet, "node3": {"out_segs_per_s": 87_000, "retrans_per_s": 135, "dsack_segs_per_s": 135}}
    assert find_stragglers(flows(ring, **spurious)) == []
    # some of them spurious: what is left (45 of 87,000, 0.05 %) is under the floor
    partly = {**quiet, "node3": {"out_segs_per_s": 87_000, "retrans_per_s": 135, "dsack_segs_per_s": 90}}
    assert find_stragglers(flows(ring, **partly)) == []
    lost = {**quiet, "node3": {"out_segs_per_s": 87_000, "retrans_per_s": 135}}
    found = find_stragglers(flows(ring, **lost))
    assert names(found) == ["node3"] and found[0].metric == "retrans"
    assert found[0].reason == ("node3: TCP retransmits 0.16% vs the busy nodes' median 0% "
                               "(flagged 3.5 σ above it; all 4 busy)")
    # lost and spurious together: the lost ones judged, the spurious ones said apart
    both = {**quiet, "node3": {"out_segs_per_s": 87_000, "retrans_per_s": 435, "dsack_segs_per_s": 300}}
    found = find_stragglers(flows(ring, **both))
    assert names(found) == ["node3"] and round(found[0].value, 5) == round(135 / 87_000, 5)
    assert found[0].reason.endswith("; 0.34% more were spurious (D-SACK), not counted"), found[0].reason

# --- RDMA ---------------------------------------------------------------------------------------

def rdma_cluster(specs: dict[str, dict], host_bps: float = 1e6) -> list[Node]:
    nodes = []
    for name, rdma in specs.items():
        n = Node(name, history_s=10)
        for k in range(3):
            n.observe(node_sample(k, rx_bps=host_bps, tx_bps=host_bps, rdma=rdma))
        nodes.append(n)
    return nodes


def test_pause_storms_and_cnps_are_named_in_words():
    specs = {f"n{i}": {"rx_bps": 90e9, "tx_bps": 90e9, "pause_per_s": 2, "cnp_per_s": 4} for i in range(6)}
    specs["n2"] = specs["n2"] | {"pause_per_s": 5000}
    specs["n5"] = specs["n5"] | {"cnp_per_s": 9000}
    found = {s.node: s for s in find_stragglers(rdma_cluster(specs))}
    assert set(found) == {"n2", "n5"}
    assert found["n2"].metric == "pause"
    assert found["n2"].reason == ("n2: pause frames 5 k/s vs the busy nodes' median 2.0/s "
                                  "(flagged 3.5 σ above it; all 6 busy)")
    assert found["n5"].metric == "cnp"
    assert found["n5"].reason.startswith("n5: CNPs 13.5 k/s vs the busy nodes' median 6.0/s")


def test_a_slow_rdma_node_is_named_even_when_tcp_is_quiet():
    specs = {f"n{i}": {"rx_bps": 90e9, "tx_bps": 90e9} for i in range(5)}
    specs["n3"] = {"rx_bps": 90e9, "tx_bps": 9e9}
    found = find_stragglers(rdma_cluster(specs))
    assert names(found) == ["n3"]
    assert found[0].reason == ("n3: RDMA TX 9 Gb/s, 10 % of the busy nodes' median 90 Gb/s "
                               "(flagged below 25 %; all 5 busy)")


def test_hosts_without_rdma_are_not_in_its_plane_even_with_no_idle_floor():
    # config.toml may set the idle floor to 0: a host with no RDMA figure at all must still not
    # count as an RDMA node (at 0 it would pull the RDMA median to 0 and hide the slow node)
    specs = {f"r{i}": {"rx_bps": 90e9, "tx_bps": 90e9} for i in range(5)}
    specs["r3"] = {"rx_bps": 90e9, "tx_bps": 20e9}
    nodes = rdma_cluster(specs) + cluster({f"h{i}": 0.001 for i in range(6)})  # (host chatter alike)
    found = find_stragglers(nodes, StragglerRules(idle_floor_bytes_per_s=0))
    assert names(found) == ["r3"] and found[0].metric == "rdma_tx"
    assert "all 5 busy" in found[0].reason


def test_one_way_rdma_is_judged_by_its_own_totals():
    specs = {"n1": {"rx_bps": 0, "tx_bps": 90e9}, "n2": {"rx_bps": 90e9, "tx_bps": 0},
             "n3": {"rx_bps": 0, "tx_bps": 9e9}, "n4": {"rx_bps": 9e9, "tx_bps": 0},
             "n5": {"rx_bps": 0, "tx_bps": 88e9}, "n6": {"rx_bps": 88e9, "tx_bps": 0}}
    found = find_stragglers(rdma_cluster(specs))
    assert names(found) == ["n3", "n4"] and [s.metric for s in found] == ["rdma_tx", "rdma_rx"]
    assert "one-way traffic" in found[0].reason


def test_host_chatter_on_a_busy_rdma_cluster_names_nobody():
    # the collectives run over RDMA; the host stack carries ssh and monitoring, kB/s apart
    specs = {f"n{i}": {"rx_bps": 80e9, "tx_bps": 80e9} for i in range(4)}
    nodes = []
    for (name, rdma), host_kbytes in zip(specs.items(), (10, 12, 11, 1)):
        n = Node(name, history_s=10)
        for k in range(3):
            n.observe(node_sample(k, rx_bps=host_kbytes * 8e3, tx_bps=host_kbytes * 8e3, rdma=rdma))
        nodes.append(n)
    assert find_stragglers(nodes) == []


# --- pair tests ---------------------------------------------------------------------------------

def take_pair_verdict(fleet, verdict) -> None:
    """What the engine does with a finished pair test (engine/monitor.py take_test)."""
    fleet.take_suspects(verdict.tested, pair_stragglers(verdict))


def ring_matrix(slow_senders: set[str], nodes=("node1", "node2", "node3", "node4")) -> list[PairResult]:
    """Every ordered pair; a slow sender's pairs at 0.19 Gbit/s, the others at 9.4."""
    return [PairResult(a, b, "iperf3", 0.19 if a in slow_senders else 9.4, True)
            for a in nodes for b in nodes if a != b]


def test_pair_test_suspects_are_stragglers_with_the_verdicts_words():
    verdict = judge(ring_matrix({"node3"}))
    assert verdict.suspects == ["node3"]
    [s] = pair_stragglers(verdict)
    assert s.node == "node3" and s.metric == "pairs"
    assert s.reason == ("node3: the pair test names it: sends slowly, 3 of 3 sends fail "
                        "(median 190 Mb/s vs the best pairs' 9.4 Gb/s)")
    assert round(s.value * 8 / M) == 190


def test_pair_suspects_stay_until_a_later_test_of_the_node_or_the_user_clears_them():
    fleet = Fleet(["node1", "node2", "node3", "node4"])
    for n in fleet:
        for k in range(3):
            n.observe(node_sample(k))  # an idle fleet: nothing flagged by traffic
    fleet.update_stragglers()
    assert fleet.stragglers == []
    take_pair_verdict(fleet, judge(ring_matrix({"node2", "node3"})))
    fleet.update_stragglers()
    assert names(fleet.stragglers) == ["node2", "node3"]
    assert fleet["node3"].straggler.metric == "pairs" and fleet["node3"].level >= 2
    # a later test of node1 and node2 only: node2 passes and is cleared, node3 stays
    take_pair_verdict(fleet, judge([PairResult("node1", "node2", "iperf3", 9.4, True),
                                   PairResult("node2", "node1", "iperf3", 9.4, True)],
                                  link_speed_mbps={"node1": 10_000, "node2": 10_000}))
    fleet.update_stragglers()
    assert names(fleet.stragglers) == ["node3"]
    assert fleet.clear_pair_suspects() == ["node3"]
    fleet.update_stragglers()
    assert fleet.stragglers == [] and fleet["node3"].straggler is None


def test_a_node_flagged_by_traffic_and_by_a_pair_test_is_one_straggler_led_by_its_traffic():
    speeds = {f"node{i}": 3.0 for i in range(1, 5)}
    speeds["node3"] = 0.19
    fleet = Fleet(list(speeds))
    for n in fleet:
        for k in range(3):
            n.observe(node_sample(k, rx_bps=speeds[n.name] * G, tx_bps=speeds[n.name] * G))
    take_pair_verdict(fleet, judge(ring_matrix({"node3"})))
    fleet.update_stragglers()
    assert names(fleet.stragglers) == ["node3"]  # the pair test's word counts at once
    assert fleet.stragglers[0].metric == "pairs"
    fleet.update_stragglers()  # the traffic's, held, from its second interval
    assert names(fleet.stragglers) == ["node3"]
    assert fleet.stragglers[0].metric == "tx"
    assert fleet.stragglers[0].reason.endswith("; the pair test names it too")


def test_an_unknown_rate_is_not_compared():
    # n2's RX counter went back this interval (a driver reset): unknown, not 0 b/s
    nodes = cluster({f"n{i}": 3.0 for i in range(1, 5)})
    n2 = Node("n2", history_s=10)
    for k in range(2):
        n2.observe(node_sample(k, rx_bps=3 * G, tx_bps=3 * G))
    later = node_sample(2, rx_bps=3 * G, tx_bps=3 * G)
    eth0 = later.interfaces["eth0"]
    reset = eth0._replace(counters=counters(rx_bytes=10, tx_bytes=int(3 * G / 8 * 2)))
    n2.observe(replace(later, interfaces={**later.interfaces, "eth0": reset}))
    assert n2.summary.rx_bytes_per_s is None and n2.summary.tx_bytes_per_s
    assert find_stragglers(nodes[:1] + [n2] + nodes[2:]) == []


def test_a_share_just_under_one_percent_reads_as_one_percent_once_rounded():
    from netui.model.straggler import _pct

    assert [_pct(f) for f in (0.0, 0.004, 0.0094, 0.00996, 0.01, 0.0143, 0.06)] == [
        "0 %", "0.4 %", "0.9 %", "1 %", "1 %", "1 %", "6 %"]
