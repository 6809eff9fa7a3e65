"""Pair-test pieces without a node: settings, command lines, results from real tool output,
counters over a test, the report document."""

from __future__ import annotations

import csv
import io
import json
import shlex
from pathlib import Path

import pytest

from netui.checks.pairs.report import (
    counters_text,
    export,
    gbps_text,
    load_report,
    report_csv,
    report_document,
    summary,
    text_report,
)
from netui.checks.pairs.runner import PairProgress, PairTestReport, plan_rounds
from netui.checks.pairs.tools import (
    BIDIR,
    BOTH_WAYS,
    IB_WRITE_BW,
    Endpoint,
    PairSettings,
    client_command,
    client_tail,
    pair_failed,
    pair_results,
    server_command,
    server_failure,
    server_ready,
    server_tail,
)
from netui.collectors.shell import CommandResult
from netui.checks.pairs.counters import pair_counters
from netui.checks.pairs.model import PairResult
from netui.checks.pairs.model_addresses import RdmaChoice
from tests.synth import node_sample

DATA = Path(__file__).resolve().parents[1] / "data" / "tool-output"
A = Endpoint("node1", "198.18.0.1")
B = Endpoint("node2", "198.18.0.2")


def tool_output(name: str) -> str:
    return (DATA / name).read_text()


# --- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("change, words", [
    (dict(tool="nc"), "unknown tool"),
    (dict(duration_s=0), "duration"),
    (dict(streams=200), "-P"),
    (dict(direction="sideways"), "direction"),
    (dict(tool=IB_WRITE_BW, direction=BIDIR), "bidirectional is for iperf3"),
    (dict(device="mlx5_0; reboot"), "not an RDMA device name"),
    (dict(threshold_percent=0), "% threshold"),
    (dict(test_net="10.0.0.0/40"), "not an IPv4 subnet"),
])
def test_bad_settings_say_what_is_wrong(change, words):
    with pytest.raises(ValueError, match=words):
        PairSettings(**change).check()


def test_settings_round_trip_through_a_dict():
    s = PairSettings(tool=IB_WRITE_BW, duration_s=3, qps=4, gid_index=3, threshold_gbps=90.0)
    assert PairSettings.from_dict(s.to_dict() | {"from_a_newer_version": 1}) == s


# --- command lines -----------------------------------------------------------------------------


def test_iperf3_command_lines():
    s = PairSettings(duration_s=5, streams=4, direction=BIDIR)
    assert shlex.split(server_command(s, 5201)) == ["iperf3", "-s", "-1", "-p", "5201"]
    assert server_tail(s, B) == ["-B", "198.18.0.2"]
    client = shlex.split(client_command(s, 5201))
    assert client[:8] == ["iperf3", "-p", "5201", "-t", "5", "-P", "4", "-J"]
    assert "--connect-timeout" in client and client[-1] == "--bidir"
    assert client_tail(s, A, B) == ["-c", "198.18.0.2", "-B", "198.18.0.1"]


def test_perftest_gets_the_same_options_on_both_sides():
    s = PairSettings(tool=IB_WRITE_BW, duration_s=4, size_bytes=1 << 20, qps=2)
    assert server_command(s, 18515) == client_command(s, 18515)
    assert shlex.split(server_command(s, 18515)) == [
        "ib_write_bw", "-s", "1048576", "-q", "2", "-D", "4", "--report_gbits", "-F", "-p", "18515"]
    a = Endpoint("node1", "10.0.0.1", RdmaChoice("mlx5_0", 1, 3))
    b = Endpoint("node2", "10.0.0.2", RdmaChoice("mlx5_1", 1, 5))
    assert server_tail(s, b) == ["-d", "mlx5_1", "-i", "1", "-x", "5"]
    assert client_tail(s, a, b) == ["-d", "mlx5_0", "-i", "1", "-x", "3", "10.0.0.2"]
    assert server_tail(s, Endpoint("n", "10.0.0.3")) == []  # perftest picks the first device


def test_servers_are_ready_when_they_say_so():
    assert server_ready("iperf3", "-----\nServer listening on 5201 (test #1)\n", "")
    assert not server_ready("iperf3", "", "iperf3: error - unable to start listener")
    banner = "************************************\n* Waiting for client to connect... *\n"
    assert server_ready(IB_WRITE_BW, banner, "")


