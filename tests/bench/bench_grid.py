"""Benchmark: one tick of the cluster grid with 1,024 nodes — `show()` plus the repaint.

Run: python -m tests.bench.bench_grid
Side by side in the same run, on the same scripted fleet (15 minutes of history, as the app
keeps) and terminal size: the whole cluster screen as a tick updates it (grid, status bar,
totals row: `refresh_data()` and the repaint), netui's virtual `FleetGrid` alone and a Textual `DataTable` kept up to date the way the old grid did (rows keyed by
node, `update_cell` for changed cells, rebuilt when the order changes) — once sorted worst
first, whose order moves every tick, and once by name, whose order holds so only
`update_cell` runs — and the floor: a Line API widget repainting as many lines of unchanging
text, Textual's own cost of a frame. Each host app but the first shows only its grid. Prints the
median CPU ms per tick (process time of `show()` and the paint awaited with a pilot pause), the
wall ms, the share of one core at 1 Hz and the ratio to FleetGrid; for netui's grid, the rows
it formatted and the layout passes per tick (a layout pass repaints the whole screen).
Target: a few ms per tick.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import random
import statistics
import time

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import DataTable

from netui.engine.monitor import Monitor
from netui.ui.app import make_app
from netui.model.fleet import Fleet
from netui.ui.columns import GridOptions, cell_level, fit_columns, sort_key
from netui.ui.grid import FleetGrid
from netui.ui.render import level_styles
from tests.synth import ScriptedSource, node_sample

NODES = 1024
HISTORY_S = 900.0  # the app's default: the sparklines read the newest values of it
SIZE = (160, 50)
WARMUP_TICKS = 3
TICKS = 12


def scripted_fleet() -> Monitor:
    """1,024 nodes whose traffic wanders and a few of which burst drops each tick, so the
    worst-first order moves as on a real cluster. Counters only grow (no resets)."""
    steps = WARMUP_TICKS + TICKS + 1

    def source(i: int) -> ScriptedSource:
        r = random.Random(i)
        rx_bps, tx_bps, softirq = r.uniform(1e9, 5e10), r.uniform(1e9, 5e10), r.choice((3, 5, 12, 40, 85))
        totals, rx, tx, drops = [], 0, 0, 0
        for _ in range(steps):
            rx += int(rx_bps / 8 * r.uniform(0.5, 1.5))
            tx += int(tx_bps / 8 * r.uniform(0.5, 1.5))
            drops += r.randint(1, 400) if r.random() < 0.05 else 0
            totals.append((rx, tx, drops))

        def script(k: int):
            sample = node_sample(k, softirq_pct=softirq, ncpus=8)
            rx, tx, drops = totals[k]
            eth0 = sample.interfaces["eth0"]
            counters = eth0.counters._replace(rx_bytes=rx, tx_bytes=tx, rx_packets=rx // 1500,
                                              tx_packets=tx // 1500, rx_dropped=drops)
            return dataclasses.replace(sample, interfaces={**sample.interfaces, "eth0": eth0._replace(counters=counters)})
        return ScriptedSource(f"gpu{i:04d}", script)
    return Monitor([source(i) for i in range(NODES)], interval_s=1.0, history_s=HISTORY_S)


class TableGrid(DataTable):
    """The old approach: a DataTable with a row per node, only changed cells updated."""

    def __init__(self, sort: str) -> None:
        super().__init__(cursor_type="row", cell_padding=0)
        self.sort = sort
        self.columns_shown = fit_columns(SIZE[0] - 2)
        self._order: list[str] = []
        self._cells: dict[str, list[Text]] = {}
        self.rebuilds = 0

    def on_mount(self) -> None:
        for c in self.columns_shown:
            self.add_column(c.label, key=c.key, width=c.width + 1)

    def show(self, fleet: Fleet) -> None:
        styles = level_styles(self.app.theme_variables)
        nodes = sorted(fleet, key=sort_key(self.sort))
        order = [n.name for n in nodes]
        rows = {n.name: [self._cell(c, n, styles) for c in self.columns_shown] for n in nodes}
        if order != self._order:
            self.clear()
            for name in order:
                self.add_row(*rows[name], key=name)
            self._order = order
            self.rebuilds += 1
        else:
            for name in order:
                for c, new, before in zip(self.columns_shown, rows[name], self._cells[name]):
                    if new != before:
                        self.update_cell(name, c.key, new)
        self._cells = rows

    def _cell(self, col, node, styles) -> Text:
        level = cell_level(col, node)
        style = styles.get(level) if level is not None and (col.key in ("node", "state") or level > 0) else None
        text = col.text(node, GridOptions())[: col.width]
        return Text((text.rjust(col.width) if col.right else text.ljust(col.width)) + " ", style=style or "")


class Floor(ScrollView):
    """The floor: a Line API widget that repaints as many lines of unchanging text."""

    row_count = NODES

    def on_mount(self) -> None:
        self.virtual_size = Size(SIZE[0] - 2, NODES + 1)

    def show(self, fleet: Fleet) -> None:
        self.refresh()

    def render_line(self, y: int) -> Strip:
        return Strip([Segment("gpu0001".ljust(40), Style(color="red")), Segment("x" * (SIZE[0] - 42))], SIZE[0] - 2)


class GridHost(App):
    def __init__(self, grid) -> None:
        super().__init__()
        self.grid = grid

    def compose(self) -> ComposeResult:
        yield self.grid


class Counted:
    """Rows a FleetGrid formatted and layout passes of the screen, per measured tick."""

    def __init__(self) -> None:
        self.rows = self.layouts = 0

    def watch(self, app, grid) -> None:
        if isinstance(grid, FleetGrid):
            real_format = grid._format

            def format_row(node):
                self.rows += 1
                return real_format(node)

            grid._format = format_row
        screen = app.screen
        real_layout = screen._refresh_layout

        def refresh_layout(*args, **kwargs):
            self.layouts += 1
            return real_layout(*args, **kwargs)

        screen._refresh_layout = refresh_layout


async def ticks(make_grid) -> tuple[list[float], list[float], object, Counted]:
    """CPU and wall seconds of show() + paint for each measured tick, the grid, what it did."""
    monitor = scripted_fleet()
    if make_grid is None:  # the whole cluster screen, as the app updates it each tick
        app = make_app(monitor, autostart=False)
        monitor.on_update = None  # each tick is shown below, timed
    else:
        grid = make_grid()
        app = GridHost(grid)
        if getattr(grid, "grouping", ""):
            monitor.fleet.topology = leaf_topology([n.name for n in monitor.fleet])
    cpu, wall, counted = [], [], Counted()
    async with app.run_test(size=SIZE) as pilot:
        if make_grid is None:
            grid = app.screen.grid
            show = app.refresh_screen
        else:
            def show() -> None:
                grid.show(monitor.fleet)
        for k in range(WARMUP_TICKS + TICKS):
            await monitor.tick()
            await pilot.pause()
            gc.collect()  # the garbage of the poll is not the grid's
            if k == WARMUP_TICKS:
                counted.watch(app, grid)
            c0, t0 = time.process_time(), time.perf_counter()
            show()
            await pilot.pause()
            c1, t1 = time.process_time(), time.perf_counter()
            if k >= WARMUP_TICKS:
                cpu.append(c1 - c0)
                wall.append(t1 - t0)
    return cpu, wall, grid, counted


def fleet_grid() -> FleetGrid:
    grid = FleetGrid()
    grid.width_cells = SIZE[0] - 2  # as the cluster screen sets it
    return grid


def grouped_grid() -> FleetGrid:
    grid = fleet_grid()
    grid.grouping = "leaves"  # a row per leaf with its nodes below (g)
    return grid


def leaf_topology(names: list[str], per_leaf: int = 32):
    """The nodes on leaves of ``per_leaf`` under one spine, each uplink 400 Gbit/s."""
    from netui.model.topology import Attachment, Switch, Topology

    leaves = [f"leaf{i + 1:02d}" for i in range((len(names) + per_leaf - 1) // per_leaf)]
    return Topology([Switch("spine"), *(Switch(leaf, "spine", 400.0) for leaf in leaves)],
                    [Attachment(n, leaves[i // per_leaf]) for i, n in enumerate(names)])


def main() -> None:
    runs = [
        ("cluster screen, worst", None),  # grid + status bar + totals row: what a tick costs the UI
        ("FleetGrid, worst first", fleet_grid),
        ("FleetGrid, by leaf (g)", grouped_grid),  # 32 leaves of 32: a leaf row above each leaf's nodes
        ("DataTable, worst first", lambda: TableGrid("worst")),  # the order moves: rebuilt
        ("DataTable, by name", lambda: TableGrid("node")),  # a steady order: update_cell only
        ("floor: constant lines", Floor),
    ]
    print(f"{NODES} nodes, {SIZE[0]}×{SIZE[1]} terminal; show() + paint per tick, median of {TICKS} ticks")
    results = [(label, asyncio.run(ticks(make))) for label, make in runs]
    base = next(statistics.median(cpu) for label, (cpu, *_) in results if label.startswith("FleetGrid"))
    for label, (cpu, wall, grid, counted) in results:
        assert grid.row_count == NODES
        c = statistics.median(cpu)
        note = f", rebuilt in {grid.rebuilds} of {WARMUP_TICKS + TICKS} ticks" if isinstance(grid, TableGrid) else ""
        if isinstance(grid, FleetGrid):
            note = (f", {counted.rows / TICKS:.0f} rows formatted, "
                    f"{counted.layouts / TICKS:.0f} layout passes per tick")
        print(f"{label:24} {c * 1e3:7.1f} ms CPU {statistics.median(wall) * 1e3:7.1f} ms wall"
              f" {c * 100:6.2f} % of a core at 1 Hz {c / base:6.1f}× FleetGrid{note}")
    print("(wall time includes waiting for Textual's frame timer)")


if __name__ == "__main__":
    main()
