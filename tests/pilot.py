"""Helpers for Textual pilot tests (tests/ui/): a scripted app, polls, and what a widget or
the screen shows as plain text."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable

from rich.console import Console

from netui.engine.monitor import Monitor
from netui.model.health import DEFAULT_RULES
from netui.model.samples import NodeSample
from netui.ui.app import NetuiApp, make_app
from netui.ui.grid import FleetGrid
from tests.synth import ScriptedSource, demo_sources

# levels are held (model/health.py HeldHealth): a node's first sample has no rates, then its
# level shows once hold_intervals intervals agree
SETTLED = 1 + DEFAULT_RULES.hold_intervals


def demo_app(polls_sources=None) -> NetuiApp:
    """The scripted demo cluster (tests/synth.py), or the sources given, not started."""
    monitor = Monitor(polls_sources or demo_sources(), interval_s=1.0, history_s=120)
    return make_app(monitor, autostart=False)


def scripted_app(sample: Callable[[int, int], NodeSample], extra: Iterable = ()) -> NetuiApp:
    """Four scripted nodes gpu01 … gpu04: node k's i-th sample is ``sample(k, i)``; ``extra``
    sources after them. Not started: the test polls."""
    sources = [ScriptedSource(f"gpu0{k}", lambda i, k=k: sample(k, i)) for k in (1, 2, 3, 4)]
    return make_app(Monitor([*sources, *extra], interval_s=1.0, history_s=60), autostart=False)


async def poll(app, pilot, n: int = SETTLED) -> None:
    """``n`` polls of the app's monitor, then the screen catches up."""
    for _ in range(n):
        await app.monitor.poll_once()
    await pilot.pause()


def plain(widget, width: int = 200) -> str:
    """What a Static shows, as plain text."""
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()


def grid_rows(app) -> list[list[str]]:
    return app.screen.query_one(FleetGrid).rows_text()


def column(app, key: str) -> list[str]:
    grid = app.screen.query_one(FleetGrid)
    index = [c.key for c in grid.columns].index(key)
    return [row[index] for row in grid_rows(app)]


def painted(app) -> list[str]:
    """The grid's lines as they are painted now: the header, then the rows in view."""
    grid = app.screen.query_one(FleetGrid)
    return [strip.text.rstrip() for strip in grid.render_lines(grid.size.region)]


def highlighted(app) -> list[str]:
    """The painted lines that wear the cursor's background."""
    grid = app.screen.query_one(FleetGrid)
    cursor = grid.get_component_rich_style("fleet-grid--cursor").bgcolor
    strips = grid.render_lines(grid.size.region)
    return [s.text.rstrip() for s in strips if list(s)[0].style.bgcolor == cursor]


def on_screen(app) -> str:
    """The screen's text as the compositor has it now, from each widget's painted lines."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())
