"""The /proc and /sys parsers on real captured files and on this machine's live files.

The fixtures are byte-for-byte copies from prometheus/procfs (see tests/data/SOURCES.txt);
every number asserted here can be read in those files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netui.collectors.procfs import (
    ParseError,
    parse_boot_time,
    parse_keyed_pairs,
    parse_net_dev,
    parse_softirqs,
    parse_softnet_stat,
    parse_stat_cpus,
)
from netui.collectors.sysfs import parse_carrier, parse_int_file, parse_operstate, parse_speed_mbps
from netui.model.samples import InterfaceCounters
from tests.testdata import PROCFS, data_text

ICE_NIC = "sys/devices_pci0000_a2_net_enp162s0f0np0"


def fixture_text(rel: str) -> str:
    return data_text(f"{PROCFS}/{rel}")


def live_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        pytest.skip(f"{path} is not readable here: {exc}")


def counters(rx_bytes, rx_packets, tx_bytes, tx_packets) -> InterfaceCounters:
    """Counters of an interface with no errors, drops or multicast."""
    return InterfaceCounters(rx_bytes, rx_packets, 0, 0, 0, 0, 0, 0, tx_bytes, tx_packets, 0, 0, 0, 0, 0, 0)


# --- /proc/net/dev ---------------------------------------------------------------------------


def test_net_dev_fixture_gives_every_interface_with_its_exact_counters():
    devs = parse_net_dev(fixture_text("proc/net/dev"))

    assert list(devs) == ["vethf345468", "lo", "docker0", "eth0"]
    # "vethf345468:     648" -- a name longer than 6 chars leaves no space before the colon
    assert devs["vethf345468"] == counters(648, 8, 438, 5)
    assert devs["lo"] == counters(1664039048, 1566805, 1664039048, 1566805)
    assert devs["docker0"] == counters(2568, 38, 438, 5)
    assert devs["eth0"] == counters(874354587, 1036395, 563352563, 732147)


def test_net_dev_of_a_network_namespace():
    devs = parse_net_dev(fixture_text("proc/pid_26231_net/dev"))

    assert devs == {"lo": counters(0, 0, 0, 0), "eth0": counters(438, 5, 648, 8)}


def test_net_dev_columns_map_to_the_kernel_order():
    header = fixture_text("proc/net/dev").splitlines()[:2]
    line = "  eth9: " + " ".join(str(n) for n in range(1, 17))

    eth9 = parse_net_dev("\n".join([*header, line]))["eth9"]

    assert (eth9.rx_bytes, eth9.rx_packets, eth9.rx_errors, eth9.rx_dropped) == (1, 2, 3, 4)
    assert (eth9.rx_fifo, eth9.rx_frame, eth9.rx_compressed, eth9.rx_multicast) == (5, 6, 7, 8)
    assert (eth9.tx_bytes, eth9.tx_packets, eth9.tx_errors, eth9.tx_dropped) == (9, 10, 11, 12)
    assert (eth9.tx_fifo, eth9.tx_colls, eth9.tx_carrier, eth9.tx_compressed) == (13, 14, 15, 16)


def test_net_dev_keeps_the_sound_lines_of_a_truncated_file():
    text = fixture_text("proc/net/dev")
    cut = text[: text.index("  eth0:") + 20]  # eth0's line stops mid-number

    devs = parse_net_dev(cut)

    assert list(devs) == ["vethf345468", "lo", "docker0"]


def test_net_dev_without_the_header_lines_keeps_every_interface():
    """Only the kernel's header lines are skipped, not whatever the first two lines are."""
    body = "\n".join(line for line in fixture_text("proc/net/dev").splitlines() if "|" not in line)

    assert list(parse_net_dev(body)) == ["vethf345468", "lo", "docker0", "eth0"]


def test_net_dev_with_no_valid_interface_line_is_a_parse_error():
    with pytest.raises(ParseError):
        parse_net_dev("eth0: 1 2 3\nlo: not numbers at all\n")


# --- /proc/net/snmp and /proc/net/netstat ----------------------------------------------------


