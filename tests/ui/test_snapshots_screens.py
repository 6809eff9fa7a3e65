"""SVG snapshots of the screens test_snapshots.py leaves out — help, ring order, doctor, pair
test matrix, latency matrix, peer matrix, probe mesh, pair-test and latency dialogs, command palette — at
80x24, each fed by scripted sources or a replayed recording (no network, fixed data:
deterministic pictures).

After an intended change of the look: `pytest tests/ui/test_snapshots_screens.py
--snapshot-update`, then look at the report before committing the new SVGs.
"""

from __future__ import annotations

import dataclasses

import pytest
from textual.command import CommandPalette

from netui.engine.monitor import Monitor
from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from netui.model.topology import Attachment, Switch, Topology
from netui.ui.app import make_app
from tests.pilot import SETTLED, demo_app, pause_until, scripted_app
from tests.replayed import lab_replay
from tests.synth import ScriptedSource, node_sample

pytestmark = pytest.mark.slow  # pilot tests: the full run, not the fast loop

SIZE = (80, 24)


async def _polled(pilot, n=SETTLED):
    for _ in range(n):
        await pilot.app.monitor.poll_once()
    await pilot.pause()


def test_help_screen(snap_compare):
    async def open_help(pilot):
        await _polled(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(demo_app(), terminal_size=SIZE, run_before=open_help)


def test_help_screen_scrolled_to_the_end(snap_compare):
    async def open_help_at_end(pilot):
        await _polled(pilot)
        await pilot.press("question_mark", "G")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(demo_app(), terminal_size=SIZE, run_before=open_help_at_end)


def interleaved_app():
    """Four nodes watched in the order a1 b1 a2 b2 on two leaves: every hop crosses leaves."""
    names = ["a1", "b1", "a2", "b2"]
    monitor = Monitor([ScriptedSource(n, lambda k: node_sample(k, rx_bps=1e9, tx_bps=1e9)) for n in names],
                      interval_s=1.0, history_s=120)
    monitor.fleet.topology = Topology(
        [Switch("spine"), Switch("leafA", "spine"), Switch("leafB", "spine")],
        [Attachment("a1", "leafA"), Attachment("a2", "leafA"), Attachment("b1", "leafB"), Attachment("b2", "leafB")])
    monitor.fleet.topology_source = "fabric.toml"
    return make_app(monitor, autostart=False)


def test_ring_screen(snap_compare):
    async def open_ring(pilot):
        await _polled(pilot)
        await pilot.press("o")
        await pilot.pause()

    assert snap_compare(interleaved_app(), terminal_size=SIZE, run_before=open_ring)


def odd_mtu_app():
    """gpu03 has MTU 1500, the other three 9000 (scripted nodes: their interfaces only)."""
    def sample(k, i):
        s = node_sample(i, rx_bps=1e9)
        eth0 = s.interfaces["eth0"]._replace(mtu=1500 if k == 3 else 9000)
        return dataclasses.replace(s, interfaces=s.interfaces | {"eth0": eth0})

    return scripted_app(sample)


def test_doctor_screen(snap_compare):
    async def run_doctor(pilot):
        await _polled(pilot)
        await pilot.press("D")
        screen = pilot.app.screen
        assert await pause_until(pilot, lambda: not screen.running and screen.report is not None, 20, 0.05)
        # "done in 0.0 s" is the run's wall time, which a busy machine stretches: fixed here
        screen.report.elapsed_s = 0.04
        screen.on_doctor_screen_finished(screen.Finished(screen.report))
        await pilot.pause()

    assert snap_compare(odd_mtu_app(), terminal_size=SIZE, run_before=run_doctor)


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory):
    return lab_replay(tmp_path_factory.mktemp("replay") / "lab.ndjson.gz")


def lab_replay_app(path):
    return make_app(ReplayMonitor(load(path), history_s=900), autostart=False)


async def _recorded_test(pilot, key):
    """The replay moved past both recorded tests, paused, and ``key`` showing the last one."""
    await pilot.app.monitor.tick()
    await pilot.press("right", "right", "right", "p")
    await pilot.pause()
    await pilot.press(key)
    await pilot.pause()


def test_pair_test_matrix_screen(snap_compare, lab_file):
    async def open_matrix(pilot):
        await _recorded_test(pilot, "T")

    assert snap_compare(lab_replay_app(lab_file), terminal_size=SIZE, run_before=open_matrix)


def test_latency_matrix_screen(snap_compare, lab_file):
    async def open_latency(pilot):
        await _recorded_test(pilot, "l")

    assert snap_compare(lab_replay_app(lab_file), terminal_size=SIZE, run_before=open_latency)


def test_peer_matrix_screen(snap_compare):
    """P: the flows between watched nodes (a ring with gpu03 slowed), at 80x24."""
    from tests.ui.test_peers_ui import app_with_peers

    async def open_peers(pilot):
        await _polled(pilot, 3)
        await pilot.press("P")
        await pilot.pause()

    assert snap_compare(app_with_peers(), terminal_size=SIZE, run_before=open_peers)


def mesh_app():
    """Four nodes on two leaves with the probe mesh on, node3's link losing 4 % of the probes
    both ways (tests/synth.py ``mesh_sources``)."""
    from netui.engine.mesh import MeshSettings
    from tests.synth import mesh_sources

    names = ["node1", "node2", "node3", "node4"]
    monitor = Monitor(mesh_sources(names, lambda a, b: 0.04 if "node3" in (a, b) else 0.0, rx_bps=1e9, tx_bps=1e9),
                      interval_s=1.0, history_s=120, mesh=MeshSettings())
    monitor.fleet.topology = Topology(
        [Switch("spine"), Switch("leafA", "spine"), Switch("leafB", "spine")],
        [Attachment("node1", "leafA"), Attachment("node3", "leafA"), Attachment("node2", "leafB"),
         Attachment("node4", "leafB")])
    return make_app(monitor, autostart=False)


def test_mesh_screen(snap_compare):
    """m: the probe mesh's loss heatmap leaf by leaf, node3's link named, the worst pairs, at 80x24."""
    async def open_mesh(pilot):
        await _polled(pilot, 14)
        await pilot.press("m")
        await pilot.pause()

    assert snap_compare(mesh_app(), terminal_size=SIZE, run_before=open_mesh)


def test_pair_test_dialog(snap_compare):
    """t with gpu02 marked and the cursor on gpu01: the pair test's settings, as a dialog
    that fits 80x24."""
    async def open_dialog(pilot):
        await _polled(pilot)
        await pilot.press("down", "space", "down", "t")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(demo_app(), terminal_size=SIZE, run_before=open_dialog)


def test_latency_dialog(snap_compare):
    """l with nothing marked: the latency test's settings over every node, as a dialog that
    fits 80x24."""
    async def open_dialog(pilot):
        await _polled(pilot)
        await pilot.press("l")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(demo_app(), terminal_size=SIZE, run_before=open_dialog)


def test_command_palette(snap_compare):
    """ctrl+p with "strag" typed: the palette finds the straggler's actions by their words."""
    async def open_palette(pilot):
        await _polled(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"strag")

        def found() -> bool:  # the palette's search for "strag" has ended and listed what it found
            palette = pilot.app.screen
            searching = any(w.group == CommandPalette._GATHER_COMMANDS_GROUP and not w.is_finished
                            for w in pilot.app.workers)
            return isinstance(palette, CommandPalette) and not searching and palette._hit_count > 0

        assert await pause_until(pilot, found, timeout_s=10)  # (a fixed pause was too short on a busy host)
        await pilot.pause()

    assert snap_compare(demo_app(), terminal_size=SIZE, run_before=open_palette)
