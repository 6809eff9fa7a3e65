"""The node screen says which switch and port a node is cabled to, when a topology says so;
at 80x24 too. Pilot tests on the scripted cluster."""

from __future__ import annotations

import pytest

from netui.engine.monitor import Monitor
from netui.model.topology import Attachment, Switch, Topology
from netui.ui.app import make_app
from netui.ui.node import NodeScreen
from tests.synth import demo_sources
from tests.pilot import plain, poll

pytestmark = pytest.mark.slow  # pilot tests: the full run, not the fast loop


def placed_app():
    monitor = Monitor(demo_sources(), interval_s=1.0, history_s=120)
    monitor.fleet.topology = Topology(
        [Switch("spine"), Switch("leaf1", "spine", 100.0, source="t.conf:1")],
        [Attachment("gpu01", "leaf1", "swp3", source="t.conf:1", port_source="lldp eth0"),
         Attachment("gpu02", "leaf1", source="t.conf:1")])
    monitor.fleet.topology_source = "t.conf"
    return make_app(monitor, autostart=False)


async def _open(app, pilot, name):
    await poll(app, pilot)
    app.push_screen(NodeScreen(name))
    await pilot.pause()
    await poll(app, pilot, 1)
    return plain(app.screen.query_one("#node-head"))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_node_screen_names_the_switch_and_port(size):
    app = placed_app()
    async with app.run_test(size=size) as pilot:
        head = await _open(app, pilot, "gpu01")
        assert "switch leaf1 port swp3  (t.conf:1; port: lldp eth0)" in head
        assert all(len(line) <= size[0] for line in head.splitlines())
        assert app.screen.query_one("#ifaces").region.height > 0  # the panels still have room


async def test_a_node_the_topology_does_not_place_shows_no_switch_line():
    app = placed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        head = await _open(app, pilot, "gpu03")
        assert "switch" not in head
        app.pop_screen()
        await pilot.pause()
        head = await _open(app, pilot, "gpu02")
        assert "switch leaf1  (t.conf:1)" in head and "port" not in head


def interleaved_app():
    """Four nodes watched in the order a1 b1 a2 b2: every hop of the ring crosses leaves."""
    from tests.synth import ScriptedSource, node_sample

    names = ["a1", "b1", "a2", "b2"]
    monitor = Monitor([ScriptedSource(n, lambda k: node_sample(k, rx_bps=1e9, tx_bps=1e9)) for n in names],
                      interval_s=1.0, history_s=120)
    monitor.fleet.topology = Topology(
        [Switch("spine"), Switch("leafA", "spine"), Switch("leafB", "spine")],
        [Attachment("a1", "leafA"), Attachment("a2", "leafA"), Attachment("b1", "leafB"), Attachment("b2", "leafB")])
    monitor.fleet.topology_source = "fabric.toml"
    return make_app(monitor, autostart=False)


async def test_o_shows_the_ring_order_check_of_the_nodes_watched():
    from netui.ui.ring import RingScreen

    app = interleaved_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, RingScreen)
        text = plain(app.screen.query_one("#ring-text"))
        assert "Ring order of every node" in text
        assert "cross-switch hops: 4 of 4 (fewest possible: 2)" in text
        assert text.split("hostfile", 1)[1].split() [-6:] == ["a1", "a2", "#", "leafB", "b1", "b2"]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RingScreen)
        await pilot.press("space", "down", "down", "space")  # two nodes marked: their ring only
        await pilot.press("o")
        await pilot.pause()
        assert "Ring order of the marked nodes" in plain(app.screen.query_one("#ring-text"))


