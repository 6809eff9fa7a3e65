"""Benchmark: `netui` start to the first painted frame with data, in a real tmux pane: the
node row up and the footer with its keys (the whole first screen, not a part of it).

Run: python -m tests.bench.bench_startup
Side by side in the same run: the floor, a minimal Textual app that paints one line, and
netui on the stock asyncio loop (``NETUI_EVENT_LOOP=asyncio``; netui runs on uvloop where it
is installed). Each is started RUNS times, interleaved; the median wall time from launch
until the text is on the tmux screen is printed, with the ratio. Target: netui ≤ 1 s.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
import uuid

RUNS = 5
FLOOR_APP = (
    "from textual.app import App\n"
    "from textual.widgets import Static\n"
    "class A(App):\n"
    "    def compose(self):\n"
    "        yield Static('floor-ready')\n"
    "A().run()\n"
)


def time_to_screen(command: str, *markers: str, timeout_s: float = 20) -> float:
    """Seconds from launch until every marker is on the tmux screen at once."""
    session = f"netui-bench-{uuid.uuid4().hex[:6]}"
    for attempt in range(3):  # a tmux server that is exiting (its last session just ended) refuses once
        t0 = time.monotonic()
        started = subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "30", command])
        if started.returncode == 0:
            break
        time.sleep(0.2)
    else:
        raise RuntimeError(f"tmux could not start {command!r}")
    try:
        while time.monotonic() - t0 < timeout_s:
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
            if all(m in screen for m in markers):
                return time.monotonic() - t0
            time.sleep(0.005)
        raise RuntimeError(f"{markers!r} did not appear within {timeout_s} s")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def main() -> None:
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed (apt-get install tmux)")
    # the whole first frame: the node row up, and the footer with its keys
    netui, stock, floor = [], [], []
    for _ in range(RUNS):
        netui.append(time_to_screen(f"env -u NETUI_EVENT_LOOP {sys.executable} -m netui", " up ", "Quit"))
        stock.append(time_to_screen(f"env NETUI_EVENT_LOOP=asyncio {sys.executable} -m netui", " up ", "Quit"))
        floor.append(time_to_screen(f"{sys.executable} -c \"{FLOOR_APP}\"", "floor-ready"))
    n, a, f = statistics.median(netui), statistics.median(stock), statistics.median(floor)
    print(f"netui start → first frame with the node row: {n * 1000:6.0f} ms median of {RUNS} (target ≤ 1000 ms)")
    print(f"the same on the stock asyncio loop:          {a * 1000:6.0f} ms median of {RUNS}")
    print(f"floor: minimal Textual app → first frame:    {f * 1000:6.0f} ms median of {RUNS}")
    print(f"ratio netui / floor:                          {n / f:6.2f}×")


if __name__ == "__main__":
    main()
