"""The perftest report parser.

Real inputs: two excerpts quoted in linux-rdma/perftest issues (tests/data/issue-quotes/, see
tests/data/SOURCES.txt) and the stderr of Debian's perftest 4.5 captured on this
machine, which has no RDMA device (tests/data/tool-output/README.txt).

The texts marked SYNTHETIC below were WRITTEN FROM THE REFERENCE (network-facts.md E.3/E.4,
whose formats come from perftest_parameters.h and the 4.5 binary's strings), not captured:
no machine here has an RDMA device to produce them.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.checks.pairs.parse_perftest import (
    MIB_PER_S_TO_GBPS,
    PerftestResult,
    classify_perftest_error,
    parse_perftest,
    perftest_waiting,
)
from tests.testdata import ISSUE_QUOTES, data_text


def quoted(name: str) -> str:
    return data_text(f"{ISSUE_QUOTES}/{name}")


# --- real output -----------------------------------------------------------------------------


def test_report_gbits_all_sizes_gives_one_row_per_size():
    r = parse_perftest(quoted("ib_write_bw_ib_report_gbits_all_sizes.txt"))

    assert r.ok and r.error is None and r.kind is None
    assert [row.size_bytes for row in r.rows] == [2, 4, 8, 16]
    assert all(row.iterations == 5000 for row in r.rows)
    first = r.rows[0]  # REPORT_FMT_EXT: six decimals when the values are tiny
    assert first.bw_peak_gbps == pytest.approx(0.042350)
    assert first.bw_avg_gbps == pytest.approx(0.042185)
    assert first.msg_rate_mpps == pytest.approx(2.636533)
    # "16  5000  0.34  0.34 \t\t 2.640952": tabs inside the row
    assert r.rows[-1].bw_avg_gbps == pytest.approx(0.34)
    assert r.rows[-1].msg_rate_mpps == pytest.approx(2.640952)
    assert r.bw_avg_gbps == pytest.approx(0.34)  # the largest size
    assert r.gbps == r.bw_avg_gbps
    assert r.unit == "Gb/sec"
    assert r.test == "RDMA_Write BW Test"
    assert r.device == "mlx5_0"
    assert r.link_type == "IB"
    assert r.gid_index is None
    assert r.setting("Number of qps") == "1"
    assert r.setting("rdma_cm QPs") == "OFF"  # "rdma_cm QPs\t : OFF": a tab before the colon
    assert r.setting("Mtu") == "4096[B]"
    assert not r.is_latency


def test_roce_server_banner_truncated_at_the_header():
    text = quoted("ib_write_bw_roce_server_banner_truncated.txt")
    r = parse_perftest(text)

    assert perftest_waiting(text)
    assert not r.ok
    assert r.kind == "error"
    assert r.error == "no result rows: the output ends at the table header"
    assert r.rows == ()
    assert r.link_type == "Ethernet"
    assert r.gid_index == 3
    assert r.device == "mlx5_0"
    assert r.unit == "MB/sec"
    assert r.bw_avg_gbps is None


def test_no_device_as_debian_perftest_4_5_prints_it():
    stderr = data_text("tool-output/ib_write_bw_4.5_no_device.stderr.txt")
    r = parse_perftest("", stderr, exit_status=1)

    assert not r.ok
    assert r.kind == "no-device"
    assert r.error == (
        "Did not detect devices; If device exists, check if driver is up; "
        "Unable to find the Infiniband/RoCE device"
    )


def test_bad_output_flag_as_debian_perftest_4_5_prints_it():
    stderr = data_text("tool-output/ib_write_bw_4.5_bad_output_flag.stderr.txt")
    r = parse_perftest("", stderr, exit_status=1)

    assert not r.ok
    assert r.kind == "error"
    assert "Parser function exited with Error" in r.error


# --- SYNTHETIC: written from the reference (E.3), not captured --------------------------------

RULE = "-" * 87

# SYNTHETIC header block of a RoCE client (keys from E.3; values invented)
HEADER_ROCE = f"""{RULE}
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_1
 Number of qps   : 4\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 TX depth        : 128
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 3
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
{RULE}
 local address: LID 0000 QPN 0x0108 PSN 0x63ad7d RKey 0x17eedf VAddr 0x007f760c947000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:255:255:05
 remote address: LID 0000 QPN 0x0076 PSN 0xf3810c RKey 0x201600 VAddr 0x007fbb4c981000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:255:255:04
{RULE}
"""

# SYNTHETIC: default unit of perftest >= Aug 2024 (MiB/sec)
MIB_TABLE = HEADER_ROCE + f""" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]
 65536      5000             11580.44            11576.91\t\t   0.185231
{RULE}
"""

# SYNTHETIC: the same in an older perftest (MB/sec, same 2^20-byte unit)
MB_TABLE = MIB_TABLE.replace("MiB/sec", "MB/sec")

# SYNTHETIC: --cpu_util appends a column to header and rows; duration mode: no peak
CPU_UTIL_TABLE = HEADER_ROCE + f""" WARNING: BW peak won't be measured in this run.
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]    CPU_Util[%]
 65536      1136546          0.00               97.12\t\t   0.185244\t    12.34
{RULE}
"""

# SYNTHETIC: bidirectional title, Gb/sec
BIDIR_TABLE = f"""{RULE}
                    RDMA_Write Bidirectional BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Link type       : IB
{RULE}
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             190.21             189.97\t\t   0.362335
{RULE}
"""

# SYNTHETIC: per-port variant (header columns as in the 4.5 binary's strings)
PER_PORT_TABLE = f"""{RULE}
                    RDMA_Write BW Test
{RULE}
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   BW Port1[Gb/sec]   MsgRate Port1[Mpps]   BW Port2[Gb/sec]   MsgRate Port2[Mpps]
 65536      5000           180.00             179.50\t\t   0.342369        89.75            0.171184              89.75            0.171184
{RULE}
"""

# SYNTHETIC: latency test, iteration mode (header from E.3)
LAT_TABLE = f"""{RULE}
                    RDMA_Write Latency Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
{RULE}
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 2       1000          1.02           3.51         1.05     \t       1.07        \t0.08   \t\t1.41    \t\t3.51   
{RULE}
"""

# SYNTHETIC: latency test, duration mode
LAT_DURATION_TABLE = f"""{RULE}
                    RDMA_Write Latency Test
{RULE}
 #bytes        #iterations       t_avg[usec]    tps average
 2             4683915           1.06           938742.15
{RULE}
"""


def test_mib_per_s_is_converted_to_gbit_per_s():
    r = parse_perftest(MIB_TABLE)

    assert r.ok
    assert r.unit == "MiB/sec"
    (row,) = r.rows
    assert row.size_bytes == 65536 and row.iterations == 5000
    assert row.bw_avg_gbps == pytest.approx(11576.91 * 8 * 2**20 / 1e9)
    assert row.bw_avg_gbps == pytest.approx(97.115, abs=0.001)
    assert row.bw_peak_gbps == pytest.approx(11580.44 * MIB_PER_S_TO_GBPS)
    assert row.msg_rate_mpps == pytest.approx(0.185231)
    assert r.device == "mlx5_1" and r.link_type == "Ethernet" and r.gid_index == 3
    assert r.setting("Number of qps") == "4"


def test_old_mb_per_s_header_is_the_same_unit():
    mib, mb = parse_perftest(MIB_TABLE), parse_perftest(MB_TABLE)

    assert mb.ok and mb.unit == "MB/sec"
    assert mb.rows == mib.rows


def test_cpu_util_column_is_ignored_and_unmeasured_peak_is_none():
    r = parse_perftest(CPU_UTIL_TABLE)

    assert r.ok
    (row,) = r.rows
    assert row.bw_peak_gbps is None  # 0.00 = not measured
    assert row.bw_avg_gbps == pytest.approx(97.12)
    assert row.msg_rate_mpps == pytest.approx(0.185244)
    assert row.iterations == 1136546
    assert r.warnings == ("WARNING: BW peak won't be measured in this run.",)


def test_bidirectional_title():
    r = parse_perftest(BIDIR_TABLE)

    assert r.ok
    assert r.test == "RDMA_Write Bidirectional BW Test"
    assert r.bw_avg_gbps == pytest.approx(189.97)


def test_per_port_columns_do_not_shift_the_main_ones():
    r = parse_perftest(PER_PORT_TABLE)

    assert r.ok
    (row,) = r.rows
    assert row.bw_avg_gbps == pytest.approx(179.50)
    assert row.msg_rate_mpps == pytest.approx(0.342369)


def test_six_decimal_rows_in_mib():
    # SYNTHETIC: REPORT_FMT_EXT (every value with 6 decimals) under the MiB/sec header
    text = HEADER_ROCE + (
        " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
        " 2          5000           5.048753            5.028856            2.636533\n"
    )
    (row,) = parse_perftest(text).rows

    assert row.bw_avg_gbps == pytest.approx(5.028856 * MIB_PER_S_TO_GBPS)
    assert row.bw_peak_gbps == pytest.approx(5.048753 * MIB_PER_S_TO_GBPS)


def test_largest_size_row_is_the_result_even_when_not_last():
    text = HEADER_ROCE + (
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 65536      5000           97.00              96.50\t\t0.184\n"
        " 2          5000           0.04               0.04\t\t2.6\n"
    )
    assert parse_perftest(text).bw_avg_gbps == pytest.approx(96.50)


def test_row_cut_short_is_dropped_not_misread():
    text = MIB_TABLE.replace("11576.91\t\t   0.185231", "115")
    r = parse_perftest(text, exit_status=None)

    assert not r.ok
    assert r.rows == ()
    assert r.error == "no result rows: the output ends at the table header"


def test_latency_table_is_parsed_into_latency_fields():
    r = parse_perftest(LAT_TABLE)

    assert r.ok and r.is_latency
    (row,) = r.rows
    assert row.size_bytes == 2 and row.iterations == 1000
    assert (row.t_min_us, row.t_max_us, row.t_typical_us) == (1.02, 3.51, 1.05)
    assert (row.t_avg_us, row.t_stdev_us, row.t_p99_us, row.t_p999_us) == (1.07, 0.08, 1.41, 3.51)
    assert row.bw_avg_gbps is None and r.bw_avg_gbps is None
    assert r.test == "RDMA_Write Latency Test"


def test_latency_duration_mode():
    r = parse_perftest(LAT_DURATION_TABLE)

    assert r.ok and r.is_latency
    (row,) = r.rows
    assert row.t_avg_us == 1.06
    assert row.tps_avg == pytest.approx(938742.15)


def test_cpu_frequency_warning_on_stderr_does_not_fail_a_good_run():
    stderr = "Conflicting CPU frequency values detected: 1200.000000 != 3400.000000. CPU Frequency is not max.\n"
    r = parse_perftest(MIB_TABLE, stderr, exit_status=0)

    assert r.ok
    assert "Conflicting CPU frequency" in r.diagnostic


def test_nonzero_exit_after_a_table_fails_but_keeps_the_rows():
    r = parse_perftest(MIB_TABLE, "", exit_status=1)

    assert not r.ok
    assert r.error == "perftest exited with status 1"
    assert len(r.rows) == 1


# --- SYNTHETIC: error texts written from the reference (E.4), not captured --------------------


@pytest.mark.parametrize(
    ("stderr", "kind", "first_words"),
    [
        (
            " Did not detect devices \n If device exists, check if driver is up\n"
            " Unable to find the Infiniband/RoCE device\n",
            "no-device",
            "Did not detect devices",
        ),
        ("No IB devices found\n", "no-device", "No IB devices found"),
        (
            "IB device mlx5_7 not found\n Unable to find the Infiniband/RoCE device\n",
            "no-device",
            "IB device mlx5_7 not found",
        ),
        (
            "Couldn't connect to 10.0.0.2:18515\n Unable to open file descriptor for socket connection\n"
            " Unable to init the socket connection\n",
            "connect",
            "Couldn't connect to 10.0.0.2:18515",
        ),
        (
            " Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n",
            "gid",
            "Found Incompatibility issue with GID types.",
        ),
        (" Failed to exchange data between server and clients\n", "error", "Failed to exchange data"),
        (" Unable to Connect the HCA's through the link\n", "error", "Unable to Connect the HCA's"),
        (
            " Output verbosity level for BW can be: bandwidth, message_rate\n Parser function exited with Error\n",
            "error",
            "Output verbosity level",
        ),
    ],
)
def test_error_texts(stderr, kind, first_words):
    r = parse_perftest("", stderr, exit_status=1)

    assert not r.ok
    assert r.kind == kind
    assert r.error.startswith(first_words)


def test_known_error_fails_even_with_exit_0_and_on_stdout():
    r = parse_perftest(" Couldn't connect to node2:18515\n", "", exit_status=0)

    assert not r.ok and r.kind == "connect"
    assert r.error == "Couldn't connect to node2:18515"


def test_classify():
    assert classify_perftest_error("all fine") is None
    assert classify_perftest_error("IB device mlx5_0 not found") == "no-device"


# --- the server's banner ---------------------------------------------------------------------


def test_waiting_banner():
    banner = "\n************************************\n* Waiting for client to connect... *\n************************************\n"
    assert perftest_waiting(banner)
    rdma_cm = " Waiting for client rdma_cm QP to connect\n Please run the same command with the IB/RoCE interface IP\n"
    assert perftest_waiting(rdma_cm)
    assert not perftest_waiting("")
    assert not perftest_waiting("****\n* Waiting")  # cut before the words are complete
    assert not perftest_waiting(MIB_TABLE)


# --- garbage ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "garbage", "12.5\n", " #bytes\n 1 2 3\n", RULE + "\n#bytes #iterations BW average[TB/fortnight]\n1 2 3\n"],
)
def test_garbage_is_a_failure_not_an_exception(text):
    r = parse_perftest(text)

    assert isinstance(r, PerftestResult)
    assert not r.ok and r.error


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(), st.one_of(st.none(), st.integers(-300, 300)))
def test_never_raises(stdout, stderr, status):
    r = parse_perftest(stdout, stderr, status)
    assert isinstance(r, PerftestResult)
    assert r.ok == (r.error is None)
