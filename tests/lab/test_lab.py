"""The multi-node lab itself: real namespaces, real sshd, real traffic.

Every traffic run is bounded (iperf3 -t 2, one client per server) and every wait has a
timeout; the whole file takes ~12 s.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.lab import SUBNET, Lab, LabNode
from tests.lab.processes import cmdline_pids, is_gone
from tests.lab.watch import iperf_bits_per_s

pytestmark = pytest.mark.lab

def ssh_all(lab: Lab, command: str,
            timeout_s: float = 15) -> dict[str, subprocess.CompletedProcess]:
    """Run `command` on every node at once with the OpenSSH client."""
    procs = {node.name: subprocess.Popen(lab.ssh_command(node, command),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
             for node in lab.nodes}
    results = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=timeout_s)
            results[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def test_four_nodes_come_up(lab: Lab) -> None:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=True).stdout
    assert [node.name for node in lab.nodes] == ["node1", "node2", "node3", "node4"]
    for node in lab.nodes:
        assert node.namespace in listed
        assert node.sshd_running
        assert ipaddress.ip_address(node.address) in SUBNET
    assert len({node.address for node in lab.nodes}) == 4


def test_ssh_hostname_is_the_node_name(lab: Lab) -> None:
    results = ssh_all(lab, "hostname")
    for name, result in results.items():
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == name


def test_each_node_sees_only_lo_and_eth0(lab: Lab) -> None:
    for node in lab.nodes:
        lines = node.exec(["cat", "/proc/net/dev"], check=True).stdout.splitlines()[2:]
        assert sorted(line.split(":")[0].strip() for line in lines) == ["eth0", "lo"]
    # Over SSH the same, /sys too: a collector reads the node's own namespace.
    over_ssh = lab.ssh("node3", "ls /sys/class/net; cat /proc/net/dev", check=True)
    lines = over_ssh.stdout.splitlines()
    assert lines[:2] == ["eth0", "lo"]
    assert sorted(line.split(":")[0].strip() for line in lines[4:]) == ["eth0", "lo"]


def test_nodes_use_only_the_lab_range_and_no_default_route(lab: Lab) -> None:
    for node in lab.nodes:
        addrs = node.exec(["ip", "-o", "addr", "show"], check=True).stdout.split("\n")
        inet = sorted(line.split()[3] for line in addrs if line.strip())
        assert inet == ["127.0.0.1/8", f"{node.address}/24"]  # no IPv6, nothing else
        assert node.exec(["ip", "route", "show", "default"], check=True).stdout == ""


def test_iperf3_between_two_nodes_is_faster_than_1_gbit(lab: Lab) -> None:
    bits_per_s = iperf_bits_per_s(lab.node(1), lab.node(2))
    assert bits_per_s > 1e9


def test_slow_link_caps_the_rate_and_clears(lab: Lab) -> None:
    node1 = lab.node(1)
    node1.slow_link("100mbit")
    assert "tbf" in node1.exec(["tc", "qdisc", "show", "dev", "eth0"]).stdout
    bits_per_s = iperf_bits_per_s(node1, lab.node(2))
    assert 10e6 < bits_per_s < 150e6
    node1.clear_link()
    assert "tbf" not in node1.exec(["tc", "qdisc", "show", "dev", "eth0"]).stdout
    assert node1.faults == frozenset()


def test_regenerated_host_key_is_refused_then_restored(lab: Lab) -> None:
    node2 = lab.node(2)
    node2.regenerate_host_key()
    refused = lab.ssh(node2, "hostname")
    assert refused.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in refused.stderr
    assert lab.ssh("node1", "hostname").stdout.strip() == "node1"  # others unaffected
    node2.restore_host_key()
    assert lab.ssh(node2, "hostname").stdout.strip() == "node2"


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _wait_for_session(node: LabNode, timeout_s: float = 10) -> None:
    """Until an SSH session runs `sleep` in the node's namespace."""
    deadline = time.monotonic() + timeout_s
    while "sleep" not in {_comm(pid) for pid in node.pids()}:
        assert time.monotonic() < deadline, f"no session on {node.name}"
        time.sleep(0.05)


def _banner(address: str, timeout_s: float = 0.5) -> bytes | None:
    """First bytes sshd sends, None when nothing arrives in time."""
    try:
        with socket.create_connection((address, 22), timeout=timeout_s) as sock:
            return sock.recv(64)
    except OSError:
        return None


