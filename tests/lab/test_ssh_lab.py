"""Remote nodes over SSH, against the real lab: OpenSSH in network namespaces.

Every fault of the issue is a test here: a node killed, frozen, a changed or unknown host
key, a wrong client key, nothing listening. Traffic only between lab nodes (198.18.0.0/15).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import time
from pathlib import Path

import asyncssh
import pytest

from netui.model.node import NodeState
from tests.lab.watch import iperf3_servers, monitor_for, others_went_on, settings_for, started, wait_for

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (tests/run.sh installs it as root)")

SAMPLER_MARK = b"netui remote sampler"


def sampler_pids(node) -> list[int]:
    pids = []
    for pid in node.pids():
        try:
            if SAMPLER_MARK in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(pid)
        except OSError:
            pass
    return pids


async def test_four_nodes_up_fast_and_iperf3_shows_on_exactly_those_two_rows(lab):
    m = monitor_for(lab)
    task = await started(m)
    try:
        took = await wait_for(lambda: all(n.samples_seen >= 2 for n in m.fleet), 5, "4 nodes up", m)
        assert took < 5
        for n in m.fleet:
            assert n.state is NodeState.UP
            assert n.sample.hostname == n.name
            assert set(n.sample.interfaces) == {"lo", "eth0"}
        node1, node2 = lab.node(1), lab.node(2)
        await asyncio.to_thread(iperf3_servers, [node2])
        client = node1.popen(["iperf3", "-c", node2.address, "-t", "4"])

        def busy(name):
            s = m.fleet[name].summary
            return max(s.rx_bytes_per_s or 0, s.tx_bytes_per_s or 0) * 8

        await wait_for(lambda: busy("node1") > 1e9 and busy("node2") > 1e9, 6, "traffic on node1 and node2", m)
        assert m.fleet["node1"].summary.tx_bytes_per_s * 8 > 1e9
        assert m.fleet["node2"].summary.rx_bytes_per_s * 8 > 1e9
        assert busy("node3") < 10e6 and busy("node4") < 10e6
        client.wait(timeout=15)
    finally:
        await m.close()
        task.cancel()


async def test_a_killed_node_goes_down_others_keep_updating_and_it_comes_back(lab):
    m = monitor_for(lab)
    task = await started(m)
    try:
        await wait_for(lambda: all(n.state is NodeState.UP for n in m.fleet), 5, "all up", m)
        node3 = lab.node(3)
        before = {n.name: n.samples_seen for n in m.fleet}
        node3.kill_all()  # sshd, the session and the sampler: the node is gone
        took = await wait_for(lambda: m.fleet["node3"].state is NodeState.DOWN, 10, "node3 down", m)
        assert took <= 10
        assert "retrying in" in m.fleet["node3"].error
        await wait_for(lambda: others_went_on(m, ("node1", "node2", "node4"), before), 5,
                       "the others sampled twice more", m)
        node3.start_sshd()
        await wait_for(lambda: m.fleet["node3"].state is NodeState.UP and m.fleet["node3"].rates is not None,
                       10, "node3 back", m)
    finally:
        await m.close()
        task.cancel()


async def test_a_frozen_sampler_is_stale_then_recovers(lab):
    m = monitor_for(lab, ["node2"])
    task = await started(m)
    try:
        await wait_for(lambda: m.fleet["node2"].samples_seen >= 2, 5, "node2 up", m)
        (pid,) = sampler_pids(lab.node(2))
        lab.node(2).freeze(pid)
        await wait_for(lambda: m.fleet["node2"].state is NodeState.STALE, 5, "node2 stale", m)
        assert "no sample for" in m.fleet["node2"].error
        lab.node(2).thaw(pid)
        await wait_for(lambda: m.fleet["node2"].state is NodeState.UP, 5, "node2 up again", m)
    finally:
        await m.close()
        task.cancel()


async def test_changed_host_key_is_refused_and_shows_no_data(lab):
    lab.node(4).regenerate_host_key(trust=False)
    m = monitor_for(lab, ["node4"], settings=settings_for(lab, accept_new_host_keys=True))
    task = await started(m)
    try:
        await wait_for(lambda: m.fleet["node4"].state is NodeState.HOST_KEY_CHANGED, 5, "host key changed", m)
        assert m.fleet["node4"].sample is None
        assert "host key changed" in m.fleet["node4"].error
    finally:
        await m.close()
        task.cancel()


def private_config(lab, tmp_path, known_hosts: Path, identity: Path | None = None) -> Path:
    """The lab's ssh_config with another known_hosts (and key) for every node."""
    text = Path(lab.ssh_config).read_text()
    text = text.replace(str(lab.known_hosts), str(known_hosts))
    if identity is not None:
        text = text.replace(str(lab.identity), str(identity))
    path = tmp_path / "ssh_config"
    path.write_text(text)
    return path