# --- results -----------------------------------------------------------------------------------


def done(stdout: str = "", stderr: str = "", status: int | None = 0, timed_out: bool = False) -> CommandResult:
    return CommandResult(status, stdout, stderr, timed_out)


def test_an_iperf3_run_gives_goodput_and_retransmits():
    (r,) = pair_results(PairSettings(), "node1", "node2", done(tool_output("iperf3_3.12_loopback_tcp_P1.json")), done())
    assert r.ok and r.pair == ("node1", "node2") and r.gbps > 1 and r.retransmits is not None


def test_bidirectional_gives_both_directions():
    out = tool_output("iperf3_3.12_loopback_tcp_bidir.json")
    forward, back = pair_results(PairSettings(direction=BIDIR), "node1", "node2", done(out), done())
    assert forward.pair == ("node1", "node2") and back.pair == ("node2", "node1")
    assert forward.gbps == pytest.approx(8.003, abs=0.01) and back.gbps == pytest.approx(8.561, abs=0.01)


def test_iperf3_failures_keep_the_tools_words():
    (refused,) = pair_results(PairSettings(), "a", "b", done(tool_output("iperf3_3.12_loopback_refused.json")),
                              done("", "iperf3: error - unable to start listener: Address already in use", 1))
    assert not refused.ok and refused.kind == "refused"
    assert "Connection refused" in refused.error and "(server on b: iperf3: error - unable to start listener" in refused.error
    (busy,) = pair_results(PairSettings(), "a", "b", done(tool_output("iperf3_3.12_loopback_busy.json")), None)
    assert busy.kind == "busy" and "busy" in busy.error
    (late,) = pair_results(PairSettings(duration_s=2), "a", "b", done(timed_out=True, status=124), None)
    assert late.kind == "timeout" and late.error == "iperf3 timed out: no result within 12 s"
    both = pair_failed(PairSettings(direction=BIDIR), "a", "b", "iperf3 missing on b", "unavailable")
    assert [r.pair for r in both] == [("a", "b"), ("b", "a")] and all(not r.ok for r in both)


def test_no_rdma_device_names_the_node_whose_tool_said_so():
    s = PairSettings(tool=IB_WRITE_BW)
    stderr = tool_output("ib_write_bw_4.5_no_device.stderr.txt")
    (client_side,) = pair_results(s, "node1", "node2", done("", stderr, 1), done("", stderr, 1))
    assert client_side.error.startswith("no RDMA device on node1: ") and client_side.kind == "no-device"
    assert "Unable to find the Infiniband/RoCE device" in client_side.error
    (server_side,) = server_failure(s, "node1", "node2", done("", stderr, 1), "exited")
    assert server_side.error.startswith("no RDMA device on node2: ")


def test_a_server_that_does_not_start_is_reported_in_its_words():
    s = PairSettings()
    (r,) = server_failure(s, "a", "b", done("", "iperf3: error - unable to start listener for connections: "
                                                 "Address already in use\n", 1), "exited")
    assert r.error == ("iperf3 server on b did not start (exit status 1): iperf3: error - unable to start "
                       "listener for connections: Address already in use")
    (slow,) = server_failure(s, "a", "b", None, "timeout")
    assert slow.error == "iperf3 server on b not listening after 5 s" and slow.kind == "timeout"


# --- counters over a test ------------------------------------------------------------------------


def test_counters_are_deltas_over_the_samples_window():
    before = node_sample(10, retrans_per_s=100, drops_per_s=7, softirq_pct=40)
    after = node_sample(13, retrans_per_s=100, drops_per_s=7, softirq_pct=40)
    c = pair_counters("node1", before, after)
    assert c == {"node1.retrans": 300, "node1.drops": 21, "node1.softnet_drops": 0,
                 "node1.softirq_percent": 40.0, "node1.softirq_cpu": 1, "node1.window_s": 3.0}
    assert pair_counters("node1", None, after) == {}
    assert pair_counters("node1", after, after) == {}
    assert pair_counters("node1", before, node_sample(13, boot_id="rebooted")) == {}


# --- plans and reports ---------------------------------------------------------------------------


