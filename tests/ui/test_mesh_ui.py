"""The probe mesh in the cockpit at 80x24: the Loss column, the suspect named in the Why column,
the status bar and the node screen, the mesh screen (m) — and what each says with the mesh off,
on without readings, or with too few probes. Scripted nodes with real mesh readings
(tests/synth.py ``mesh_sources``) through the real monitor, fleet and screens."""

from __future__ import annotations

import asyncio

import pytest

from netui.collectors.source import BaseSource
from netui.engine.mesh import MeshSettings
from netui.engine.monitor import Monitor
from netui.model.topology import Attachment, Switch, Topology
from netui.ui.app import make_app
from netui.ui.cluster import ClusterScreen
from netui.ui.mesh import MeshScreen
from tests.pilot import column, demo_app, grid_rows, on_screen, plain_wide, pressed, running
from tests.synth import mesh_sources

pytestmark = pytest.mark.slow  # pilot tests: the full run, not the fast loop

SIZE = (80, 24)
NODES = ["node1", "node2", "node3", "node4"]
JUDGED = 14  # polls after which node3's lossy link is named and held (4 % of 5 probes a second a pair)


def node3_lossy(a: str, b: str) -> float:
    return 0.04 if "node3" in (a, b) else 0.0


def mesh_app(loss_of=node3_lossy, *, probes: int = 5, topology: Topology | None = None, traffic_of=None,
             names=NODES):
    sources = mesh_sources(names, loss_of, probes=probes, traffic_of=traffic_of,
                           **({} if traffic_of else {"rx_bps": 1e9, "tx_bps": 1e9}))
    monitor = Monitor(sources, interval_s=1.0, history_s=60, mesh=MeshSettings())
    if topology is not None:
        monitor.fleet.topology = topology
    return make_app(monitor, autostart=False)


def status(app) -> str:
    return on_screen(app).splitlines()[0]


async def test_a_lossy_link_shows_in_the_loss_column_the_why_column_and_the_status_bar():
    app = mesh_app()
    async with running(app, SIZE, polls=JUDGED) as pilot:
        rows = {r[0]: r for r in grid_rows(app)}
        loss = dict(zip([r[0] for r in grid_rows(app)], column(app, "loss")))
        why = dict(zip([r[0] for r in grid_rows(app)], column(app, "health")))
        assert grid_rows(app)[0][0] == "node3"  # its own lossy link: a warning, worst first
        assert loss["node3"].endswith("%") and float(loss["node3"].rstrip("%")) > 2
        assert loss["node1"] != "0%"  # its pair with node3 loses: its figure, honestly
        assert why["node3"] in ("lossy: node3 link " + loss["node3"], "link loss " + loss["node3"])
        assert why["node1"] == why["node2"] == why["node4"] == ""
        assert "Loss" in on_screen(app).splitlines()[1] and "Drops/s" not in on_screen(app)
        assert "lossy node3 link" in status(app)
        assert set(rows) == set(NODES)
        await pilot.press("s", "s", "s", "s")  # worst, node, RX, TX, Loss
        assert app.screen.query_one("#grid").sort == "loss" and column(app, "loss")[0] == loss["node3"]


async def test_the_loss_column_says_nothing_until_enough_probes():
    # two nodes, one probe a second each way: 20 probes between them take ten seconds
    app = mesh_app(lambda a, b: 0.0, probes=1, names=["node1", "node2"])
    async with running(app, SIZE, polls=4) as pilot:
        assert column(app, "loss") == ["—", "—"]
        screen = await pressed(pilot, "m")
        heat = plain_wide(screen.query_one("#mesh-heat"))
        assert "·" in heat.splitlines()[1] and "0%" not in heat
        assert "too few probes" in plain_wide(screen.query_one("#mesh-worst"))


class QuietSampler(BaseSource):
    """A node streaming from a sampler the mesh steers (as an SSH node's), that has sent
    nothing yet."""

    push = True

    async def run(self, sink) -> None:
        await asyncio.Event().wait()

    def send_mesh(self, lines) -> bool:
        return True


def quiet_samplers(count: int) -> list[BaseSource]:
    out: list[BaseSource] = []
    for i in range(count):
        source = QuietSampler()
        source.name = f"node{i + 1}"
        out.append(source)
    return out


