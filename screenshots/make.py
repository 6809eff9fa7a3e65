"""Regenerate the SVG screenshots from the replayed lab capture (never drawn by hand).

    python screenshots/make.py

The capture (tests/data/lab-capture.jsonl) was recorded over SSH from the 4-node lab by
`python -m tests.lab.capture`: node1 → node2 at full speed, node3 → node4 through a lossy
link (TCP retransmits on node3), oversized don't-fragment pings dropped by node4's MTU.

node-rdma.svg is a node whose RDMA ports are a copy of the captured prometheus-procfs
/sys/class/infiniband tree (hfi1, mlx4 with two ports, mlx5 with hw_counters), its counters
bumped every poll as a job would (tests/fabric_tree.py RdmaTreeNode), read by the real
reader and parsers.

The replay screenshot plays a recording made from that capture by the real recorder, with
two saved lab tests recorded on the way (tests/replayed.py).

fabric.svg replays the two-tier capture (tests/data/fabric-capture.ndjson.gz, recorded by
`python -m tests.lab.capture_fabric`: a ring over 3 leaves of 2, leaf2's uplink shaped to
200 Mbit/s) with its topology, grouped by leaf.

The matrix screen shows a saved pair test of the lab (tests/data/pairtest-lab-tbf-node3.json):
`netui bench iperf3 node[1-4] --matrix --json --direction both -t 2 --threshold-gbps 2`
with `tc qdisc add dev <node3's root-side veth> root tbf rate 200mbit burst 64kb latency 50ms`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from netui.engine.monitor import Monitor  # noqa: E402
from netui.engine.recording.playback import load  # noqa: E402
from netui.engine.sources import ReplaySource  # noqa: E402
from netui.ui.app import make_app  # noqa: E402

CAPTURE = ROOT / "tests" / "data" / "lab-capture.jsonl"
PAIR_TEST = ROOT / "tests" / "data" / "pairtest-lab-tbf-node3.json"
TICKS = 30  # into the capture: traffic has been flowing for ~25 s


def replay_app():
    recording = load(str(CAPTURE)).samples_by_node()
    sources = [ReplaySource(name, samples) for name, samples in sorted(recording.items())]
    return make_app(Monitor(sources, interval_s=1.0, history_s=900), autostart=False)


async def shoot(size: tuple[int, int], name: str, keys: tuple[str, ...] = ()) -> None:
    app = replay_app()
    async with app.run_test(size=size) as pilot:
        for _ in range(TICKS):
            await app.monitor.tick()
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await app.monitor.tick()
            await pilot.pause()
        await pilot.pause(0.2)
        path = app.save_screenshot(filename=f"{name}.svg", path=str(HERE))
        print(path)


async def shoot_matrix(size: tuple[int, int], name: str) -> None:
    import json

    from netui.checks.pairs.report import load_report
    from netui.checks.pairs.screen import MatrixScreen

    app = replay_app()
    async with app.run_test(size=size) as pilot:
        for _ in range(TICKS):
            await app.monitor.tick()
        app.push_screen(MatrixScreen(report=load_report(json.loads(PAIR_TEST.read_text()))))
        await pilot.pause()
        await pilot.pause(0.2)
        print(app.save_screenshot(filename=f"{name}.svg", path=str(HERE)))


LATENCY_TEST = ROOT / "tests" / "data" / "latency-lab-loss-node3.json"


async def shoot_latency(size: tuple[int, int], name: str) -> None:
    """A saved lab ping matrix: 40 % of ICMP echoes dropped in node3 (nftables)."""
    import json

    from netui.checks.latency.report import load_report
    from netui.checks.latency.screen import LatencyScreen

    app = replay_app()
    async with app.run_test(size=size) as pilot:
        for _ in range(TICKS):
            await app.monitor.tick()
        app.push_screen(LatencyScreen(report=load_report(json.loads(LATENCY_TEST.read_text()))))
        await pilot.pause()
        await pilot.pause(0.2)
        print(app.save_screenshot(filename=f"{name}.svg", path=str(HERE)))


async def shoot_rdma(size: tuple[int, int], name: str) -> None:
    """The node screen of a node fed from a copy of the captured RDMA tree."""
    import tempfile

    from tests.fabric_tree import RdmaTreeNode, RdmaTreeSource

    with tempfile.TemporaryDirectory() as tmp:
        source = RdmaTreeSource(RdmaTreeNode(Path(tmp) / "sys"))
        app = make_app(Monitor([source], interval_s=1.0, history_s=900), autostart=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(TICKS):
                await app.monitor.tick()
            await pilot.pause()
            await pilot.press("enter")
            await app.monitor.tick()
            await pilot.pause()
            screen = app.screen
            screen.query_one("#node-body").scroll_to(y=screen.query_one("#ports").region.y - 5, animate=False)
            await pilot.pause(0.2)
            print(app.save_screenshot(filename=f"{name}.svg", path=str(HERE)))


async def shoot_replay(size: tuple[int, int], name: str) -> None:
    """netui replay of a version 2 lab recording (tests/replayed.py): 15 s in, paused."""
    import tempfile

    from netui.engine.recording.playback import load
    from netui.engine.replay import ReplayMonitor
    from tests.replayed import record_lab_replay

    with tempfile.TemporaryDirectory() as tmp:
        path = await record_lab_replay(Path(tmp) / "lab.ndjson.gz")
        app = make_app(ReplayMonitor(load(path), history_s=900), autostart=False)
        async with app.run_test(size=size) as pilot:
            await app.monitor.tick()
            await pilot.press("right")
            for _ in range(5):
                await app.monitor.tick()
            await pilot.press("p")
            await pilot.pause()
            await pilot.pause(0.2)
            print(app.save_screenshot(filename=f"{name}.svg", path=str(HERE)))


FABRIC = ROOT / "tests" / "data" / "fabric-capture.ndjson.gz"
FABRIC_TOPOLOGY = ROOT / "tests" / "data" / "fabric-capture-topology.toml"


async def shoot_fabric(size: tuple[int, int], name: str) -> None:
    """The two-tier capture (tests/lab/capture_fabric.py) replayed with its topology, grouped
    by leaf (g): leaf2's uplink named in the status line and its leaf row, its nodes slowed by it."""
    from netui.collectors.topology_files import parse_topology_toml

    recording = load(str(FABRIC)).samples_by_node()
    sources = [ReplaySource(n, samples) for n, samples in sorted(recording.items())]
    monitor = Monitor(sources, interval_s=1.0, history_s=900)
    monitor.fleet.topology = parse_topology_toml(FABRIC_TOPOLOGY.read_text(), str(FABRIC_TOPOLOGY.name))
    monitor.fleet.topology_source = FABRIC_TOPOLOGY.name
    app = make_app(monitor, autostart=False)
    async with app.run_test(size=size) as pilot:
        for _ in range(TICKS):
            await app.monitor.tick()
        await pilot.pause()
        await pilot.press("g")
        await app.monitor.tick()
        await pilot.pause(0.2)
        print(app.save_screenshot(filename=f"{name}.svg", path=str(HERE)))


async def main() -> None:
    await shoot((100, 30), "cluster")
    await shoot((160, 30), "cluster-wide")
    await shoot((120, 48), "node", ("enter",))  # the worst node: node3, retransmitting
    await shoot_matrix((110, 32), "matrix")  # a pair test: tbf towards node3
    await shoot_latency((120, 34), "latency")  # a ping matrix: loss at node3
    await shoot_rdma((150, 52), "node-rdma")  # HCA ports fed from the captured RDMA tree
    await shoot_replay((110, 30), "replay")  # netui replay: the timeline, events, position
    await shoot((100, 44), "help", ("question_mark",))  # every key, as the help screen lists them
    await shoot_fabric((100, 20), "fabric")  # a ring across 3 leaves, leaf2's uplink shaped: the uplink named


if __name__ == "__main__":
    asyncio.run(main())
