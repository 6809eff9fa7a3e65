"""Pilot tests: press the keys a user presses and check what the screen shows."""

from __future__ import annotations


import pytest

from netui.engine.monitor import Monitor
from netui.engine.sources import SourceError
from netui.model.history import capacity_for
from netui.model.node import NodeState
from netui.ui.app import make_app
from netui.ui.cluster import ClusterScreen
from netui.ui.grid import FleetGrid
from netui.ui.help import HelpScreen
from netui.ui.node import NodeScreen
from netui.ui.panels import InterfacePanel
from tests.pilot import column, demo_app, grid_rows, highlighted, on_screen, painted, plain, poll
from tests.synth import ScriptedSource, node_sample


async def test_cluster_grid_worst_first_and_values():
    app = demo_app()
    async with app.run_test(size=(160, 30)) as pilot:
        await poll(app, pilot)
        assert column(app, "node") == ["gpu03", "gpu02", "gpu01"]
        assert column(app, "state") == ["down", "up", "up"]
        rows = {r[0]: r for r in grid_rows(app)}
        assert "40 Gb/s" in rows["gpu01"]
        assert "250" in rows["gpu02"]  # drops/s
        assert "3.00%" in rows["gpu02"]  # 2400 retransmits per 80000 segments
        assert "85% cpu1" in rows["gpu02"]
        assert "connection refused" in " ".join(rows["gpu03"])
        status = plain(app.screen.query_one("#status"))
        assert "3 nodes" in status and "2 up" in status and "1 down" in status
        totals = plain(app.screen.query_one("#totals"))
        assert "Σ 3 nodes" in totals and "RX 49 Gb/s" in totals and "TX 46 Gb/s" in totals
        assert "drops 250/s" in totals and "retransmits 2.4 k/s" in totals


@pytest.mark.slow
async def test_unknown_is_a_dash_until_two_samples():
    app = demo_app([ScriptedSource("n1", lambda k: node_sample(k, rx_bps=1e9))])
    async with app.run_test(size=(120, 24)) as pilot:
        await poll(app, pilot, 1)
        assert column(app, "rx") == ["—"]
        await poll(app, pilot, 1)
        assert column(app, "rx") == ["1 Gb/s"]


@pytest.mark.slow
async def test_counter_reset_shows_dash_not_negative():
    def script(k):
        if k < 3:
            return node_sample(k, rx_bps=8e9)
        return node_sample(k - 3, rx_bps=8e9, mono0=1003)  # counters restart from 0, same boot
    app = demo_app([ScriptedSource("n1", script)])
    async with app.run_test(size=(120, 24)) as pilot:
        await poll(app, pilot, 4)
        assert column(app, "rx") == ["—"]
        await poll(app, pilot, 1)
        assert column(app, "rx") == ["8 Gb/s"]


@pytest.mark.slow
async def test_sort_filter_and_bytes_keys():
    app = demo_app()
    async with app.run_test(size=(160, 30)) as pilot:
        await poll(app, pilot)
        await pilot.press("s")
        assert column(app, "node") == ["gpu01", "gpu02", "gpu03"]
        await pilot.press("s")
        assert column(app, "node")[0] == "gpu01"  # RX, descending
        await pilot.press("slash", "0", "2")
        assert column(app, "node") == ["gpu02"]
        await pilot.press("escape")
        assert len(column(app, "node")) == 3
        await pilot.press("b")
        assert any("GB/s" in v for v in column(app, "rx"))


@pytest.mark.slow
async def test_enter_opens_node_then_escape_back_and_all_interfaces():
    app = demo_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(app, pilot)
        await pilot.press("s")  # by node: gpu01 first
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu01"
        await poll(app, pilot, 1)
        panels = [p.iface for p in app.screen.query(InterfacePanel)]
        assert panels == ["eth0"]  # loopback hidden by default
        await pilot.press("a")
        await pilot.pause()
        await pilot.pause()
        assert sorted(p.iface for p in app.screen.query(InterfacePanel)) == ["eth0", "lo"]
        text = plain(app.screen.query_one("#tcp"))
        assert "ratio 0%" in text
        cpu = plain(app.screen.query_one("#cpu"))
        assert "hottest: cpu1 12%" in cpu
        await pilot.press("escape")
        assert isinstance(app.screen, ClusterScreen)


@pytest.mark.slow
async def test_pause_freezes_display_but_sampling_goes_on():
    app = demo_app([ScriptedSource("n1", lambda k: node_sample(k, rx_bps=1e9 * (k + 1)))])
    async with app.run_test(size=(120, 24)) as pilot:
        await poll(app, pilot, 2)
        before = column(app, "rx")
        await pilot.press("p")
        await poll(app, pilot, 3)
        assert column(app, "rx") == before
        assert "PAUSED" in plain(app.screen.query_one("#status"))
        await pilot.press("p")
        await pilot.pause()
        assert column(app, "rx") != before


