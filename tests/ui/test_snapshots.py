"""SVG snapshots of both screens, fed by the scripted cluster (deterministic pictures).

After an intended change of the look: `pytest tests/ui/test_snapshots.py --snapshot-update`,
then look at the report before committing the new SVGs.
"""

from __future__ import annotations

import pytest

from netui.engine.monitor import Monitor
from netui.ui.app import make_app
from tests.pilot import demo_app


async def _polled(pilot, n=20):
    for _ in range(n):
        await pilot.app.monitor.poll_once()
    await pilot.pause()


def test_cluster_screen_80x24(snap_compare):
    assert snap_compare(demo_app(), terminal_size=(80, 24), run_before=_polled)


@pytest.mark.slow
def test_cluster_screen_wide(snap_compare):
    assert snap_compare(demo_app(), terminal_size=(160, 30), run_before=_polled)


@pytest.mark.slow
def test_node_screen(snap_compare):
    async def open_worst_up_node(pilot):
        await _polled(pilot)
        await pilot.press("down", "enter")  # gpu02: the first row is gpu03 (down)
        await _polled(pilot, 2)

    assert snap_compare(demo_app(), terminal_size=(120, 40), run_before=open_worst_up_node)


@pytest.mark.slow
def test_node_screen_of_an_rdma_node(snap_compare, tmp_path):
    """A node fed from a copy of the captured RDMA tree, its counters bumped poll after poll:
    a panel per HCA port, the counters that moved, PFC of mlx5_0's netdev."""
    from tests.fabric_tree import RdmaTreeNode, RdmaTreeSource

    app = make_app(Monitor([RdmaTreeSource(RdmaTreeNode(tmp_path / "sys"))], interval_s=1.0, history_s=120),
                   autostart=False)

    async def open_it(pilot):
        await _polled(pilot)
        await pilot.press("enter")
        await _polled(pilot, 2)
        screen = pilot.app.screen
        screen.query_one("#node-body").scroll_to(y=screen.query_one("#ports").region.y - 4, animate=False)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(130, 50), run_before=open_it)


# --- replay: the lab recording (tests/replayed.py), with its timeline ---------------------------


def lab_replay_app(tmp_path):
    from netui.engine.recording.playback import load
    from netui.engine.replay import ReplayMonitor
    from tests.replayed import lab_replay

    path = lab_replay(tmp_path / "lab.ndjson.gz")
    return make_app(ReplayMonitor(load(path), history_s=900), autostart=False)


async def _replayed_to_15s(pilot):
    await pilot.app.monitor.tick()
    await pilot.press("right")
    for _ in range(5):
        await pilot.app.monitor.tick()
    await pilot.press("p")  # paused at 0:15
    await pilot.pause()


@pytest.mark.slow
def test_replay_cluster_screen(snap_compare, tmp_path):
    assert snap_compare(lab_replay_app(tmp_path), terminal_size=(110, 30), run_before=_replayed_to_15s)


@pytest.mark.slow
def test_replay_node_screen(snap_compare, tmp_path):
    async def open_node3(pilot):
        await _replayed_to_15s(pilot)
        await pilot.press("enter")  # node3: retransmitting, the first row
        await pilot.pause()

    assert snap_compare(lab_replay_app(tmp_path), terminal_size=(120, 40), run_before=open_node3)
