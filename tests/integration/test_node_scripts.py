"""The scripts netui sends to a node, run here by sh as a node runs them: the doctor's probe,
the tool and address probe, the RDMA probe, ping and fping, the sampler under the oldest
python3 here, and ``grep -H`` of the RDMA tree. Their parsers on captured output are unit
tests (tests/unit/test_doctor.py, test_probe.py, test_ping.py, test_infiniband.py,
test_protocol.py)."""

from __future__ import annotations

import ipaddress
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from netui.checks.doctor.probe import doctor_script, parse_doctor_probe
from netui.collectors.frames import decode_frame, frame_length
from netui.collectors.infiniband import parse_infiniband, read_infiniband, texts_from_grep
from netui.checks.latency.parse_ping import parse_ping, split_by_target
from netui.checks.pairs.probe import parse_probe, probe_command, rdma_script, tool_paths, tools_probe_command
from netui.collectors.ssh import sampler_command
from netui.checks.latency.tools import PING_PARALLEL, LatencySettings, ping_command
from netui.checks.doctor.rules import RdmaPortState
from netui.checks.doctor.rules_nic import NOT_SUPPORTED
from netui.checks.pairs.model_addresses import Probe, choose_rdma
from tests.testdata import DATA, PROCFS, data_path

SYS = DATA / PROCFS / "sys"  # reached through data_path: missing is a failure


# --- the doctor's probe -------------------------------------------------------------------


