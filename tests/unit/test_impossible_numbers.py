"""Rates are finite numbers within what a link carries, or unknown; a sample with numbers no
node can have is refused and the node's state says why (model/limits.py, model/rates.py,
Node.observe)."""

from __future__ import annotations

import math

import pytest

from netui.model import units
from netui.model.fabric import FabricSample, IbPort, fabric_rates
from netui.model.limits import MAX_LINK_BYTES_PER_S, MIN_INTERVAL_S, link_ceiling_bytes_per_s
from netui.model.node import Node, NodeState, refusal
from netui.model.rates import node_rates
from tests.factories import make_iface, make_sample

U64 = (1 << 64) - 1


def finite_or_none(*values) -> bool:
    return all(v is None or (isinstance(v, (int, float)) and math.isfinite(v)) for v in values)


def observed(node: Node, t: float, **counters) -> Node:
    node.observe(make_sample(t, make_iface(speed_mbps=100_000, **counters)))
    return node


def test_a_clock_that_advanced_by_1e_300_s_gives_no_rate_and_an_impossible_numbers_state():
    prev, cur = make_sample(0.0, make_iface(rx_bytes=0)), make_sample(1e-300, make_iface(rx_bytes=10**9))
    assert node_rates(prev, cur) is None  # was 1e309 bytes/s: infinity
    assert node_rates(prev, make_sample(MIN_INTERVAL_S, make_iface(rx_bytes=10**6))) is not None
    node = Node("gpu01")
    node.observe(prev)
    assert node.observe(cur) is False
    assert node.state is NodeState.IMPOSSIBLE and "advanced by less than 1 ms" in node.error
    assert node.sample is prev and finite_or_none(*node.summary)
    for step in range(1, 4):  # a node that keeps doing it stays refused; never inf
        node.observe(make_sample(step * 1e-300, make_iface(rx_bytes=10**9 * step)))
        assert node.state is NodeState.IMPOSSIBLE and finite_or_none(*node.summary)
    assert observed(node, 1.0, rx_bytes=10**6).state is NodeState.UP
    assert node.summary.rx_bytes_per_s == 10**6


def test_a_counter_jumping_to_2_64_minus_1_and_back_is_a_reset_not_traffic():
    node = Node("gpu01")
    seen = []
    for t, rx in enumerate((0, 10**9, U64, 5, 10**9 + 5)):
        observed(node, float(t), rx_bytes=rx)
        assert node.state is NodeState.UP  # 2**64-1 is a counter: its rate is what is impossible
        seen.append(node.summary.rx_bytes_per_s)
    assert seen == [None, 10**9, None, None, 10**9]  # was 1.8e19 B/s at the jump


@pytest.mark.parametrize("speed_mbps, kind, top", [
    (100_000, "physical", 10 * 100e9 / 8),  # 10 × the link's speed
    (1_000, "physical", 10 * 1e9 / 8),
    (None, "physical", MAX_LINK_BYTES_PER_S),  # unknown speed: 3.2 Tbit/s
    (10_000, "veth", MAX_LINK_BYTES_PER_S),  # a veth's 10000 is nominal
])
def test_a_rate_above_what_the_link_carries_is_unknown(speed_mbps, kind, top):
    assert link_ceiling_bytes_per_s(speed_mbps if kind == "physical" else None) == top

    def rate(per_s: float):
        a = make_sample(0.0, make_iface(speed_mbps=speed_mbps, kind=kind))
        b = make_sample(2.0, make_iface(speed_mbps=speed_mbps, kind=kind, tx_bytes=int(per_s * 2),
                                        tx_packets=int(per_s * 2)))
        r = node_rates(a, b).interfaces["eth0"]
        assert r.tx_bytes_per_s == r.tx_packets_per_s  # packets are held to the same ceiling
        return r.tx_bytes_per_s

    assert rate(top * 0.99) == pytest.approx(top * 0.99)
    assert rate(top * 1.01) is None


def test_a_negative_counter_is_refused_and_the_next_rate_is_from_the_last_good_sample():
    node = observed(Node("gpu01"), 0.0, rx_bytes=10**9)
    assert node.observe(make_sample(1.0, make_iface(rx_bytes=-77))) is False
    assert node.state is NodeState.IMPOSSIBLE
    assert node.error == "eth0 rx_bytes -77.0 is not a counter (0 to 2⁶⁴−1)"
    assert node.health.reasons == ("impossible numbers: eth0 rx_bytes -77.0 is not a counter (0 to 2⁶⁴−1)",)
    observed(node, 2.0, rx_bytes=10**9 + 2000)
    assert node.state is NodeState.UP and node.summary.rx_bytes_per_s == 1000.0  # not 77 GB/s