def test_snmp_fixture_tcp_is_zipped_by_name():
    snmp = parse_keyed_pairs(fixture_text("proc/pid_26231_net/snmp"))

    assert set(snmp) == {"Ip", "Icmp", "IcmpMsg", "Tcp", "Udp", "UdpLite"}
    assert snmp["Tcp"] == {
        "RtoAlgorithm": 1, "RtoMin": 200, "RtoMax": 120000, "MaxConn": -1,
        "ActiveOpens": 1103, "PassiveOpens": 9, "AttemptFails": 8, "EstabResets": 51,
        "CurrEstab": 15, "InSegs": 653161, "OutSegs": 594855, "RetransSegs": 348,
        "InErrs": 98, "OutRsts": 1038, "InCsumErrors": 0,
    }
    assert snmp["IcmpMsg"] == {"InType3": 45, "OutType3": 50}


def test_snmp_fields_in_another_order_give_the_same_values():
    """Kernels add and move fields: values must follow their names, not their positions."""
    text = fixture_text("proc/pid_26231_net/snmp")
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("Tcp:"))
    names, values = lines[i].split()[1:], lines[i + 1].split()[1:]
    lines[i] = "Tcp: " + " ".join(reversed(names))
    lines[i + 1] = "Tcp: " + " ".join(reversed(values))

    assert parse_keyed_pairs("\n".join(lines))["Tcp"] == parse_keyed_pairs(text)["Tcp"]


def test_snmp_without_udplite_and_with_a_truncated_last_pair():
    """UdpLite may disappear on new kernels; a half-written pair is dropped, the rest kept."""
    lines = fixture_text("proc/pid_26231_net/snmp").splitlines()
    no_udplite = [line for line in lines if not line.startswith("UdpLite:")]
    truncated = no_udplite[:-1] + [no_udplite[-1][:12]]  # Udp values cut short

    snmp = parse_keyed_pairs("\n".join(truncated))

    assert "UdpLite" not in snmp and "Udp" not in snmp
    assert snmp["Tcp"]["RetransSegs"] == 348


def test_keyed_pairs_with_no_pair_is_a_parse_error():
    with pytest.raises(ParseError):
        parse_keyed_pairs("Tcp: RetransSegs OutSegs\nUdp: 1 2\n")
    with pytest.raises(ParseError):
        parse_keyed_pairs("Tcp: RetransSegs OutSegs\nTcp: 1\n")  # lengths differ


@pytest.mark.parametrize("cut", ["Tcp:", "Tcp: ", "Tcp:\n"])
def test_a_file_cut_right_after_the_tcp_values_prefix_is_a_parse_error(cut):
    """Hypothesis found it: the names line whole, its values line only "Tcp:" at the end of
    the text. The direct path gave 0 values for 15 names (a ValueError out of the parser)."""
    text = fixture_text("proc/pid_26231_net/snmp")
    text = text[: text.index("Tcp:", text.index("Tcp:") + 1)] + cut
    with pytest.raises(ParseError):
        parse_keyed_pairs(text, ("Tcp",))
    from netui.collectors.assemble import sample_from_texts

    sample = sample_from_texts({"net/snmp": text}, {}, wall_s=0.0, mono_s=0.0)
    assert sample.tcp is None and any(p.startswith("net/snmp:") for p in sample.problems)


def test_netstat_fixture_tcpext_by_name():
    text = fixture_text("proc/pid_26231_net/netstat")
    netstat = parse_keyed_pairs(text)

    names_line = next(line for line in text.splitlines() if line.startswith("TcpExt:"))
    assert list(netstat["TcpExt"]) == names_line.split()[1:]
    ext = netstat["TcpExt"]
    assert ext["TCPSynRetrans"] == 16
    assert ext["TCPLossProbes"] == 32
    assert ext["TCPSlowStartRetrans"] == 3
    assert ext["DelayedACKs"] == 287
    assert ext["TW"] == 83
    assert ext["TCPTimeouts"] == 0
    assert netstat["IpExt"]["InOctets"] == 190585481


