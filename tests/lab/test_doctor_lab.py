"""The doctor against the real lab: OpenSSH in network namespaces.

A lab node's ``net.ipv4.*`` sysctls are its namespace's own; ``net.core.rmem_max`` and
``wmem_max`` are the host's, the same on every node — the tests never change them and
expect whatever the host has, reported alike on every node. Every node is first tuned as
the doctor recommends (per namespace), then the faults are set; all of it is undone in
``finally``. No traffic leaves the lab.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import contextmanager
from pathlib import Path

from netui.collectors.ssh import SshSource

from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.checks.doctor.runner import examine
from netui.engine.monitor import Monitor
from netui.checks.doctor.rules_sysctl import Recommendations
from netui.model.node import NodeState
from tests.command import netui

NODES = ["node1", "node2", "node3", "node4"]
GLOBAL = {"net.core.rmem_max", "net.core.wmem_max"}  # the host's: not the test's to change
BUFFER = str(Recommendations().buffer_max_bytes)
TUNED = {
    "net.ipv4.tcp_rmem": f"4096 131072 {BUFFER}",
    "net.ipv4.tcp_wmem": f"4096 16384 {BUFFER}",
    "net.ipv4.tcp_slow_start_after_idle": "0",
    "net.ipv4.tcp_notsent_lowat": "131072",
    "net.ipv4.ip_local_port_range": "32768 60999",
}


def good_congestion_control() -> str | None:
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    return next((cc for cc in Recommendations().good_congestion if cc in available), None)


def read_sysctl(lab, k: int, key: str) -> str:
    return " ".join(lab.node(k).exec(["sysctl", "-n", key], check=True).stdout.split())


def write_sysctl(lab, k: int, key: str, value: str) -> None:
    lab.node(k).exec(["sysctl", "-q", "-w", f"{key}={value}"], check=True)


@contextmanager
def sysctls(lab, values: dict[int, dict[str, str]]):
    """Set per-namespace sysctls on some nodes; put the old values back afterwards."""
    saved = {(k, key): read_sysctl(lab, k, key) for k, keys in values.items() for key in keys}
    try:
        for k, keys in values.items():
            for key, value in keys.items():
                write_sysctl(lab, k, key, value)
        yield
    finally:
        for (k, key), value in saved.items():
            write_sysctl(lab, k, key, value)


@contextmanager
def mtu(lab, k: int, value: int):
    """Another MTU on node k's eth0 (set before any connection: no TCP flow carries a
    segment sized for the old one); the old MTU back afterwards."""
    node = lab.node(k)
    old = node.exec(["cat", "/sys/class/net/eth0/mtu"], check=True).stdout.strip()
    try:
        node.exec(["ip", "link", "set", "dev", "eth0", "mtu", str(value)], check=True)
        yield
    finally:
        node.exec(["ip", "link", "set", "dev", "eth0", "mtu", old], check=True)


@contextmanager
def tuned(lab):
    """Every node as the doctor recommends, where a namespace can be."""
    values = dict(TUNED)
    cc = good_congestion_control()
    if cc is not None:
        values["net.ipv4.tcp_congestion_control"] = cc
    with sysctls(lab, {k: values for k in range(1, 5)}):
        yield


def ignored() -> set[str]:
    """Subjects the test leaves to the host: the global sysctls, and the congestion control
    when this kernel has none of the recommended ones."""
    return GLOBAL | (set() if good_congestion_control() else {"net.ipv4.tcp_congestion_control"})


def not_ok(doc: dict) -> list[tuple]:
    return [(f["node"], f["check"], f["subject"], f["severity"], f["fix"]) for f in doc["findings"]
            if f["severity"] != "ok" and f["subject"] not in ignored()]


def check_global_sysctls(doc: dict) -> None:
    """What the host has, found alike on every node, with its fix where it is too low."""
    for key in sorted(GLOBAL):
        host = int(Path("/proc/sys/" + key.replace(".", "/")).read_text())
        found = [f for f in doc["findings"] if f["subject"] == key]
        if host < int(BUFFER):
            assert [(f["node"], f["severity"], f["fix"]) for f in found] == [
                (n, "warning", f"sysctl -w {key}={BUFFER}") for n in NODES]
        else:
            assert [(f["node"], f["severity"]) for f in found] == [(None, "ok")]


def test_doctor_names_the_node_with_another_mtu_and_the_one_with_a_small_tcp_rmem(lab):
    with tuned(lab), mtu(lab, 2, 1400), sysctls(lab, {3: {"net.ipv4.tcp_rmem": "4096 131072 6291456"}}):
        t0 = time.monotonic()
        result = netui("doctor", "--json", "-F", str(lab.ssh_config), lab.host_pattern())
        took_s = time.monotonic() - t0
    assert result.returncode == 1, result.stderr + result.stdout
    doc = json.loads(result.stdout)
    assert doc["nodes"] == NODES
    assert not_ok(doc) == [
        ("node2", "mtu", "eth0", "critical", "ip link set dev eth0 mtu 1500"),
        ("node3", "sysctl", "net.ipv4.tcp_rmem", "warning", f'sysctl -w net.ipv4.tcp_rmem="4096 131072 {BUFFER}"'),
    ]
    mtu_finding = next(f for f in doc["findings"] if f["check"] == "mtu" and f["node"])
    assert mtu_finding["evidence"].startswith("eth0 MTU 1400; 3 of 4 nodes have MTU 1500")
    rmem = next(f for f in doc["findings"] if f["subject"] == "net.ipv4.tcp_rmem" and f["node"])
    assert "max 6 MiB (4096 131072 6291456)" in rmem["evidence"]
    check_global_sysctls(doc)
    assert {"node2", "node3"} <= set(doc["failing_nodes"])
    if not any(f["subject"] in GLOBAL and f["node"] for f in doc["findings"]):
        assert doc["failing_nodes"] == ["node2", "node3"]
    assert doc["facts"]["node2"]["interfaces"]["eth0"]["mtu"] == 1400
    assert doc["facts"]["node3"]["sysctls"]["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
    assert took_s < 15, took_s
    print(f"\nnetui doctor on 4 lab nodes: {took_s:.2f} s (probes {doc['elapsed_s']:.2f} s)")


def test_the_text_report_shows_each_fix_and_the_faults_are_undone(lab):
    with tuned(lab), mtu(lab, 2, 1400), sysctls(lab, {3: {"net.ipv4.tcp_rmem": "4096 131072 6291456"}}):
        result = netui("doctor", "-F", str(lab.ssh_config), lab.host_pattern())
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("netui doctor · 4 nodes: ")
    at = next(i for i, line in enumerate(lines) if line.startswith("CRITICAL node2") and " mtu " in line)
    assert lines[at + 1].strip() == "fix: ip link set dev eth0 mtu 1500"
    at = next(i for i, line in enumerate(lines) if line.startswith("WARNING  node3") and "tcp_rmem" in line)
    assert lines[at + 1].strip() == f'fix: sysctl -w net.ipv4.tcp_rmem="4096 131072 {BUFFER}"'
    # the finally blocks put everything back
    assert lab.node(2).exec(["cat", "/sys/class/net/eth0/mtu"]).stdout.strip() == "1500"


def test_a_node_that_is_down_is_not_examined_never_a_finding_and_the_others_are_still_examined(lab):
    lab.node(4).stop_sshd()  # the lab fixture restarts it after the test
    with tuned(lab):
        result = netui("doctor", "--json", "--connect-timeout", "3", "-F", str(lab.ssh_config), lab.host_pattern())
    assert result.returncode == 1  # no clean bill while a node could not be looked at
    doc = json.loads(result.stdout)
    assert not_ok(doc) == [] and "node4" not in doc["failing_nodes"]
    assert not any(f["node"] == "node4" for f in doc["findings"])
    assert list(doc["not_examined"]) == ["node4"] and doc["not_examined"]["node4"].startswith("node4 is down")
    assert not doc["facts"]["node4"]["examined"]
    assert all(doc["facts"][n]["examined"] for n in NODES[:3])


async def test_examine_over_a_live_monitor_follows_a_fix(lab):
    """In the UI the doctor runs over the monitor's own connections; run again after a fix,
    the finding is gone."""
    settings = SshSettings(config_paths=[str(lab.ssh_config)], connect_timeout_s=5)
    connector = SshConnector(settings)
    monitor = Monitor([SshSource(n, n, connector) for n in NODES], interval_s=0.5, history_s=60, connector=connector)
    with tuned(lab), sysctls(lab, {3: {"net.ipv4.tcp_rmem": "4096 131072 6291456"}}):
        task = asyncio.ensure_future(monitor.run())
        try:
            deadline = time.monotonic() + 10
            while not all(n.state is NodeState.UP for n in monitor.fleet) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            before = await examine(monitor)
            await asyncio.to_thread(write_sysctl, lab, 3, "net.ipv4.tcp_rmem", TUNED["net.ipv4.tcp_rmem"])
            after = await examine(monitor)
        finally:
            await monitor.close()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    bad = [(f.node, f.subject) for f in before.problems if f.subject not in ignored()]
    assert bad == [("node3", "net.ipv4.tcp_rmem")]
    assert [f for f in after.problems if f.subject not in ignored()] == []
    assert before.elapsed_s < 5 and after.elapsed_s < 5


def test_doctor_names_the_node_shaped_with_tbf_and_only_that_node(lab):
    """A tbf on one node's eth0 (what makes it the straggler of a pair-test matrix) is a
    traffic-shaping warning on exactly that node, with the command that removes it; the
    doctor exits 1 as for any warning. The other nodes' default qdiscs are no finding."""
    with tuned(lab):
        lab.node(3).slow_link("100mbit")
        try:
            result = netui("doctor", "--json", "-F", str(lab.ssh_config), lab.host_pattern())
            text = netui("doctor", "-F", str(lab.ssh_config), lab.host_pattern())
        finally:
            lab.node(3).clear_link()
    assert result.returncode == 1 and text.returncode == 1, result.stderr + result.stdout
    doc = json.loads(result.stdout)
    shaping = [(f["node"], f["subject"], f["severity"], f["fix"]) for f in doc["findings"]
               if f["check"] == "traffic_shaping" and f["severity"] != "ok"]
    assert shaping == [("node3", "eth0", "warning", "tc qdisc del dev eth0 root")]
    assert not_ok(doc) == [("node3", "traffic_shaping", "eth0", "warning", "tc qdisc del dev eth0 root")]
    (finding,) = [f for f in doc["findings"] if f["check"] == "traffic_shaping"]
    assert finding["evidence"].startswith("eth0: tbf at the root caps what eth0 sends at 100 Mb/s")
    assert "node3" in doc["failing_nodes"]
    if not any(f["subject"] in GLOBAL and f["node"] for f in doc["findings"]):
        assert doc["failing_nodes"] == ["node3"]
    for n in NODES:
        facts = doc["facts"][n]
        assert facts["tc"] is True
        assert [q["kind"] for q in facts["nic_settings"]["eth0"]["qdiscs"]] == (["tbf"] if n == "node3" else
                                                                                 ["noqueue"])
    lines = text.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("WARNING  node3") and "traffic_shaping" in line)
    assert lines[at + 1].strip() == "fix: tc qdisc del dev eth0 root"
    # the summary counts lines as shown: each warning line once, whatever the number of nodes
    shown = sum(1 for line in lines if line.startswith(("WARNING ", "CRITICAL", "CAREFUL ")))
    assert lines[0].startswith("netui doctor · 4 nodes: ")
    counted = doc["line_counts"]
    assert sum(n for label, n in counted.items() if label != "ok") == shown
    # and the shaping is gone once cleared
    after = json.loads(netui("doctor", "--json", "-F", str(lab.ssh_config), lab.host_pattern()).stdout)
    assert [f for f in after["findings"] if f["check"] == "traffic_shaping" and f["severity"] != "ok"] == []
