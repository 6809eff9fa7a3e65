"""The probe mesh on the lab: real samplers over real SSH probe each other over UDP.

A clean fleet: every ordered pair probed, 0 % loss on enough probes, nobody named. nftables in
one node's namespace drops 2 % of the UDP it receives: its link is named within the window and
nothing else ever is; the same 2 % only from one peer: the path between those two, not either
node. A packet from outside the session (no token, not on a list) gets no answer. One node's
nftables dropping every UDP packet it receives from the start (its host firewall): that node
shown never answered, nothing named, the others' figures clean.

Traffic only between the lab's namespaces and the root namespace's bridge address
(198.18.0.0/24); every probe is bounded by the sampler's rate, every wait by a deadline; the
rules are removed and the monitor closed in ``finally``.
"""

from __future__ import annotations

import asyncio
import select
import shutil
import socket
import time

import pytest

from netui.collectors.protocol import MESH_PACKET, MESH_QUERY, MESH_TIMEOUT_S
from netui.engine.mesh import MeshSettings
from netui.model.mesh import NODE, PAIR
from tests.lab.test_health_lab import nft
from tests.lab.watch import monitor_for, started_all_up, stop

pytestmark = [pytest.mark.skipif(shutil.which("nft") is None, reason="nft is not installed (tests/run.sh installs it)"),
              pytest.mark.slow]

FAST = MeshSettings(rate=80.0, period_s=0.05)  # 3 peers: each ordered pair probed 20 times a second
WINDOW_S = 45.0  # how long a fault may take to be named, at most
CLEAR_S = 15.0  # how long a name may take to clear once its window is forgotten, at most


def mesh_monitor(lab):
    return monitor_for(lab, interval_s=0.5, mesh=FAST)


async def names_over(monitor, seconds: float, until_clear: bool = False) -> list[list[tuple[str, str]]]:
    """What the mesh named (held) at each tick for ``seconds`` (``until_clear``: or until a
    tick names nothing)."""
    seen: list[list[tuple[str, str]]] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until_clear and seen and not seen[-1]):
        await asyncio.sleep(monitor.interval_s)
        seen.append([(s.kind, s.name) for s in monitor.fleet.mesh_suspects])
    return seen


def udp_rule(lab, k: int, match: str = "") -> None:
    nft(lab, k, "table inet netui_blip {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
                f"  {match} udp dport != 22 numgen random mod 100 < 2 drop\n }}\n}}\n")


async def test_a_clean_mesh_then_a_lossy_link_then_a_lossy_path(lab):
    monitor = mesh_monitor(lab)
    task = await started_all_up(monitor)
    try:
        # every ordered pair probed, none lost, nobody named
        clean = await names_over(monitor, 12.0)
        v = monitor.fleet.mesh_verdict
        names = [n.name for n in lab.nodes]
        assert v is not None and {(a, b) for a in names for b in names if a != b} <= set(v.pairs)
        assert all(p.enough and p.loss == 0.0 for p in v.pairs.values()), v.pairs
        assert not any(clean), clean
        assert len(monitor.mesh.endpoints) == len(names)

        # node3 loses 2 % of the UDP it receives: its probes' answers and its peers' probes
        udp_rule(lab, 3)
        try:
            ticks = await names_over(monitor, WINDOW_S)
        finally:
            nft(lab, 3, None)
        first = next((i for i, t in enumerate(ticks) if t), None)
        assert first is not None, "node3's link was never named"
        assert all(t == [(NODE, "node3 link")] for t in ticks[first:]), ticks[first:]
        assert all(t in ([], [(NODE, "node3 link")]) for t in ticks)

        # its window forgotten (the monitor's) and its name cleared, then 2 % only from node1:
        # their path. The forgetting waits for the probes lost before the rule went to settle (a
        # probe is counted lost MESH_TIMEOUT_S after it was sent, in its prober's next frame):
        # forgotten sooner, their few losses fall into a window of a few probes, where they are
        # a loss again, and keep the name held for as long as they stand out.
        await asyncio.sleep(MESH_TIMEOUT_S + 3 * monitor.interval_s)
        monitor.fleet.mesh.forget("node3")
        after = await names_over(monitor, CLEAR_S, until_clear=True)
        print(f"\nnode3's link after its window was forgotten: named at {sum(map(bool, after))} of {len(after)} ticks")
        assert not after[-1], f"node3's link still named {CLEAR_S} s after its window was forgotten: {after}"
        node1 = lab.node(1).address
        udp_rule(lab, 3, f"ip saddr {node1}")
        try:
            ticks = await names_over(monitor, WINDOW_S + 15)
        finally:
            nft(lab, 3, None)
        named = [t for t in ticks if t]
        assert named and named[-1] == [(PAIR, "node1↔node3")], ticks
        assert all(t in ([], [(PAIR, "node1↔node3")]) for t in ticks), ticks
    finally:
        await stop(monitor, task)


async def test_a_probe_from_outside_the_session_gets_no_answer(lab):
    monitor = mesh_monitor(lab)
    task = await started_all_up(monitor)
    try:
        deadline = time.monotonic() + 10
        while len(monitor.mesh.endpoints) < 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        address, port = monitor.mesh.endpoints["node2"]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("198.18.0.254", 0))  # the bridge's address in the root namespace: on no list
            for token in (monitor.mesh.token, bytes(16)):
                s.sendto(MESH_PACKET.pack(MESH_QUERY, token, 1, 1), (address, port))
                assert not select.select([s], [], [], 1.0)[0], "a stranger's probe was answered"
        refused = 0
        for _ in range(20):
            await asyncio.sleep(0.25)
            sample = monitor.fleet["node2"].sample
            refused = sample.mesh.refused if sample is not None and sample.mesh is not None else 0
            if refused >= 2:
                break
        assert refused >= 2
    finally:
        await stop(monitor, task)


BLOCKED_S = 30.0  # how long a node blocked from the start may take to be shown so, at most


async def test_a_node_whose_firewall_drops_udp_from_the_start_is_unanswered_and_nothing_is_named(lab):
    nft(lab, 2, "table inet netui_blip {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
                "  udp dport != 22 drop\n }\n}\n")
    monitor = mesh_monitor(lab)
    task = None
    try:
        task = await started_all_up(monitor)
        ticks, v = [], None
        end = time.monotonic() + BLOCKED_S
        while time.monotonic() < end:
            ticks += await names_over(monitor, 1.0)
            v = monitor.fleet.mesh_verdict
            if v is not None and "node2" in v.nodes and v.nodes["node2"].blocked and v.unanswered == 6:
                break
        assert v is not None and v.nodes["node2"].answers_none and v.nodes["node2"].answered_none, v
        assert v.unanswered == 6 and not v.none_answered  # node2's pairs, both ways
        ticks += await names_over(monitor, 5.0)
        assert not any(ticks), ticks  # never a link, nor anything else
        v = monitor.fleet.mesh_verdict
        others = [n.name for n in lab.nodes if n.name != "node2"]
        assert {(a, b) for a in others for b in others if a != b} == set(v.pairs), v.pairs
        assert all(p.enough and p.loss == 0.0 for p in v.pairs.values()), v.pairs
        assert all(v.nodes[n].loss == 0.0 and not v.nodes[n].blocked for n in others)
        assert monitor.fleet["node2"].mesh.loss is None  # no loss figure: it is no loss
    finally:
        nft(lab, 2, None)
        if task is not None:
            await stop(monitor, task)
        else:
            await monitor.close()