async def test_unknown_host_key_is_refused_unless_accept_new_which_records_it(lab, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    config = private_config(lab, tmp_path, known)
    m = monitor_for(lab, ["node1"], settings=settings_for(lab, config_paths=[str(config)]))
    task = await started(m)
    try:
        await wait_for(lambda: m.fleet["node1"].state is NodeState.HOST_KEY_UNKNOWN, 5, "host key unknown", m)
        assert m.fleet["node1"].sample is None
    finally:
        await m.close()
        task.cancel()
    m = monitor_for(lab, ["node1"], settings=settings_for(lab, config_paths=[str(config)], accept_new_host_keys=True))
    task = await started(m)
    try:
        await wait_for(lambda: m.fleet["node1"].samples_seen >= 1, 5, "accepted and up", m)
    finally:
        await m.close()
        task.cancel()
    recorded = known.read_text()
    assert lab.node(1).address in recorded and "ssh-ed25519" in recorded
    # the key is now known: a changed key is refused even with the opt-in
    lab.node(1).regenerate_host_key(trust=False)
    m = monitor_for(lab, ["node1"], settings=settings_for(lab, config_paths=[str(config)], accept_new_host_keys=True))
    task = await started(m)
    try:
        await wait_for(lambda: m.fleet["node1"].state is NodeState.HOST_KEY_CHANGED, 5, "changed refused", m)
    finally:
        await m.close()
        task.cancel()


async def test_wrong_client_key_is_auth_failed(lab, tmp_path):
    key = asyncssh.generate_private_key("ssh-ed25519")
    identity = tmp_path / "wrong_key"
    key.write_private_key(str(identity))
    identity.chmod(0o600)
    config = private_config(lab, tmp_path, Path(lab.known_hosts), identity)
    m = monitor_for(lab, ["node2"], settings=settings_for(lab, config_paths=[str(config)]))
    task = await started(m)
    try:
        await wait_for(lambda: m.fleet["node2"].state is NodeState.AUTH_FAILED, 5, "auth failed", m)
        assert "authentication failed" in m.fleet["node2"].error
    finally:
        await m.close()
        task.cancel()


async def test_nothing_listening_is_down_with_the_reason(lab):
    m = monitor_for(lab, ["node1"], ports={"node1": 2222})
    task = await started(m)
    try:
        await wait_for(lambda: m.fleet["node1"].state is NodeState.DOWN, 5, "down", m)
        assert "connection refused" in m.fleet["node1"].error
    finally:
        await m.close()
        task.cancel()


async def test_no_sampler_remains_on_any_node_after_quitting(lab):
    m = monitor_for(lab)
    task = await started(m)
    await wait_for(lambda: all(n.samples_seen >= 1 for n in m.fleet), 5, "all up", m)
    assert all(len(sampler_pids(node)) == 1 for node in lab.nodes)
    await m.close()
    task.cancel()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(sampler_pids(node) for node in lab.nodes):
        await asyncio.sleep(0.1)
    assert not any(sampler_pids(node) for node in lab.nodes)


async def test_interval_change_reaches_the_samplers(lab):
    m = monitor_for(lab, ["node1"], interval_s=1.0)
    task = await started(m)
    try:
        await wait_for(lambda: m.fleet["node1"].samples_seen >= 2, 5, "up", m)
        m.set_interval(0.25)
        n0, t0 = m.fleet["node1"].samples_seen, time.monotonic()
        await asyncio.sleep(2.0)
        rate = (m.fleet["node1"].samples_seen - n0) / (time.monotonic() - t0)
        assert rate > 2.5  # 4 per second now, not 1
        assert m.fleet["node1"].rates.interval_s == pytest.approx(0.25, abs=0.1)
    finally:
        await m.close()
        task.cancel()


async def test_proxyjump_uses_one_shared_jump_connection(lab, tmp_path):
    import psutil

    config = tmp_path / "ssh_config"
    config.write_text(Path(lab.ssh_config).read_text() + "\nHost node2 node3 node4\n    ProxyJump node1\n")
    m = monitor_for(lab, ["node2", "node3", "node4"], settings=settings_for(lab, config_paths=[str(config)]))
    task = await started(m)
    try:
        await wait_for(lambda: all(n.samples_seen >= 2 for n in m.fleet), 8, "all up through node1", m)
        mine = psutil.Process().net_connections(kind="tcp")
        peers = [c.raddr for c in mine if c.raddr and c.status == psutil.CONN_ESTABLISHED]
        jump = lab.node(1).address
        assert sum(1 for p in peers if p.ip == jump and p.port == 22) == 1
        # and no direct connection to the targets: everything goes through the jump host
        assert not any(p.ip in {lab.node(k).address for k in (2, 3, 4)} for p in peers)
    finally:
        await m.close()
        task.cancel()


async def test_multi_hop_proxyjump_goes_through_each_hop_in_order(lab, tmp_path):
    """ProxyJump node1,node2: this host connects to node1 only; node2 is reached through
    node1, and the targets through node2."""
    import psutil

    config = tmp_path / "ssh_config"
    config.write_text(Path(lab.ssh_config).read_text() + "\nHost node3 node4\n    ProxyJump node1,node2\n")
    m = monitor_for(lab, ["node3", "node4"], settings=settings_for(lab, config_paths=[str(config)]))
    task = await started(m)
    try:
        await wait_for(lambda: all(n.samples_seen >= 2 for n in m.fleet), 10, "all up through node1,node2", m)
        mine = psutil.Process().net_connections(kind="tcp")
        peers = [c.raddr for c in mine if c.raddr and c.status == psutil.CONN_ESTABLISHED]
        first, second = lab.node(1).address, lab.node(2).address
        assert sum(1 for p in peers if p.ip == first and p.port == 22) == 1
        assert not any(p.ip in {second, lab.node(3).address, lab.node(4).address} for p in peers)

        def peers_of(node) -> set[str]:
            """The remote addresses of the established TCP connections in a node's namespace."""
            found = set()
            for pid in node.pids():
                try:
                    lines = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
                except OSError:
                    continue
                for line in lines:
                    fields = line.split()
                    if fields[3] == "01":  # ESTABLISHED
                        found.add(socket.inet_ntoa(bytes.fromhex(fields[2].partition(":")[0])[::-1]))
            return found

        assert first in peers_of(lab.node(2))  # node2's sshd was reached from node1
        assert second in peers_of(lab.node(3)) and second in peers_of(lab.node(4))  # the targets from node2
    finally:
        await m.close()
        task.cancel()


async def test_a_nodes_per_cpu_tables_come_while_wanted_and_the_grid_has_its_figures_always(lab):
    m = monitor_for(lab, ["node1", "node2"], interval_s=0.3)
    task = await started(m)
    nodes = m.fleet.nodes
    try:
        await wait_for(lambda: all(nodes[n].samples_seen >= 2 for n in ("node1", "node2")), 5, "up", m)
        for n in ("node1", "node2"):  # the sums only: what the grid needs
            s, summary = nodes[n].sample, nodes[n].summary
            assert s.cpu is None and s.softnet is None and s.cpu_sums.ncpus >= 1 and s.problems == ()
            assert summary.net_rx_per_s is not None and summary.softnet_drops_per_s is not None
        m.want_detail(["node1"], True)  # its screen opens
        await wait_for(lambda: nodes["node1"].rates is not None and nodes["node1"].rates.cpu is not None
                       and nodes["node1"].rates.cpu.hottest() is not None, 5, "node1's per-CPU rates", m)
        assert len(nodes["node1"].sample.cpu.cpus) == nodes["node1"].sample.cpu_sums.ncpus
        assert nodes["node2"].sample.cpu is None
        m.want_detail(["node1"], False)  # and closes
        await wait_for(lambda: nodes["node1"].sample.cpu is None, 5, "node1 back to the sums", m)
        await wait_for(lambda: nodes["node1"].summary.hottest_cpu is not None, 2, "node1's hottest CPU from the sums", m)
        assert nodes["node1"].summary.net_rx_per_s is not None
    finally:
        await m.close()
        task.cancel()
