"""Fabric rates and port health: the synthetic node of tests/data/fabric one second apart
(wrap, saturation, "N/A (no PMA)", a port going DOWN, PFC on priority 3), the real fixtures
(still ports: zero rates, healthy), and properties of counter arithmetic."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.collectors.ethtool import parse_ethtool_stats, pfc_view
from netui.collectors.infiniband import parse_infiniband, read_infiniband
from netui.model.fabric import (
    FabricSample,
    IbPort,
    PortState,
    counter_delta,
    fabric_rates,
    port_health,
    port_rates,
)
from netui.model.health import Level, Threshold
from tests.testdata import ETHQ, PROCFS, data_path, data_text

SYNTH = data_path("fabric")
BOOT = "3f1e0c52-1111-4c1b-9d55-8d3b1f6f0a01"


def sample(t: int, mono_s: float, *, ethtool_mono_s: float | None = None, boot_id: str | None = BOOT) -> FabricSample:
    """A FabricSample of the synthetic node at time t (0 or 1)."""
    ports = parse_infiniband(read_infiniband(str(SYNTH / f"node-t{t}" / "sys")))
    ethtool = {}
    if ethtool_mono_s is not None:
        ethtool = {"enp1s0f0np0": parse_ethtool_stats((SYNTH / f"ethtool-S_mlx5_pfc_t{t}.txt").read_text())}
    return FabricSample(mono_s, ports, {n: pfc_view(s) for n, s in ethtool.items()}, ethtool,
                        ethtool_mono_s, boot_id)


@pytest.fixture(scope="module")
def synth_pair() -> tuple[FabricSample, FabricSample]:
    return sample(0, 100.0, ethtool_mono_s=95.0), sample(1, 101.0, ethtool_mono_s=100.0)


@pytest.fixture(scope="module")
def rates(synth_pair):
    return fabric_rates(*synth_pair)


# ----------------------------------------------------------------------------- counter arithmetic


@pytest.mark.parametrize("prev, cur, bits, wraps, expected", [
    (10, 15, 16, False, (5, None)),
    (10, 10, 16, False, (0, None)),
    (65000, 65535, 16, False, (None, "saturated")),  # reached the top in this interval
    (65535, 65535, 16, False, (None, "saturated")),  # stuck there
    (65535, 3, 16, False, (None, "saturated")),  # cleared after saturating
    (15, 15, 4, False, (None, "saturated")),
    (255, 0, 8, False, (None, "saturated")),
    (4_294_000_000, 4_294_967_295, 32, False, (None, "saturated")),
    (100, 5, 16, False, (None, "reset")),  # IBA counters do not wrap
    (4294967000, 704, 32, True, (1000, None)),  # q-counter wrap
    (1000, 5, 32, True, (None, "reset")),  # a "wrap" of 4 billion events: a driver reload
    (4294967295, 4294967295, 32, True, (None, "saturated")),  # cannot tell a stuck counter
    (5, 2**64 - 1, 64, False, (None, "saturated")),
    (2**40, 5, 64, False, (None, "reset")),
    (None, 5, 16, False, (None, "unavailable")),
    (5, None, 16, False, (None, "unavailable")),
])
def test_counter_delta(prev, cur, bits, wraps, expected):
    assert counter_delta(prev, cur, bits, wraps) == expected


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.sampled_from([4, 8, 16, 32, 64]), st.booleans(), st.data())
def test_counter_delta_is_never_negative_nor_past_the_range(bits, wraps, data):
    top = (1 << bits) - 1
    prev = data.draw(st.integers(0, top))
    cur = data.draw(st.integers(0, top))
    d, why = counter_delta(prev, cur, bits, wraps)
    if d is None:
        assert why in ("saturated", "reset")
    else:
        assert why is None and 0 <= d < 1 << bits
        assert cur >= prev or wraps
        assert cur != top and prev != top


# ----------------------------------------------------------------------------- ports


def test_busy_roce_port(rates):
    r = rates.ports["mlx5_0", 1]
    assert rates.interval_s == 1.0
    assert r.tx_bits_per_s == 80e9  # 2.5e9 words × 4 bytes × 8
    assert r.rx_bits_per_s == 40e9
    assert r.link_percent == 80.0
    assert r.tx_packets_per_s == 2_400_000 and r.rx_packets_per_s == 1_200_000
    assert r.errors_per_s == 2.0  # symbol_error +2; link_downed stayed at 1
    assert r.counters_per_s["symbol_error"] == 2.0
    assert r.discards_per_s == 0.0
    assert r.xmit_wait_per_s == 5000.0
    assert r.active and not r.state_changed and not r.went_down
    assert r.unknown == {}


def test_hw_counters_per_second_and_the_32_bit_wrap(rates):
    r = rates.ports["mlx5_0", 1]
    assert r.hw("out_of_sequence") == 1000.0  # 4294967000 → 704
    assert r.hw("packet_seq_err") == 7.0
    assert r.hw("local_ack_timeout_err") == 0.0
    assert r.cnp_sent_per_s == 300.0
    assert r.cnp_handled_per_s == 120.0
    assert r.hw("np_ecn_marked_roce_packets") == 310.0
    assert r.roce_loss_per_s == 1007.0
    assert "lifespan" not in r.hw_per_s


def test_saturated_legacy_counters_give_no_rate(rates):
    r = rates.ports["mlx4_0", 1]
    assert r.unknown == {"symbol_error": "saturated", "port_xmit_data": "saturated"}
    assert r.counters_per_s["symbol_error"] is None
    assert r.tx_bits_per_s is None  # 32-bit port_xmit_data stuck at 4294967295
    assert r.rx_bits_per_s == 16e9
    assert r.errors_per_s == 0.0  # the errors that can still be counted did not move


def test_no_pma_gives_no_rate(rates):
    r = rates.ports["i40iw0", 1]
    assert r.rx_bits_per_s is None and r.tx_bits_per_s is None and r.errors_per_s is None
    assert set(r.unknown.values()) == {"unavailable"}
    assert all(v is None for v in r.counters_per_s.values())


def test_port_going_down(rates):
    r = rates.ports["mlx5_1", 1]
    assert r.went_down and r.active is False and r.state_changed
    assert r.rx_bits_per_s is None and r.errors_per_s is None
    assert set(r.counters_per_s.values()) == {None}  # link_downed moved, but the port is DOWN
    assert set(r.hw_per_s.values()) == {None}


def test_port_coming_back_up_has_rates():
    down = IbPort("mlx5_1", 1, state=PortState(1, "DOWN"), counters={"link_downed": 0}, counter_bits={"link_downed": 8})
    up = replace(down, state=PortState(4, "ACTIVE"), counters={"link_downed": 1})
    r = port_rates(down, up, 2.0)
    assert r.state_changed and not r.went_down and r.active
    assert r.errors_per_s == 0.5


def test_new_counter_and_new_port_have_no_rate(synth_pair):
    prev, cur = synth_pair
    port = prev.ports["mlx5_0", 1]
    lost = replace(port, counters={k: v for k, v in port.counters.items() if k != "symbol_error"})
    prev = replace(prev, ports={k: v for k, v in prev.ports.items() if k != ("mlx4_0", 2)} | {("mlx5_0", 1): lost})
    rates = fabric_rates(prev, cur)
    assert rates.ports["mlx5_0", 1].unknown == {"symbol_error": "new"}
    assert rates.ports["mlx5_0", 1].errors_per_s == 0.0
    assert rates.ports["mlx4_0", 2].rx_bits_per_s is None


def test_hw_counter_reset_is_not_a_wrap():
    before = IbPort("m", 1, state=PortState(4, "ACTIVE"), hw_counters={"out_of_sequence": 1000},
                    hw_counter_bits={"out_of_sequence": 32})
    after = replace(before, hw_counters={"out_of_sequence": 5})
    r = port_rates(before, after, 1.0)
    assert r.hw("out_of_sequence") is None and r.unknown == {"hw:out_of_sequence": "reset"}
    wide = replace(before, hw_counters={"np_cnp_sent": 10}, hw_counter_bits={"np_cnp_sent": 64})
    assert port_rates(wide, replace(wide, hw_counters={"np_cnp_sent": 3}), 1.0).hw("np_cnp_sent") is None


# ----------------------------------------------------------------------------- samples that do not compare


def test_not_comparable(synth_pair):
    prev, cur = synth_pair
    assert fabric_rates(None, cur) is None
    assert fabric_rates(prev, replace(cur, boot_id="another-boot")) is None
    assert fabric_rates(prev, replace(cur, mono_s=prev.mono_s)) is None
    assert fabric_rates(replace(prev, boot_id=None), cur) is not None  # unknown boot id: compare


# ----------------------------------------------------------------------------- PFC


def test_priority_pause_rates(rates):
    """ethtool was read 5 s apart (its own clock), the ports 1 s apart."""
    assert rates.pfc_interval_s == 5.0
    pfc = rates.pfc["enp1s0f0np0"]
    p3 = pfc.priorities[3]
    assert p3.rx_pause_per_s == 30.0
    assert p3.rx_pause_us_per_s == 50_000.0  # paused 5 % of the time
    assert p3.tx_pause_per_s == 4.0
    assert p3.tx_pause_us_per_s == 2_000.0
    assert p3.rx_transitions_per_s == 12.0
    assert pfc.priorities[0].rx_pause_per_s is None  # PFC off there: unknown, not 0
    assert pfc.global_pause.rx_pause_per_s is None
    assert pfc.rx_pause_per_s == 30.0 and pfc.tx_pause_per_s == 4.0 and pfc.pause_per_s == 34.0
    assert pfc.rx_pause_ctrl_phy_per_s == 30.0
    assert pfc.rx_discards_phy_per_s == pytest.approx(0.8)
    assert pfc.rx_out_of_buffer_per_s == pytest.approx(0.6)
    assert pfc.tx_pause_storm_error_per_s == 0.0
    assert rates.pause_per_s == 34.0
    moved = rates.ethtool_per_s["enp1s0f0np0"]
    assert moved["rx_prio3_pause"] == 30.0 and "tx_discards_phy" not in moved


def test_ethtool_not_read_again_gives_no_pfc_rates(synth_pair):
    prev, cur = synth_pair
    carried = replace(cur, pfc=prev.pfc, ethtool=prev.ethtool, ethtool_mono_s=prev.ethtool_mono_s)
    rates = fabric_rates(prev, carried)
    assert rates.pfc == {} and rates.pfc_interval_s is None and rates.ethtool_per_s == {}
    assert rates.ports["mlx5_0", 1].tx_bits_per_s == 80e9


def test_pause_falls_back_to_ctrl_phy_and_real_capture_is_generic():
    stats0 = parse_ethtool_stats(data_text(f"{ETHQ}/ethtool-S_mlx5_core.txt"))
    stats1 = dict(stats0, rx_pause_ctrl_phy=20, rx_bytes=stats0["rx_bytes"] + 4000, rx_global_pause=20)
    no_global = {k: v for k, v in stats1.items() if "global" not in k}
    for s1, expected in ((stats1, 10.0), (no_global, 10.0)):
        s0 = {k: v for k, v in stats0.items() if k in s1}
        prev = FabricSample(0.0, {}, {"eth0": pfc_view(s0)}, {"eth0": s0}, 0.0)
        cur = FabricSample(2.0, {}, {"eth0": pfc_view(s1)}, {"eth0": s1}, 2.0)
        rates = fabric_rates(prev, cur)
        assert rates.pfc["eth0"].rx_pause_per_s == expected
        assert rates.ethtool_per_s["eth0"]["rx_bytes"] == 2000.0


def test_other_driver_counters_are_shown_generically():
    s0, s1 = {"rx_packets": 5, "rx_crc_errors": 1}, {"rx_packets": 9, "rx_crc_errors": 1}
    prev = FabricSample(0.0, {}, {"eth0": pfc_view(s0)}, {"eth0": s0}, 0.0)
    cur = FabricSample(1.0, {}, {"eth0": pfc_view(s1)}, {"eth0": s1}, 1.0)
    rates = fabric_rates(prev, cur)
    assert rates.ethtool_per_s == {"eth0": {"rx_packets": 4.0}}
    assert rates.pfc["eth0"].pause_per_s is None


# ----------------------------------------------------------------------------- node totals


def test_totals(rates):
    assert rates.tx_bits_per_s == 80e9  # mlx5_0 only: mlx4_0/1 unknown, the rest idle or down
    assert rates.rx_bits_per_s == 40e9 + 16e9 + 0.0
    assert rates.errors_per_s == 2.0
    assert rates.hw_total("np_cnp_sent") == 300.0


def test_device_level_hw_counters_are_counted_once_per_hca():
    texts0 = {"m/ports/1/state": "4: ACTIVE", "m/ports/2/state": "4: ACTIVE", "m/hw_counters/np_cnp_sent": "10"}
    texts1 = dict(texts0, **{"m/hw_counters/np_cnp_sent": "30"})
    rates = fabric_rates(FabricSample(0.0, parse_infiniband(texts0)), FabricSample(1.0, parse_infiniband(texts1)))
    assert rates.ports["m", 1].hw("np_cnp_sent") == rates.ports["m", 2].hw("np_cnp_sent") == 20.0
    assert rates.hw_total("np_cnp_sent") == 20.0


# ----------------------------------------------------------------------------- health


def test_health_of_a_busy_port_with_pauses_and_loss(rates, synth_pair):
    port = synth_pair[1].ports["mlx5_0", 1]
    found = port_health(rates, port)
    assert [level for level, _ in found] == [Level.CAREFUL] * 3
    reasons = [text for _, text in found]
    assert reasons[0] == "mlx5_0/1 RDMA errors 2.0/s (symbol_error 2.0/s)"
    assert reasons[1] == "mlx5_0/1 RoCE loss 1.01 k/s (out_of_sequence 1 k/s, packet_seq_err 7.0/s)"
    assert reasons[2] == "enp1s0f0np0 pause RX 30/s TX 4.0/s (prio 3)"


def test_health_of_a_port_that_went_down(rates, synth_pair):
    assert port_health(rates, synth_pair[1].ports["mlx5_1", 1]) == [(Level.CRITICAL, "mlx5_1/1 DOWN, phys Polling")]
    # no rates needed to see it
    assert port_health(None, synth_pair[1].ports["mlx5_1", 1])[0][0] == Level.CRITICAL


def test_a_port_down_is_as_bad_as_the_port_down_threshold_says(rates, synth_pair):
    from netui.model.health import Threshold

    port = synth_pair[1].ports["mlx5_1", 1]  # DOWN
    inf = float("inf")
    careful = {"port_down": Threshold(1, inf, inf)}  # second ports unplugged on every node
    assert port_health(rates, port, careful) == [(Level.CAREFUL, "mlx5_1/1 DOWN, phys Polling")]
    assert port_health(rates, port, {"port_down": Threshold(inf, inf, inf)}) == []


def test_health_of_a_saturated_error_counter(rates, synth_pair):
    found = port_health(rates, synth_pair[1].ports["mlx4_0", 1])
    assert found == [(Level.CAREFUL, "mlx4_0/1 symbol_error at maximum: new errors not counted")]


def test_thresholds_are_data(rates, synth_pair):
    port = synth_pair[1].ports["mlx5_0", 1]
    quiet = {"pause_per_s": Threshold(100, 1000, 10_000), "roce_loss_per_s": Threshold(1, 500, 5_000)}
    found = port_health(rates, port, quiet)
    assert (Level.WARNING, "mlx5_0/1 RoCE loss 1.01 k/s (out_of_sequence 1 k/s, packet_seq_err 7.0/s)") == found[0]
    assert not any("pause" in text for _, text in found)


def test_real_fixture_ports_are_healthy_when_still():
    ports = parse_infiniband(read_infiniband(str(data_path(f"{PROCFS}/sys"))))
    rates = fabric_rates(FabricSample(10.0, ports), FabricSample(11.0, ports))
    for key, port in ports.items():
        r = rates.ports[key]
        assert r.rx_bits_per_s == 0.0 and r.tx_bits_per_s == 0.0 and r.errors_per_s == 0.0
        assert r.unknown == {}
        assert port_health(rates, port) == []
    assert rates.ports["mlx5_0", 1].hw("local_ack_timeout_err") == 0.0
