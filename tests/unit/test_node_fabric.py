"""A node with RDMA over time: fabric rates, the grid's fabric columns, port health in the
node's health, per-port history, ethtool readings carried between their slower samples."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from netui.collectors.assemble import fabric_from_texts
from netui.collectors.infiniband import read_infiniband
from netui.model.health import HealthRules, Level, Threshold

AT_ONCE = HealthRules(hold_intervals=1)  # each interval judged on its own
from netui.model.node import Node, NodeTotals
from netui.model.samples import NodeSample

SYNTH = Path(__file__).resolve().parents[1] / "data" / "fabric"
NETDEV = "enp1s0f0np0"


def sample(t: int, mono_s: float, *, ethtool_at: float | None = None) -> NodeSample:
    eth = {NETDEV: (SYNTH / f"ethtool-S_mlx5_pfc_t{t}.txt").read_text()} if ethtool_at is not None else None
    fabric = fabric_from_texts(read_infiniband(str(SYNTH / f"node-t{t}" / "sys")), eth, mono_s=mono_s,
                               ethtool_mono_s=ethtool_at, boot_id="b")
    return NodeSample(wall_s=mono_s, mono_s=mono_s, boot_id="b", interfaces={}, fabric=fabric)


def test_fabric_rates_columns_health_and_history():
    node = Node("gpu01", history_s=10, interval_s=1)
    node.observe(sample(0, 100.0, ethtool_at=100.0))
    assert node.fabric_rates is None and node.summary == NodeTotals()
    node.observe(sample(1, 101.0, ethtool_at=101.0))

    s = node.summary
    ports = node.fabric_rates.ports
    assert ports["mlx5_0", 1].tx_bits_per_s == pytest.approx(80e9)  # +2.5e9 words in 1 s
    assert ports["mlx5_0", 1].rx_bits_per_s == pytest.approx(40e9)
    # the node's RDMA throughput: every port that could be rated (mlx4_0/1 saturated: unknown)
    assert s.rdma_rx_bytes_per_s == pytest.approx(sum(r.rx_bits_per_s or 0 for r in ports.values()) / 8)
    assert s.rdma_tx_bytes_per_s == pytest.approx(sum(r.tx_bits_per_s or 0 for r in ports.values()) / 8)
    assert s.pause_per_s == pytest.approx(150 + 20)  # prio 3: RX +150, TX +20
    assert s.cnp_per_s is not None and s.cnp_per_s > 0
    assert s.rdma_errors_per_s is not None and s.rdma_errors_per_s > 0  # out_of_sequence wrapped: +1000
    # mlx5_1 went DOWN: a state of the port, critical at once (not held), said first; the
    # pauses are a level: this interval says so, the node after hold_intervals like it
    assert node.level is Level.CRITICAL
    assert node.health.reasons[0].startswith("mlx5_1/1 DOWN")
    assert any(r.startswith(f"{NETDEV} pause RX 150/s") for r in node.interval_health.reasons)
    assert not any("pause" in r for r in node.health.reasons)
    rx, tx = node.port_history["mlx5_0", 1]
    assert rx.values() == [None, pytest.approx(5e9)] and tx.values() == [None, pytest.approx(1e10)]


def test_an_ethtool_reading_is_carried_and_its_rates_kept_until_the_next():
    node = Node("gpu01")
    node.observe(sample(0, 100.0, ethtool_at=100.0))
    node.observe(sample(1, 101.0))  # no ethtool this time: the last reading carries over
    assert node.sample.fabric.ethtool_mono_s == 100.0 and NETDEV in node.sample.fabric.pfc
    assert node.fabric_rates.pfc == {}  # one reading: no PFC rate yet
    node.observe(replace(sample(1, 105.0, ethtool_at=105.0)))
    assert node.fabric_rates.pfc_interval_s == 5.0
    assert node.summary.pause_per_s == pytest.approx(170 / 5)
    node.observe(sample(1, 106.0))  # between readings: the last PFC rates stay
    assert node.fabric_rates.pfc_interval_s == 5.0 and node.summary.pause_per_s == pytest.approx(170 / 5)


def test_fabric_thresholds_are_configuration():
    calm = {k: Threshold(1e9, 1e9, 1e9) for k in ("pause_per_s", "roce_loss_per_s", "rdma_errors_per_s",
                                                   "rdma_discards_per_s")}
    node = Node("gpu01", thresholds=calm, rules=AT_ONCE)
    node.observe(sample(0, 100.0, ethtool_at=100.0))
    node.observe(sample(1, 101.0, ethtool_at=101.0))
    assert not any("pause" in r or "RoCE loss" in r for r in node.health.reasons)
    assert node.threshold("pause_per_s").careful == 1e9


def test_a_node_without_fabric_has_no_fabric_state():
    node = Node("gpu01")
    bare = NodeSample(wall_s=1.0, mono_s=1.0, boot_id="b", interfaces={})
    node.observe(bare)
    node.observe(replace(bare, mono_s=2.0))
    assert node.fabric_rates is None and node.port_history == {}
    assert node.summary.rdma_rx_bytes_per_s is None and node.summary.pause_per_s is None


def test_pfc_rates_are_not_shown_for_ever_after_ethtool_stops_answering():
    from netui.model.node import ETHTOOL_CARRY_S

    node = Node("gpu01")
    node.observe(sample(0, 100.0, ethtool_at=100.0))
    node.observe(sample(1, 105.0, ethtool_at=105.0))
    assert node.summary.pause_per_s == pytest.approx(170 / 5)
    node.observe(sample(1, 105.0 + ETHTOOL_CARRY_S - 1))  # ethtool -S stops answering: kept a while
    assert node.summary.pause_per_s == pytest.approx(170 / 5)
    for t in (ETHTOOL_CARRY_S + 1, ETHTOOL_CARRY_S + 30, 10 * ETHTOOL_CARRY_S):
        node.observe(sample(1, 105.0 + t))
        assert node.summary.pause_per_s is None, t
        assert node.fabric_rates.pfc == {} and node.fabric_rates.pfc_interval_s is None
    assert not any("pause" in r for r in node.health.reasons)
    node.observe(sample(0, 800.0, ethtool_at=800.0))  # it answers again: one reading, no rate yet
    node.observe(sample(1, 805.0, ethtool_at=805.0))
    assert node.summary.pause_per_s == pytest.approx(170 / 5)


def test_roce_loss_of_device_level_hw_counters_is_counted_once_per_hca(tmp_path):
    """A 2-port HCA whose hw_counters are device-level (<hca>/hw_counters, shared by its
    ports): a copy of the captured tree, mlx4_0 given such counters, read by the real reader."""
    from tests.fabric_tree import IB, copy_tree

    tree = copy_tree(tmp_path / "sys")
    hw = tree / IB / "mlx4_0" / "hw_counters"
    hw.mkdir()
    (hw / "out_of_sequence").write_text("1000\n")
    (hw / "packet_seq_err").write_text("5\n")

    def observe(node, mono_s):
        fabric = fabric_from_texts(read_infiniband(str(tree)), None, mono_s=mono_s, ethtool_mono_s=None,
                                   boot_id="b")
        node.observe(NodeSample(wall_s=mono_s, mono_s=mono_s, boot_id="b", interfaces={}, fabric=fabric))

    node = Node("gpu01", rules=AT_ONCE)
    observe(node, 100.0)
    (hw / "out_of_sequence").write_text("1020\n")  # 10/s over 2 s, on the HCA (both ports)
    observe(node, 102.0)
    ports = node.fabric_rates.ports
    assert ports["mlx4_0", 1].hw_scope == ports["mlx4_0", 2].hw_scope == "device"
    assert ports["mlx4_0", 1].roce_loss_per_s == ports["mlx4_0", 2].roce_loss_per_s == pytest.approx(10)
    errors_elsewhere = sum(r.errors_per_s or 0 for r in ports.values()) + sum(r.discards_per_s or 0 for r in ports.values())
    assert errors_elsewhere == 0
    assert node.summary.rdma_errors_per_s == pytest.approx(10)  # not 20
    loss = [r for r in node.health.reasons if "RoCE loss" in r]
    assert loss == ["mlx4_0 RoCE loss 10/s (out_of_sequence 10/s)"]  # said once
