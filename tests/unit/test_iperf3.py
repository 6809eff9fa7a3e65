"""The iperf3 ``-J`` parser on real output: iperf 3.0.11 from a public repository and issue
threads (tests/data/iperf3-python/ and tests/data/issue-quotes/, origins in
tests/data/SOURCES.txt) and runs captured on loopback with iperf 3.12
(tests/data/tool-output/, see the README there for how each was made).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.checks.pairs.parse_iperf3 import Iperf3Result, classify_iperf3_error, parse_iperf3
from tests.testdata import IPERF3_PYTHON, ISSUE_QUOTES, data_text


def captured(name: str) -> str:
    return data_text(f"tool-output/{name}")


# --- successful runs -------------------------------------------------------------------------


def test_3_0_11_single_stream_gives_goodput_sent_retransmits_and_cpu():
    r = parse_iperf3(data_text(f"{IPERF3_PYTHON}/iperf3_3.0.11_tcp_client_P1.json"))

    assert r.ok and r.error is None and r.kind is None
    assert r.received_bits_per_s == pytest.approx(9.34268e08)  # end.sum_received
    assert r.sent_bits_per_s == pytest.approx(9.35992e08)
    assert r.gbps == pytest.approx(0.934268)
    assert r.retransmits == 0
    assert r.cpu_host_percent == pytest.approx(1.66812)
    assert r.cpu_remote_percent == pytest.approx(4.15082)
    assert r.seconds == pytest.approx(13.0001)
    assert r.streams == 1
    assert r.version == "3.0.11"
    assert r.protocol == "TCP"
    assert not r.reverse and not r.bidir


def test_3_12_loopback_one_stream():
    r = parse_iperf3(captured("iperf3_3.12_loopback_tcp_P1.json"))

    assert r.ok
    assert r.version == "3.12"
    assert r.received_bits_per_s == pytest.approx(17352193196.704666)
    assert r.sent_bits_per_s == pytest.approx(17433199082.243206)
    assert r.retransmits == 2
    assert r.streams == 1
    assert r.seconds == pytest.approx(1.004572)


def test_3_12_four_streams_are_summed_by_iperf3():
    text = captured("iperf3_3.12_loopback_tcp_P4.json")
    r = parse_iperf3(text)

    assert r.ok
    assert r.streams == 4
    doc = json.loads(text)
    assert len(doc["start"]["connected"]) == 4
    assert r.received_bits_per_s == pytest.approx(doc["end"]["sum_received"]["bits_per_second"])
    assert r.retransmits == sum(s["sender"]["retransmits"] for s in doc["end"]["streams"]) == 33


def test_3_12_reverse_flag_and_the_servers_direction():
    r = parse_iperf3(captured("iperf3_3.12_loopback_tcp_R.json"))

    assert r.ok and r.reverse and not r.bidir
    assert r.received_bits_per_s == pytest.approx(11566132085.886625)
    assert r.retransmits == 5  # counted by the server, the sender with -R


def test_3_12_bidir_has_both_directions_although_test_start_does_not_say_so():
    text = captured("iperf3_3.12_loopback_tcp_bidir.json")
    assert "bidir" not in json.loads(text)["start"]["test_start"]  # what makes it a trap
    r = parse_iperf3(text)

    assert r.ok and r.bidir and not r.reverse
    assert r.streams == 1  # per direction, although start.connected lists two sockets
    assert r.received_bits_per_s == pytest.approx(8003444588.08626)
    assert r.bidir_reverse_sent_bits_per_s == pytest.approx(8618398406.565716)
    assert r.bidir_reverse_received_bits_per_s == pytest.approx(8561190530.038303)
    assert r.retransmits == 1
    assert r.bidir_reverse_retransmits == 4


def test_3_12_rate_limited_run_measures_about_the_limit():
    r = parse_iperf3(captured("iperf3_3.12_loopback_tcp_b100M.json"))

    assert r.ok
    assert r.received_bits_per_s == pytest.approx(100e6, rel=0.02)
    assert r.gbps == pytest.approx(0.1, rel=0.02)


# --- failures --------------------------------------------------------------------------------


def test_3_0_11_no_route_with_exit_1():
    r = parse_iperf3(data_text(f"{ISSUE_QUOTES}/iperf3_error_no_route.json"), exit_status=1)

    assert not r.ok
    assert r.error == "error - unable to connect to server: No route to host"
    assert r.kind == "no-route"
    assert r.version == "3.0.11"
    assert r.received_bits_per_s is None and r.gbps is None


def test_3_12_refused_connection_exits_0_but_is_a_failure():
    r = parse_iperf3(captured("iperf3_3.12_loopback_refused.json"), exit_status=0)

    assert not r.ok
    assert r.error == "unable to connect to server: Connection refused"
    assert r.kind == "refused"


def test_3_12_busy_server_exits_0_but_is_a_failure():
    r = parse_iperf3(captured("iperf3_3.12_loopback_busy.json"), exit_status=0)

    assert not r.ok
    assert r.error == "the server is busy running a test. try again later"
    assert r.kind == "busy"


def test_3_12_sigterm_keeps_the_partial_numbers_but_fails():
    r = parse_iperf3(captured("iperf3_3.12_loopback_sigterm.json"), exit_status=1)

    assert not r.ok
    assert r.kind == "interrupted"
    assert r.error == "interrupt - the client has terminated"
    assert r.sent_bits_per_s and r.sent_bits_per_s > 1e9  # what was sent before the signal
    assert r.received_bits_per_s == 0.0


def test_error_key_with_exit_0_as_3_19_prints_on_sigterm():
    # the 3.19+ wording (iperf_api.c iperf_got_sigend); the document is the P1 capture + error
    doc = json.loads(captured("iperf3_3.12_loopback_tcp_P1.json"))
    doc["error"] = "interrupt - the client has terminated by signal Terminated(15)"
    r = parse_iperf3(json.dumps(doc, indent="\t"), exit_status=0)

    assert not r.ok
    assert r.kind == "interrupted"
    assert r.error.startswith("interrupt - the client has terminated by signal")
    assert r.received_bits_per_s is not None  # the stats collected so far are kept


def test_json_stream_error_event():
    r = parse_iperf3(data_text(f"{ISSUE_QUOTES}/iperf3_json_stream_server_busy.txt"), exit_status=1)

    assert not r.ok
    assert r.error == "the server is busy running a test. try again later"
    assert r.kind == "busy"


def test_json_stream_start_and_end_events_give_the_numbers():
    doc = json.loads(captured("iperf3_3.12_loopback_tcp_P1.json"))
    lines = [
        json.dumps({"event": "start", "data": doc["start"]}),
        json.dumps({"event": "interval", "data": doc["intervals"][0]}),
        json.dumps({"event": "end", "data": doc["end"]}),
    ]
    r = parse_iperf3("\n".join(lines) + "\n")

    assert r.ok
    assert r.received_bits_per_s == pytest.approx(doc["end"]["sum_received"]["bits_per_second"])
    assert r.streams == 1


def test_plain_text_after_the_json_is_kept_and_its_error_counts():
    # esnet/iperf#1143: a complete document, then a plain-text error line
    trailer = "iperf3: error - unable to send control message: Broken pipe\n"
    text = captured("iperf3_3.12_loopback_tcp_P1.json") + trailer
    r = parse_iperf3(text, exit_status=1)

    assert not r.ok
    assert r.error == "error - unable to send control message: Broken pipe"
    assert r.kind == "error"
    assert "Broken pipe" in r.diagnostic
    assert r.received_bits_per_s == pytest.approx(17352193196.704666)


def test_warning_before_the_json_and_a_duplicate_document_after_it_are_harmless():
    # esnet/iperf#1776 prints a warning first; #1716 prints the whole document twice
    body = captured("iperf3_3.12_loopback_tcp_P1.json")
    r = parse_iperf3("warning: JSON data length overflow\n" + body + body)

    assert r.ok
    assert r.received_bits_per_s == pytest.approx(17352193196.704666)
    assert "warning: JSON data length overflow" in r.diagnostic


def test_empty_stdout_with_stderr_text():
    r = parse_iperf3("", "iperf3: error - unable to connect to server: Connection refused\n", exit_status=1)

    assert not r.ok
    assert r.error == "error - unable to connect to server: Connection refused"
    assert r.kind == "refused"


def test_parameter_error_with_usage_text_reports_the_error_line():
    stderr = (
        "iperf3: parameter error - must either be a client (-c) or server (-s)\n"
        "\nUsage: iperf3 [-s|-c host] [options]\n"
    )
    r = parse_iperf3("", stderr, exit_status=1)

    assert not r.ok and r.kind == "error"
    assert r.error == "parameter error - must either be a client (-c) or server (-s)"


def test_nothing_at_all():
    r = parse_iperf3("", "", exit_status=137)

    assert not r.ok
    assert r.error == "iperf3 printed nothing (exit status 137)"


def test_nonzero_exit_without_error_key_fails():
    r = parse_iperf3(captured("iperf3_3.12_loopback_tcp_P1.json"), exit_status=2)

    assert not r.ok
    assert r.error == "iperf3 exited with status 2"


def test_unknown_exit_status_is_not_judged():
    assert parse_iperf3(captured("iperf3_3.12_loopback_tcp_P1.json"), exit_status=None).ok


def test_truncated_json_is_a_clear_failure():
    text = captured("iperf3_3.12_loopback_tcp_P1.json")
    r = parse_iperf3(text[: len(text) // 2], exit_status=None)

    assert not r.ok
    assert r.error == "iperf3's JSON output is cut short or malformed"


def test_document_without_end_summary_fails():
    doc = json.loads(captured("iperf3_3.12_loopback_tcp_P1.json"))
    doc["end"] = {}
    r = parse_iperf3(json.dumps(doc))

    assert not r.ok
    assert "no end summary" in r.error


@pytest.mark.parametrize(
    "text",
    [
        "garbage",
        "[1, 2, 3]",
        '{"end": 5, "start": []}',
        '{"end": {"sum_received": {"bits_per_second": "x"}}}',
        "{" * 50_000,
        "{\n" * 100_000,  # quadratic if every failed decode were retried: seconds, not ms
        "\x00\xff",
    ],
)
def test_garbage_is_a_failure_not_an_exception(text):
    r = parse_iperf3(text)

    assert isinstance(r, Iperf3Result)
    assert not r.ok and r.error
    assert len(r.diagnostic) <= 2000


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(), st.one_of(st.none(), st.integers(-300, 300)))
def test_never_raises(stdout, stderr, status):
    r = parse_iperf3(stdout, stderr, status)
    assert isinstance(r, Iperf3Result)
    assert r.ok == (r.error is None)


@pytest.mark.parametrize(
    ("words", "kind"),
    [
        (
            "unable to connect to server - server may have stopped running or use a different port, "
            "firewall issue, etc.: Connection refused",
            "refused",
        ),
        ("error - unable to connect to server: No route to host", "no-route"),
        ("the server is busy running a test. try again later", "busy"),
        ("interrupt - the client has terminated by signal Interrupt(2)", "interrupted"),
        ("interrupt - the server has terminated", "interrupted"),
        ("control socket has closed unexpectedly", "error"),
    ],
)
def test_error_kinds(words, kind):
    assert classify_iperf3_error(words) == kind


# --- the server's interval reports while a test runs --------------------------------------------


@pytest.mark.parametrize("name, received, reverse, last_end", [
    ("iperf3_3.12_loopback_server_b500M_P1.txt", 500e6, None, 3.0),
    ("iperf3_3.12_loopback_server_b500M_P2.txt", 1000e6, None, 3.0),  # the [SUM] of two streams
    ("iperf3_3.12_loopback_server_b300M_bidir.txt", 300e6, 300e6, 2.0),  # not the 0-second 2.00-2.00
])
def test_the_servers_last_whole_interval_is_the_tests_own_figure(name, received, reverse, last_end):
    from netui.checks.pairs.parse_iperf3 import iperf3_interval

    text = captured(name)
    last = iperf3_interval(text)
    assert last is not None and last.end_s == last_end
    assert last.received_bits_per_s == pytest.approx(received)
    assert last.reverse_sent_bits_per_s == (None if reverse is None else pytest.approx(reverse))
    # as the output comes, a line at a time: nothing before the first report, and never an
    # interval of which some streams (or the [SUM]) are not printed yet
    lines = text.splitlines(keepends=True)
    seen = [iperf3_interval("".join(lines[:k])) for k in range(len(lines) + 1)]
    assert seen[0] is None and seen[-1] == last
    for s in seen:
        if s is not None:
            assert s.received_bits_per_s == pytest.approx(received), s
            assert s.reverse_sent_bits_per_s == (None if reverse is None else pytest.approx(reverse)), s
    assert any(s is not None and s.end_s == 1.0 for s in seen)


@given(st.text(max_size=400))
@settings(max_examples=200, deadline=None)
def test_the_interval_parser_never_raises(text):
    from netui.checks.pairs.parse_iperf3 import iperf3_interval

    iperf3_interval(text)
    iperf3_interval(captured("iperf3_3.12_loopback_server_b500M_P2.txt")[:200] + text)