def run_script(script: str) -> str:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=20).stdout


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh")
def test_the_probe_runs_on_this_host_and_parses_without_problems():
    probe = parse_doctor_probe(run_script(doctor_script()))
    assert probe.complete and probe.problems == ()
    assert set(probe.sysctls) >= {"net.core.rmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_congestion_control"}
    assert len(probe.sysctls["net.ipv4.tcp_rmem"].split()) == 3  # tabs become single spaces
    assert probe.cpus and probe.cpus >= 1
    assert probe.irqbalance in (True, False)
    assert "lo" in probe.nics and probe.nics["lo"].rx_queues >= 1


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh")
def test_the_probe_on_a_copied_tree_reads_rdma_ports_and_pairs_netdevs(tmp_path):
    sys_root = tmp_path / "sys"
    shutil.copytree(data_path(f"{PROCFS}/sys"), sys_root, symlinks=True)
    (sys_root / "class/infiniband/mlx5_0/device/net/ens1f0np0").mkdir(parents=True)
    (sys_root / "devices/system/cpu").mkdir(parents=True)
    (sys_root / "devices/system/cpu/online").write_text("0-3,8-11\n")
    proc = tmp_path / "my proc"  # a root with a space is quoted, never split
    (proc / "sys/net/ipv4").mkdir(parents=True)
    (proc / "sys/net/ipv4/tcp_rmem").write_text("4096\t131072\t6291456\n")
    (proc / "42").mkdir()
    (proc / "42/comm").write_text("irqbalance\n")
    probe = parse_doctor_probe(run_script(doctor_script(str(proc), str(sys_root))))
    assert probe.complete and probe.problems == ()
    assert probe.sysctls == {"net.ipv4.tcp_rmem": "4096 131072 6291456"}
    assert probe.cpus == 8 and probe.irqbalance is True
    assert probe.rdma_present
    ports = {(p.device, p.port): p for p in probe.rdma}
    assert set(ports) == {("hfi1_0", 1), ("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)}
    assert ports["mlx4_0", 2] == RdmaPortState("mlx4_0", 2, "ACTIVE", "LinkUp", "40 Gb/sec (4X QDR)", "InfiniBand")
    assert ports["mlx5_0", 1].netdevs == ("ens1f0np0",)
    assert ports["mlx5_0", 1].phys_state == "ACTIVE"  # as the fixture has it (a real port says LinkUp)
    assert ports["hfi1_0", 1].rate_gbps == 100.0


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh")
def test_the_probe_asks_tc_and_ethtool_about_the_given_interfaces_only(tmp_path):
    marker = tmp_path / "ran"
    hostile = f"$(touch {marker})"  # names come from the node: quoted, never run
    out = subprocess.run(["sh", "-c", doctor_script(interfaces=["lo", hostile])], capture_output=True, text=True,
                         timeout=30).stdout
    probe = parse_doctor_probe(out)
    assert probe.complete and not marker.exists()
    assert probe.tc is (shutil.which("tc", path="/usr/sbin:/sbin:/usr/bin:/bin") is not None)
    assert set(probe.nic_settings) <= {"lo", hostile}
    if probe.tc:
        assert [q.kind for q in probe.nic_settings["lo"].qdiscs] == ["noqueue"]
        assert probe.nic_settings[hostile].qdiscs is None  # no such device: tc says so
    if probe.ethtool:
        assert probe.nic_settings["lo"].features["loopback"][0] is True
        assert probe.nic_settings["lo"].ring_problem == NOT_SUPPORTED
    # a copied tree is not asked: tc and ethtool would describe this host
    assert "@tools" not in doctor_script("/tmp/proc", "/tmp/sys") and "@tools" not in doctor_script()

# --- the tool, address and RDMA probes ----------------------------------------------------


@pytest.mark.skipif(shutil.which("sh") is None or shutil.which("ip") is None, reason="needs sh and ip")
def test_the_probe_script_runs_here_and_parses():
    out = subprocess.run(["sh", "-c", probe_command("sh")], capture_output=True, text=True, timeout=10)
    probe = parse_probe(out.stdout)
    assert probe.tool_path and Path(probe.tool_path).name == "sh"
    assert ipaddress.IPv4Interface("127.0.0.1/8") in probe.addresses.get("lo", [])
    assert probe.listen_probed  # the ports listening here (sshd's 22 where one runs, say): as read
    assert all(0 < port <= 65535 for port in probe.listening)
    missing = parse_probe(subprocess.run(["sh", "-c", probe_command("no-such-tool-netui")],
                                         capture_output=True, text=True, timeout=10).stdout)
    assert missing.tool_path is None


def run_rdma_script(root: Path) -> Probe:
    out = subprocess.run(["sh", "-c", rdma_script(str(root))], capture_output=True, text=True, timeout=10)
    return parse_probe(out.stdout)


def test_rdma_script_on_the_procfs_fixture_tree():
    probe = run_rdma_script(data_path(f"{PROCFS}/sys/class/infiniband"))
    assert probe.rdma_probed
    ports = {(p.device, p.port): p for p in probe.rdma}
    assert ports[("mlx4_0", 1)].state == "ACTIVE" and ports[("mlx4_0", 1)].link_layer == "InfiniBand"
    assert ("hfi1_0", 1) in ports and ("mlx5_0", 1) in ports
    assert all(p.gids == () for p in probe.rdma)  # the fixture has no GID tables


def roce_tree(root: Path) -> Path:
    """mlx5_0 port 1 on Ethernet: GIDs 0/1 link-local (RoCE v1/v2), 2/3 IPv4-mapped (v1/v2)."""
    port = root / "mlx5_0" / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (port / "link_layer").write_text("Ethernet\n")
    gids = ["fe80:0000:0000:0000:0a00:27ff:fe00:0001"] * 2 + ["0000:0000:0000:0000:0000:ffff:0a0a:0001"] * 2
    for i, (gid, kind) in enumerate(zip(gids, ["IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2"])):
        (port / "gids" / str(i)).write_text(gid + "\n")
        (port / "gid_attrs" / "types" / str(i)).write_text(kind + "\n")
    (port / "gids" / "4").write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")  # unused: no type
    (port / "gid_attrs" / "types" / "4").write_text("")
    return root


def test_roce_v2_gid_that_maps_the_test_address_is_chosen(tmp_path):
    probe = run_rdma_script(roce_tree(tmp_path))
    (port,) = probe.rdma
    assert [g.index for g in port.gids] == [0, 1, 2, 3]
    assert port.gids[3].ipv4 == "10.10.0.1" and port.gids[0].ipv4 is None
    choice = choose_rdma("gpu1", probe, address="10.10.0.1")
    assert (choice.device, choice.ib_port, choice.gid_index, choice.problem) == ("mlx5_0", 1, 3, None)
    assert choose_rdma("gpu1", probe).gid_index == 3  # v2 and IPv4 before v2 link-local
    assert choose_rdma("gpu1", probe, gid_index=1).gid_index == 1  # what the user gave wins


def test_rdma_problems_are_worded_per_node(tmp_path):
    empty = run_rdma_script(tmp_path / "nothing")
    assert empty.rdma_probed and empty.rdma == ()
    assert choose_rdma("node1", empty).problem == "no RDMA device on node1 (/sys/class/infiniband is empty)"
    probe = run_rdma_script(roce_tree(tmp_path / "t"))
    assert "RDMA device mlx5_9 not found on node2 (it has mlx5_0)" == choose_rdma("node2", probe, device="mlx5_9").problem
    assert choose_rdma("node2", probe, ib_port=2).problem == "no RDMA port 2 on node2"
    not_probed = Probe(tool_path="/usr/bin/ib_write_bw")
    assert choose_rdma("x", not_probed, device="mlx5_1").device == "mlx5_1"

# --- ping and fping -----------------------------------------------------------------------


def test_the_probe_reports_both_tools_and_the_addresses():
    out = subprocess.run(["sh", "-c", tools_probe_command(["fping", "ping", "no-such-tool-here"])],
                         capture_output=True, text=True, timeout=10).stdout
    paths = tool_paths(out)
    assert list(paths) == ["fping", "ping", "no-such-tool-here"] and paths["no-such-tool-here"] is None
    assert "lo" in parse_probe(out).addresses


def test_ping_command_tags_lines_and_runs_a_bounded_number_at_once():
    command = ping_command(LatencySettings(count=2, interval_s=0.2), "127.0.0.1", ["127.0.0.1", "127.0.0.2"])
    argv = shlex.split(command)
    assert argv[:2] == ["sh", "-c"] and argv[3:] == ["sh", "127.0.0.1", "127.0.0.2"]
    assert f'-ge {PING_PARALLEL} ]' in argv[2] and "-I 127.0.0.1" in argv[2]
    result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=20)
    parts = split_by_target(result.stdout)
    assert set(parts) == {"127.0.0.1", "127.0.0.2"}
    for target, (output, status) in parts.items():
        assert status == 0 and parse_ping(output, "", status).received == 2

# --- the RDMA tree as grep -H sends it ----------------------------------------------------


@pytest.mark.skipif(shutil.which("grep") is None, reason="no grep")
def test_grep_output_of_the_fixture_tree_parses_the_same():
    """What a remote sampler would send: ``grep -H .`` over the port files, in one process."""
    root = data_path(f"{PROCFS}/sys/class/infiniband")
    real = parse_infiniband(read_infiniband(str(SYS)))
    files = sorted(str(p) for p in root.glob("*/ports/*/**/*") if p.is_file())
    out = subprocess.run(["grep", "-H", ".", *files], capture_output=True, text=True, check=True).stdout
    assert parse_infiniband(texts_from_grep(out)) == real

# --- the sampler under the oldest python3 here --------------------------------------------


def oldest_python3() -> str:
    """The oldest python3.N on this host's PATH (a node may have 3.6; this host has what it has)."""
    found = []
    for minor in range(6, 20):
        path = shutil.which(f"python3.{minor}")
        if path:
            found.append(path)
    assert found, "no python3.N here"
    return found[0]


@pytest.mark.slow
def test_the_shipped_command_runs_under_the_oldest_python3_here(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(oldest_python3())
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    proc = subprocess.Popen(["sh", "-c", sampler_command(0.1)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        header = proc.stdout.readline()
        assert header, proc.stderr.read().decode(errors="replace")
        sample = decode_frame(proc.stdout.read(frame_length(header)))
    finally:
        proc.kill()
        proc.wait()
    assert sample.problems == () and "lo" in sample.interfaces and sample.cpu_sums is not None
    assert sample.hostname == os.uname().nodename
