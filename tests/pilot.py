"""Helpers for Textual pilot tests (tests/ui/): a scripted app, an app on the lab, running one
under a pilot, polls, keys, bounded waits, and what a widget or the screen shows as plain text."""

from __future__ import annotations

import io
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from rich.console import Console
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot

from netui.collectors.ssh_connect import SshSettings
from netui.engine.monitor import Monitor
from netui.model.health import DEFAULT_RULES
from netui.model.samples import NodeSample
from netui.ui.app import NetuiApp, make_app
from netui.ui.cluster import ClusterScreen
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


def lab_app(lab) -> NetuiApp:
    """netui watching the lab's nodes over SSH (0.5 s interval, 5 s connect timeout), started
    with the app."""
    from tests.lab.watch import monitor_for

    return make_app(monitor_for(lab, settings=SshSettings(config_paths=[str(lab.ssh_config)], connect_timeout_s=5)))


@asynccontextmanager
async def running(app, size: tuple[int, int], *, polls: int = 0, ticks: int = 0) -> AsyncIterator[Pilot]:
    """``app`` under a pilot at ``size``, after ``polls`` polls of its monitor (then the screen
    catches up) or ``ticks`` ticks of it (a replay's, or a monitor left to its ticks)."""
    async with app.run_test(size=size) as pilot:
        if polls:
            await poll(app, pilot, polls)
        for _ in range(ticks):
            await app.monitor.tick()
        yield pilot


async def pressed(pilot, *keys: str):
    """Press ``keys``, let the screen catch up; the screen on top then."""
    await pilot.press(*keys)
    await pilot.pause()
    return pilot.app.screen


async def shown(pilot, screen):
    """``screen`` pushed over the app's, once the screen has caught up."""
    pilot.app.push_screen(screen)
    await pilot.pause()
    return screen


async def escape_to_grid(pilot) -> None:
    """Esc closes the screen on top: the grid is back."""
    await pilot.press("escape")
    assert isinstance(pilot.app.screen, ClusterScreen)


async def exported(pilot, directory, monkeypatch) -> list[Path]:
    """Press e (export) with ``directory`` as the working directory: the files it holds then,
    by name."""
    monkeypatch.chdir(directory)
    await pressed(pilot, "e")
    return sorted(Path(directory).iterdir())


async def pause_until(pilot, done: Callable[[], object], timeout_s: float, step_s: float = 0.1) -> bool:
    """Pause ``step_s`` at a time until ``done()`` holds, ``timeout_s`` at the most; whether it holds."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        await pilot.pause(step_s)
    return bool(done())


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


def plain_wide(widget) -> str:
    """What a Static shows, as plain text 240 columns wide (a matrix, a table of findings)."""
    return plain(widget, width=240)


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


async def palette_titles(pilot, query: str) -> list[str]:
    """The titles the command palette lists for ``query``, typed into it."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await pilot.pause()
    assert isinstance(app.screen, CommandPalette)
    for ch in query:
        await pilot.press("space" if ch == " " else ch)
    found: list[str] = []
    for _ in range(40):
        await pilot.pause(0.05)
        options = app.screen.query_one(CommandList)._options
        found = [str(o.hit.text) for o in options if hasattr(o, "hit")]  # not "No matches"
        if found:
            break
    await pilot.press("escape")
    await pilot.pause()
    return found


def five_nodes() -> NetuiApp:
    """An app over five scripted nodes receiving 1 … 5 Gb/s, not started."""
    from tests.synth import node_sample

    sources = [ScriptedSource(f"node{i}", lambda k, i=i: node_sample(k, rx_bps=i * 1e9)) for i in range(1, 6)]
    return make_app(Monitor(sources, interval_s=1.0, history_s=60), autostart=False)