# --- /proc/stat -----------------------------------------------------------------------------


def test_stat_fixture_per_cpu_softirq_is_the_seventh_column():
    cpu = parse_stat_cpus(fixture_text("proc/stat"))

    assert cpu.cpus == (0, 1, 2, 3, 4, 5, 6, 7)  # the aggregate "cpu " line is not a CPU
    assert tuple(cpu.softirq) == (3410, 46, 326, 60, 8, 30, 29, 31)
    assert cpu.user[0] == 44490 and cpu.idle[0] == 1087069 and cpu.iowait[0] == 220
    # user+nice+system+idle+iowait+irq+softirq+steal of "cpu0 44490 19 21045 1087069 220 1 3410 0 0 0"
    assert cpu.total[0] == 44490 + 19 + 21045 + 1087069 + 220 + 1 + 3410 + 0


def test_stat_total_does_not_count_guest_time_twice():
    # guest (7) and guest_nice (3) are already inside user and nice
    cpu = parse_stat_cpus("cpu  10 0 5 100 0 0 2 0 7 3\ncpu0 10 0 5 100 0 0 2 0 7 3\n")

    assert tuple(cpu.total) == (117,)


def test_stat_cpu_ids_come_from_the_label_not_the_line():
    """An offline CPU has no line: cpu1 missing must not renumber cpu2."""
    cpu = parse_stat_cpus("cpu  3 0 0 0 0 0 0 0\ncpu0 1 0 0 10 0 0 5 0\ncpu2 2 0 0 20 0 0 9 0\n")

    assert cpu.cpus == (0, 2)
    assert tuple(cpu.softirq) == (5, 9)


def test_stat_of_an_old_kernel_with_short_lines():
    # 2.6-era line without steal: user nice system idle iowait irq softirq
    cpu = parse_stat_cpus("cpu0 100 1 50 1000 3 4 6\n")

    assert tuple(cpu.softirq) == (6,) and tuple(cpu.steal) == (0,)
    assert tuple(cpu.total) == (100 + 1 + 50 + 1000 + 3 + 4 + 6,)


def test_stat_with_no_cpu_line_is_a_parse_error():
    with pytest.raises(ParseError):
        parse_stat_cpus("cpu  1 2 3 4 5 6 7 8\nintr 0\n")


def test_boot_time_from_stat():
    assert parse_boot_time(fixture_text("proc/stat")) == 1418183276
    assert parse_boot_time("cpu0 1 2 3 4\n") is None
    assert parse_boot_time("btime soon\n") is None


# --- /proc/softirqs and /proc/net/softnet_stat -----------------------------------------------


def test_softirqs_fixture_net_rows_per_cpu():
    s = parse_softirqs(fixture_text("proc/softirqs"))

    assert s.cpus == (0, 1)
    assert tuple(s.net_rx) == (55919, 28694)
    assert tuple(s.net_tx) == (2419, 772)


def test_softirqs_of_only_the_header_and_net_rows():
    """What the remote sampler sends: the header plus the two NET rows."""
    lines = fixture_text("proc/softirqs").splitlines()
    short = "\n".join(line for line in lines if "CPU" in line or "NET_" in line)

    assert parse_softirqs(short) == parse_softirqs("\n".join(lines))


def test_softirqs_row_narrower_than_the_header_is_a_parse_error():
    text = "    CPU0  CPU1  CPU2\n  NET_TX: 1 2 3\n  NET_RX: 4 5\n"
    with pytest.raises(ParseError, match="NET_RX"):
        parse_softirqs(text)


def test_softirqs_without_a_net_row_is_a_parse_error():
    with pytest.raises(ParseError, match="NET_TX"):
        parse_softirqs("    CPU0\n  NET_RX: 4\n")


