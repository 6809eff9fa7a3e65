"""A fabric suspect on screen: the header names leaf2's uplink without a key press, the grouped
grid's leaf2 row says why, and the nodes it slows are its victims, at 80×24 and wide. Pilot
tests on scripted nodes whose sockets report a ring across three leaves."""

from __future__ import annotations

from dataclasses import replace

import pytest

from netui.engine.monitor import Monitor
from netui.model.flows import PeerCounters, PeerSample
from netui.model.topology import Attachment, Switch, Topology
from netui.ui.app import make_app
from tests.pilot import on_screen, plain, poll, pressed
from tests.synth import ScriptedSource, node_sample

pytestmark = pytest.mark.slow  # pilot tests: the full run, not the fast loop

NAMES = [f"n{i}" for i in range(1, 7)]  # n1, n2 on leaf1; n3, n4 on leaf2; n5, n6 on leaf3
ADDRESS = {n: f"198.18.0.{i}" for i, n in enumerate(NAMES, 1)}
# a ring, bytes/s: the two flows across leaf2's uplink held at 300 Mbit/s
SENDS = {a: (NAMES[(i + 1) % 6], 37.5e6 if a in ("n2", "n4") else 125e6) for i, a in enumerate(NAMES)}


def peer_sample(name: str, t: int) -> PeerSample:
    peer, rate = SENDS[name]
    sender = next(a for a, (b, _) in SENDS.items() if b == name)
    rows = (PeerCounters(ADDRESS[peer], 1, int(rate * t), int(rate * 0.02 * t), 0, int(rate), 200, 200),
            PeerCounters(ADDRESS[sender], 1, int(SENDS[sender][1] * 0.02 * t), int(SENDS[sender][1] * t), 0, 0,
                         200, 200))
    return PeerSample(1000.0 + t, sockets=2, peers_seen=2, peers=rows, local_addresses=(ADDRESS[name],))


def sample(name: str, k: int):
    tx = SENDS[name][1] * 8
    rx = next(r for a, (b, r) in SENDS.items() if b == name) * 8
    return replace(node_sample(k, rx_bps=rx, tx_bps=tx), peers=peer_sample(name, k))


def fabric_app():
    monitor = Monitor([ScriptedSource(n, lambda k, n=n: sample(n, k)) for n in NAMES], interval_s=1.0, history_s=60)
    monitor.fleet.topology = Topology(
        [Switch("spine")] + [Switch(f"leaf{l}", "spine") for l in (1, 2, 3)],
        [Attachment(n, f"leaf{(i - 1) // 2 + 1}") for i, n in enumerate(NAMES, 1)])
    monitor.fleet.topology_source = "fabric.toml"
    return make_app(monitor, autostart=False)


@pytest.mark.parametrize("size", [(80, 24), (140, 30)])
async def test_the_header_and_the_leaf_row_name_the_uplink_and_its_nodes_are_its_victims(size):
    app = fabric_app()
    async with app.run_test(size=size) as pilot:
        await poll(app, pilot, 5)
        fleet = app.monitor.fleet
        assert [s.name for s in fleet.fabric_suspects] == ["leaf2 uplink"]
        assert fleet.stragglers == []
        assert {v.node: v.slowed_by for v in fleet.victims} == {n: ("leaf2 uplink",) for n in ("n2", "n3", "n4", "n5")}
        header = plain(app.screen.query_one("#status"))
        assert "straggler leaf2 uplink" in header, header
        await pressed(pilot, "g")
        text = on_screen(app)
        row = next(line for line in text.splitlines() if line.lstrip().startswith("▾ leaf2"))
        assert "slow uplink " in row or "straggler: uplink common to 2 slow flows" in row, text
        assert all(len(line) <= size[0] for line in text.splitlines())