def test_plans():
    nodes = ["n1", "n2", "n3", "n4"]
    assert len(plan_rounds(nodes, matrix=True, direction="oneway", one_by_one=False)) == 3
    assert len(plan_rounds(nodes, matrix=True, direction=BOTH_WAYS, one_by_one=False)) == 6
    assert len(plan_rounds(nodes, matrix=True, direction="oneway", one_by_one=True)) == 6
    assert plan_rounds(nodes, matrix=False, direction="oneway", one_by_one=False) == [[("n1", "n2")]]
    assert plan_rounds(nodes, matrix=False, direction=BOTH_WAYS, one_by_one=False) == [[("n1", "n2")], [("n2", "n1")]]
    assert plan_rounds(["n1"], matrix=True, direction="oneway", one_by_one=False) == []


def test_progress_in_words():
    p = PairProgress("running", 2, 3, 3, 6, 4.2, 3.9, (("a", "b"),))
    assert p.words == "round 2 of 3 · 3/6 tests · 4 s · about 4 s left"
    assert PairProgress("checking", 0, 3, 0, 6, 0.1, 6.0).words == "checking the nodes…"
    assert PairProgress("done", 3, 3, 6, 6, 6.6, None).words == "done · 6/6 tests · 7 s"


def sample_report() -> PairTestReport:
    nodes = ["node1", "node2", "node3", "node4"]
    results = [
        PairResult("node4", "node1", "iperf3", 9.8, True, retransmits=0,
                   counters={"node4.retrans": 3, "node1.retrans": 0, "node4.drops": 0, "node1.drops": 0,
                             "node4.softirq_percent": 31.0, "node1.softirq_percent": 29.5}),
        PairResult("node2", "node3", "iperf3", 0.19, True, retransmits=0),
        PairResult("node1", "node3", "iperf3", 0.19, True, retransmits=0),
        PairResult("node2", "node4", "iperf3", 9.4, True, retransmits=0),
        PairResult("node1", "node2", "iperf3", 10.2, True, retransmits=0),
        PairResult("node3", "node4", "iperf3", 9.1, True, retransmits=0),
    ]
    report = PairTestReport(PairSettings(duration_s=2, threshold_gbps=1.0), nodes, True, results=results,
                            how="on 198.18.0.0/24", rounds=3, tests_done=6, tests_total=6, elapsed_s=6.6,
                            started_wall_s=1_790_000_000.0)
    report.judge()
    return report


def test_the_document_names_the_suspect_and_loads_back():
    report = sample_report()
    doc = report_document(report)
    assert doc["verdict"]["suspects"] == ["node3"] and not doc["verdict"]["passed"]
    assert doc["gbps_matrix"][1][2] == 0.19 and doc["gbps_matrix"][0][0] is None
    rows = {(p["sender"], p["receiver"]): p for p in doc["pairs"]}
    assert rows[("node2", "node3")]["pass"] is False and rows[("node1", "node2")]["pass"] is True
    assert rows[("node4", "node1")]["counters"]["node4.retrans"] == 3
    again = load_report(json.loads(json.dumps(doc)))
    assert report_document(again) == doc
    with pytest.raises(ValueError):
        load_report({"version": 1, "nodes": []})


def test_csv_text_and_export(tmp_path):
    report = sample_report()
    rows = list(csv.DictReader(io.StringIO(report_csv(report))))
    assert len(rows) == 6
    # failing first (the slowest first), then the others by name
    assert [(r["sender"], r["receiver"], r["pass"]) for r in rows] == [
        ("node1", "node3", "false"), ("node2", "node3", "false"), ("node1", "node2", "true"),
        ("node2", "node4", "true"), ("node3", "node4", "true"), ("node4", "node1", "true")]
    assert rows[5]["sender_retrans"] == "3" and rows[1]["gbps"] == "0.19"
    text = text_report(report)
    assert "node2→node3  FAIL  190 Mb/s" in text and "suspect node3" in text
    lines = text.splitlines()
    assert lines.index("node1→node3  FAIL  190 Mb/s") < lines.index("node1→node2  pass  10.2 Gb/s")
    assert "  node3  sends 9.1 Gb/s (0/1 fail)       receives 190 Mb/s (2/2 fail)  ← suspect: receiving" \
        in lines
    # one precision in the whole matrix: the slow pair keeps two digits, the others line up with it
    assert text.splitlines()[2].split()[:4] == ["node1", "·", "10.20", "0.19✗"]
    csv_path, json_path = export(report, tmp_path)
    assert csv_path.parent == tmp_path and csv_path.suffix == ".csv" and json_path.suffix == ".json"
    assert json.loads(json_path.read_text())["kind"] == "pair-test"