def test_softnet_stat_fixture_rows_of_13_13_11_9_10_columns():
    text = fixture_text("proc/net/softnet_stat")
    assert [len(line.split()) for line in text.splitlines()] == [13, 13, 11, 9, 10]

    s = parse_softnet_stat(text)

    assert s.cpus == (0, 1, 2, 3, 4)  # column 13 for rows 1-2, line number for the others
    assert tuple(s.processed) == (0x00358FE3, 0x00953D1A, 0x00015C73, 0x01663FB2, 0x00008E78)
    assert tuple(s.dropped) == (0x6283, 0x446, 0x20E76, 0, 1)
    assert s.time_squeeze[2] == 0xF0000769  # near 2**32, still a plain positive u32
    assert tuple(s.time_squeeze) == (0, 0xB1, 0xF0000769, 0x109A4, 0x11)


def test_softnet_stat_cpu_id_from_column_13_when_a_cpu_is_offline():
    """Row 2 of the fixture says cpu 1 in column 13; alone on line 0 it must stay cpu 1."""
    row2 = fixture_text("proc/net/softnet_stat").splitlines()[1]

    s = parse_softnet_stat(row2 + "\n")

    assert s.cpus == (1,)
    assert tuple(s.processed) == (0x00953D1A,)


def test_softnet_stat_with_no_valid_row_is_a_parse_error():
    with pytest.raises(ParseError):
        parse_softnet_stat("00000001 00000002\nzz zz zz zz zz zz zz zz zz zz\n")


# --- /sys/class/net/<if>/ --------------------------------------------------------------------


def sysfs_file(directory: str, name: str) -> str:
    return fixture_text(f"{directory}/{name}")


def test_sysfs_eth0_fixture():
    eth0 = "sys/class/net/eth0"

    assert parse_int_file(sysfs_file(eth0, "mtu")) == 1500
    assert parse_speed_mbps(sysfs_file(eth0, "speed")) == 1000
    assert parse_operstate(sysfs_file(eth0, "operstate")) == "up"
    assert parse_carrier(sysfs_file(eth0, "carrier")) is True
    assert parse_int_file(sysfs_file(eth0, "ifindex")) == 2


def test_sysfs_link_down_ice_nic_has_an_unknown_speed_not_zero():
    """The kernel refused the read (EINVAL): the captured speed file is empty."""
    assert sysfs_file(ICE_NIC, "speed") == ""

    assert parse_speed_mbps(sysfs_file(ICE_NIC, "speed")) is None
    assert parse_operstate(sysfs_file(ICE_NIC, "operstate")) == "down"
    assert parse_carrier(sysfs_file(ICE_NIC, "carrier")) is False
    assert parse_int_file(sysfs_file(ICE_NIC, "mtu")) == 1500
    assert parse_int_file(sysfs_file(ICE_NIC, "ifindex")) == 4


@pytest.mark.parametrize(
    ("text", "mbps"),
    [("25000\n", 25000), ("1000", 1000), ("-1\n", None), ("-1", None), ("", None), ("0\n", None),
     ("\n", None), ("fast\n", None), (None, None)],
)
def test_parse_speed_mbps(text, mbps):
    assert parse_speed_mbps(text) == mbps


@pytest.mark.parametrize(
    ("text", "carrier"), [("1\n", True), ("0\n", False), ("", None), ("2\n", None), ("up", None), (None, None)]
)
def test_parse_carrier(text, carrier):
    assert parse_carrier(text) is carrier


@pytest.mark.parametrize(
    ("text", "state"),
    [("up\n", "up"), ("lowerlayerdown\n", "lowerlayerdown"), ("unknown\n", "unknown"), ("", None),
     ("\n", None), ("up\x00\x1b[2J", None), ("x" * 40, None), (None, None)],
)
def test_parse_operstate(text, state):
    assert parse_operstate(text) == state


# --- this machine's live files ---------------------------------------------------------------


def online_cpus() -> set[int] | None:
    """/sys/devices/system/cpu/online ("0-3,6") as a set, or None when unreadable."""
    try:
        text = Path("/sys/devices/system/cpu/online").read_text().strip()
    except OSError:
        return None
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def test_live_net_dev_has_loopback():
    devs = parse_net_dev(live_text("/proc/net/dev"))

    assert "lo" in devs
    lo = devs["lo"]
    # the loopback driver reports one count for both directions: RX and TX columns line up
    assert (lo.rx_bytes, lo.rx_packets) == (lo.tx_bytes, lo.tx_packets)