@pytest.mark.slow
async def test_pause_freezes_rows_scrolled_into_view_too():
    app = demo_app([ScriptedSource(f"n{i:02d}", lambda k: node_sample(k, rx_bps=1e9 * (k + 1))) for i in range(40)])
    async with app.run_test(size=(120, 24)) as pilot:
        await poll(app, pilot, 2)
        await pilot.press("p")
        frozen_rx = painted(app)[1].split()[2:4]  # every node moves alike: n00's RX is n39's
        await poll(app, pilot, 3)
        await pilot.press("end")
        last = painted(app)[-1].split()
        assert last[0] == "n39" and last[2:4] == frozen_rx


@pytest.mark.slow
async def test_interval_keys_and_help():
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("plus")
        assert app.monitor.interval_s == 2.0
        await pilot.press("minus", "minus")
        assert app.monitor.interval_s == 0.5
        await app.monitor.tick()  # a node's history is sized at its next sample
        node = app.monitor.fleet["gpu01"]  # its history still covers its 120 s at 0.5 s: 240 rows
        assert node.history.table.capacity == node.iface_history.table.capacity == capacity_for(120, 0.5)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, ClusterScreen)


@pytest.mark.slow
async def test_command_palette_runs_actions():
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "Pause / resume":
            await pilot.press("space" if ch == " " else "slash" if ch == "/" else ch)
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.paused


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (100, 30), (200, 50)])
async def test_fits_small_and_uses_wide_terminals(size):
    app = demo_app()
    async with app.run_test(size=size) as pilot:
        await poll(app, pilot)
        keys = [c.key for c in app.screen.query_one(FleetGrid).columns]
        for essential in ("node", "state", "rx", "tx", "drops"):
            assert essential in keys
        if size[0] >= 160:
            assert "health" in keys and "netrx" in keys
        # nothing overflows the terminal width
        grid = app.screen.query_one(FleetGrid)
        assert grid.virtual_size.width <= size[0]
        assert all(len(line) <= size[0] for line in painted(app))
        await pilot.press("enter")
        await poll(app, pilot, 1)
        assert isinstance(app.screen, NodeScreen)


@pytest.mark.slow
async def test_cursor_keys_and_clicks_choose_the_node_under_the_cursor():
    app = demo_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await poll(app, pilot)
        grid = app.screen.query_one(FleetGrid)
        assert grid.selected == "gpu03"  # worst first, the cursor on top
        assert [line.split()[0] for line in highlighted(app)] == ["gpu03"]
        await pilot.press("down", "down")
        assert grid.selected == "gpu01"
        assert [line.split()[0] for line in highlighted(app)] == ["gpu01"]
        await pilot.press("down")  # the last row stays the last
        assert grid.selected == "gpu01"
        await pilot.press("up")
        assert grid.selected == "gpu02"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu02"
        await pilot.press("escape")
        assert isinstance(app.screen, ClusterScreen)
        # a click selects a row (line 0 is the header); a click on the selected row opens it
        await pilot.click(FleetGrid, offset=(2, 1))
        assert grid.selected == "gpu03" and isinstance(app.screen, ClusterScreen)
        await pilot.click(FleetGrid, offset=(2, 1))
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu03"


def _quiet_then_dropping():
    """n1..n3 healthy (n1 the busiest CPU, so first); n3 starts dropping at the 4th poll."""
    return [
        ScriptedSource("n1", lambda k: node_sample(k, rx_bps=1e9, softirq_pct=9)),
        ScriptedSource("n2", lambda k: node_sample(k, rx_bps=1e9, softirq_pct=8)),
        ScriptedSource("n3", lambda k: node_sample(k, rx_bps=1e9, softirq_pct=7, drops_per_s=200 if k >= 3 else 0)),
    ]


@pytest.mark.slow
async def test_cursor_stays_on_top_until_moved_then_follows_its_node():
    app = demo_app(_quiet_then_dropping())
    async with app.run_test(size=(120, 30)) as pilot:
        await poll(app, pilot, 2)
        grid = app.screen.query_one(FleetGrid)
        assert column(app, "node") == ["n1", "n2", "n3"] and grid.selected == "n1"
        await poll(app, pilot, 3)  # a straggler is held after 2 of 3 intervals: drops at polls 4 and 5
        assert column(app, "node") == ["n3", "n1", "n2"]
        assert grid.selected == "n3"  # not moved by the user: on the worst node
        await pilot.press("down")
        assert grid.selected == "n1"
        await pilot.press("s")  # by name: n1 moves to the top, the cursor with it
        assert column(app, "node") == ["n1", "n2", "n3"] and grid.selected == "n1"
        await pilot.press("down")
        assert grid.selected == "n2"
        await pilot.press(*"s" * 8)  # round the sorts back to worst first: n2 last, the cursor on it
        assert grid.sort == "worst" and column(app, "node") == ["n3", "n1", "n2"] and grid.selected == "n2"
        await poll(app, pilot, 1)
        assert grid.selected == "n2"


