"""The live app survives a node of impossible numbers and keeps rendering; a widget's own bug
ends netui with its traceback and a non-zero status, never a silent 0."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

from netui.model.node import NodeState
from netui.ui.cluster import ClusterScreen
from netui.ui.render import spark
from tests.factories import make_iface, make_sample, write_ticks
from tests.pilot import on_screen, poll, pressed, scripted_app
from tests.synth import ScriptedSource, node_sample

REPO = Path(__file__).resolve().parents[2]
U64 = (1 << 64) - 1


def liar(i: int):
    """A node whose clock advances by 1e-300 s, whose counters are ±1.7e308 and whose wall
    clock is NaN, in turn; between them, samples that are fine."""
    k = i % 5
    base = float(i // 5) * 10.0
    if k == 1:
        return make_sample(base + 1e-300 if base else 1e-300, make_iface(rx_bytes=10**9 * (i + 1)))
    if k == 2:
        return make_sample(base + 1.0, make_iface(rx_bytes=1.7e308, tx_bytes=-1.7e308))
    if k == 3:
        return make_sample(base + 2.0, make_iface(rx_bytes=10), wall_s=float("nan"))
    return make_sample(base + 3.0 * (k == 4), make_iface(rx_bytes=1000 * i, speed_mbps=100_000))


def jumps(i: int):
    """Counters 0 → 1e9 → 2⁶⁴−1 → 5 …: valid counters, impossible rates."""
    return make_sample(float(i), make_iface(rx_bytes=(0, 10**9, U64, 5)[i % 4], speed_mbps=100_000))


def test_a_sparkline_of_infinities_and_nan_is_blanks_not_an_exception():
    assert spark([1.0, float("inf"), float("nan"), None, 2.0], 5) == "▅   █"
    assert spark([1.0, 2.0], 2, top=float("inf")) == spark([1.0, 2.0], 2) == spark([1.0, 2.0], 2, top=float("nan"))


async def test_the_app_keeps_rendering_a_node_of_impossible_numbers():
    app = scripted_app(lambda k, i: node_sample(i, rx_bps=4e10),
                       extra=[ScriptedSource("liar", liar), ScriptedSource("jumps", jumps)])
    async with app.run_test(size=(200, 30)) as pilot:
        seen = set()
        for _ in range(10):
            await poll(app, pilot, 1)
            assert app.is_running and app.return_code is None
            seen.add(app.monitor.fleet["liar"].state)
            text = on_screen(app)
            assert " inf" not in text and "nan" not in text.replace("wall=nan", "").lower(), text
        assert {NodeState.IMPOSSIBLE, NodeState.PARSE_ERROR, NodeState.UP} <= seen, seen
        assert app.monitor.fleet["jumps"].state is NodeState.UP
        assert "Tb/s" not in on_screen(app)  # 1.8e19 B/s would be "1.48e+08 Tb/s"
        # the node screen of the liar renders too
        grid_screen = app.screen
        assert isinstance(grid_screen, ClusterScreen)
        rows = [r[0] for r in grid_screen.query_one("FleetGrid").rows_text()]
        for _ in range(rows.index("liar")):
            await pressed(pilot, "down")
        screen = await pressed(pilot, "enter")
        assert screen is not grid_screen
        for _ in range(5):
            await poll(app, pilot, 1)
            assert app.is_running and " inf" not in on_screen(app)
        await pressed(pilot, "escape")
        assert app.is_running and app.return_code is None


CRASHING_WIDGET = """
import sys
from netui.ui.grid import FleetGrid

def boom(*args, **kwargs):
    raise RuntimeError("a widget's own bug")

FleetGrid.render_line = boom  # the grid fails as it paints
from netui.cli import main
raise SystemExit(main())
"""


def test_an_exception_in_a_widget_ends_netui_with_its_traceback_and_status_1(tmp_path):
    rec = tmp_path / "run.ndjson.gz"
    w, _ = write_ticks(rec, 6)
    w.close()
    pid, fd = pty.fork()
    if pid == 0:  # the child: netui on a terminal of 120 x 30
        os.chdir(REPO)
        os.execv(sys.executable, [sys.executable, "-c", CRASHING_WIDGET, "--replay", str(rec)])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    out = b""
    deadline = time.monotonic() + 60  # a bound on a hang, not a timing
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the child has gone
                    break
                if not chunk:
                    break
                out += chunk
        else:
            os.kill(pid, signal.SIGKILL)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    text = out.decode("utf-8", "replace")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1, (status, text[-2000:])
    assert "a widget's own bug" in text and "RuntimeError" in text, text[-2000:]