def test_an_export_never_overwrites_one_of_the_same_second(tmp_path):
    """Two tests started in one second (or one exported twice) each keep their files: the
    second pair of files takes the next free name, the first stays as it was written."""
    report = sample_report()
    first = export(report, tmp_path)
    first_text = [p.read_bytes() for p in first]
    report.cancelled = True  # another report of the same start second
    second = export(report, tmp_path)
    (tmp_path / (second[0].stem.rsplit("-", 1)[0] + "-3.json")).write_text("the user's own")  # a name taken
    third = export(report, tmp_path)

    assert len({*first, *second, *third}) == 6
    assert [p.read_bytes() for p in first] == first_text
    assert second[0].stem == first[0].stem + "-2" and second[1].stem == first[1].stem + "-2"
    assert third[0].stem == first[0].stem + "-4"  # -3 is taken by a file of the user's: left alone
    assert (tmp_path / (first[0].stem + "-3.json")).read_text() == "the user's own"
    assert json.loads(second[1].read_text())["cancelled"] is True


def test_summary_leads_with_what_was_not_tested():
    report = sample_report()
    report.problems = {"node5": "iperf3 missing on node5"}
    report.cancelled = True
    assert summary(report).startswith("Cancelled after 6 of 6 tests. Not tested: node5 (iperf3 missing on node5). ")


def test_small_formats():
    assert [gbps_text(v) for v in (None, 0.191, 9.87, 24.13, 187.4)] == ["—", "0.191", "9.87", "24.1", "187"]
    from netui.checks.pairs.report import gbps_cell_format

    assert [gbps_cell_format([187.4, 95.0])(v) for v in (187.4, 95.04, None)] == ["187", "95", "—"]
    assert [gbps_cell_format([24.13, 9.87])(v) for v in (24.13, 9.87)] == ["24.1", "9.9"]
    assert [gbps_cell_format([10.2, 0.191])(v) for v in (10.2, 0.191)] == ["10.20", "0.19"]
    assert gbps_cell_format([9.4, 0.012])(0.012) == "0.012"
    r = sample_report().results[0]
    assert counters_text(r) == "sender/receiver retrans 3/0 · drops 0/0 · softirq 31%/30%"
    assert counters_text(sample_report().results[1]) == ""


def test_the_live_figure_names_its_source_in_the_grids_units():
    from netui.checks.pairs.report import LINK, live_text

    assert live_text([("acc1", "acc3", 0.0917, "iperf3")]) == "iperf3 now: acc1→acc3 91.7 Mb/s"
    assert live_text([("acc1", "acc3", 0.147, LINK)]) == (
        "link now (all its flows): acc1→acc3 147 Mb/s")
    assert live_text([("a", "b", 9.41, "iperf3"), ("c", "d", None, LINK)], more=2) == (
        "now: a→b 9.41 Gb/s (iperf3), c→d — (link) … 2 more")
    assert live_text([]) == ""
    assert live_text([("a", "b", 0.001, LINK)]).endswith("a→b 1 Mb/s")  # scaled, as the grid's figures


def test_a_pair_under_an_inconclusive_verdict_ran_rather_than_passed():
    from netui.checks.pairs.model import PairResult
    from netui.checks.pairs.report import judged_word, text_report
    from netui.checks.pairs.runner import PairTestReport
    from netui.checks.pairs.tools import PairSettings

    report = PairTestReport(PairSettings(), ["acc1", "acc3"], False,
                            results=[PairResult("acc1", "acc3", "iperf3", 0.0917, True)])
    verdict = report.judge()
    assert verdict.inconclusive and judged_word(verdict) == "ran"
    assert "acc1→acc3  ran  " in text_report(report) and "pass" not in text_report(report).split("\n\n")[-2]
