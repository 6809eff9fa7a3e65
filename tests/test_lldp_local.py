"""LLDP on this host (the local node): netui runs the same lldpctl read as on a remote node,
and a host without lldpd gets a state, not an error. ~2 s."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

from netui.collectors.lldp import STATE_NO_LLDPCTL, STATE_NOT_RUNNING, STATE_OK
from netui.collectors.local import LiveReader
from netui.engine.monitor import Monitor
from netui.engine.sources import LocalSource
from netui.model.node import NodeState


def _lldpd_answers_here() -> bool:
    try:
        return stat.S_ISSOCK(Path("/run/lldpd.socket").stat().st_mode)
    except OSError:
        return False


async def read_local_lldp() -> tuple[tuple, str, NodeState, str | None]:
    monitor = Monitor([LocalSource(LiveReader())], interval_s=0.2, history_s=10)
    try:
        done = await monitor.run_until(lambda: any(n.lldp_state != "not read" for n in monitor.fleet),
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
        assert await monitor.run_until(lambda: node.lldp_state != "not read", timeout_s=15)
        node.set_lldp((), "not read")
        for _ in range(3):
            await monitor.tick()
            assert not monitor.lldp.pending()  # read once: ticks do not read again
        assert node.lldp_state == "not read"
        monitor.lldp.refresh([node.name])
        assert await monitor.run_until(lambda: node.lldp_state != "not read", timeout_s=15)
    finally:
        await monitor.close()