def test_stop_freeze_and_kill_are_reversible(lab: Lab) -> None:
    node3 = lab.node(3)
    node3.stop_sshd()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((node3.address, 22), timeout=1).close()
    node3.start_sshd()
    assert _banner(node3.address).startswith(b"SSH-2.0-OpenSSH")

    node3.freeze()  # the kernel still accepts, sshd never speaks
    assert _banner(node3.address) is None
    node3.thaw()
    assert _banner(node3.address, timeout_s=5).startswith(b"SSH-2.0-OpenSSH")

    session = subprocess.Popen(lab.ssh_command(node3, "sleep 20"), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_session(node3)
    node3.kill_all()
    assert node3.pids() == []
    assert session.wait(timeout=10) == 255  # the client saw the node die
    node3.start_sshd()
    assert lab.ssh(node3, "hostname").stdout.strip() == "node3"


def test_a_second_lab_runs_beside_the_first(lab: Lab, make_lab) -> None:
    other = make_lab(2)
    assert {n.address for n in other.nodes}.isdisjoint(n.address for n in lab.nodes)
    # Each ssh_config reaches its own lab: the host keys would not match otherwise.
    assert other.ssh(other.node(1), "hostname", check=True).stdout.strip() == "node1"
    assert lab.ssh(lab.node(1), "hostname", check=True).stdout.strip() == "node1"


def _nothing_left(name: str, directory: Path, pids: list[int]) -> None:
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"netui-{name}-" not in netns
    assert f"nu-{name}-" not in links  # neither the bridge nor a veth
    assert cmdline_pids(str(directory)) == []  # pgrep -f <dir>
    assert not directory.exists()
    assert all(is_gone(pid) for pid in pids)


def test_teardown_leaves_nothing_behind(make_lab) -> None:
    lab = make_lab(2)
    node1, node2 = lab.nodes
    node2.popen(["iperf3", "-s", "-B", node2.address])
    node2.slow_link("1gbit")
    session = subprocess.Popen(lab.ssh_command(node1, "sleep 60"), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_session(node1)
    node1.freeze()  # a stopped sshd, session and shell must go too
    pids = node1.pids() + node2.pids()
    assert len(pids) >= 4  # 2 listeners, iperf3, the session's sshd and sleep
    name, directory = lab.name, lab.directory
    lab.close()
    _nothing_left(name, directory, pids)
    assert session.wait(timeout=10) == 255


CRASHING_LAB = """
import os, sys
sys.path.insert(0, {root!r})
from tests.lab import Lab
lab = Lab(2, name={name!r}).start()
lab.nodes[0].popen(["sleep", "60"])
lab.nodes[1].freeze()
print(lab.directory, flush=True)
os.kill(os.getpid(), 9)
"""


def test_leftovers_of_a_crashed_lab_are_cleaned_at_start() -> None:
    from tests.lab.pytest_plugin import lab_unavailable_reason

    if reason := lab_unavailable_reason():
        pytest.skip(reason)
    name = "crash"
    root = str(Path(__file__).resolve().parents[2])
    crashed = subprocess.run([sys.executable, "-c", CRASHING_LAB.format(root=root, name=name)],
                             capture_output=True, text=True, timeout=30)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    old_directory = Path(crashed.stdout.strip())
    assert old_directory.exists()
    assert cmdline_pids(str(old_directory))  # its sshds outlived it
    with Lab(2, name=name) as lab:
        assert not old_directory.exists()
        assert cmdline_pids(str(old_directory)) == []
        assert lab.ssh("node2", "hostname", check=True).stdout.strip() == "node2"
        directory = lab.directory
    _nothing_left(name, directory, [])


def test_a_lab_that_fails_halfway_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.lab import LabError, ssh_files
    from tests.lab.pytest_plugin import lab_unavailable_reason

    if reason := lab_unavailable_reason():
        pytest.skip(reason)
    monkeypatch.setattr(ssh_files, "SSHD", "/bin/false")  # every sshd exits at once
    lab = Lab(2, name="broken")
    with pytest.raises(LabError, match="sshd of node1 is not running"):
        lab.start()
    assert lab.directory is None
    assert not list(Path(tempfile.gettempdir()).glob("netui-broken*"))
    _nothing_left("broken", Path("/nonexistent"), [])


def test_namespace_pids_outlives_a_process_ending_while_it_looks(monkeypatch) -> None:
    """pyroute2's ns_pids raises ProcessLookupError when a process ends between its listing
    of /proc and its stat of /proc/<pid>/ns/net; a lab teardown that met one left the lab up
    (and the next labs' nodes never connected). namespace_pids looks again."""
    import errno

    from pyroute2 import netns as pyroute2_netns

    from tests.lab import network

    real_stat = os.stat
    ended = []

    def stat(path, *args, **kwargs):
        if str(path).endswith("/ns/net") and not ended:
            ended.append(path)
            raise ProcessLookupError(errno.ESRCH, "No such process", path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(pyroute2_netns.os, "stat", stat)
    with pytest.raises(ProcessLookupError):
        pyroute2_netns.ns_pids()  # the library's own behaviour, which namespace_pids outlives
    ended.clear()
    assert network.namespace_pids(["netui-none-node1"]) == {"netui-none-node1": []}
    assert ended  # it met the ended process, and looked again
