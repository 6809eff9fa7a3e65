"""The two-tier lab capture (tests/data/fabric-capture.ndjson.gz: a ring over 3 leaves of 2,
leaf2's uplink shaped to 200 Mbit/s, recorded over SSH by `netui record`) replayed with its
topology: from the third interval of the traffic on, leaf2's uplink is named in every tick,
no node is a straggler, and the four nodes whose flows cross it are slowed by it. Without the
topology the same recording names the slow senders, node2 and node4."""

from __future__ import annotations

import asyncio

from netui.collectors.topology_files import parse_topology_toml
from netui.engine.monitor import Monitor
from netui.engine.recording.playback import load
from netui.engine.sources import ReplaySource
from tests.testdata import data_path, data_text


def replay(topology: bool) -> list[tuple[list[str], list[str], dict]]:
    recording = load(str(data_path("fabric-capture.ndjson.gz"))).samples_by_node()
    monitor = Monitor([ReplaySource(n, s) for n, s in sorted(recording.items())], interval_s=1.0, history_s=120)
    if topology:
        monitor.fleet.topology = parse_topology_toml(data_text("fabric-capture-topology.toml"))
    out = []

    async def run():
        for _ in range(max(len(s) for s in recording.values())):
            await monitor.tick()
            f = monitor.fleet
            busy = all((n.summary.tx_bytes_per_s or 0) * 8 > 50e6 for n in f)
            out.append((busy, [s.name for s in f.fabric_suspects], [s.node for s in f.stragglers],
                        {v.node: v.slowed_by for v in f.victims}))

    asyncio.run(run())
    return out


def test_the_shaped_uplink_of_the_capture_is_named_and_none_of_its_nodes():
    ticks = replay(topology=True)
    busy = [i for i, t in enumerate(ticks) if t[0]]
    assert len(busy) >= 25, ticks
    judged = ticks[busy[0] + 3:busy[-1] - 2]  # the traffic's ramp-up and its end aside
    assert judged and all(links == ["leaf2 uplink"] for _, links, _, _ in judged), judged
    assert all(stragglers == [] for _, _, stragglers, _ in judged), judged
    crossing = {"node2", "node3", "node4", "node5"}
    assert all(set(v) <= crossing and set(v.values()) <= {("leaf2 uplink",)} for *_, v in judged), judged
    assert sum(1 for *_, v in judged if set(v) == crossing) >= 0.9 * len(judged), judged
    # the same recording without the topology: the slow senders are the stragglers
    flat = replay(topology=False)
    named = {n for t in flat[busy[0] + 3:busy[-1] - 2] for n in t[2]}
    assert named == {"node2", "node4"}, flat
