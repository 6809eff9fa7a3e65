"""node_exporter and Prometheus sources against real servers in the lab.

Debian's prometheus-node-exporter runs inside each lab namespace on the node's own address
(tests/lab/exporters.py); Debian's prometheus runs on 127.0.0.1 and scrapes them every second.
Traffic only between lab nodes (198.18.0.0/15) and on loopback; every exporter and server a
test starts is killed when it ends, also on failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from netui.collectors.node_exporter import HttpClient, HttpSettings, NodeExporterSource
from netui.collectors.prometheus import PrometheusNode, PrometheusReader
from netui.collectors.ssh import SshSource
from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.engine.monitor import Monitor
from netui.model.node import NodeState
from tests.lab.exporters import PROMETHEUS, PrometheusServer, missing_reason, start_exporters, stop
from tests.lab.watch import iperf3_servers, others_went_on

pytestmark = [
    pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or ""),
    pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (tests/run.sh installs it)"),
]

COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")


@pytest.fixture(scope="module")
def exporters(lab):
    procs = dict(zip((n.name for n in lab.nodes), start_exporters(lab.nodes)))
    try:
        yield procs
    finally:
        stop(list(procs.values()))


def restart_exporter(lab, procs, name):
    procs[name] = start_exporters([lab.node(name)])[0]


def client() -> HttpClient:
    return HttpClient(HttpSettings(timeout_s=2, backoff_first_s=0.3, backoff_max_s=1.0))


async def wait_for(predicate, timeout_s, what, monitor):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if predicate():
            return
        await asyncio.sleep(0.1)
    states = {n.name: (n.state.value, n.error) for n in monitor.fleet}
    raise AssertionError(f"{what}: not within {timeout_s} s; {states}")


async def test_node_exporter_shows_the_same_interfaces_and_counters_as_ssh(lab, exporters):
    """Both sources watch node1 and node2 while iperf3 runs between them: every exporter
    reading of a counter lies between the SSH readings just before and just after it."""
    http = client()
    ssh = SshConnector(SshSettings(config_paths=[str(lab.ssh_config)], connect_timeout_s=3))
    names = ["node1", "node2"]
    sources = [SshSource(n, n, ssh) for n in names]
    sources += [NodeExporterSource(f"ne-{n}", lab.node(n).address, http) for n in names]
    m = Monitor(sources, interval_s=0.25, history_s=60, connector=http)
    seen: dict[str, list] = {}
    m.on_sample = lambda name, s: seen.setdefault(name, []).append(s)
    task = asyncio.ensure_future(m.run())
    node1, node2 = lab.node(1), lab.node(2)
    try:
        await wait_for(lambda: all(n.samples_seen >= 2 for n in m.fleet), 8, "all up", m)
        server, = await asyncio.to_thread(iperf3_servers, [node2])
        iperf = node1.popen(["iperf3", "-c", node2.address, "-t", "3", "-b", "2G"])
        await asyncio.sleep(3.5)
        iperf.wait(timeout=10)
        server.wait(timeout=10)
        await asyncio.sleep(0.5)
    finally:
        await m.close()
        task.cancel()

    for name in names:
        ssh_samples, ne_samples = seen[name], seen[f"ne-{name}"]
        last_ssh, last_ne = ssh_samples[-1], ne_samples[-1]
        assert set(last_ne.interfaces) == set(last_ssh.interfaces) - {"lo"}  # Debian's exporter skips lo
        ssh_eth0, ne_eth0 = last_ssh.interfaces["eth0"], last_ne.interfaces["eth0"]
        assert (ne_eth0.mtu, ne_eth0.operstate, ne_eth0.carrier, ne_eth0.speed_mbps, ne_eth0.ifindex) == \
               (ssh_eth0.mtu, ssh_eth0.operstate, ssh_eth0.carrier, ssh_eth0.speed_mbps, ssh_eth0.ifindex)
        assert last_ne.hostname == name and len(last_ne.cpu.cpus) == last_ssh.cpu_sums.ncpus
        checked = 0
        for e in ne_samples:
            before = [s for s in ssh_samples if s.wall_s <= e.wall_s]
            after = [s for s in ssh_samples if s.wall_s >= e.wall_s]
            if len(before) < 2 or len(after) < 2:
                continue
            lo, hi = before[-2].interfaces["eth0"].counters, after[1].interfaces["eth0"].counters
            got = e.interfaces["eth0"].counters
            for c in COUNTERS:  # within the traffic of about one interval either side
                assert getattr(lo, c) <= getattr(got, c) <= getattr(hi, c), (name, c, e.wall_s)
            checked += 1
        assert checked >= 8, f"{name}: only {checked} exporter samples fell between SSH samples"
    # the iperf3 traffic really moved the counters the test compared: > 500 MB node1 → node2
    moved = seen["ne-node1"][-1].interfaces["eth0"].counters.tx_bytes - seen["ne-node1"][0].interfaces["eth0"].counters.tx_bytes
    assert moved > 500e6


async def test_a_dead_exporter_is_down_with_the_reason_and_the_rest_carry_on(lab, exporters):
    http = client()
    sources = [NodeExporterSource(n.name, n.address, http) for n in lab.nodes]
    sources.append(NodeExporterSource("nothing", lab.nodes[0].address, http, port=9199))  # nobody listens
    m = Monitor(sources, interval_s=0.5, history_s=60, connector=http)
    task = asyncio.ensure_future(m.run())
    try:
        await wait_for(lambda: all(m.fleet[n.name].rates is not None for n in lab.nodes)
                       and m.fleet["nothing"].state is NodeState.DOWN, 8, "4 up, 1 down", m)
        assert m.fleet["nothing"].error.startswith("connection refused (retrying in")
        exporters["node3"].kill()
        exporters["node3"].wait(timeout=5)
        before = {n.name: n.samples_seen for n in m.fleet}
        await wait_for(lambda: m.fleet["node3"].state is NodeState.DOWN, 5, "node3 down", m)
        assert "connection refused" in m.fleet["node3"].error
        await wait_for(lambda: others_went_on(m, ("node1", "node2", "node4"), before), 5,
                       "the others sampled twice more", m)
        restart_exporter(lab, exporters, "node3")
        await wait_for(lambda: m.fleet["node3"].state is NodeState.UP and m.fleet["node3"].rates is not None,
                       8, "node3 back", m)
    finally:
        await m.close()
        task.cancel()
        if exporters["node3"].poll() is not None:
            restart_exporter(lab, exporters, "node3")


def test_cli_snapshot_reads_the_lab_through_node_exporter(lab, exporters):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-m", "netui", "snapshot", "--json", "--source", "node-exporter",
                          "-F", str(lab.ssh_config), "--interval", "0.5", lab.host_pattern()],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    doc = json.loads(out.stdout)
    assert [n["name"] for n in doc["nodes"]] == ["node1", "node2", "node3", "node4"]
    for n in doc["nodes"]:
        assert n["state"] == "up" and n["hostname"] == n["name"]
        eth0 = next(i for i in n["interfaces"] if i["name"] == "eth0")
        assert eth0["rates"]["tx_bits_per_s"] is not None and eth0["counters"]["rx_bytes"] > 0


@pytest.fixture
def prometheus(lab, exporters):
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.skip(f"no {PROMETHEUS} (Debian package prometheus)")
    with PrometheusServer([f"{n.address}:9100" for n in lab.nodes]) as server:
        yield server


async def test_prometheus_source_yields_the_lab_nodes_with_rates(lab, exporters, prometheus):
    http = client()
    keys = {n.name: [n.name, n.address] for n in lab.nodes}
    keys["node9"] = ["node9", "198.18.0.250"]  # in the inventory, not in Prometheus
    reader = PrometheusReader(prometheus.url, http, keys_by_name=keys)
    m = Monitor([PrometheusNode(name, reader) for name in reader.names], interval_s=0.5, history_s=60, connector=http)
    task = asyncio.ensure_future(m.run())
    try:
        await wait_for(lambda: all(m.fleet[n.name].rates is not None for n in lab.nodes), 15, "4 nodes with rates", m)
        assert m.fleet["node9"].state is NodeState.DOWN
        assert "no instance in Prometheus matches" in m.fleet["node9"].error
        for n in lab.nodes:
            node = m.fleet[n.name]
            assert node.sample.hostname == n.name
            assert node.rates.interfaces["eth0"].tx_bytes_per_s > 0  # Prometheus's own scrapes
            assert 0.5 <= node.rates.interval_s <= 3.0  # scrape timestamps, 1 s apart
            assert node.rates.cpu is not None and node.rates.softnet is not None
        assert reader.queries >= 2
        exporters["node2"].kill()
        exporters["node2"].wait(timeout=5)
        await wait_for(lambda: m.fleet["node2"].state is NodeState.DOWN, 15, "node2 down", m)
        assert "no current sample of" in m.fleet["node2"].error
        assert m.fleet["node1"].state is NodeState.UP
    finally:
        await m.close()
        task.cancel()
        if exporters["node2"].poll() is not None:
            restart_exporter(lab, exporters, "node2")


async def test_prometheus_source_without_hosts_finds_every_exporter(lab, exporters, prometheus):
    http = client()
    try:
        instances = await PrometheusReader(prometheus.url, http).discover()
        deadline = time.monotonic() + 10
        while len(instances) < 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            instances = await PrometheusReader(prometheus.url, http).discover()
    finally:
        await http.close()
    assert instances == {f"{n.address}:9100": n.name for n in lab.nodes}


async def test_a_prometheus_that_is_not_there_puts_every_node_down():
    from tests.lab.exporters import free_port

    http = client()
    reader = PrometheusReader(f"http://127.0.0.1:{free_port()}", http, keys_by_name={"a": ["a"], "b": ["b"]})
    m = Monitor([PrometheusNode(n, reader) for n in reader.names], interval_s=0.5, history_s=60, connector=http)
    task = asyncio.ensure_future(m.run())
    try:
        await wait_for(lambda: all(n.state is NodeState.DOWN for n in m.fleet), 5, "all down", m)
        assert all("connection refused" in n.error for n in m.fleet)
    finally:
        await m.close()
        task.cancel()


async def test_a_second_job_on_a_nodes_instance_does_not_bend_its_rates(lab, exporters):
    """A second scrape job, every 700 ms, relabelled onto node1's instance (it scrapes node2's
    exporter): node1's rate under a steady iperf3 stream stays steady. Its counters and its
    scrape time come from the fleet's job (the one covering the 4 nodes) alone (the scrape time was max(timestamp(up)) over
    every job of the instance, and the other job's series were mixed in)."""
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.skip(f"no {PROMETHEUS} (Debian package prometheus)")
    node1, node2 = lab.node(1), lab.node(2)
    alt = {"job_name": "a-alt", "scrape_interval": "700ms", "scrape_timeout": "600ms",
           "static_configs": [{"targets": [f"{node2.address}:9100"]}],
           "relabel_configs": [{"target_label": "instance", "replacement": f"{node1.address}:9100"}]}
    with PrometheusServer([f"{n.address}:9100" for n in lab.nodes], extra_jobs=[alt]) as server:
        http = client()
        reader = PrometheusReader(server.url, http, keys_by_name={n.name: [n.name, n.address] for n in lab.nodes})
        m = Monitor([PrometheusNode(name, reader) for name in reader.names], interval_s=0.3, history_s=60,
                    connector=http)
        seen: list = []
        m.on_sample = lambda name, s: seen.append(s) if name == "node1" else None
        task = asyncio.ensure_future(m.run())
        iperf = server_proc = None
        try:
            # until Prometheus has scraped node1 with the fleet's job too, node1 is read from
            # the only job that has it (its rates restart at the switch: the job is part of
            # the boot id)
            await wait_for(lambda: m.fleet["node1"].rates is not None and seen[-1].hostname == "node1"
                           and m.fleet["node1"].sample.boot_id.endswith("job=node"), 15, "node1 from its job", m)
            server_proc, = await asyncio.to_thread(iperf3_servers, [node2])
            started = len(seen)
            iperf = node1.popen(["iperf3", "-c", node2.address, "-t", "8", "-b", "800M"])
            await asyncio.sleep(8.5)
            during = seen[started:]
            iperf.wait(timeout=10)
            server_proc.wait(timeout=10)
        finally:
            for proc in (iperf, server_proc):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=5)
            await m.close()
            task.cancel()
    assert all(s.hostname == "node1" for s in during)
    rates = [(b.interfaces["eth0"].counters.tx_bytes - a.interfaces["eth0"].counters.tx_bytes) / (b.mono_s - a.mono_s)
             for a, b in zip(during, during[1:])]
    steady = sorted(rates[2:-2])  # the stream's ramp-up and end left out
    assert len(steady) >= 3, rates
    median = steady[len(steady) // 2]
    assert 0.7 * 100e6 <= median <= 1.3 * 100e6, rates  # 800 Mb/s = 100 MB/s
    assert all(0.75 * median <= r <= 1.25 * median for r in steady), [f"{r / 1e6:.0f} MB/s" for r in rates]
