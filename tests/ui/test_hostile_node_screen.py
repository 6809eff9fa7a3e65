"""A node of 100,000 interfaces: its screen shows the first ones with a count of the rest,
and q still quits. (Over SSH the decoder keeps 4,096; other sources may list more.)"""

from __future__ import annotations

from array import array

import pytest

from netui.collectors.assemble import interfaces_from_texts
from netui.model.samples import CounterTable, NodeSample
from netui.ui.node import IFACES_SHOWN, NodeScreen
from netui.ui.panels import InterfacePanel
from tests.pilot import pause_until, plain, running, scripted_app

COUNT = 100_000
NAMES = tuple(f"v{i:06d}" for i in range(COUNT))


def wide_sample(i: int) -> NodeSample:
    counters = array("Q", [1000 * i]) * (16 * COUNT)
    interfaces = interfaces_from_texts(CounterTable(NAMES, counters), {})
    return NodeSample(wall_s=1_700_000_000.0 + i, mono_s=float(i), boot_id="b1", interfaces=interfaces, tcp=None,
                      cpu=None, softirqs=None, softnet=None, hostname="wide", problems=())


@pytest.mark.slow
async def test_a_node_of_100000_interfaces_shows_the_first_ones_and_a_count_and_q_quits():
    app = scripted_app(lambda k, i: wide_sample(i))
    async with running(app, (120, 40), polls=2) as pilot:
        app.open_node("gpu01")
        assert await pause_until(pilot, lambda: isinstance(app.screen, NodeScreen)
                                 and len(app.screen.query(InterfacePanel)) > 0, 30)
        await app.monitor.poll_once()
        await pilot.pause()
        screen = app.screen
        assert len(screen.query(InterfacePanel)) == IFACES_SHOWN == 32
        more = plain(screen.query_one("#ifaces-more"))
        assert f"… and {COUNT - IFACES_SHOWN:,} more interfaces" in more
        await pilot.press("q")
        assert await pause_until(pilot, lambda: not app.is_running, 30)
