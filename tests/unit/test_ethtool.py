"""``ethtool -S`` → counters and the PFC view: the real mlx5 capture (ConnectX-4, PFC off),
synthetic per-priority PFC output written from the en_stats.c format strings, queue-prefixed
names of other drivers, and garbage that raises nothing but ParseError."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from netui.collectors.ethtool import parse_ethtool_stats, pfc_view
from netui.collectors.procfs import ParseError
from netui.model.fabric import NO_PAUSE, PauseCounters, PfcCounters
from netui.model.text import safe_text
from tests.testdata import ETHQ, data_path, data_text

SYNTH = data_path("fabric")

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def mlx5_text() -> str:
    return data_text(f"{ETHQ}/ethtool-S_mlx5_core.txt")


def test_real_mlx5_capture(mlx5_text):
    """ethq's copy has no header line and no indentation; every line is a counter."""
    stats = parse_ethtool_stats(mlx5_text)
    assert len(stats) == len(mlx5_text.splitlines()) == 751
    assert stats["rx_bytes"] == 2195783498134
    assert stats["tx_pci_signal_integrity"] == 34
    assert stats["rx0_packets"] == 53947906  # per-queue names kept as printed
    assert list(stats)[:2] == ["rx_packets", "rx_bytes"]


def test_real_mlx5_pfc_view(mlx5_text):
    """PFC was off on that NIC: no per-priority pause counters, but global pause and the
    phy pause/discard counters are there."""
    pfc = pfc_view(parse_ethtool_stats(mlx5_text))
    assert pfc.priorities == (NO_PAUSE,) * 8
    assert pfc.pfc_priorities == ()
    assert pfc.global_pause == PauseCounters(0, 0, 0, 0, 0)
    assert (pfc.rx_pause_ctrl_phy, pfc.tx_pause_ctrl_phy) == (0, 0)
    assert (pfc.rx_discards_phy, pfc.tx_discards_phy) == (0, 0)
    assert pfc.rx_out_of_buffer == 0
    assert pfc.tx_pause_storm_warning_events is None  # no stall detection on ConnectX-4


def test_header_indentation_and_priority_pause():
    """Synthetic output (tests/data/fabric/make_trees.py) with PFC on priority 3 only."""
    stats = parse_ethtool_stats((SYNTH / "ethtool-S_mlx5_pfc_t0.txt").read_text())
    assert "NIC statistics" not in "".join(stats)
    assert stats["rx_prio3_pause"] == 500
    pfc = pfc_view(stats)
    assert pfc.pfc_priorities == (3,)
    assert pfc.priorities[3] == PauseCounters(500, 80_000, 40, 3_000, 200)
    assert pfc.priorities[0] == NO_PAUSE
    assert pfc.global_pause == NO_PAUSE  # global pause off: mlx5 does not print it
    assert pfc.rx_pause_ctrl_phy == 500
    assert pfc.rx_discards_phy == 9
    assert pfc.rx_out_of_buffer == 12
    assert pfc.tx_pause_storm_error_events == 0


def test_queue_prefixes_and_junk():
    stats = parse_ethtool_stats((SYNTH / "ethtool-S_queue_prefixes.txt").read_text())
    assert stats == {
        "[0]: rx_bytes": 1234,
        "[0]: rx_ucast_packets": 12,
        "[1]: rx_bytes": 5678,
        "rxq0: rx_bytes": 42,
        "rx_bytes": 6912,
        "tx_errors": 0,
        "rx_csum_offload_errors": 3,
    }


def test_other_drivers_have_no_pfc_view():
    stats = parse_ethtool_stats("NIC statistics:\n     rx_packets: 5\n     tx_packets: 7\n     rx_crc_errors: 0\n")
    assert pfc_view(stats) == PfcCounters()


def test_plain_out_of_buffer_name():
    assert pfc_view({"out_of_buffer": 4}).rx_out_of_buffer == 4
    assert pfc_view({"out_of_buffer": 4, "rx_out_of_buffer": 9}).rx_out_of_buffer == 9


@pytest.mark.parametrize("text, expected", [
    ("NIC statistics:\n", {}),
    ("NIC statistics:\n     a: 1\n     a: 2\n", {"a": 1}),  # a repeated name keeps its first value
    ("a: 1", {"a": 1}),  # no trailing newline
    ("     a: 18446744073709551615\n     b: 18446744073709551616\n", {"a": (1 << 64) - 1}),
    ("     a: -1\n     b: 1.5\n     c: 0x10\n     d: 7\n", {"d": 7}),
    ("a:\t1\nb: 2\n", {"b": 2}),
    ("# ethtool -S eth0\nNIC statistics:\n     rx_packets: 3\n", {"rx_packets": 3}),
])
def test_lines(text, expected):
    assert parse_ethtool_stats(text) == expected


@pytest.mark.parametrize("text", ["", "\n", "no stats available\n", "Cannot get stats strings information: Operation not supported\n"])
def test_no_counter_at_all_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_ethtool_stats(text)


def _check(text: str) -> None:
    try:
        stats = parse_ethtool_stats(text)
    except ParseError:
        return
    assert all(isinstance(v, int) and 0 <= v < 1 << 64 for v in stats.values())
    pfc = pfc_view(stats)
    assert len(pfc.priorities) == 8


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=400))
def test_garbage_text(text):
    _check(text)


_TOKENS = st.sampled_from(["NIC statistics:", "     ", ": ", ":", "\n", "rx_prio3_pause", "tx_global_pause",
                           "[0]", "rxq0", "12", "-3", "18446744073709551616", "N/A", "\t", "٣"])


@pytest.mark.slow
@FUZZ
@given(st.lists(_TOKENS, max_size=60).map("".join))
def test_format_tokens(text):
    _check(text)


def reference_parse(text: str) -> dict[str, int]:
    """The rule spelled out line by line: split on the last ": ", the rest is a u64; a name
    as it is shown (a tab inside it escaped, model/text.py)."""
    stats: dict[str, int] = {}
    for line in text.split("\n"):
        name, sep, value = line.rpartition(": ")
        value = value.rstrip(" \t\r")
        if not sep or not name.strip() or not value or len(value) > 20 or value.strip("0123456789"):
            continue
        shown = safe_text(name.strip())
        if shown not in stats and int(value) < 1 << 64:
            stats[shown] = int(value)
    return stats


@pytest.mark.slow
@FUZZ
@given(st.lists(_TOKENS | st.sampled_from(["\r", " ", "x"]), max_size=60).map("".join))
@example("NIC statistics:\tNIC statistics:: 12")  # a tab in a name: shown escaped (found by this test)
def test_parser_follows_the_line_rule(text):
    try:
        assert parse_ethtool_stats(text) == reference_parse(text)
    except ParseError:
        assert reference_parse(text) == {}


def test_crlf_lines():
    assert parse_ethtool_stats("NIC statistics:\r\n     rx_bytes: 5\r\n") == {"rx_bytes": 5}


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_mutated_real_capture(data):
    lines = data_text(f"{ETHQ}/ethtool-S_mlx5_core.txt").splitlines()
    start = data.draw(st.integers(0, len(lines)))
    chunk = lines[start : start + data.draw(st.integers(0, 60))]
    if chunk:
        i = data.draw(st.integers(0, len(chunk) - 1))
        chunk[i] = chunk[i][: data.draw(st.integers(0, len(chunk[i])))]
    _check("\n".join(chunk))