async def test_without_a_topology_o_says_how_to_give_one():
    from tests.pilot import on_screen

    app = make_app(Monitor(demo_sources(), interval_s=1.0, history_s=120), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(app, pilot)
        assert "Ring order" not in on_screen(app)  # not in the footer
        await pilot.press("o")
        await pilot.pause()
        assert any("--topology FILE" in str(n.message) for n in app._notifications)
    app = interleaved_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(app, pilot)
        assert "Ring order" in on_screen(app)  # with a topology, the footer offers it


# --- the grid grouped by leaf switch (g) -------------------------------------------------------


def two_leaf_app(uplink_gbps=0.2):
    """Four nodes on leaf1 each sending 50 Mb/s to one of leaf2 (ACKs back at 1 Mb/s), as
    through the lab's shaped 200 Mb/s uplink; watched in an order that mixes the leaves."""
    from tests.synth import ScriptedSource, node_sample

    def sends(k):
        return node_sample(k, rx_bps=1e6, tx_bps=50e6)

    def receives(k):
        return node_sample(k, rx_bps=50e6, tx_bps=1e6)

    names = ["n5", "n1", "n6", "n2", "n7", "n3", "n8", "n4"]
    monitor = Monitor([ScriptedSource(n, sends if n in ("n1", "n2", "n3", "n4") else receives) for n in names],
                      interval_s=1.0, history_s=120)
    monitor.fleet.topology = Topology(
        [Switch("spine1"), Switch("leaf1", "spine1", uplink_gbps), Switch("leaf2", "spine1", uplink_gbps)],
        [*(Attachment(f"n{i}", "leaf1") for i in (1, 2, 3, 4)), *(Attachment(f"n{i}", "leaf2") for i in (5, 6, 7, 8))])
    monitor.fleet.topology_source = "fabric.toml"
    return make_app(monitor, autostart=False)


async def test_g_groups_the_grid_by_leaf_at_80x24():
    from netui.ui.grid import FleetGrid
    from tests.pilot import on_screen

    app = two_leaf_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        grid = app.screen.query_one(FleetGrid)
        flat = grid.rows_text()
        assert len(flat) == 8 and not any(r[0].startswith("▾") for r in flat)
        await pilot.press("g")
        await poll(app, pilot, 1)
        rows = grid.rows_text()
        names = [r[0] for r in rows]
        assert names[0] == "▾ leaf1" and names[5] == "▾ leaf2"
        assert sorted(names[1:5]) == ["n1", "n2", "n3", "n4"] and sorted(names[6:]) == ["n5", "n6", "n7", "n8"]
        leaf1, leaf2 = rows[0], rows[5]
        assert leaf1[1] == "4/4 up"
        assert leaf1[2:4] == ["4 Mb/s", "200 Mb/s"]  # RX, TX summed
        assert leaf1[-1] == "↑98–100% ↓0–2%"  # the uplink near 100 % out, the ACKs in
        assert leaf2[-1] == "↑0–2% ↓98–100%"
        screen = on_screen(app)
        assert "Leaf / node" in screen and "↑98–100% ↓0–2%" in screen
        assert all(len(line) <= 80 for line in screen.splitlines())
        # space on a leaf row marks its nodes
        grid.move_cursor(0)
        await pilot.press("space")
        assert grid.marked == {"n1", "n2", "n3", "n4"}
        await pilot.press("escape")
        await pilot.press("g")  # the leaf rows alone
        await poll(app, pilot, 1)
        assert [r[0] for r in grid.rows_text()] == ["▸ leaf1", "▸ leaf2"]
        await pilot.press("g")  # flat again
        await poll(app, pilot, 1)
        assert len(grid.rows_text()) == 8 and grid.leaves == []


async def test_grouped_at_160_columns_says_the_uplink_in_words():
    from netui.ui.grid import FleetGrid

    app = two_leaf_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(app, pilot)
        await pilot.press("g")
        await poll(app, pilot, 1)
        rows = app.screen.query_one(FleetGrid).rows_text()
        assert rows[0][-1] == "uplink ↑98–100% ↓0–2% of 200 Mb/s"


async def test_grouped_without_uplink_speeds_shows_bits_per_second_and_filter_keeps_leaves():
    from netui.ui.grid import FleetGrid

    app = two_leaf_app(uplink_gbps=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await poll(app, pilot)
        await pilot.press("g")
        await poll(app, pilot, 1)
        grid = app.screen.query_one(FleetGrid)
        # no capacity: the bounds in bits/s (≤ where they are apart)
        assert grid.rows_text()[0][-1] in ("↑200 Mb/s ↓≤4 Mb/s", "uplink ↑200 Mb/s ↓≤4 Mb/s")
        grid.filter = "n6"
        app.screen.refresh_data()
        assert [r[0] for r in grid.rows_text()] == ["▾ leaf2", "n6"]
        assert grid.rows_text()[0][1] == "4/4 up"  # the leaf row still sums all of its nodes


async def test_g_without_a_topology_says_how_to_give_one():
    app = make_app(Monitor(demo_sources(), interval_s=1.0, history_s=120), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot)
        await pilot.press("g")
        await pilot.pause()
        assert any("--topology FILE" in str(n.message) for n in app._notifications)


# --- the pair-test matrix by switch ---------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (160, 40)])
async def test_the_matrix_is_ordered_by_leaf_and_its_verdict_names_the_uplink(size):
    from netui.checks.pairs.screen import Heatmap, MatrixScreen
    from tests.synth import ScriptedSource, node_sample
    from tests.factories import FABRIC_TOPO as TOPO
    from tests.factories import fabric_report as report

    rep = report()
    monitor = Monitor([ScriptedSource(n, lambda k: node_sample(k)) for n in rep.nodes], interval_s=1.0,
                      history_s=120)
    monitor.fleet.topology = TOPO
    app = make_app(monitor, autostart=False)
    async with app.run_test(size=size) as pilot:
        app.push_screen(MatrixScreen(report=rep))
        await pilot.pause()
        heat = plain(app.screen.query_one(Heatmap)).splitlines()
        rows = [line.split()[0] for line in heat[1:16] if line.strip()]
        assert rows == ["──", "n1", "n2", "n3", "n4", "──", "n5", "n6", "n7", "n8", "──", "n9", "n10", "n11", "n12"]
        assert [line.split()[1] for line in heat if line.startswith("──")] == ["leaf1", "leaf2", "leaf3"]
        verdict = plain(app.screen.query_one("#matrix-verdict"))
        assert verdict.startswith("all 64 pairs crossing leaf1↔spine1 run at 191 Mb/s")
        assert "suspect leaf1's uplink" in verdict
        results = plain(app.screen.query_one("#matrix-results"))
        assert "cross-switch pairs:            96, 64 failing" in results
        assert "← suspect:" not in results  # no node
