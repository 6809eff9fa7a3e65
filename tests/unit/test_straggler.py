"""Straggler detection: the node unlike its peers, said in words."""

from __future__ import annotations

from netui.model.node import Node, NodeState
from netui.model.straggler import StragglerRules, find_stragglers
from tests.synth import node_sample


def cluster(rates_gbps: dict[str, float], **extra) -> list[Node]:
    nodes = []
    for name, gbps in rates_gbps.items():
        n = Node(name, history_s=10)
        kw = extra.get(name, {})
        for k in range(3):
            n.observe(node_sample(k, rx_bps=gbps * 1e9, tx_bps=gbps * 1e9, **kw))
        nodes.append(n)
    return nodes


def test_the_slow_node_is_named_with_numbers():
    speeds = {f"node{i:02d}": 92.0 + (i % 3) for i in range(1, 9)}
    speeds["node07"] = 11.0
    found = find_stragglers(cluster(speeds))
    assert [s.node for s in found] == ["node07"]
    # RX and TX are both low; the TX side is named (a slow sender starves its peer)
    assert found[0].reason == "node07: TX 11 Gb/s vs cluster median 93 Gb/s (12 %)"


def test_a_uniform_or_idle_cluster_flags_nobody():
    assert find_stragglers(cluster({f"n{i}": 50.0 + i * 0.5 for i in range(8)})) == []
    idle = {f"n{i}": 0.0 for i in range(8)}
    idle["n3"] = 0.00001
    assert find_stragglers(cluster(idle)) == []


def test_a_retransmitting_node_is_flagged_even_at_full_speed():
    speeds = {f"n{i}": 40.0 for i in range(6)}
    found = find_stragglers(cluster(speeds, n4={"retrans_per_s": 8000}))
    assert [s.node for s in found] == ["n4"]
    assert "TCP retransmits 10.00% vs cluster median 0%" in found[0].reason


def test_two_of_three_cannot_outvote_and_down_nodes_do_not_count():
    nodes = cluster({"a": 90.0, "b": 90.0, "c": 5.0})
    assert [s.node for s in find_stragglers(nodes)] == ["c"]
    nodes[0].fail(NodeState.DOWN, "gone")
    assert find_stragglers(nodes) == []  # two nodes up: too few to tell who is odd
    assert find_stragglers(cluster({"a": 90.0, "b": 90.0, "c": 5.0}), StragglerRules(min_nodes=4)) == []


def test_one_way_traffic_compares_totals_not_directions():
    # two iperf3-like pairs: senders have no RX, receivers no TX — nobody is a straggler for that
    nodes = []
    for name, rx, tx in [("s1", 0.001, 9.0), ("r1", 9.0, 0.001), ("s2", 0.001, 8.5), ("r2", 8.6, 0.001)]:
        n = Node(name, history_s=10)
        for k in range(3):
            n.observe(node_sample(k, rx_bps=rx * 1e9, tx_bps=tx * 1e9))
        nodes.append(n)
    assert find_stragglers(nodes) == []
    # a pair far below the others' totals is still named, by RX+TX
    slow = Node("s3", history_s=10)
    for k in range(3):
        slow.observe(node_sample(k, rx_bps=1e6, tx_bps=0.5e9))
    found = find_stragglers(nodes + [slow])
    assert [s.node for s in found] == ["s3"] and found[0].metric == "total"
    assert found[0].reason.startswith("s3: RX+TX 501 Mb/s vs cluster median")


def rdma_cluster(specs: dict[str, dict]) -> list[Node]:
    nodes = []
    for name, rdma in specs.items():
        n = Node(name, history_s=10)
        for k in range(3):
            n.observe(node_sample(k, rx_bps=1e6, tx_bps=1e6, rdma=rdma))
        nodes.append(n)
    return nodes


def test_pause_storms_and_cnps_are_named_in_words():
    specs = {f"n{i}": {"rx_bps": 90e9, "tx_bps": 90e9, "pause_per_s": 2, "cnp_per_s": 4} for i in range(6)}
    specs["n2"] = specs["n2"] | {"pause_per_s": 5000}
    specs["n5"] = specs["n5"] | {"cnp_per_s": 9000}
    found = {s.node: s for s in find_stragglers(rdma_cluster(specs))}
    assert set(found) == {"n2", "n5"}
    assert found["n2"].metric == "pause" and found["n2"].reason == "n2: pause frames 5 k/s vs cluster median 2.0/s"
    assert found["n5"].metric == "cnp" and found["n5"].reason.startswith("n5: CNPs 13.5 k/s vs cluster median 6.0/s")


def test_a_slow_rdma_node_is_named_even_when_tcp_is_quiet():
    specs = {f"n{i}": {"rx_bps": 90e9, "tx_bps": 90e9} for i in range(5)}
    specs["n3"] = {"rx_bps": 90e9, "tx_bps": 9e9}
    found = find_stragglers(rdma_cluster(specs))
    assert [s.node for s in found] == ["n3"]
    assert found[0].reason == "n3: RDMA TX 9 Gb/s vs cluster median 90 Gb/s (10 %)"


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


def test_a_ratio_over_a_handful_of_segments_names_nobody():
    # an idle cluster: one node retransmitted 1 of its 2 segments in the interval (50 %)
    idle = {f"n{i}": 0.0 for i in range(5)}
    quiet = {name: {"out_segs_per_s": 20} for name in idle}
    quiet["n2"] = {"out_segs_per_s": 2, "retrans_per_s": 1}
    assert find_stragglers(cluster(idle, **quiet)) == []
    # the same ratio over real traffic is a straggler
    busy = {name: {"out_segs_per_s": 20_000} for name in idle}
    busy["n2"] = {"out_segs_per_s": 20_000, "retrans_per_s": 10_000}
    assert [s.node for s in find_stragglers(cluster(idle, **busy))] == ["n2"]
