"""Monitors that watch a lab's nodes over SSH, and what lab tests wait on with them.

Shared by the lab tests (tests/lab/test_*.py) and the pilot tests that use the lab.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from netui.collectors.ssh import SshSource

from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.engine.monitor import Monitor
from netui.model.node import NodeState

NODES = ["node1", "node2", "node3", "node4"]
PING_NAMES = {"ping", "fping"}
IPERF_SECONDS = 2


def settings_for(lab, **overrides) -> SshSettings:
    """SSH settings for the lab's ssh_config: short timeouts and backoff, ``overrides`` on top."""
    values = dict(config_paths=[str(lab.ssh_config)], connect_timeout_s=3, keepalive_s=2,
                  backoff_first_s=0.3, backoff_max_s=1.5)
    values.update(overrides)
    return SshSettings(**values)


def monitor_for(lab, names=None, *, interval_s=0.5, settings=None, ports=None, mesh=None) -> Monitor:
    """A Monitor of SSH sources for ``names`` (all the lab's nodes by default), not started;
    its connector as ``monitor.connector``; ``mesh``: the probe mesh's settings (None: off)."""
    connector = SshConnector(settings or settings_for(lab))
    names = names or [n.name for n in lab.nodes]
    ports = ports or {}
    sources = [SshSource(n, n, connector, port=ports.get(n)) for n in names]
    return Monitor(sources, interval_s=interval_s, history_s=60, connector=connector, mesh=mesh)


def lab_monitor(lab, names=NODES, interval_s: float = 0.5) -> Monitor:
    """monitor_for with a 5 s connect timeout, as the pair and latency tests use it."""
    return monitor_for(lab, names, interval_s=interval_s, settings=settings_for(lab, connect_timeout_s=5))


def iperf3_servers(nodes, port: int = 5201, timeout_s: float = 10.0) -> list:
    """``iperf3 -s -1`` on each of ``nodes`` (bound to its lab address, on ``port``), returned
    once every one listens: polled with ``ss``, never connected to (``-1`` serves exactly one
    client); fails naming the node that exited or did not listen within ``timeout_s``. (A
    fixed wait instead lets a loaded host's client be refused.)"""
    procs = [node.popen(["iperf3", "-s", "-1", "-B", node.address, "-p", str(port)]) for node in nodes]
    deadline = time.monotonic() + timeout_s
    for node, proc in zip(nodes, procs):
        while f":{port}" not in node.exec(["ss", "-Hltn", f"sport = :{port}"]).stdout:
            assert proc.poll() is None, f"iperf3 server on {node.name} exited early"
            assert time.monotonic() < deadline, f"iperf3 server on {node.name} did not listen within {timeout_s} s"
            time.sleep(0.02)
    return procs


def iperf_bits_per_s(client, server, seconds: int = IPERF_SECONDS) -> float:
    """Bits per second the server received in a bounded iperf3 run (``seconds`` long) from
    client to server, two lab nodes (198.18.x only)."""
    listener, = iperf3_servers([server])
    result = client.exec(["iperf3", "-c", server.address, "-t", str(seconds), "-J"],
                         timeout_s=seconds + 20)
    listener.wait(timeout=10)
    report = json.loads(result.stdout)
    assert "error" not in report, report["error"]
    return report["end"]["sum_received"]["bits_per_second"]


async def wait_for(predicate, timeout_s: float, what: str, monitor: Monitor | None = None) -> float:
    """Seconds until ``predicate()`` holds, polled every 0.1 s; fails after ``timeout_s`` with
    ``what`` and the monitor's node states."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if predicate():
            return time.monotonic() - t0
        await asyncio.sleep(0.1)
    states = {n.name: (n.state.value, n.error) for n in monitor.fleet} if monitor else ""
    raise AssertionError(f"{what}: not within {timeout_s} s; {states}")


def others_went_on(m, names, before: dict[str, int]) -> bool:
    """(A ``wait_for`` predicate.) Each of ``names`` has two samples more than ``before``;
    fails at once when one of them is not up."""
    assert all(m.fleet[name].state is NodeState.UP for name in names), {n: m.fleet[n].state for n in names}
    return all(m.fleet[name].samples_seen > before[name] + 1 for name in names)


async def run_until(monitor: Monitor, done, timeout_s: float, what: str) -> None:
    """Run the monitor until ``done()`` (at most ``timeout_s``); fail naming every node's state."""
    if not await monitor.run_until(done, timeout_s=timeout_s):
        states = {n.name: (n.state.value, n.error, n.lldp_state, n.lldp) for n in monitor.fleet}
        raise AssertionError(f"{what}: not within {timeout_s} s; {states}")


async def started(monitor: Monitor) -> asyncio.Task:
    """The monitor running, as a task."""
    return asyncio.ensure_future(monitor.run())


async def started_all_up(monitor: Monitor) -> asyncio.Task:
    """The monitor running, once every node is up with two samples (fails after 10 s)."""
    task = asyncio.ensure_future(monitor.run())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if all(n.state is NodeState.UP and n.samples_seen >= 2 for n in monitor.fleet):
            return task
        await asyncio.sleep(0.05)
    raise AssertionError({n.name: (n.state.value, n.error) for n in monitor.fleet})


async def stop(monitor: Monitor, task: asyncio.Task) -> None:
    await monitor.close()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def pings_left(lab) -> dict[str, list[str]]:
    """ping or fping processes (or the shells running them) in any namespace of the lab."""
    found = {}
    for node in lab.nodes:
        for pid in node.pids():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            except OSError:
                continue
            words = [a.decode(errors="replace") for a in argv if a]
            if state in ("Z", "X") or not words:
                continue
            if os.path.basename(words[0]) in PING_NAMES or PING_NAMES & set(words[:8]) or \
                    any("ping -n" in w for w in words):
                found.setdefault(node.name, []).append(" ".join(words)[:120])
    return found


def topology_file(tmp_path, lab, uplink_gbps: float | None = None) -> str:
    """The two-tier ``lab``'s topology as a `--topology` TOML file in ``tmp_path``: a leaf
    switch per leaf under the spine, its nodes, and each uplink's capacity when given."""
    path = tmp_path / "fabric.toml"
    leaves: dict[str, list[str]] = {}
    for node in lab.nodes:
        leaves.setdefault(f"leaf{node.leaf}", []).append(node.name)
    lines = ["[switches.spine]", ""]
    capacity = [f"uplink_gbps = {uplink_gbps}"] if uplink_gbps is not None else []
    for leaf, names in leaves.items():
        lines += [f"[switches.{leaf}]", 'uplink = "spine"', *capacity,
                  "nodes = [" + ", ".join(f'"{n}"' for n in names) + "]", ""]
    path.write_text("\n".join(lines))
    return str(path)