async def test_without_the_mesh_no_loss_column_and_its_screen_says_how_to_start_it():
    from tests.synth import demo_sources

    app = make_app(Monitor([*demo_sources(), *quiet_samplers(2)], interval_s=1.0, history_s=60), autostart=False)
    async with running(app, SIZE, polls=3) as pilot:
        assert "Loss" not in on_screen(app).splitlines()[1]
        screen = await pressed(pilot, "m")
        assert isinstance(screen, MeshScreen)
        assert "The probe mesh is off: it shows the packet loss between every two nodes watched over SSH" \
            in plain_wide(app.screen.query_one("#mesh-heat"))
        await pilot.press("escape")
        assert isinstance(app.screen, ClusterScreen)


@pytest.mark.parametrize(("samplers", "said"), [(0, "no node here is watched over SSH."),
                                                    (1, "only one node here is watched over SSH.")])
async def test_asked_for_with_fewer_than_two_ssh_nodes_the_mesh_is_off_and_its_screen_says_why(samplers, said):
    # (this host, node_exporter, Prometheus: nothing to probe from; one SSH node: nobody to probe)
    monitor = Monitor([*demo_app().monitor.sources, *quiet_samplers(samplers)], interval_s=1.0, history_s=60,
                      mesh=MeshSettings())
    assert monitor.mesh is None and not monitor.mesh_on and monitor.mesh_probers == samplers
    app = make_app(monitor, autostart=False)
    async with running(app, SIZE, polls=2) as pilot:
        await pressed(pilot, "m")
        heat = plain_wide(app.screen.query_one("#mesh-heat"))
        assert "The probe mesh is off: it needs two or more nodes watched over SSH" in heat and said in heat
        assert "no readings yet" not in heat and "--mesh on" not in heat


async def test_with_the_mesh_on_and_no_reading_yet_the_screen_says_so():
    from tests.synth import demo_sources

    monitor = Monitor([*demo_sources(), *quiet_samplers(2)], interval_s=1.0, history_s=60, mesh=MeshSettings())
    assert monitor.mesh_on and monitor.mesh_probers == 2
    app = make_app(monitor, autostart=False)
    async with running(app, SIZE, polls=2) as pilot:
        await pressed(pilot, "m")
        text = on_screen(app)
        assert "no readings yet" in text and "--mesh on" not in text


async def test_the_mesh_screen_shows_the_lossy_pairs_first_and_names_the_link():
    app = mesh_app()
    async with running(app, SIZE, polls=JUDGED) as pilot:
        screen = await pressed(pilot, "m")
        heat = plain_wide(screen.query_one("#mesh-heat"))
        assert heat.splitlines()[0].split()[-4:] == NODES
        row3 = next(line for line in heat.splitlines() if line.startswith("node3"))
        assert row3.count("%") == 3 and "0%" not in row3.replace("2.", "").split()
        assert "lossy node3 link:" in plain_wide(screen.query_one("#mesh-suspects"))
        worst = plain_wide(screen.query_one("#mesh-worst")).splitlines()
        assert worst[0] == "worst pairs (most loss first)"
        assert all("node3" in line for line in worst[1:7]) and "node3" not in worst[7]
        assert "› mesh: loss" in status(app)
        await pressed(pilot, "m")
        assert "› mesh: RTT p99" in status(app)
        assert "ms" in plain_wide(screen.query_one("#mesh-heat")).splitlines()[1]


async def test_with_a_topology_the_mesh_is_leaf_ordered():
    topology = Topology([Switch("spine"), Switch("leafA", "spine"), Switch("leafB", "spine")],
                        [Attachment("node1", "leafA"), Attachment("node3", "leafA"),
                         Attachment("node2", "leafB"), Attachment("node4", "leafB")])
    app = mesh_app(topology=topology)
    async with running(app, SIZE, polls=3) as pilot:
        screen = await pressed(pilot, "m")
        lines = plain_wide(screen.query_one("#mesh-heat")).splitlines()
        assert [w for w in lines[0].split() if w.startswith("node")] == ["node1", "node3", "node2", "node4"]
        assert lines[1].strip().startswith("── leafA") and any(line.strip().startswith("── leafB") for line in lines)


async def test_the_node_screen_says_the_mesh_names_its_link():
    app = mesh_app()
    async with running(app, SIZE, polls=JUDGED) as pilot:
        await pilot.press("enter")  # node3: the first row
        await pilot.pause()
        head = plain_wide(app.screen.query_one("#node-head")).splitlines()
        assert head[1].startswith("warning · lossy: node3 link,") and "probes lost" in head[1]


