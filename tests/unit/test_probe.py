"""The pre-test probe: its script run for real by sh, its parser, and the choices made from it."""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
from pathlib import Path

import pytest

from netui.collectors.probe import parse_probe, probe_command, rdma_script
from netui.model.samples import InterfaceCounters, InterfaceSample, NodeSample
from netui.model.testnet import (
    Probe,
    choose_addresses,
    choose_rdma,
    link_speeds_mbps,
    parse_test_net,
    suggest_interface,
    suggest_test_net,
)
from tests.testdata import PROCFS, data_path

# `ip -o -4 addr show` as printed in a lab node and on a two-rail host
LAB_NODE = """\
@tool iperf3
/usr/bin/iperf3
@addr
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
895: eth0    inet 198.18.0.9/24 scope global eth0\\       valid_lft forever preferred_lft forever
"""


def host(n: int, *, tool: str = "/usr/bin/iperf3") -> str:
    return f"""\
@tool iperf3
{tool}
@addr
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eno1    inet 10.0.0.{n}/24 brd 10.0.0.255 scope global eno1\\       valid_lft forever preferred_lft forever
5: ib0    inet 10.10.0.{n}/16 brd 10.10.255.255 scope global ib0\\       valid_lft forever preferred_lft forever
7: eth1.100@eth1    inet 192.168.100.{n}/24 scope global eth1.100\\       valid_lft forever preferred_lft forever
"""


def iface(name: str, *, speed: int | None = None, kind: str = "physical", operstate: str = "up") -> InterfaceSample:
    return InterfaceSample(name, InterfaceCounters(*([0] * 16)), mtu=1500, operstate=operstate, carrier=True,
                           speed_mbps=speed, ifindex=1, kind=kind)


def sample(*ifaces: InterfaceSample) -> NodeSample:
    return NodeSample(wall_s=0.0, mono_s=0.0, boot_id="b", interfaces={i.name: i for i in ifaces})


def test_a_lab_node():
    probe = parse_probe(LAB_NODE)
    assert probe.tool == "iperf3" and probe.tool_path == "/usr/bin/iperf3"
    assert probe.addresses == {"lo": [ipaddress.IPv4Interface("127.0.0.1/8")],
                               "eth0": [ipaddress.IPv4Interface("198.18.0.9/24")]}
    assert probe.problems == () and not probe.rdma_probed


def test_listening_ports_are_read_from_the_hex_of_proc_net_tcp():
    probe = parse_probe("@tool iperf3\n/usr/bin/iperf3\n@addr\n@listen\n1451\n0016\nzz\n")
    assert probe.listening == {0x1451, 22} and probe.listen_probed  # 0x1451 = 5201
    assert "zz" in probe.problems


def test_a_missing_tool_and_garbage_lines():
    probe = parse_probe("@tool iperf3\n-\n@addr\nsh: 1: ip: not found\n")
    assert probe.tool_path is None
    assert probe.addresses == {}
    assert probe.problems == ("sh: 1: ip: not found",)
    assert parse_probe(None).tool_path is None  # type: ignore[arg-type]


def test_vlan_names_lose_their_parent():
    assert "eth1.100" in parse_probe(host(1)).addresses


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


def test_names_are_quoted_in_the_script():
    script = probe_command("iperf3; touch /tmp/netui-pwned")
    assert "'iperf3; touch /tmp/netui-pwned'" in script


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


# --- the test address --------------------------------------------------------------------------


def test_test_net_is_a_subnet_an_interface_or_nothing():
    assert parse_test_net("") is None
    assert parse_test_net("198.18.0.0/24") == ipaddress.IPv4Network("198.18.0.0/24")
    assert parse_test_net("10.10.0.5/16") == ipaddress.IPv4Network("10.10.0.0/16")
    assert parse_test_net("ib0") == "ib0"
    for bad in ("10.0.0.0/33", "eth0 eth1", "300.1.1.1", "a" * 16):
        with pytest.raises(ValueError):
            parse_test_net(bad)


def test_by_subnet_and_by_interface():
    probes = {f"gpu{n}": parse_probe(host(n)) for n in (1, 2)}
    by_net = choose_addresses(probes, "10.10.0.0/16")
    assert by_net.addresses == {"gpu1": "10.10.0.1", "gpu2": "10.10.0.2"}
    assert by_net.interfaces == {"gpu1": "ib0", "gpu2": "ib0"} and not by_net.problems
    by_name = choose_addresses(probes, "eno1")
    assert by_name.addresses == {"gpu1": "10.0.0.1", "gpu2": "10.0.0.2"}
    missing = choose_addresses(probes, "172.16.0.0/12")
    assert missing.problems == {"gpu1": "no IPv4 address in 172.16.0.0/12 on gpu1",
                                "gpu2": "no IPv4 address in 172.16.0.0/12 on gpu2"}
    assert choose_addresses(probes, "eth9").problems["gpu1"] == "no IPv4 address on eth9 on gpu1"


def test_the_suggestion_is_the_fastest_shared_subnet():
    probes = {f"gpu{n}": parse_probe(host(n)) for n in (1, 2)}
    samples = {f"gpu{n}": sample(iface("eno1", speed=1000), iface("ib0", speed=200_000),
                                 iface("eth1.100", speed=25_000)) for n in (1, 2)}
    net, holders = suggest_test_net(probes, samples)
    assert str(net) == "10.10.0.0/16" and holders == {"gpu1": "ib0", "gpu2": "ib0"}
    # the slowest node's speed counts
    samples["gpu2"] = sample(iface("eno1", speed=1000), iface("ib0", speed=100), iface("eth1.100", speed=25_000))
    assert str(suggest_test_net(probes, samples)[0]) == "192.168.100.0/24"
    # a down interface is not suggested while an up one is shared
    samples["gpu2"] = sample(iface("eno1", speed=1000), iface("ib0", speed=200_000, operstate="down"),
                             iface("eth1.100", speed=25_000))
    assert str(suggest_test_net(probes, samples)[0]) == "192.168.100.0/24"
    choice = choose_addresses(probes, "", samples)
    assert choice.addresses == {"gpu1": "192.168.100.1", "gpu2": "192.168.100.2"}
    assert choice.how == "on 192.168.100.0/24 (eth1.100, suggested)"


def test_lab_nodes_share_their_veth_subnet_and_loopback_is_never_suggested():
    probes = {"node1": parse_probe(LAB_NODE), "node2": parse_probe(LAB_NODE.replace("198.18.0.9", "198.18.0.10"))}
    choice = choose_addresses(probes)
    assert choice.addresses == {"node1": "198.18.0.9", "node2": "198.18.0.10"}
    only_lo = {"a": parse_probe("@addr\n1: lo    inet 127.0.0.1/8 scope host lo\n")}
    assert suggest_test_net(only_lo) is None
    assert "no subnet shared by all nodes" in choose_addresses(only_lo).problems["a"]


def test_link_speeds_and_the_interface_suggestion_ignore_software_devices():
    samples = {"a": sample(iface("eth0", speed=10_000, kind="veth"), iface("lo", kind="loopback")),
               "b": sample(iface("eth0", speed=10_000, kind="veth"), iface("ib0", speed=100_000))}
    assert link_speeds_mbps(samples, {"a": "eth0", "b": "ib0"}) == {"a": None, "b": 100_000}
    assert suggest_interface(samples) == "eth0"  # the only one they share
    samples["a"] = sample(iface("eth0", speed=10_000, kind="veth"), iface("ib0", speed=100_000))
    assert suggest_interface(samples) == "ib0"
    assert suggest_interface({}) is None
