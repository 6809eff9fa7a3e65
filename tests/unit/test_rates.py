"""Rates between two hand-made samples (tests/factories.py): units, resets, wraps, reboots,
recreated devices."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.model.limits import link_ceiling_bytes_per_s
from netui.model.rates import node_rates
from netui.model.samples import (
    INTERFACE_COUNTER_NAMES,
    CpuTimes,
    NodeSample,
    SoftirqCounts,
    SoftnetStat,
)
from tests.factories import make_cpu, make_iface, make_sample

U32 = 1 << 32


def rates_of(prev: NodeSample, cur: NodeSample):
    r = node_rates(prev, cur)
    assert r is not None
    return r


# --- interfaces ------------------------------------------------------------------------------


def test_bits_per_second_are_eight_times_bytes_per_second():
    prev = make_sample(10.0, make_iface(rx_bytes=1_000, tx_bytes=5_000))
    cur = make_sample(12.0, make_iface(rx_bytes=1_001_000, tx_bytes=255_000))

    eth0 = rates_of(prev, cur).interfaces["eth0"]

    assert eth0.rx_bytes_per_s == 500_000
    assert eth0.rx_bits_per_s == 4_000_000
    assert eth0.tx_bytes_per_s == 125_000
    assert eth0.tx_bits_per_s == 1_000_000


@pytest.mark.parametrize("dt", [0.25, 1.0, 2.0, 30.0])
def test_rates_are_per_second_of_the_node_clock(dt):
    """The same increase over a longer interval is a lower rate; the wall clock does not matter."""
    prev = make_sample(100.0, make_iface(rx_packets=0, tx_dropped=0), wall_s=5_000.0)
    cur = make_sample(100.0 + dt, make_iface(rx_packets=600, tx_dropped=3), wall_s=4_000.0)

    r = rates_of(prev, cur)

    assert r.interval_s == pytest.approx(dt)
    assert r.interfaces["eth0"].rx_packets_per_s == pytest.approx(600 / dt)
    assert r.interfaces["eth0"].tx_dropped_per_s == pytest.approx(3 / dt)


def test_a_counter_going_backwards_is_unknown_and_the_others_stay():
    prev = make_sample(0.0, make_iface(rx_bytes=9_000, tx_bytes=100, rx_errors=7, rx_packets=10))
    cur = make_sample(1.0, make_iface(rx_bytes=500, tx_bytes=300, rx_errors=7, rx_packets=20))

    eth0 = rates_of(prev, cur).interfaces["eth0"]

    assert eth0.rx_bytes_per_s is None and eth0.rx_bits_per_s is None
    assert eth0.tx_bytes_per_s == 200
    assert eth0.rx_packets_per_s == 10
    assert eth0.rx_errors_per_s == 0


def test_a_new_boot_id_means_no_rates():
    prev = make_sample(0.0, make_iface(rx_bytes=10), boot_id="boot-1")
    cur = make_sample(1.0, make_iface(rx_bytes=20), boot_id="boot-2")

    assert node_rates(prev, cur) is None


def test_an_unknown_boot_id_does_not_block_rates():
    prev = make_sample(0.0, make_iface(rx_bytes=10), boot_id=None)
    cur = make_sample(1.0, make_iface(rx_bytes=20), boot_id="boot-1")

    assert rates_of(prev, cur).interfaces["eth0"].rx_bytes_per_s == 10


def test_no_previous_sample_means_no_rates():
    assert node_rates(None, make_sample(1.0, make_iface())) is None


@pytest.mark.parametrize("dt", [0.0, -1.0, math.nan])
def test_a_node_clock_that_did_not_advance_means_no_rates(dt):
    prev = make_sample(50.0, make_iface(rx_bytes=10))
    cur = make_sample(50.0 + dt, make_iface(rx_bytes=20))

    assert node_rates(prev, cur) is None


def test_a_recreated_interface_has_unknown_rates():
    """Same name, new ifindex: the counters restarted with the device, even if they grew."""
    prev = make_sample(0.0, make_iface("eth0", ifindex=5, rx_bytes=10), make_iface("eth1", ifindex=6, rx_bytes=0))
    cur = make_sample(1.0, make_iface("eth0", ifindex=9, rx_bytes=5_000, speed_mbps=100_000),
                      make_iface("eth1", ifindex=6, rx_bytes=40))

    r = rates_of(prev, cur)

    eth0 = r.interfaces["eth0"]
    values = [eth0.rx_bytes_per_s, eth0.tx_bytes_per_s, eth0.rx_packets_per_s, eth0.tx_packets_per_s,
              eth0.rx_dropped_per_s, eth0.tx_dropped_per_s, eth0.rx_errors_per_s, eth0.tx_errors_per_s]
    assert values == [None] * 8
    assert eth0.speed_mbps == 100_000  # still known
    assert r.interfaces["eth1"].rx_bytes_per_s == 40


def test_a_new_interface_has_unknown_rates_and_a_gone_one_disappears():
    prev = make_sample(0.0, make_iface("eth0"), make_iface("veth9", ifindex=30, kind="veth"))
    cur = make_sample(1.0, make_iface("eth0"), make_iface("ib0", ifindex=40, rx_bytes=1))

    r = rates_of(prev, cur)

    assert set(r.interfaces) == {"eth0", "ib0"}
    assert r.interfaces["ib0"].rx_bytes_per_s is None


def test_link_percent_is_the_busier_direction_of_the_link_speed():
    prev = make_sample(0.0, make_iface(speed_mbps=1_000))
    # 62.5 MB/s = 500 Mb/s out, 10 MB/s = 80 Mb/s in, on a 1 Gb/s link
    cur = make_sample(2.0, make_iface(speed_mbps=1_000, tx_bytes=125_000_000, rx_bytes=20_000_000))

    assert rates_of(prev, cur).interfaces["eth0"].link_percent == pytest.approx(50.0)


def test_link_percent_is_unknown_without_a_speed_or_without_rates():
    no_speed = rates_of(make_sample(0.0, make_iface()), make_sample(1.0, make_iface(rx_bytes=10**9)))
    assert no_speed.interfaces["eth0"].link_percent is None

    reset = rates_of(make_sample(0.0, make_iface(speed_mbps=10, rx_bytes=9, tx_bytes=9)),
                     make_sample(1.0, make_iface(speed_mbps=10, rx_bytes=1, tx_bytes=1)))
    assert reset.interfaces["eth0"].link_percent is None


def test_link_percent_uses_the_direction_still_known():
    prev = make_sample(0.0, make_iface(speed_mbps=10_000, rx_bytes=500, tx_bytes=0))
    cur = make_sample(1.0, make_iface(speed_mbps=10_000, rx_bytes=0, tx_bytes=125_000_000))

    assert rates_of(prev, cur).interfaces["eth0"].link_percent == pytest.approx(10.0)


# --- 32-bit counters: /proc/softirqs and softnet_stat -------------------------------------------


def test_softirq_counters_wrap_at_32_bits():
    prev = make_sample(0.0, softirqs=SoftirqCounts((0, 1), (0xFFFFFFF0, 100), (5, 0xFFFFFFFF)))
    cur = make_sample(2.0, softirqs=SoftirqCounts((0, 1), (0x10, 300), (5, 0x1)))

    cpu = rates_of(prev, cur).cpu

    assert cpu.cpus == (0, 1)
    assert tuple(cpu.net_rx_per_s) == (0x20 / 2, 100.0)
    assert tuple(cpu.net_tx_per_s) == (0.0, 1.0)


def test_softnet_counters_wrap_at_32_bits():
    prev = make_sample(0.0, softnet=SoftnetStat((0,), (0xFFFFFFF0,), (0xFFFFFFF0,), (0xF0000769,)))
    cur = make_sample(2.0, softnet=SoftnetStat((0,), (0x10,), (0x10,), (0x769,)))

    sn = rates_of(prev, cur).softnet

    assert tuple(sn.processed_per_s) == (0x20 / 2,)
    assert tuple(sn.dropped_per_s) == (0x20 / 2,)
    assert tuple(sn.time_squeeze_per_s) == (0x10000000 / 2,)


def test_softnet_rates_follow_cpu_ids_when_a_cpu_goes_offline():
    prev = make_sample(0.0, softnet=SoftnetStat((0, 1, 2), (100, 200, 300), (0, 10, 20), (0, 0, 0)))
    cur = make_sample(1.0, softnet=SoftnetStat((0, 2), (150, 330), (0, 25), (0, 4)))

    sn = rates_of(prev, cur).softnet

    assert sn.cpus == (0, 2)
    assert tuple(sn.processed_per_s) == (50.0, 30.0)
    assert tuple(sn.dropped_per_s) == (0.0, 5.0)
    assert tuple(sn.time_squeeze_per_s) == (0.0, 4.0)


# --- CPU softirq share -----------------------------------------------------------------------


def test_softirq_percent_is_softirq_ticks_over_all_ticks_per_cpu():
    prev = make_sample(0.0, cpu=make_cpu({0: 1_000, 1: 500, 2: 70}, {0: 10_000, 1: 10_000, 2: 10_000}))
    cur = make_sample(1.0, cpu=make_cpu({0: 1_030, 1: 500, 2: 70}, {0: 10_100, 1: 10_200, 2: 10_000}))

    cpu = rates_of(prev, cur).cpu

    assert cpu.cpus == (0, 1, 2)
    assert tuple(cpu.softirq_percent) == (pytest.approx(30.0), 0.0, None)  # cpu2: no ticks at all → unknown
    assert cpu.hottest() == (0, pytest.approx(30.0))


def test_softirq_percent_matches_cpus_by_id_across_hotplug():
    prev = make_sample(0.0, cpu=make_cpu({0: 0, 1: 1_000, 2: 100}, {0: 0, 1: 50_000, 2: 10_000}))
    # cpu1 went offline, cpu3 came online; by position cpu2 would be compared with cpu1
    cur = make_sample(1.0, cpu=make_cpu({0: 10, 2: 190, 3: 5}, {0: 100, 2: 10_100, 3: 100}))

    cpu = rates_of(prev, cur).cpu

    assert cpu.cpus == (0, 2, 3)
    assert tuple(cpu.softirq_percent) == (pytest.approx(10.0), pytest.approx(90.0), None)
    assert cpu.hottest() == (2, pytest.approx(90.0))


def test_softirq_percent_unknown_when_softirq_ticks_went_backwards():
    prev = make_sample(0.0, cpu=make_cpu({0: 500}, {0: 1_000}))
    cur = make_sample(1.0, cpu=make_cpu({0: 400}, {0: 1_100}))

    assert rates_of(prev, cur).cpu.softirq_percent == (None,)


def test_net_rx_rates_are_aligned_to_the_stat_cpus():
    """/proc/softirqs lists every possible CPU; rates are reported for the online ones."""
    prev = make_sample(0.0, cpu=make_cpu({0: 0, 2: 0}, {0: 0, 2: 0}),
                       softirqs=SoftirqCounts((0, 1, 2, 3), (0, 0, 0, 0), (0, 0, 0, 0)))
    cur = make_sample(1.0, cpu=make_cpu({0: 0, 2: 0}, {0: 100, 2: 100}),
                      softirqs=SoftirqCounts((0, 1, 2, 3), (7, 0, 9, 0), (1, 0, 2, 0)))

    cpu = rates_of(prev, cur).cpu

    assert cpu.cpus == (0, 2)
    assert tuple(cpu.net_rx_per_s) == (7.0, 9.0)
    assert tuple(cpu.net_tx_per_s) == (1.0, 2.0)


# --- TCP -------------------------------------------------------------------------------------


def test_retransmit_ratio_is_retrans_segs_over_out_segs():
    prev = make_sample(0.0, tcp={"RetransSegs": 348, "OutSegs": 594_855, "InSegs": 10})
    cur = make_sample(2.0, tcp={"RetransSegs": 358, "OutSegs": 596_855, "InSegs": 1_010})

    tcp = rates_of(prev, cur).tcp

    assert tcp.retrans_segs_per_s == 5.0
    assert tcp.out_segs_per_s == 1_000.0
    assert tcp.in_segs_per_s == 500.0
    assert tcp.retrans_ratio == pytest.approx(0.005)


def test_the_retransmit_ratio_is_capped_at_one_and_says_how_many_segments_it_is_of():
    """An idle node's SSH stream: 3 retransmitted segments while OutSegs moved by 2 (OutSegs
    leaves out segments that only carry retransmitted data): 100 %, never 150 %."""
    prev = make_sample(0.0, tcp={"RetransSegs": 10, "OutSegs": 500})
    cur = make_sample(1.0, tcp={"RetransSegs": 13, "OutSegs": 502})

    tcp = rates_of(prev, cur).tcp

    assert tcp.retrans_segs_per_s == 3.0 and tcp.out_segs_per_s == 2.0
    assert tcp.retrans_ratio == 1.0
    assert tcp.out_segs == 2


def test_the_lost_ratio_leaves_out_the_retransmits_d_sacks_showed_spurious():
    """45 segments retransmitted of 87,000 sent; the receiver's D-SACKs report 30 of them as
    data it already had (TCPDSACKRecvSegs): 15 lost. D-SACKs of an earlier interval's
    retransmits make none lost, never fewer; without the counter every retransmit is lost."""
    def tcp(retrans: int, dsack: int | None):
        ext = {} if dsack is None else {"TCPDSACKRecvSegs": 0}
        prev = make_sample(0.0, tcp={"RetransSegs": 0, "OutSegs": 0}, ext=ext)
        ext = {} if dsack is None else {"TCPDSACKRecvSegs": dsack}
        return rates_of(prev, make_sample(1.0, tcp={"RetransSegs": retrans, "OutSegs": 87_000}, ext=ext)).tcp

    assert tcp(45, 30).spurious_segs_per_s == 30.0
    assert tcp(45, 30).lost_ratio == pytest.approx(15 / 87_000)
    assert tcp(45, 30).retrans_ratio == pytest.approx(45 / 87_000)
    assert tcp(10, 60).lost_ratio == 0.0
    assert tcp(45, None).spurious_segs_per_s == 0.0
    assert tcp(45, None).lost_ratio == tcp(45, None).retrans_ratio == pytest.approx(45 / 87_000)

def test_out_segs_counts_the_interval_not_the_second():
    prev = make_sample(0.0, tcp={"RetransSegs": 0, "OutSegs": 0})
    cur = make_sample(0.25, tcp={"RetransSegs": 1, "OutSegs": 999})

    tcp = rates_of(prev, cur).tcp

    assert tcp.out_segs == 999 and tcp.out_segs_per_s == 3996.0


def test_an_idle_tcp_stack_has_a_zero_ratio_not_an_unknown_one():
    prev = make_sample(0.0, tcp={"RetransSegs": 5, "OutSegs": 50})
    cur = make_sample(1.0, tcp={"RetransSegs": 5, "OutSegs": 50})

    assert rates_of(prev, cur).tcp.retrans_ratio == 0.0


def test_retransmits_without_out_segments_do_not_divide_by_zero():
    prev = make_sample(0.0, tcp={"RetransSegs": 5, "OutSegs": 50})
    cur = make_sample(1.0, tcp={"RetransSegs": 9, "OutSegs": 50})

    tcp = rates_of(prev, cur).tcp

    assert tcp.retrans_segs_per_s == 4.0
    assert tcp.retrans_ratio is None


def test_tcp_counters_going_backwards_are_unknown():
    prev = make_sample(0.0, tcp={"RetransSegs": 500, "OutSegs": 9_000})
    cur = make_sample(1.0, tcp={"RetransSegs": 2, "OutSegs": 10_000})

    tcp = rates_of(prev, cur).tcp

    assert tcp.retrans_segs_per_s is None and tcp.retrans_ratio is None
    assert tcp.out_segs_per_s == 1_000.0
    assert tcp.in_segs_per_s is None  # not in the samples at all


def test_tcpext_counters_that_moved_appear_per_second():
    prev = make_sample(0.0, tcp={"OutSegs": 0}, ext={"TCPTimeouts": 10, "TCPSynRetrans": 16, "TCPLossProbes": 40})
    cur = make_sample(2.0, tcp={"OutSegs": 0},
                      ext={"TCPTimeouts": 30, "TCPSynRetrans": 16, "TCPLossProbes": 32, "TCPNew": 4})

    ext = rates_of(prev, cur).tcp.ext_per_s

    # unchanged, backwards and never-seen-before counters are not "moving"
    assert ext == {"TCPTimeouts": 10.0}


def test_no_tcp_in_either_sample_means_no_tcp_rates():
    prev = make_sample(0.0, make_iface(), tcp=None)
    cur = make_sample(1.0, make_iface(), tcp={"RetransSegs": 1, "OutSegs": 1})

    r = rates_of(prev, cur)

    assert r.tcp is None
    assert r.cpu is None and r.softnet is None


# --- never a negative rate -------------------------------------------------------------------

# Counters come from raw bytes (one draw for a whole row keeps generation fast) reduced
# modulo a scale, so rows are small, 32-bit-sized or full 64-bit values.
SCALES = (10, 1_000, U32, 1 << 64)


@st.composite
def counter_row(draw, n: int, scale: int | None = None) -> tuple[int, ...]:
    raw = draw(st.binary(min_size=8 * n, max_size=8 * n))
    scale = scale or draw(st.sampled_from(SCALES))
    return tuple(int.from_bytes(raw[8 * i : 8 * i + 8], "little") % scale for i in range(n))


@st.composite
def sample_pairs(draw):
    """Two samples of one node with arbitrary counters, CPU sets and clocks."""
    names = draw(st.lists(st.sampled_from(["eth0", "eth1", "ib0", "lo"]), unique=True, max_size=3))
    cpu_sets = st.lists(st.integers(0, 5), unique=True, min_size=1, max_size=4).map(tuple)

    def ifaces():
        return [make_iface(n, ifindex=draw(st.sampled_from([None, 1, 2])),
                           speed_mbps=draw(st.sampled_from([None, 0, 1, 100_000])),
                           **dict(zip(INTERFACE_COUNTER_NAMES, draw(counter_row(16))))) for n in names]

    def cpu():
        ids = draw(cpu_sets)
        other = (0,) * len(ids)  # user..irq and steal do not enter the rates
        return CpuTimes(ids, *(other,) * 6, draw(counter_row(len(ids))), other, draw(counter_row(len(ids))))

    def softirqs():
        ids = draw(st.sampled_from([(0, 1), (0, 1, 2, 3)]))
        return SoftirqCounts(ids, draw(counter_row(len(ids), U32)), draw(counter_row(len(ids), U32)))

    def softnet():
        ids = draw(cpu_sets)
        return SoftnetStat(ids, *(draw(counter_row(len(ids), U32)) for _ in range(3)))

    def tcp():
        return dict(zip(("RetransSegs", "OutSegs", "InSegs"), draw(counter_row(draw(st.integers(0, 3))))))

    def ext():
        return dict(zip(("TCPTimeouts", "TCPSynRetrans"), draw(counter_row(2))))

    def maybe(part):
        return part() if draw(st.integers(0, 4)) else None  # mostly present

    def one(mono_s):
        return make_sample(mono_s, *ifaces(), tcp=maybe(tcp), ext=ext(), cpu=maybe(cpu),
                           softirqs=maybe(softirqs), softnet=maybe(softnet))

    t0 = draw(st.floats(0, 1e6))
    dt = draw(st.floats(2e-3, 1e4))  # (1 ms and more: MIN_INTERVAL_S, with t0's rounding)
    return one(t0), one(t0 + dt)


def all_rates(r) -> list[float | None]:
    values: list[float | None] = []
    for i in r.interfaces.values():
        values += [i.rx_bytes_per_s, i.tx_bytes_per_s, i.rx_packets_per_s, i.tx_packets_per_s,
                   i.rx_dropped_per_s, i.tx_dropped_per_s, i.rx_errors_per_s, i.tx_errors_per_s,
                   i.rx_bits_per_s, i.tx_bits_per_s, i.link_percent]
    if r.tcp is not None:
        values += [r.tcp.retrans_segs_per_s, r.tcp.out_segs_per_s, r.tcp.in_segs_per_s, r.tcp.retrans_ratio]
        values += r.tcp.ext_per_s.values()
    if r.cpu is not None:
        values += [*r.cpu.softirq_percent, *r.cpu.net_rx_per_s, *r.cpu.net_tx_per_s]
    if r.softnet is not None:
        values += [*r.softnet.processed_per_s, *r.softnet.dropped_per_s, *r.softnet.time_squeeze_per_s]
    return values


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(sample_pairs())
def test_no_rate_is_ever_negative(pair):
    prev, cur = pair
    r = node_rates(prev, cur)

    assert r is not None and r.interval_s > 0
    for value in all_rates(r):
        assert value is None or 0 <= value < math.inf
    for i in r.interfaces.values():  # within what the link carries (model/limits.py)
        top = link_ceiling_bytes_per_s(None if i.speed_mbps is None else i.speed_mbps)
        assert all(v is None or v <= top for v in (i.rx_bytes_per_s, i.tx_bytes_per_s, i.rx_packets_per_s))
    if r.cpu is not None:
        assert all(p is None or p <= 100 for p in r.cpu.softirq_percent)


# --- one guard for every interval: node rates and fabric rates -------------------------------

@pytest.mark.parametrize("prev_boot, cur_boot, dt, comparable", [
    ("b1", "b1", 1.0, True),
    (None, "b1", 1.0, True),  # a boot id unknown on one side: the clock decides
    ("b1", "b2", 1.0, False),  # a reboot
    ("b1", "b1", 0.0, False),  # the clock did not advance
    ("b1", "b1", 5e-4, False),  # under a millisecond
    ("b1", "b1", 1e-3, True),
    ("b1", "b1", -1.0, False),  # went back
    ("b1", "b1", math.inf, False),
    ("b1", "b1", math.nan, False),
])
def test_node_and_fabric_rates_take_the_same_intervals(prev_boot, cur_boot, dt, comparable):
    from netui.model.fabric import FabricSample, fabric_rates
    from netui.model.limits import rate_interval_s

    prev, cur = make_sample(0.0, make_iface(), boot_id=prev_boot), make_sample(dt, make_iface(), boot_id=cur_boot)
    fprev = FabricSample(0.0, {}, {}, {}, None, boot_id=prev_boot)
    fcur = FabricSample(dt, {}, {}, {}, None, boot_id=cur_boot)
    assert (rate_interval_s(prev, cur) is not None) is comparable
    assert (node_rates(prev, cur) is not None) is comparable
    assert (fabric_rates(fprev, fcur) is not None) is comparable
    assert node_rates(None, cur) is None and fabric_rates(None, fcur) is None


def test_a_hottest_cpu_over_no_ticks_is_no_figure_not_a_division_by_zero():
    from netui.model.rates import _cpu_sum_rates
    from netui.model.samples import CpuSums

    before = CpuSums(4, 10, 10, 10, 0, 0, 1, 0, 10, 99.0)
    after = CpuSums(4, 20, 20, 20, 0, 0, 1, 0, 0, 100.0)  # (a sampler's odd reading: no ticks at all)
    rates = _cpu_sum_rates(before, after, 100.0, 1.0)
    assert rates.hottest is None and rates.net_rx_per_s == 10.0


def test_the_rates_and_the_grid_row_have_every_field_of_their_types():
    """node_rates and summarize build their named tuples as plain tuples (tuple.__new__, for
    speed): a field added to a type must be added there too, or every field after it shifts."""
    from tests.bench.fake_fleet import NodeFrames
    from netui.collectors.frames import FrameDecoder
    from netui.model.node import NodeTotals, summarize
    from netui.model.rates import CpuSumRates, NodeRates, TcpRates

    frames, decode = NodeFrames(), FrameDecoder().decode
    samples = [decode(w[w.index(b"\n") + 1:]) for w in (frames.frame(s, 1000.0 + s, 500.0 + s, 499.0 + s)
                                                        for s in range(2))]
    rates = node_rates(*samples)
    assert len(rates) == len(NodeRates._fields) and isinstance(rates, NodeRates)
    assert len(rates.tcp) == len(TcpRates._fields) and len(rates.cpu_sums) == len(CpuSumRates._fields)
    summary, _ = summarize(samples[1], rates)
    assert len(summary) == len(NodeTotals._fields) and summary.max_link_percent is not None
    assert summary.rdma_rx_bytes_per_s is None and summary.pause_per_s is None


_U64 = st.one_of(st.none(), st.integers(-5, 2**64 - 1), st.integers(0, 1000))


def _rule(a, b, inv):
    """A u64 sum's rate as the model states it: None when either is unknown, it went back,
    the earlier one is below 0, or it rose faster than a node can."""
    from netui.model.limits import MAX_EVENTS_PER_S

    if a is None or b is None or b < a or a < 0:
        return None
    r = (b - a) * inv
    return None if r > MAX_EVENTS_PER_S else r


@settings(max_examples=300, deadline=None)
@given(st.lists(_U64, min_size=5, max_size=5), st.lists(_U64, min_size=5, max_size=5),
       st.sampled_from([0.5, 1.0, 3.0, 1e-3]))
def test_the_cpu_sums_rates_follow_the_rule_whatever_the_counters(before, after, dt):
    from netui.model.rates import _cpu_sum_rates
    from netui.model.samples import CpuSums

    p = CpuSums(4, *before, None, None, None, None)
    c = CpuSums(4, *after, None, None, None, None)
    rates = _cpu_sum_rates(p, c, 99.0, dt)
    assert tuple(rates[1:]) == tuple(_rule(a, b, 1.0 / dt) for a, b in zip(before, after))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=3, max_size=3),
       st.lists(st.integers(-(2**63), 2**63 - 1), min_size=3, max_size=3), st.sampled_from([0.5, 1.0, 7.0]))
def test_the_tcp_segment_rates_by_position_follow_the_rule(before, after, dt):
    """The remote sampler's Tcp counters (packed, one layout): each rate is d / dt, None when
    the counter went back or rose faster than a node counts; the ratio as defined."""
    from array import array

    from netui.model.limits import MAX_EVENTS_PER_S
    from netui.model.rates import _tcp_rates
    from netui.model.samples import CounterMap, TcpSample

    from dataclasses import replace

    keys, ext = ("RetransSegs", "OutSegs", "InSegs"), ("TCPDSACKRecvSegs",)
    index = {k: i for i, k in enumerate(keys)}  # (the layout's own: the by-position path)

    def sample(t, counters):
        return replace(make_sample(t, make_iface()), tcp=TcpSample(CounterMap(keys, array("q", counters), index),
                                                                   CounterMap(ext, array("Q", [5]))))

    prev, cur = sample(0.0, before), sample(dt, after)
    rates = _tcp_rates(prev, cur, dt)

    def rule(a, b):
        d = b - a
        return None if d < 0 or d / dt > MAX_EVENTS_PER_S else d / dt

    retrans, out, in_segs = (rule(a, b) for a, b in zip(before, after))
    assert (rates.retrans_segs_per_s, rates.out_segs_per_s, rates.in_segs_per_s) == (retrans, out, in_segs)
    assert rates.ext_per_s == {}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=3, max_size=3), st.data(), st.sampled_from([0.5, 1.0, 1e-3]))
def test_the_tcpext_counters_that_moved_are_those_that_rose(before, data, dt):
    """By position (the remote sampler's layout): ext_per_s holds each counter that rose, at
    its rate, unless faster than a node counts; none moved (the arrays equal) is empty too."""
    from array import array
    from dataclasses import replace

    from netui.model.limits import MAX_EVENTS_PER_S
    from netui.model.rates import _tcp_rates
    from netui.model.samples import CounterMap, TcpSample

    after = data.draw(st.one_of(st.just(list(before)), st.lists(st.integers(0, 2**64 - 1), min_size=3, max_size=3),
                                st.tuples(*(st.integers(0, 5).map(lambda d, b=b: min(b + d, 2**64 - 1))
                                            for b in before)).map(list)))
    keys, ext = ("RetransSegs", "OutSegs"), ("TCPDSACKRecvSegs", "TCPLostRetransmit", "TCPTimeouts")
    index = {k: i for i, k in enumerate(keys)}

    def sample(t, counters):
        return replace(make_sample(t, make_iface()), tcp=TcpSample(CounterMap(keys, array("q", [1, 1]), index),
                                                                   CounterMap(ext, array("Q", counters))))

    moved = _tcp_rates(sample(0.0, before), sample(dt, after), dt).ext_per_s
    inv = 1.0 / dt
    assert moved == {k: (b - a) * inv for k, a, b in zip(ext, before, after)
                     if b > a and (b - a) * inv <= MAX_EVENTS_PER_S}


def test_the_fake_fleets_node_is_busy_its_rates_move_and_its_counters_never_go_back():
    """bench_fleet's fake node (tests/bench/node128.py with ``wobble``): a busy node's rates
    differ from one second to the next, its TcpExt counters move, and no counter goes back:
    a node whose every frame is alike would flatter what the engine keeps between frames."""
    from netui.collectors.frames import FrameDecoder
    from tests.bench.fake_fleet import NodeFrames

    frames, decode = NodeFrames(), FrameDecoder().decode
    samples = [decode(w[w.index(b"\n") + 1:]) for w in (frames.frame(s, 1000.0 + s, 500.0 + s, 499.0 + s)
                                                        for s in range(6))]
    rates = [node_rates(a, b) for a, b in zip(samples, samples[1:])]
    assert len({r.tcp.ext_per_s.get("TCPOFOQueue") for r in rates}) == len(rates)  # moving, and by other amounts
    assert all(r.tcp.ext_per_s.get("TCPLossProbes") for r in rates)
    assert len({r.cpu_sums.net_rx_per_s for r in rates}) == len(rates)
    assert len({r.cpu_sums.time_squeeze_per_s for r in rates}) > 1  # its finding in other words
    assert all(r.tcp.ext_per_s.get("TCPTimeouts") in (None, 0) for r in rates)  # healthy: no failure moves
    for a, b in zip(samples, samples[1:]):
        assert all(y >= x for x, y in zip(a.tcp.ext.values(), b.tcp.ext.values()))
