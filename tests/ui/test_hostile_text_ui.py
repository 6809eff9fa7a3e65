"""Hostile text on screen: nodes whose hostname, interface names and last words on stderr
hold every C0/C1 control and OSC 52/OSC 0/CSI/DCS sequence (the real sampler on a crafted
tree over SSH on 127.0.0.1, a sampler that exits with such words, this host's reader on such
a tree). Neither the grid with its Why column, nor a node's screen, nor the SVG of either
holds a character a terminal would obey: the sequences are shown with their escapes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid

import pytest

from netui.collectors.local import TreeReader
from netui.collectors.ssh import SshSource
from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.engine.monitor import Monitor
from netui.engine.sources import LocalSource
from netui.model.node import NodeState
from netui.ui.app import make_app
from netui.ui.node import NodeScreen
from tests.hostile_text import VISIBLE, hostile_ssh_server, hostile_tree, leaked
from tests.pilot import pause_until


def on_screen(app) -> str:
    """Every character the app would paint now, line by line (the compositor's strips)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())  # noqa: SLF001


@pytest.fixture
async def hostile_app(tmp_path):
    async with hostile_ssh_server(tmp_path) as config:
        procfs, sysfs = hostile_tree(tmp_path / "local")
        connector = SshConnector(SshSettings(config_paths=[str(config)], connect_timeout_s=10,
                                             backoff_first_s=60, backoff_max_s=60))
        sources = [LocalSource(TreeReader(str(procfs), str(sysfs)))]
        sources += [SshSource(s, "127.0.0.1", connector, user=s) for s in ("names", "exits", "nopython")]
        yield make_app(Monitor(sources, interval_s=0.5, history_s=30, connector=connector))


@pytest.mark.slow
async def test_hostile_names_and_reasons_never_reach_the_screen(hostile_app):
    app = hostile_app
    fleet = app.monitor.fleet
    local = next(n.name for n in fleet if n.name.startswith("evil"))

    def settled() -> bool:
        return (fleet["names"].samples_seen >= 2 and fleet[local].samples_seen >= 2
                and fleet["exits"].state is NodeState.DOWN and fleet["nopython"].state is NodeState.UNSUPPORTED)

    async with app.run_test(size=(200, 40)) as pilot:
        assert await pause_until(pilot, settled, 60), {n.name: (n.state, n.error) for n in fleet}
        await pilot.pause(0.6)  # a tick paints what the fleet holds
        grid = on_screen(app)
        assert leaked(grid) == [] and leaked(app.export_screenshot()) == []
        assert "evil\\x00" in grid and "no python3" in grid  # the hostile node's row and the Why column
        for name in (local, "names", "exits", "nopython"):
            app.push_screen(NodeScreen(name))
            await pilot.pause(0.6)
            shown = on_screen(app)
            assert leaked(shown) == [] and leaked(app.export_screenshot()) == [], name
            if name in ("exits", "nopython"):
                assert VISIBLE in shown.replace("\n", "") or "\\x1b" in shown, name
            else:
                assert "evil\\x01\\x02" in shown, name  # the hostile interface's panel, escapes visible
            await pilot.press("escape")
            await pilot.pause()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (tests/run.sh installs it as root)")
def test_in_tmux_a_hostile_node_writes_no_paste_buffer_and_no_title(tmp_path):
    """The real command in a tmux of its own that obeys OSC 52 (set-clipboard on): the grid and
    the node screen of a tree whose hostname and interface hold clipboard and title sequences
    leave tmux with no paste buffer and its own pane title."""
    procfs, sysfs = hostile_tree(tmp_path)
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g set-clipboard on\nset -g allow-rename on\n")
    server = ["tmux", "-L", f"netui-hostile-{uuid.uuid4().hex[:8]}", "-f", str(conf)]
    cmd = f"{sys.executable} -m netui --interval 0.5 --procfs {procfs} --sysfs {sysfs}"
    try:
        subprocess.run([*server, "new-session", "-d", "-s", "t", "-x", "200", "-y", "40", cmd], check=True)
        title = subprocess.run([*server, "display", "-p", "-t", "t", "#{pane_title}"], capture_output=True, text=True).stdout

        def wait_for(text: str, timeout_s: float = 30) -> str:
            deadline = time.monotonic() + timeout_s
            screen = ""
            while time.monotonic() < deadline:
                screen = subprocess.run([*server, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True).stdout
                if text in screen:
                    return screen
                time.sleep(0.2)
            raise AssertionError(f"{text!r} never appeared; screen was:\n{screen}")

        wait_for(" up ")  # the node's row
        grid = wait_for("b/s")
        subprocess.run([*server, "send-keys", "-t", "t", "Enter"], check=True)
        try:
            node = wait_for("› evil", timeout_s=15)  # its node screen
        except AssertionError as exc:  # a screen the node's sequences broke: the buffers tell
            node = str(exc)
        time.sleep(1.0)  # a few more frames painted
        buffers = subprocess.run([*server, "list-buffers"], capture_output=True, text=True).stdout
        now = subprocess.run([*server, "display", "-p", "-t", "t", "#{pane_title}"], capture_output=True, text=True).stdout
        assert buffers == "" and "HACKED" not in now and now == title
        assert "evil" in grid and "› evil\\x00\\x01" in node  # shown, escapes visible
        subprocess.run([*server, "send-keys", "-t", "t", "q"], check=True)
    finally:
        subprocess.run([*server, "kill-server"], capture_output=True)
