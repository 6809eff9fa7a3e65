"""The probe mesh on the two-tier lab localises a lossy uplink as Pingmesh does.

Three leaves of two nodes under a spine (node1, node2 on leaf1; node3, node4 on leaf2; node5,
node6 on leaf3), the monitor given the fabric's topology and the mesh on at a fast rate (each
ordered pair probed ~10 times a second). Clean: every ordered pair probed enough, 0 % lost,
nobody named at any tick. Then nftables in leaf2's switch drops 2 % of the UDP crossing its
uplink port, both ways (a bridge-family rule on the port: what a lossy optic on the uplink
does to the probes; SSH is spared, the monitor's sessions stay steady): "leaf2 uplink" is
named within WINDOW_S and from then on at every tick, never node3 or node4 nor anything else.

Traffic only between the lab's namespaces (198.18.0.0/24); every probe is bounded by the
samplers' rate, every wait by a deadline; the rule is removed, the monitor closed and the lab
taken down in ``finally`` (the make_lab fixture). ~1.5 minutes.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time

import pytest

from netui.collectors.topology_files import read_topology_file
from netui.engine.mesh import MeshSettings
from netui.model.mesh import UPLINK
from tests.lab.fabric import UPLINK as UPLINK_PORT
from tests.lab.watch import monitor_for, started_all_up, stop, topology_file

pytestmark = [pytest.mark.lab, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("nft") is None, reason="nft is not installed (tests/run.sh installs it)")]

FAST = MeshSettings(rate=50.0, period_s=0.1)  # 5 peers: each ordered pair probed 10 times a second
CLEAN_S = 15.0
WINDOW_S = 45.0  # how long the uplink may take to be named, at most
NAMED_S = 10.0  # and then named at every tick, this long at least
TABLE = "netui_uplink"


def lossy_uplink(namespace: str, percent: int | None) -> None:
    """Drop ``percent`` % of the IPv4 UDP that crosses the leaf's uplink port, each way, in its
    switch's bridge (None: the rule's table deleted; fine when there is none)."""
    if percent is None:
        subprocess.run(["ip", "netns", "exec", namespace, "nft", "delete", "table", "bridge", TABLE],
                       capture_output=True, timeout=10)
        return
    rules = (f"table bridge {TABLE} {{\n chain forward {{\n  type filter hook forward priority 0; policy accept;\n"
             f"  iifname \"{UPLINK_PORT}\" ip protocol udp numgen random mod 100 < {percent} drop\n"
             f"  oifname \"{UPLINK_PORT}\" ip protocol udp numgen random mod 100 < {percent} drop\n }}\n}}\n")
    subprocess.run(["ip", "netns", "exec", namespace, "nft", "-f", "-"], input=rules, text=True, check=True,
                   capture_output=True, timeout=10)


def dropped(namespace: str) -> str:
    done = subprocess.run(["ip", "netns", "exec", namespace, "nft", "list", "table", "bridge", TABLE],
                          capture_output=True, text=True, timeout=10)
    return done.stdout


async def names_over(monitor, seconds: float, until=None) -> list[list[tuple[str, str]]]:
    """What the mesh named (held) at each tick for ``seconds`` (or until ``until(ticks)``)."""
    seen: list[list[tuple[str, str]]] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until and until(seen)):
        await asyncio.sleep(monitor.interval_s)
        seen.append([(s.kind, s.name) for s in monitor.fleet.mesh_suspects])
    return seen


async def test_a_lossy_uplink_is_named_and_none_of_its_nodes(make_lab, tmp_path):
    # pyroute2 runs an event loop of its own: the lab is built beside this one
    lab = await asyncio.to_thread(make_lab, leaves=3, nodes_per_leaf=2)
    names = [n.name for n in lab.nodes]
    leaf2 = lab.switch("leaf2").namespace
    monitor = monitor_for(lab, interval_s=0.5, mesh=FAST)
    monitor.fleet.topology = read_topology_file(topology_file(tmp_path, lab))
    task = await started_all_up(monitor)
    try:
        # clean: every ordered pair probed enough, none lost, nobody named at any tick
        clean = await names_over(monitor, CLEAN_S)
        v = monitor.fleet.mesh_verdict
        assert v is not None and set(v.pairs) == {(a, b) for a in names for b in names if a != b}
        assert all(p.enough and p.loss == 0.0 for p in v.pairs.values()), v.pairs
        assert not any(clean), clean
        assert v.suspects == ()

        lossy_uplink(leaf2, 2)
        try:
            def named_long_enough(ticks) -> bool:
                first = next((i for i, t in enumerate(ticks) if t), None)
                return first is not None and (len(ticks) - first) * monitor.interval_s >= NAMED_S

            ticks = await names_over(monitor, WINDOW_S + NAMED_S, until=named_long_enough)
            v = monitor.fleet.mesh_verdict
            rules = dropped(leaf2)
        finally:
            lossy_uplink(leaf2, None)
        first = next((i for i, t in enumerate(ticks) if t), None)
        assert first is not None, f"leaf2's uplink was never named: {v and v.suspects}\n{rules}"
        assert first * monitor.interval_s <= WINDOW_S, first
        assert all(t == [(UPLINK, "leaf2 uplink")] for t in ticks[first:]), ticks[first:]
        assert all(t in ([], [(UPLINK, "leaf2 uplink")]) for t in ticks), ticks
        assert v is not None and v.suspect_of("node3").name == "leaf2 uplink" and v.suspect_of("node1") is None
        crossing = [p for (a, b), p in v.pairs.items() if (a in ("node3", "node4")) != (b in ("node3", "node4"))]
        assert all(p.enough for p in crossing) and sum(p.counts.lost for p in crossing) > 0
        in_leaf = [p for (a, b), p in v.pairs.items() if {a, b} in ({"node1", "node2"}, {"node5", "node6"})]
        assert all(p.loss == 0.0 for p in in_leaf), in_leaf
    finally:
        lossy_uplink(leaf2, None)
        await stop(monitor, task)