def test_live_snmp_has_tcp_segments():
    tcp = parse_keyed_pairs(live_text("/proc/net/snmp"))["Tcp"]

    assert {"RetransSegs", "OutSegs", "InSegs", "CurrEstab"} <= tcp.keys()
    assert tcp["MaxConn"] == -1
    assert tcp["RetransSegs"] >= 0 and tcp["OutSegs"] >= 0


def test_live_netstat_has_tcpext():
    netstat = parse_keyed_pairs(live_text("/proc/net/netstat"))

    assert "TcpExt" in netstat
    assert "TCPTimeouts" in netstat["TcpExt"]


def test_live_stat_lists_the_online_cpus():
    text = live_text("/proc/stat")
    cpu = parse_stat_cpus(text)

    assert len(cpu.cpus) <= (os.cpu_count() or len(cpu.cpus))
    online = online_cpus()
    if online is not None:
        assert set(cpu.cpus) == online
    assert all(t >= s for t, s in zip(cpu.total, cpu.softirq))
    assert parse_boot_time(text) is not None


def test_live_softirqs_cover_every_online_cpu():
    stat_cpus = set(parse_stat_cpus(live_text("/proc/stat")).cpus)
    s = parse_softirqs(live_text("/proc/softirqs"))

    assert stat_cpus <= set(s.cpus)  # the header lists every possible CPU
    assert len(s.net_rx) == len(s.net_tx) == len(s.cpus)


def test_live_softnet_stat_rows_are_online_cpus():
    text = live_text("/proc/net/softnet_stat")
    stat_cpus = set(parse_stat_cpus(live_text("/proc/stat")).cpus)

    s = parse_softnet_stat(text)

    if all(len(line.split()) >= 13 for line in text.splitlines()):
        assert set(s.cpus) == stat_cpus  # ids from column 13
    else:
        assert len(s.cpus) == len(stat_cpus)  # one row per online CPU


# --- a stray line never changes what is read from the others ---------------------------------
# (the parsers decode well-formed files in one go and fall back to line by line otherwise:
# both ways must read the same numbers)

SOURCES = {
    "fixture": lambda rel: fixture_text(rel),
    "live": lambda rel: live_text("/" + rel),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_net_dev_with_a_stray_line_reads_the_same(source):
    text = SOURCES[source]("proc/net/dev")

    assert parse_net_dev(text + "garbage without a colon\n") == parse_net_dev(text)
    assert parse_net_dev(text + "eth7: 1 2 3\n") == parse_net_dev(text)


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_stat_without_its_aggregate_line_reads_the_same(source):
    text = SOURCES[source]("proc/stat")
    without = "\n".join(line for line in text.split("\n") if not line.startswith("cpu "))

    assert parse_stat_cpus(without) == parse_stat_cpus(text)
    assert parse_stat_cpus(text.replace("\ncpu1 ", "\ncpu1  ", 1)) == parse_stat_cpus(text)


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_softnet_stat_with_a_stray_line_reads_the_same(source):
    if source == "fixture":  # rows 1-2 have one width: the file a 5.14+ kernel would print
        text = "\n".join(fixture_text("proc/net/softnet_stat").splitlines()[:2]) + "\n"
    else:
        text = live_text("/proc/net/softnet_stat")

    expected = parse_softnet_stat(text)

    assert parse_softnet_stat(text + "zz\n") == expected
    assert parse_softnet_stat(text.replace("\n", " \n", 1)) == expected


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_softirqs_with_extra_rows_reads_the_same(source):
    text = SOURCES[source]("proc/softirqs")
    expected = parse_softirqs(text)

    assert parse_softirqs(text + "     NET_RXQ:  1  2\n") == expected
    assert parse_softirqs(text.replace("NET_RX:", "NET_RX: ", 1)) == expected
