"""The doctor screen (D): pilot tests on a scripted cluster (its nodes cannot run commands:
their interfaces are checked, the rest is said to be unchecked), on this host (the probe
runs for real), and against the lab with one node's MTU changed."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from netui.collectors.local import LiveReader
from netui.engine.sources import LocalSource
from netui.model.health import Level
from netui.checks.doctor.screen import DoctorScreen, FindingsTable
from netui.ui.grid import FleetGrid
from tests.pilot import escape_to_grid, lab_app, pause_until, pressed, running, scripted_app
from tests.pilot import plain_wide as plain
from tests.synth import node_sample


def sample_with_mtu(step: int, mtu: int):
    s = node_sample(step, rx_bps=1e9)
    return dataclasses.replace(s, interfaces=s.interfaces | {"eth0": s.interfaces["eth0"]._replace(mtu=mtu)})


def odd_mtu_app(extra=()):
    """gpu03 has MTU 1500, the other three 9000."""
    return scripted_app(lambda k, i: sample_with_mtu(i, 1500 if k == 3 else 9000), extra)


async def finished(screen: DoctorScreen, pilot, runs: int = 1, timeout_s: float = 20) -> None:
    await pause_until(pilot, lambda: not screen.running and screen.runs >= runs and screen.report is not None,
                      timeout_s, 0.05)
    assert screen.report is not None and not screen.running


async def doctor_of(pilot, *keys: str) -> DoctorScreen:
    """The doctor screen that ``keys`` then D open, once its run has finished."""
    screen = await pressed(pilot, *keys, "D")
    assert isinstance(screen, DoctorScreen)
    await finished(screen, pilot)
    return screen


@pytest.mark.slow
async def test_D_checks_every_node_and_shows_the_odd_mtu_with_its_fix():
    app = odd_mtu_app()
    async with running(app, (160, 40), polls=2) as pilot:
        screen = await doctor_of(pilot)
        assert screen.nodes == ["gpu01", "gpu02", "gpu03", "gpu04"]
        table = plain(screen.query_one(FindingsTable))
        first = table.splitlines()[1]  # worst first, under the header
        assert first.split()[:4] == ["critical", "gpu03", "mtu", "eth0"]
        assert "3 of 4 nodes have MTU 9000" in first
        assert "fix: ip link set dev eth0 mtu 9000" in table
        # scripted nodes cannot run commands: one line for the four of them
        assert table.count("interfaces only") == 1
        assert any(line.split()[:2] == ["careful", "gpu[01-04]"] and "interfaces only" in line
                   for line in table.splitlines())
        verdict = plain(screen.query_one("#doctor-verdict"))
        # counted as the table shows them: the "interfaces only" line of four nodes is one
        assert "4 nodes: 1 critical, 1 careful · failing: gpu03" in verdict
        assert screen.query_one("#doctor-verdict").has_class("-failed")
        assert "no interface errors since boot" in plain(screen.query_one("#doctor-passed"))
        await escape_to_grid(pilot)


@pytest.mark.slow
async def test_D_takes_the_marked_nodes_and_r_runs_again():
    app = odd_mtu_app()
    async with running(app, (160, 40), polls=2) as pilot:
        await pilot.press("s")  # by node
        await pilot.press("space", "down", "down", "space")  # gpu01 and gpu03
        assert app.screen.query_one(FleetGrid).marked == {"gpu01", "gpu03"}
        screen = await doctor_of(pilot)
        assert screen.nodes == ["gpu01", "gpu03"]
        # two nodes, one MTU each: a tie, the larger is taken as intended
        assert [(f.node, f.fix) for f in screen.report.problems if f.check == "mtu"] == [
            ("gpu03", "ip link set dev eth0 mtu 9000")]
        await pilot.press("r")
        await finished(screen, pilot, runs=2)
        assert screen.runs == 2


@pytest.mark.slow
async def test_the_palette_offers_the_doctor():
    app = odd_mtu_app()
    async with running(app, (160, 40), polls=2) as pilot:
        names = [c.title for c in app.get_system_commands(app.screen)]
        assert "Doctor" in names
        await pressed(pilot, "D")
        assert "Doctor again" in [c.title for c in app.get_system_commands(app.screen)]


@pytest.mark.slow
async def test_this_host_is_probed_for_real():
    local = LocalSource(LiveReader())
    app = odd_mtu_app(extra=[local])
    async with running(app, (160, 40), polls=2) as pilot:
        screen = await doctor_of(pilot)
        facts = screen.report.facts[local.name]
        assert facts.probe is not None and facts.probe.complete
        assert "net.ipv4.tcp_rmem" in facts.probe.sysctls
        examined = [f for f in screen.report.findings if f.check == "examined" and f.node == local.name]
        assert examined == []
        # every finding about this host is worded and, if not ok, says how to fix or where to look
        for f in screen.report.findings:
            if f.node == local.name and f.severity > Level.OK:
                assert f.evidence and (f.fix or f.look)


@pytest.mark.slow
async def test_the_last_latency_tests_rtt_goes_into_the_buffer_advice():
    """A latency test that finished in the app (it records its document as the latency
    screen does) gives the doctor each node's measured RTT, which the buffer advice uses."""
    from netui.checks.latency.report import report_document
    from netui.checks.latency.runner import LatencyReport
    from netui.checks.latency.tools import LatencySettings
    from netui.checks.doctor.rules import buffer_path
    from netui.checks.latency.model import LatencyResult

    local = LocalSource(LiveReader())
    app = odd_mtu_app(extra=[local])
    async with running(app, (160, 40), polls=2) as pilot:
        results = [LatencyResult(local.name, "gpu01", "fping", True, 20, 20, 0.0, 2.5, 2.5)]
        app.record_test("latency-test", report_document(LatencyReport(LatencySettings(), [local.name, "gpu01"], True,
                                                                      results=results)))
        screen = await doctor_of(pilot)
        facts = screen.report.facts[local.name]
        assert facts.rtt_ms == 2.5 and buffer_path(facts).rtt_ms == 2.5
        assert screen.report.facts["gpu02"].rtt_ms is None  # not in the latency test
        for f in screen.report.findings:
            if f.node == local.name and f.subject.startswith(("net.core.", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")):
                assert "the 2.5 ms round trip of the latency test's slowest pair" in f.evidence


async def test_the_lab_node_with_another_mtu_is_shown_with_its_fix(lab):
    node2 = lab.node(2)
    await asyncio.to_thread(node2.exec, ["ip", "link", "set", "dev", "eth0", "mtu", "1400"], check=True)
    try:
        app = lab_app(lab)
        async with running(app, (160, 40)) as pilot:
            await pause_until(pilot, lambda: all(n.samples_seen >= 1 for n in app.monitor.fleet), 10, 0.05)
            screen = await doctor_of(pilot)
            table = plain(screen.query_one(FindingsTable))
            assert [f.node for f in screen.report.findings if f.check == "mtu" and f.node] == ["node2"]
            assert "eth0 MTU 1400; 3 of 4 nodes have MTU 1500" in table
            assert "fix: ip link set dev eth0 mtu 1500" in table
            assert all(screen.report.facts[n.name].probe is not None for n in lab.nodes)
    finally:
        await asyncio.to_thread(node2.exec, ["ip", "link", "set", "dev", "eth0", "mtu", "1500"], check=True)


@pytest.mark.slow
async def test_a_down_node_is_not_examined_on_its_own_line_never_critical_at_80x24():
    from netui.model.node import NodeState
    from tests.pilot import on_screen

    app = odd_mtu_app()
    async with running(app, (80, 24), polls=2) as pilot:
        app.monitor.report("gpu04", NodeState.DOWN, "connection refused (retrying in 55 s)")
        screen = await doctor_of(pilot)
        line = plain(screen.query_one("#doctor-unexamined")).strip()
        # when it failed and what: no countdown frozen in words written once
        assert line.startswith("not examined: gpu04 is down (failed at ") and "retrying" not in line, line
        assert line.endswith(": connection refused) · look: ssh gpu04 true"), line
        verdict = plain(screen.query_one("#doctor-verdict"))
        assert "critical: gpu04" not in verdict and verdict.strip().endswith("· not examined: gpu04"), verdict
        assert "gpu04" not in plain(screen.query_one(FindingsTable)).replace("gpu[01-04]", "")
        assert "every node examined" not in plain(screen.query_one("#doctor-passed"))
        shown = on_screen(app)
        assert "not examined: gpu04 is down" in shown and "critical" in shown  # gpu03's MTU still is
        await escape_to_grid(pilot)