async def test_a_straggler_keeps_its_words_and_the_mesh_suspect_comes_after():
    # node3 moves a tenth of what the others move, and its link loses: a straggler first
    app = mesh_app(traffic_of=lambda n: {"rx_bps": 1e8 if n == "node3" else 4e9, "tx_bps": 4e9})
    async with running(app, SIZE, polls=JUDGED) as pilot:
        why = dict(zip([r[0] for r in grid_rows(app)], column(app, "health")))
        assert why["node3"].startswith("RX ") and "median" in why["node3"]
        assert "straggler node3" in status(app) and "(+1)" in status(app)
        await pilot.press("enter")
        await pilot.pause()
        head = plain_wide(app.screen.query_one("#node-head"))
        assert "straggler:" in head and head.index("straggler:") < head.index("lossy: node3 link")


async def test_a_replay_of_a_mesh_recording_before_its_first_readings_says_they_are_to_come(tmp_path):
    # a recording made with --mesh on: its first frame has no mesh yet (the sampler's first
    # frame leaves before the monitor's "m" line reaches it), the next ones a mesh without
    # readings (a grace period): at its start the mesh screen says readings are to come, not
    # "made with the mesh off"
    from dataclasses import replace as replaced

    from netui.engine.recording.codec import header_record, sample_record
    from netui.engine.recording.playback import load
    from netui.engine.recording.writer import RecordingWriter
    from netui.engine.replay import ReplayMonitor
    from netui.model.mesh import MeshSample
    from tests.factories import MESH_NODES, mesh_node_sample

    path = tmp_path / "mesh.ndjson.gz"
    w = RecordingWriter(path, header_record(100.0, hosts=list(MESH_NODES), interval_s=1.0))
    for k in range(8):
        for name in MESH_NODES:
            sample = mesh_node_sample(name, k)
            if k == 0:  # the mesh not asked for yet
                sample = replaced(sample, mesh=None)
            elif k < 3:  # no probe settled yet
                sample = replaced(sample, mesh=MeshSample(sample.mono_s, port=sample.mesh.port, peers=3,
                                                          address=sample.mesh.address))
            w.write(sample_record(100.0 + k, name, sample))
        w.write({"type": "tick", "t": 100.0 + k})
    w.close()
    app = make_app(ReplayMonitor(load(path), history_s=900), autostart=False)
    async with running(app, SIZE, ticks=1) as pilot:
        await pressed(pilot, "m")
        text = on_screen(app)
        assert "mesh off" not in text and "no readings yet" in text


def node3_blocked(a: str, b: str) -> float:
    return 1.0 if "node3" in (a, b) else 0.0


async def test_a_node_never_answered_is_said_blocked_and_named_nowhere():
    # node3's UDP dropped from the start (its host firewall): no loss, no link named
    app = mesh_app(node3_blocked)
    async with running(app, SIZE, polls=JUDGED) as pilot:
        loss = dict(zip([r[0] for r in grid_rows(app)], column(app, "loss")))
        why = dict(zip([r[0] for r in grid_rows(app)], column(app, "health")))
        assert loss == {"node1": "0%", "node2": "0%", "node3": "no ans", "node4": "0%"}
        assert why["node3"] == "mesh: UDP blocked?" and why["node1"] == ""
        assert "node3 never answered: UDP blocked at it?" in status(app) and "lossy" not in status(app)
        screen = await pressed(pilot, "m")
        heat = plain_wide(screen.query_one("#mesh-heat")).splitlines()
        row3 = next(line for line in heat if line.startswith("node3"))
        row1 = next(line for line in heat if line.startswith("node1"))
        assert row3.split()[1:] == ["×", "×", "×"] and sorted(row1.split()[1:]) == ["0%", "0%", "×"]
        assert any('"×" never answered (UDP blocked?)' in line for line in heat)
        said = plain_wide(screen.query_one("#mesh-suspects"))
        assert "no suspect" in said and "lossy" not in said
        assert "no answer node3: no probe to or from it ever answered: UDP blocked at node3? (its firewall)" in said
        assert "6 pairs never answered" in said


async def test_udp_blocked_everywhere_is_said_once_and_names_nothing():
    app = mesh_app(lambda a, b: 1.0)
    async with running(app, SIZE, polls=JUDGED) as pilot:
        assert "mesh: no answer (UDP blocked?)" in status(app)
        assert set(column(app, "health")) == {""} and "lossy" not in on_screen(app)
        screen = await pressed(pilot, "m")
        heat = plain_wide(screen.query_one("#mesh-heat"))
        assert heat.startswith("No node answered any probe: is UDP blocked between the nodes?")
        assert "Nothing is named" in heat and "lossy" not in plain_wide(screen.query_one("#mesh-suspects"))