def _fleet(n: int) -> list[ScriptedSource]:
    return [ScriptedSource(f"gpu{i:04d}", lambda k, i=i: node_sample(k, rx_bps=1e7 * (i + 1), ncpus=8))
            for i in range(n)]


@pytest.mark.slow
async def test_a_thousand_nodes_scroll_and_filter():
    app = demo_app(_fleet(1024))
    async with app.run_test(size=(120, 30)) as pilot:
        await poll(app, pilot, 2)
        grid = app.screen.query_one(FleetGrid)
        rows = grid.rows_text()
        assert grid.row_count == len(rows) == 1024
        assert [r[0] for r in rows] == sorted(r[0] for r in rows)  # all healthy, all alike: by name
        lines = painted(app)
        assert lines[0].startswith("Node") and lines[1].startswith("gpu0000")
        shown = len([line for line in lines[1:] if line.startswith("gpu")])
        assert 20 <= shown < 30  # only the rows in view are painted
        await pilot.press("pagedown")
        assert grid.selected == rows[shown][0]
        assert any(line.startswith(grid.selected) for line in painted(app))
        await pilot.press("end")
        assert grid.selected == "gpu1023"
        assert painted(app)[-1].startswith("gpu1023")
        await poll(app, pilot, 1)  # a new tick keeps the cursor and the view on it
        assert grid.selected == "gpu1023" and painted(app)[-1].startswith("gpu1023")
        await pilot.press("slash", *"gpu0777", "enter")
        assert grid.row_count == 1 and column(app, "node") == ["gpu0777"]
        assert painted(app)[1].startswith("gpu0777")
        await pilot.press("escape")
        assert grid.row_count == 1024 and grid.selected == "gpu1023"
        await pilot.press("home")
        assert grid.selected == "gpu0000" and painted(app)[1].startswith("gpu0000")


@pytest.mark.slow
async def test_a_tick_repaints_the_cluster_screen_without_a_layout_pass():
    # the status bar and the totals row are one line each: updating them with a layout pass
    # re-rendered the whole screen, then again for the scroll bar it touched (twice Textual's
    # share of a tick at 1,024 nodes). What they show must still change when the fleet does.
    def script(i):
        def sample(k):
            if i == 0 and k >= 3:
                return SourceError(NodeState.DOWN, "connection refused")
            return node_sample(k, rx_bps=1e9 * (i + 1), tx_bps=1e9)
        return sample

    app = demo_app([ScriptedSource(f"gpu{i:02d}", script(i)) for i in range(40)])
    async with app.run_test(size=(120, 30)) as pilot:
        await poll(app, pilot, 3)
        screen = app.screen
        assert "40 up" in on_screen(app) and "RX 820 Gb/s" in plain(screen.query_one("#totals"))
        layouts = []
        refresh_layout = screen._refresh_layout
        screen._refresh_layout = lambda *a, **kw: (layouts.append(a), refresh_layout(*a, **kw))[1]
        for _ in range(3):
            app.monitor.on_update = app.refresh_screen  # as FleetUpdated does, without the queue
            await poll(app, pilot, 1)
        assert layouts == []
        shown = on_screen(app)
        assert "39 up" in shown and "1 down" in shown
        assert "RX 819 Gb/s" in plain(screen.query_one("#totals")) and "819 Gb/s" in shown
        assert column(app, "node")[0] == "gpu00"  # the down node first


@pytest.mark.slow
async def test_a_fleet_update_while_the_node_screen_is_still_being_built_is_harmless():
    # an update posted between push_screen and the screen's compose used to raise NoMatches
    app = demo_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(app, pilot)
        app.open_node(next(iter(app.monitor.fleet)).name)
        app.refresh_screen()  # the new screen is current but not composed yet
        await poll(app, pilot, 1)
        assert isinstance(app.screen, NodeScreen)
        assert "up" in plain(app.screen.query_one("#node-head"))


@pytest.mark.slow
async def test_the_node_screen_asks_for_its_nodes_per_cpu_tables_while_it_is_open():
    app = demo_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(app, pilot)
        await pilot.press("s")  # by node: gpu01 first
        assert not app.monitor.detail_wanted("gpu01")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.monitor.detail_wanted("gpu01")
        assert not app.monitor.detail_wanted("gpu02")
        await pilot.press("escape")
        await pilot.pause()
        assert not app.monitor.detail_wanted("gpu01")


# --- the node screen's charts ---------------------------------------------------------------------


