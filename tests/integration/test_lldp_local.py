"""LLDP on this host (the local node): netui runs the same lldpctl read as on a remote node,
and a host without lldpd gets a state, not an error. ~2 s."""

from __future__ import annotations

import pytest

import shutil
import stat
from pathlib import Path

from netui.collectors.lldp import STATE_NO_LLDPCTL, STATE_NOT_RUNNING, STATE_OK
from netui.collectors.local import LiveReader
from netui.engine.monitor import Monitor
from netui.engine.sources import LocalSource
from netui.model.node import NodeState

pytestmark = pytest.mark.slow  # reads this host through a real shell, with a hang


def _lldpd_answers_here() -> bool:
    try:
        return stat.S_ISSOCK(Path("/run/lldpd.socket").stat().st_mode)
    except OSError:
        return False


async def read_local_lldp() -> tuple[tuple, str, NodeState, str | None]:
    monitor = Monitor([LocalSource(LiveReader())], interval_s=0.2, history_s=10)
    try:
        done = await monitor.run_until(lambda: any(n.lldp_state not in ("not read", "reading")
                                                   for n in monitor.fleet),
                                       timeout_s=15)
        node = next(iter(monitor.fleet))
        assert done, f"no LLDP read on this host in 15 s: {node.state} {node.error}"
        return node.lldp, node.lldp_state, node.state, node.error
    finally:
        await monitor.close()


async def test_this_host_is_read_once_and_a_missing_lldpd_is_a_state():
    neighbours, state, node_state, error = await read_local_lldp()
    assert node_state is NodeState.UP and error is None  # never an error of the node
    if shutil.which("lldpctl", path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") is None:
        assert state == STATE_NO_LLDPCTL
    elif not _lldpd_answers_here():
        assert (neighbours, state) == ((), STATE_NOT_RUNNING)
    else:  # this host runs lldpd
        assert state == STATE_OK


async def test_this_host_is_read_again_only_when_asked():
    monitor = Monitor([LocalSource(LiveReader())], interval_s=0.2, history_s=10)
    node = next(iter(monitor.fleet))
    try:
        assert await monitor.run_until(lambda: node.lldp_state not in ("not read", "reading"), timeout_s=15)
        node.set_lldp((), "not read")
        for _ in range(3):
            await monitor.tick()
            assert not monitor.lldp.pending()  # read once: ticks do not read again
        assert node.lldp_state == "not read"
        monitor.lldp.refresh([node.name])
        assert await monitor.run_until(lambda: node.lldp_state not in ("not read", "reading"), timeout_s=15)
    finally:
        await monitor.close()


def test_a_snapshot_does_not_wait_long_for_a_read_that_hangs(tmp_path):
    """An lldpctl that never answers: the snapshot comes after a short wait, the node's LLDP
    state says the read was under way, and the hung lldpctl is gone afterwards."""
    import json
    import os
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "started"
    fake = bin_dir / "lldpctl"
    fake.write_text(f"#!/bin/sh\n: > '{marker}'\nexec sleep 47.25\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    r = subprocess.run([sys.executable, "-m", "netui", "snapshot", "--json", "--interval", "0.2"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    (node,) = json.loads(r.stdout)["nodes"]
    assert marker.exists()  # the fake lldpctl ran
    assert node["lldp"]["state"] == "reading", node["lldp"]
    left = subprocess.run(["pgrep", "-f", "sleep 47.25"], capture_output=True, text=True).stdout.split()
    assert not left, f"the hung lldpctl outlived the snapshot: {left}"