@pytest.mark.parametrize("value, shown", [(2**64, "1.84e+19"), (10**300, "1e+300"), (-1.7e308, "-1.7e+308"),
                                          (1.7e308, "1.7e+308"), (float("inf"), "inf"), (float("nan"), "nan")])
def test_counters_outside_64_bits_are_refused_and_said_in_few_digits(value, shown):
    sample = make_sample(1.0, make_iface(rx_bytes=0), make_iface("eth1", ifindex=3, tx_dropped=value))
    state, reason = refusal(None, sample)
    assert state is NodeState.IMPOSSIBLE and reason.startswith("eth1 tx_dropped ")
    assert len(reason) < 80 and not any(len(w) > 20 and w.isdigit() for w in reason.split()), reason
    assert shown in reason or (shown == "1.84e+19" and "1.8446744073709552e+19" in reason)


def test_tcp_cpu_and_softnet_counters_beyond_64_bits_are_refused():
    ok = make_sample(1.0, make_iface(), tcp={"RetransSegs": 1, "OutSegs": 2, "MaxConn": -1})
    assert refusal(None, ok) is None  # MaxConn is -1 in the kernel
    bad = make_sample(1.0, make_iface(), tcp={"RetransSegs": 10**300, "OutSegs": 2})
    assert refusal(None, bad)[0] is NodeState.IMPOSSIBLE
    ext = make_sample(1.0, make_iface(), tcp={"OutSegs": 2}, ext={"TCPTimeouts": -1})
    assert refusal(None, ext)[0] is NodeState.IMPOSSIBLE


@pytest.mark.parametrize("wall, mono", [(float("nan"), 1.0), (float("inf"), 1.0), (1e300, 1.0),
                                        (1.7e9, float("nan")), (1.7e9, float("-inf"))])
def test_a_clock_that_is_no_time_is_a_parse_error_of_that_node(wall, mono):
    node = Node("gpu01")
    node.observe(make_sample(0.0, make_iface()))
    assert node.observe(make_sample(mono, make_iface(), wall_s=wall)) is False
    assert node.state is NodeState.PARSE_ERROR and "is not a time" in node.error
    assert node.observe(make_sample(2.0, make_iface())) is True and node.state is NodeState.UP


def test_tcp_segments_faster_than_any_link_are_unknown():
    a = make_sample(0.0, make_iface(), tcp={"RetransSegs": 0, "OutSegs": 0, "InSegs": 0}, ext={"TCPTimeouts": 0})
    b = make_sample(1.0, make_iface(), tcp={"RetransSegs": U64, "OutSegs": 10, "InSegs": 5},
                    ext={"TCPTimeouts": U64})
    tcp = node_rates(a, b).tcp
    assert tcp.retrans_segs_per_s is None and tcp.out_segs_per_s == 10 and tcp.ext_per_s == {}


def test_fabric_rates_need_a_clock_that_advanced_a_millisecond():
    port = IbPort("mlx5_0", 1, counters={"port_rcv_data": 0}, counter_bits={"port_rcv_data": 64})
    later = IbPort("mlx5_0", 1, counters={"port_rcv_data": 10**9}, counter_bits={"port_rcv_data": 64})
    a = FabricSample(0.0, {("mlx5_0", 1): port})
    assert fabric_rates(a, FabricSample(1e-300, {("mlx5_0", 1): later})) is None
    far = IbPort("mlx5_0", 1, counters={"port_rcv_data": U64 - 1}, counter_bits={"port_rcv_data": 64})
    r = fabric_rates(a, FabricSample(1.0, {("mlx5_0", 1): far}))
    assert r.ports[("mlx5_0", 1)].rx_bits_per_s is None  # faster than any port: a reset


def test_an_infinity_is_shown_as_unknown_never_as_inf():
    assert units.bits_per_s(float("inf")) == units.UNKNOWN and units.si(float("-inf")) == units.UNKNOWN


def test_the_samplers_cpu_sums_below_0_or_rising_faster_than_a_node_give_no_rate():
    from dataclasses import replace

    from netui.model.samples import CpuSums

    a = CpuSums(8, 100, 10, 1000, 0, 3, 1, 4, 100, 0.0)
    b = CpuSums(8, 200, 20, 2000, U64, 4, 1, 8, 200, 0.0)
    prev = replace(make_sample(0.0, make_iface()), cpu_sums=a)
    r = node_rates(prev, replace(make_sample(1.0, make_iface()), cpu_sums=b)).cpu_sums
    assert (r.net_rx_per_s, r.dropped_per_s) == (100.0, None)  # 2⁶⁴−1 drops in a second: a reset
    negative = replace(make_sample(0.0, make_iface()), cpu_sums=a._replace(net_rx=-10**12))
    r = node_rates(negative, replace(make_sample(1.0, make_iface()), cpu_sums=b)).cpu_sums
    assert r.net_rx_per_s is None and r.net_tx_per_s == 10.0
