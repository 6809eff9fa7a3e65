"""Raw texts → NodeSample: the captured fixture tree, small built trees, partial and garbage input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from netui.collectors.assemble import PROC_FILES, interfaces_from_texts, kind_from_sysfs, sample_from_texts
from netui.collectors.local import LiveReader, TreeReader, counters_from_stats64
from netui.model.node import data_plane
from netui.model.rates import node_rates
from netui.model.samples import InterfaceCounters, NodeSample
from tests.testdata import PROCFS, data_path

ICE_NIC = "devices_pci0000_a2_net_enp162s0f0np0"
BOOT_ID = "b5a8a1f2-7c1e-4a47-9f8e-0d3c2b1a0f99"


@pytest.fixture
def fixture_tree() -> Path:
    return data_path(PROCFS)


@pytest.fixture
def host_tree(fixture_tree: Path, tmp_path: Path) -> Path:
    """A copy laid out like a real host: /proc/net/{snmp,netstat}, hostname, boot id, and the
    ice NIC reached through a /sys/class/net symlink as on a real machine."""
    proc, sys = tmp_path / "proc", tmp_path / "sys"
    shutil.copytree(fixture_tree / "proc", proc)
    for name in ("snmp", "netstat"):
        shutil.copy(fixture_tree / "proc" / "pid_26231_net" / name, proc / "net" / name)
    (proc / "sys" / "kernel" / "random").mkdir(parents=True)
    (proc / "sys" / "kernel" / "hostname").write_text("gpu07\n")
    (proc / "sys" / "kernel" / "random" / "boot_id").write_text(BOOT_ID + "\n")
    (sys / "class" / "net").mkdir(parents=True)
    shutil.copytree(fixture_tree / "sys" / "class" / "net" / "eth0", sys / "class" / "net" / "eth0")
    shutil.copytree(fixture_tree / "sys" / ICE_NIC, sys / "devices" / "pci0000:a2" / "net" / "enp162s0f0np0")
    (sys / "class" / "net" / "enp162s0f0np0").symlink_to("../../devices/pci0000:a2/net/enp162s0f0np0")
    with open(proc / "net" / "dev", "a") as f:
        f.write("enp162s0f0np0:       0       0    0    0    0     0          0         0"
                "        0       0    0    0    0     0       0          0\n")
    return tmp_path


def test_tree_reader_on_the_fixture_tree(fixture_tree: Path):
    sample = TreeReader(procfs=str(fixture_tree / "proc"), sysfs=str(fixture_tree / "sys")).sample()

    assert set(sample.interfaces) == {"vethf345468", "lo", "docker0", "eth0"}
    eth0 = sample.interfaces["eth0"]
    assert (eth0.mtu, eth0.speed_mbps, eth0.operstate, eth0.carrier, eth0.ifindex) == (1500, 1000, "up", True, 2)
    assert eth0.counters.rx_bytes == 874354587 and eth0.counters.tx_bytes == 563352563
    assert sample.cpu is not None and sample.cpu.cpus == tuple(range(8))
    assert sample.softirqs is not None and tuple(sample.softirqs.net_rx) == (55919, 28694)
    assert sample.softnet is not None and sample.softnet.cpus == (0, 1, 2, 3, 4)


def test_tree_reader_without_snmp_reports_a_problem_and_no_tcp(fixture_tree: Path):
    """The fixture keeps snmp under pid_26231_net/: proc/net/snmp is absent."""
    sample = TreeReader(procfs=str(fixture_tree / "proc"), sysfs=str(fixture_tree / "sys")).sample()

    assert sample.tcp is None
    assert any(p.startswith("net/snmp") for p in sample.problems), sample.problems
    assert sample.interfaces  # the rest of the sample is still there


def test_tree_reader_classifies_interfaces_of_the_fixture(fixture_tree: Path):
    sample = TreeReader(procfs=str(fixture_tree / "proc"), sysfs=str(fixture_tree / "sys")).sample()

    kinds = {name: i.kind for name, i in sample.interfaces.items()}
    assert kinds["lo"] == "loopback"
    assert kinds["vethf345468"] == "veth"
    assert kinds["docker0"] == "bridge"
    assert data_plane(sample.interfaces) == ["eth0"]


def test_tree_reader_on_a_host_layout_has_tcp(host_tree: Path):
    reader = TreeReader(procfs=str(host_tree / "proc"), sysfs=str(host_tree / "sys"))
    sample = reader.sample()

    assert sample.problems == ()
    assert reader.name == "gpu07" and sample.hostname == "gpu07"
    assert sample.boot_id == BOOT_ID
    assert sample.tcp is not None
    assert sample.tcp.tcp["RetransSegs"] == 348 and sample.tcp.tcp["OutSegs"] == 594855
    assert sample.tcp.ext["TCPSynRetrans"] == 16
    assert "InOctets" not in sample.tcp.ext  # IpExt is not TCP


def test_tree_reader_follows_the_class_symlink_of_a_link_down_nic(host_tree: Path):
    sample = TreeReader(procfs=str(host_tree / "proc"), sysfs=str(host_tree / "sys")).sample()

    ice = sample.interfaces["enp162s0f0np0"]
    assert ice.speed_mbps is None  # empty speed file: unknown, not 0
    assert (ice.operstate, ice.carrier, ice.mtu, ice.ifindex) == ("down", False, 1500, 4)
    assert ice.kind == "physical"  # the symlink points at a PCI device
    assert data_plane(sample.interfaces) == ["enp162s0f0np0", "eth0"]


def test_tree_with_missing_and_garbage_files_gives_a_partial_sample(tmp_path: Path):
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "dev").write_text("Inter-|\n face |\n  eth0: 12 oops\n")
    (proc / "net" / "snmp").write_text("Ip: Forwarding\nIp: 1\n")  # no Tcp pair
    (proc / "net" / "netstat").write_text("TcpExt: A B\nTcpExt: 1\n")
    (proc / "stat").write_text("cpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\nbtime 17\n")
    (proc / "softirqs").write_text("garbage\n")
    # /proc/net/softnet_stat missing altogether

    sample = TreeReader(procfs=str(proc), sysfs=str(tmp_path / "sys")).sample()

    assert isinstance(sample, NodeSample)
    assert sample.interfaces == {} and sample.tcp is None
    assert sample.softirqs is None and sample.softnet is None
    assert sample.cpu is not None and sample.cpu.cpus == (0,)  # the sound file still counts
    by_file = {p.partition(":")[0] for p in sample.problems}
    assert {"net/dev", "net/snmp", "net/netstat", "softirqs", "net/softnet_stat"} <= by_file
    assert "stat" not in by_file
    assert "net/softnet_stat: not readable" in sample.problems


def test_tree_of_binary_garbage_does_not_crash(tmp_path: Path):
    """A NUL in an 'interface name' once escaped as ValueError from open()."""
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "dev").write_bytes(b"Inter-|\n face |\n\x00\xffbad\x00: 1 2\n../x: 1\n\x00\n")
    for rel in ("net/snmp", "net/netstat", "stat", "softirqs", "net/softnet_stat"):
        (proc / rel).write_bytes(b"\x00\x01\xfe\xff\n\x00:\x00\n")

    sample = TreeReader(procfs=str(proc), sysfs=str(tmp_path / "sys")).sample()

    assert sample.interfaces == {} and sample.cpu is None and sample.tcp is None
    assert len(sample.problems) == 6


def test_empty_tree_lists_every_unreadable_file(tmp_path: Path):
    sample = TreeReader(procfs=str(tmp_path), sysfs=str(tmp_path)).sample()

    for key in ("net/dev", "net/snmp", "stat", "softirqs", "net/softnet_stat"):
        assert f"{PROC_FILES[key]}: not readable" in sample.problems
    assert sample.boot_id is None and sample.hostname is None


# --- sample_from_texts, the meeting point of every transport ---------------------------------


def test_sample_from_texts_with_interfaces_from_netlink_does_not_need_net_dev(fixture_tree: Path):
    ifaces = interfaces_from_texts({"eth0": InterfaceCounters(*range(16))}, {"eth0": {"mtu": "9000\n"}})
    texts = {"stat": (fixture_tree / "proc" / "stat").read_text(), "boot_id": " abc \n"}

    sample = sample_from_texts(texts, {}, wall_s=1.0, mono_s=2.0, interfaces=ifaces)

    assert sample.interfaces["eth0"].mtu == 9000
    assert not any(p.startswith("net/dev") for p in sample.problems)
    assert sample.boot_id == "abc"
    assert (sample.wall_s, sample.mono_s) == (1.0, 2.0)


def test_sample_from_texts_garbage_netstat_keeps_tcp(fixture_tree: Path):
    texts = {"net/snmp": (fixture_tree / "proc" / "pid_26231_net" / "snmp").read_text(), "net/netstat": "junk"}

    sample = sample_from_texts(texts, {}, wall_s=0.0, mono_s=0.0)

    assert sample.tcp is not None and sample.tcp.ext == {}
    assert sample.tcp.tcp["RetransSegs"] == 348
    assert any(p.startswith("net/netstat") for p in sample.problems)


def test_sample_from_texts_carries_the_callers_problems():
    sample = sample_from_texts({}, {}, wall_s=0.0, mono_s=0.0, problems=["ssh: stderr said hello"])

    assert sample.problems[0] == "ssh: stderr said hello"


@pytest.mark.parametrize(
    ("name", "link", "type_", "extras", "kind"),
    [
        ("lo", None, 772, frozenset(), "loopback"),
        ("weird", None, 772, frozenset(), "loopback"),  # ARPHRD_LOOPBACK whatever the name
        ("br0", "../../devices/virtual/net/br0", 1, frozenset({"bridge"}), "bridge"),
        ("bond0", "../../devices/virtual/net/bond0", 1, frozenset({"bonding"}), "bond"),
        ("eth0", None, 1, frozenset({"device"}), "physical"),
        ("ib0", "../../devices/pci0000:00/0000:00:02.0/net/ib0", 32, frozenset(), "physical"),
        ("veth1a2b", "../../devices/virtual/net/veth1a2b", 1, frozenset(), "veth"),
        ("docker0", "../../devices/virtual/net/docker0", 1, frozenset(), "bridge"),
        ("wg0", "../../devices/virtual/net/wg0", 65534, frozenset(), "virtual"),
        ("eth0", None, 1, frozenset(), None),  # copied tree: nothing tells
    ],
)
def test_kind_from_sysfs(name, link, type_, extras, kind):
    assert kind_from_sysfs(name, link, type_, extras) == kind


def test_counters_from_stats64_sum_like_proc_net_dev():
    """/proc/net/dev prints drop, frame and carrier as sums; netlink counters must match."""
    names = ["rx_dropped", "rx_missed_errors", "rx_length_errors", "rx_over_errors", "rx_crc_errors",
             "rx_frame_errors", "tx_carrier_errors", "tx_aborted_errors", "tx_window_errors",
             "tx_heartbeat_errors", "multicast", "collisions"]
    stats = {name: 1 << i for i, name in enumerate(names)} | {"rx_bytes": 1000, "tx_bytes": 2000}

    c = counters_from_stats64(stats)

    assert c.rx_dropped == 0b11
    assert c.rx_frame == 0b111100
    assert c.tx_carrier == 0b1111000000
    assert (c.rx_multicast, c.tx_colls) == (1 << 10, 1 << 11)
    assert (c.rx_bytes, c.tx_bytes, c.rx_packets) == (1000, 2000, 0)


def test_live_reader_on_this_machine():
    """Netlink (or the file fallback) for interfaces, /proc for the rest; two reads give rates."""
    if not Path("/proc/net/dev").is_file():
        pytest.skip("no /proc here")
    reader = LiveReader()
    try:
        first = reader.sample()
        second = reader.sample()
    finally:
        reader.close()

    assert first.interfaces["lo"].kind == "loopback"
    assert first.tcp is not None and "RetransSegs" in first.tcp.tcp
    assert first.cpu is not None and first.softirqs is not None
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert first.boot_id == boot_id
    rates = node_rates(first, second)
    assert rates is not None and rates.interval_s > 0
    assert rates.interfaces["lo"].rx_bytes_per_s is not None and rates.interfaces["lo"].rx_bytes_per_s >= 0
