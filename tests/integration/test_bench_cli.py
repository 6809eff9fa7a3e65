"""`netui bench` argument handling (no node needed); the runs themselves are in
tests/lab/test_pairtest_lab.py."""

from __future__ import annotations


import pytest

from netui.cli.bench import _latency_settings, _pair_settings, build_parser
from tests.command import netui


def test_options_between_and_after_the_hosts():
    args = build_parser().parse_intermixed_args(
        ["iperf3", "-F", "cfg", "node[1-4]", "--matrix", "-P", "4", "--test-net", "198.18.0.0/24", "gpu1",
         "--threshold-gbps", "20", "--direction", "bidir", "--one-at-a-time"])
    assert args.hosts == ["node[1-4]", "gpu1"] and args.ssh_config == ["cfg"] and args.matrix
    s = _pair_settings(args).check()
    assert (s.tool, s.streams, s.test_net, s.threshold_gbps, s.direction, s.one_at_a_time) == \
           ("iperf3", 4, "198.18.0.0/24", 20.0, "bidir", True)
    assert args.interval == 0.5 and s.duration_s == 10 and s.threshold_percent == 90.0


@pytest.mark.slow
@pytest.mark.parametrize("argv, words", [
    (["bench", "ib_write_bw", "a", "b", "--direction", "bidir"], "bidirectional is for iperf3"),
    (["bench", "iperf3", "a", "b", "--test-net", "10.0.0.0/99"], "not an IPv4 subnet"),
    (["bench", "iperf3", "node1"], "name at least two hosts"),
    (["bench", "iperf3", "a;reboot", "b"], "netui: "),
    (["bench", "ping", "a", "b", "--ping-interval", "0.05"], "the interval must be 0.2 to 10 seconds"),
    (["bench", "ping", "a", "b", "--max-loss", "100"], "the loss allowed must be 0 to below 100 %"),
    (["bench", "ping", "a"], "name at least two hosts"),
])
def test_bad_arguments_exit_2_with_a_reason(argv, words):
    result = netui(*argv)
    assert result.returncode in (1, 2) and words in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_unknown_tool_is_refused_by_the_parser():
    result = netui("bench", "nc", "a", "b")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_ping_options():
    args = build_parser().parse_intermixed_args(
        ["ping", "node[1-4]", "--matrix", "--count", "5", "--ping-interval", "0.5", "--max-loss", "1",
         "--threshold-ms", "2", "--ping-tool", "ping", "--test-net", "eth0"])
    s = _latency_settings(args).check()
    assert (s.count, s.interval_s, s.max_loss_percent, s.threshold_ms, s.tool, s.test_net, s.rtt_factor) == \
           (5, 0.5, 1.0, 2.0, "ping", "eth0", 5.0)
    defaults = _latency_settings(build_parser().parse_intermixed_args(["ping", "a", "b"])).check()
    assert (defaults.count, defaults.interval_s, defaults.tool, defaults.max_loss_percent) == (20, 0.2, "auto", 0.0)
