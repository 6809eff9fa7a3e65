"""Benchmark: the instructions of one tick of the cluster screen at 1,024 nodes, under callgrind.

Run: python -m tests.bench.grid_instructions [--ticks 10] [--out /tmp/grid.cg]  (needs valgrind and gcc)

The same scripted fleet and terminal as tests/bench/bench_grid.py, the whole app
(``make_app``); after its warm-up ticks, ``--ticks`` ticks each with the screen's
``refresh_data()`` and the paint awaited (a pilot pause), then as many ticks with the pause
alone, then as many with ``refresh_data()`` alone counted (the paint after it not). Callgrind collects only around those two (the fleet's own tick is not counted; the
cyclic GC runs before each): the difference of the two, per tick, is what a tick costs the UI
— the sort, the cells, the status bar, the totals row, Textual's compositor and the frame
written. The three phases are dumped apart (OUT.1, OUT.2, OUT.3), then the parts of a
tick, each counted alone (``measure_parts``: OUT.4 on); ``callgrind_annotate OUT.1`` names
the interpreter's C functions, not Python's, so for where it goes in Python use
``--profile`` (cProfile of the same ticks, no valgrind).

Collection is turned on and off from Python through callgrind's client requests, made by a
tiny C library built on first use (gcc, ``valgrind/callgrind.h``) into the temp directory.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.bench.bench_grid import SIZE, WARMUP_TICKS, scripted_fleet

_C = r"""
#include <valgrind/callgrind.h>
void start(void) { CALLGRIND_START_INSTRUMENTATION; }
void toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void dump(const char *why) { CALLGRIND_DUMP_STATS_AT(why); }
"""


def _requests() -> ctypes.CDLL:
    """callgrind's client requests as C functions (no-ops outside valgrind)."""
    lib = Path(tempfile.gettempdir()) / "netui-callgrind-requests.so"
    if not lib.exists():
        src = lib.with_suffix(".c")
        src.write_text(_C)
        subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return ctypes.CDLL(str(lib))


async def measure(ticks: int, requests, profile: bool, parts: bool = False) -> None:
    from netui.ui.app import make_app

    monitor = scripted_fleet_for(ticks)
    app = make_app(monitor, autostart=False)
    monitor.on_update = None  # each tick is shown below
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(WARMUP_TICKS):
            await monitor.tick()
            app.refresh_screen()
            await pilot.pause()
        requests.start()
        for phase in ("refresh", "idle", "refresh_data"):
            for _ in range(ticks):
                await monitor.tick()
                await pilot.pause()
                gc.collect()
                requests.toggle()
                if profiler is not None and phase == "refresh":
                    profiler.enable()
                if phase != "idle":
                    app.refresh_screen()
                if phase == "refresh_data":  # the screen's own work alone, not the paint
                    requests.toggle()
                await pilot.pause()
                if profiler is not None:
                    profiler.disable()
                if phase != "refresh_data":
                    requests.toggle()
            requests.dump(phase.encode())
        if parts:
            await measure_parts(ticks, requests, app, monitor, pilot)
    if profiler is not None:
        import pstats

        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


PARTS = ("grid.show", "totals row", "status bar", "rows formatted", "paint")


async def measure_parts(ticks: int, requests, app, monitor, pilot) -> None:
    """Each of PARTS counted alone, ``ticks`` times, each after a fresh tick: the grid's
    ``show()``, the totals row, the status bar, the rows on screen formatted (``_format``),
    and the screen's paint after ``refresh_data()`` (the compositor's update of the widgets
    refreshed, the rows formatted in it; the messages that lead to it not counted)."""
    from netui.ui.status import StatusBar

    screen = app.screen
    grid = screen.grid
    status = screen.query_one(StatusBar)
    counted = {
        "grid.show": lambda: grid.show(app.fleet),
        "totals row": lambda: screen._show_totals(app),
        "status bar": lambda: status.update_from(app, sort="▼worst", filter=grid.filter, totals=False,
                                                 marked=len(grid.marked)),
        "rows formatted": lambda: [grid._format(n) for n in grid._lines[grid.scroll_offset.y:][: grid.size.height]],
    }
    paint = screen._compositor_refresh  # (called by the screen's update timer, after the refresh's messages)
    painting = []

    def counted_paint() -> None:
        if painting:
            painting.clear()
            gc.collect()
            requests.toggle()
            paint()
            requests.toggle()
        else:
            paint()

    screen._compositor_refresh = counted_paint
    for part in PARTS:
        for _ in range(ticks):
            await monitor.tick()
            await pilot.pause()
            app.refresh_screen()
            if part == "paint":
                painting.append(True)
            else:
                gc.collect()
                requests.toggle()
                counted[part]()
                requests.toggle()
            await pilot.pause()
        requests.dump(part.encode())
    screen._compositor_refresh = paint


def scripted_fleet_for(ticks: int):
    import tests.bench.bench_grid as bench

    bench.TICKS = (3 + len(PARTS)) * ticks  # the scripted counters run as long as the phases
    return scripted_fleet()


def total(path: str) -> int:
    for line in Path(path).read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise ValueError(f"no totals in {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=10)
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "netui-grid.cg"))
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help="cProfile the refreshed ticks instead (no valgrind)")
    args = parser.parse_args()
    if args.inside or args.profile:
        requests = _requests() if args.inside else type("NoRequests", (), {
            "start": staticmethod(lambda: None), "toggle": staticmethod(lambda: None),
            "dump": staticmethod(lambda why: None)})()
        asyncio.run(measure(args.ticks, requests, args.profile, parts=True))
        return
    _requests()  # built before valgrind starts
    for old in Path(args.out).parent.glob(Path(args.out).name + "*"):
        old.unlink()
    subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                    f"--callgrind-out-file={args.out}", sys.executable, "-m", "tests.bench.grid_instructions",
                    "--inside", "--ticks", str(args.ticks)], check=True, stderr=subprocess.DEVNULL)
    refresh, idle, screen = (total(f"{args.out}.{i}") / args.ticks / 1e6 for i in (1, 2, 3))
    print(f"{SIZE[0]}×{SIZE[1]}, 1,024 nodes, {args.ticks} ticks each: "
          f"with the refresh {refresh:.2f} M instructions a tick, the pause alone {idle:.2f} M; "
          f"the refresh and its paint: {refresh - idle:.2f} M a tick, "
          f"of which the screen's refresh_data() {screen:.2f} M")
    for i, part in enumerate(PARTS, start=4):
        print(f"  {part:>14}: {total(f'{args.out}.{i}') / args.ticks / 1e6:6.2f} M a tick")


if __name__ == "__main__":
    main()
