"""The pre-test probe: its parser and the choices made from it (its scripts run by sh:
tests/integration/test_node_scripts.py)."""

from __future__ import annotations

import ipaddress

import pytest

from netui.checks.pairs.probe import parse_probe, probe_command
from netui.model.samples import InterfaceCounters, InterfaceSample, NodeSample
from netui.checks.pairs.model_addresses import choose_addresses, link_speeds_mbps, parse_test_net, suggest_interface, suggest_test_net

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


def test_names_are_quoted_in_the_script():
    script = probe_command("iperf3; touch /tmp/netui-pwned")
    assert "'iperf3; touch /tmp/netui-pwned'" in script


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
