"""Pilot tests of the fabric in the UI: the grid's fabric columns (only for a fleet that has
RDMA), and the node screen of a node fed from a copy of the captured RDMA tree, whose HCA
ports show counters that move as the test bumps them."""

from __future__ import annotations

import pytest

from netui.engine.monitor import Monitor
from netui.ui.app import make_app
from netui.ui.grid import FleetGrid
from netui.ui.node import NodeScreen
from netui.ui.ports import PortPanel
from tests.fabric_tree import MLX5_NETDEV, RdmaTreeNode, RdmaTreeSource
from tests.pilot import column, plain, poll
from tests.synth import ScriptedSource, demo_sources, node_sample

FABRIC_KEYS = {"rdma_rx", "rdma_tx", "rdma_err", "cnp", "pause"}


def app_of(sources):
    return make_app(Monitor(sources, interval_s=1.0, history_s=120), autostart=False)


@pytest.mark.slow
async def test_the_fabric_columns_appear_only_with_a_fabric():
    app = app_of(demo_sources())
    async with app.run_test(size=(200, 20)) as pilot:
        await poll(app, pilot)
        grid = app.screen.query_one(FleetGrid)
        assert not FABRIC_KEYS & {c.key for c in grid.columns}
        for _ in range(len(grid.columns) + 8):  # s never offers an RDMA sort
            await pilot.press("s")
            assert grid.sort not in FABRIC_KEYS

    rdma = dict(rx_bps=80e9, tx_bps=60e9, pause_per_s=40, cnp_per_s=12)
    sources = demo_sources() + [ScriptedSource("gpu04", lambda k: node_sample(k, rx_bps=1e9, rdma=rdma))]
    app = app_of(sources)
    async with app.run_test(size=(200, 20)) as pilot:
        await poll(app, pilot)
        grid = app.screen.query_one(FleetGrid)
        assert FABRIC_KEYS | {"health"} <= {c.key for c in grid.columns}
        names = column(app, "node")
        rx, tx, pause, cnp = (dict(zip(names, column(app, k))) for k in ("rdma_rx", "rdma_tx", "pause", "cnp"))
        assert (rx["gpu04"], tx["gpu04"], pause["gpu04"]) == ("80 Gb/s", "60 Gb/s", "40")
        assert cnp["gpu04"] == "18"  # 12 sent + 6 handled
        assert rx["gpu01"] == "—" and pause["gpu01"] == "—"  # a node without RDMA
        totals = plain(app.screen.query_one("#totals"))
        assert "RDMA RX 80 Gb/s" in totals
        seen = set()
        for _ in range(20):
            await pilot.press("s")
            seen.add(grid.sort)
        assert FABRIC_KEYS <= seen


@pytest.mark.slow
async def test_a_fixture_fed_rdma_node_shows_its_hca_ports_with_live_counters(tmp_path):
    node = RdmaTreeNode(tmp_path / "sys")
    app = app_of([RdmaTreeSource(node)])
    async with app.run_test(size=(120, 60)) as pilot:
        await poll(app, pilot, 3)
        await pilot.press("enter")
        await poll(app, pilot, 1)
        screen = app.screen
        assert isinstance(screen, NodeScreen)
        panels = {p.key: p for p in screen.query(PortPanel)}
        assert list(panels) == [("hfi1_0", 1), ("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)]
        mlx5 = panels["mlx5_0", 1]
        assert mlx5.border_title == f"mlx5_0/1 ↔ {MLX5_NETDEV}"
        info = plain(mlx5._info)
        assert "ACTIVE" in info and "25 Gb/s" in info and "InfiniBand" in info and MLX5_NETDEV in info

        def texts():
            return (str(mlx5._tx_label.content), plain(mlx5._counts), plain(mlx5._pfc),
                    str(panels["mlx4_0", 1]._rx_label.content))

        before = texts()
        assert "rx_write_requests 52 k/s" in before[1] and "out_of_sequence 3.0/s" in before[1]
        assert "prio 3" in before[2] and "pause RX    120/s" in before[2]
        assert before[3].startswith("RX ") and "Gb/s" in before[3]
        # the counters go on moving: the next polls read new values, the rates follow
        tx_words = node.tree / "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data"
        first = int(tx_words.read_text())
        await poll(app, pilot, 3)
        assert int(tx_words.read_text()) > first
        after = texts()
        assert after[0] != before[0]  # the TX rate changed (18 ± 4 Gbit/s)
        history = app.monitor.fleet["rdma01"].port_history["mlx5_0", 1][1].values()
        assert len([v for v in history if v]) >= 5 and len(set(history[-5:])) > 1
        assert str(mlx5._tx_spark.render()).strip()
        # a port going down turns its panel red and the node critical
        (node.tree / "class/infiniband/mlx4_0/ports/2/state").write_text("1: DOWN\n")
        await poll(app, pilot, 1)
        assert panels["mlx4_0", 2].has_class("-down")
        assert "mlx4_0/2 DOWN" in plain(screen.query_one("#node-head"))