def test_chart_ticks_are_round_and_the_time_axis_reads_time_ago():
    from netui.ui.panels import chart_rows, nice_ticks, time_ticks

    assert nice_ticks(0.0) == [0.0, 0.25, 0.5, 0.75, 1.0]  # an all-zero series: 0 … 1, not 1.10/0.92/0.55
    assert nice_ticks(191e6) == [0, 50e6, 100e6, 150e6, 200e6]
    assert nice_ticks(9.4e9) == [0.0, 2.5e9, 5e9, 7.5e9, 10e9]
    for top in (3.3, 47.0, 999.0, 1.2e9, 6.1e10):
        ticks = nice_ticks(top)
        assert ticks[-1] >= top and ticks[0] == 0 and len(ticks) == 5
    assert time_ticks(299) == [(-240.0, "-4m"), (-180.0, "-3m"), (-120.0, "-2m"), (-60.0, "-1m"), (0.0, "now")]
    assert [label for _, label in time_ticks(59)] == ["-45s", "-30s", "-15s", "now"]
    assert [label for _, label in time_ticks(4)] == ["-4s", "-3s", "-2s", "-1s", "now"]
    assert chart_rows(24, 1) == 9 and chart_rows(50, 1) > 15 and chart_rows(50, 2) < chart_rows(50, 1)


@pytest.mark.slow
@pytest.mark.parametrize("size, tall", [((80, 24), False), ((200, 50), True)])
async def test_node_screen_charts_use_the_height_and_label_their_axes_with_units(size, tall):
    from textual_plotext import PlotextPlot

    sources = [ScriptedSource("idle", lambda i: node_sample(i, rx_bps=0.0)),
               ScriptedSource("busy", lambda i: node_sample(i, rx_bps=2e9))]
    app = make_app(Monitor(sources, interval_s=1.0, history_s=60), autostart=False)
    async with app.run_test(size=size) as pilot:
        await poll(app, pilot, 4)
        await pilot.press("s", "enter")  # by node: busy first
        await pilot.pause()
        await poll(app, pilot, 2)
        await pilot.pause()
        plot = app.screen.query_one(PlotextPlot)
        assert (plot.size.height > 12) is tall, plot.size.height
        drawn = plot.plt.build()
        assert "now" in drawn and "b/s" in drawn
        await pilot.press("escape", "down", "enter")  # the idle node
        await pilot.pause()
        await poll(app, pilot, 2)
        await pilot.pause()
        drawn = app.screen.query_one(PlotextPlot).plt.build()
        # the scale's floor: an idle interface is a flat line under round ticks with units
        assert "1 Mb/s" in drawn and "500 kb/s" in drawn and "1.1" not in drawn, drawn


# --- the trend column -----------------------------------------------------------------------------


@pytest.mark.slow
async def test_trend_sparklines_have_a_floor_blank_down_nodes_and_dim_stale_ones():
    from netui.ui.grid import FleetGrid

    def gone(k):  # answers twice, then is down
        return node_sample(k, rx_bps=4e4) if k < 2 else SourceError(NodeState.DOWN, "connection refused")

    sources = [ScriptedSource("idle1", lambda k: node_sample(k, rx_bps=4e4)),  # 40 kb/s: an SSH stream
               ScriptedSource("idle2", lambda k: node_sample(k, rx_bps=2e4)),
               ScriptedSource("gone", gone)]
    app = make_app(Monitor(sources, interval_s=1.0, history_s=60), autostart=False)
    async with app.run_test(size=(160, 20)) as pilot:
        await poll(app, pilot, 5)
        await pilot.press("s")  # by node: gone, idle1, idle2
        await pilot.pause()
        trend = dict(zip(column(app, "node"), column(app, "trend")))
        # an idle fleet draws its floor line, not full bars scaled to its own few kB/s
        assert set(trend["idle1"].strip()) == {"▁"} and set(trend["idle2"].strip()) == {"▁"}, trend
        assert trend["gone"].strip() == ""  # down: no trend, not its last bars
        # a node that stopped answering keeps its last values, dimmed
        node = app.monitor.fleet["idle1"]
        node.set_state(NodeState.STALE, "no sample for 3 s")
        grid = app.screen.query_one(FleetGrid)
        row = grid._format(node)
        styles = {text.strip(): style for text, style in row.runs}
        dimmed = [text for text, style in row.runs if style is FleetGrid.STALE_STYLE]
        assert dimmed and any("b/s" in text for text in dimmed), styles
        # ... and it is painted so, under the cursor and off it (the row's styles know the dim)
        grid.show(app.monitor.fleet)
        for cursor in range(3):
            grid._cursor = cursor
            stale = [line for line in painted(app) if line.startswith("idle1")]
            assert stale and "STALE" in stale[0].upper(), painted(app)
