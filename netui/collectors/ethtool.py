"""``ethtool -S <netdev>``: the driver's own counters, and the PFC/pause view of them.

The format: an optional ``NIC statistics:`` header, then ``name: value`` lines, indented.
Some drivers prefix per-queue names (``[0]: rx_bytes``, ``rxq0: rx_bytes``), so a line is
split on its *last* ``": "`` and the prefix stays part of the name. Values are unsigned
decimal (u64). Names are driver-specific: ``pfc_view`` knows the mlx5 ones (``en_stats.c``
format strings) and leaves None where a driver prints something else; the raw dict is
what other drivers are shown with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from netui.collectors.procfs import ParseError
from netui.collectors.protocol import PER_QUEUE_PATTERN
from netui.model.fabric import PauseCounters, PfcCounters
from netui.model.text import safe_text

_U64_MAX = (1 << 64) - 1


# a counter line: the last ": " followed by digits only (greedy name = split on the last ": ")
_LINE = re.compile(r"^(.+): ([0-9]{1,20})[ \t\r]*$", re.M)
_HEADER = re.compile(r"^[ \t]*NIC statistics:[ \t\r]*$", re.M)


def parse_ethtool_stats(text: str) -> dict[str, int]:
    """``ethtool -S`` output → ``{name: value}`` in printed order.

    Lines that are not ``name: unsigned integer`` (the header, a comment, a truncated last
    line, a non-numeric value) are skipped; when a name repeats, the first value is kept.
    Raises ParseError when the text has no counter line at all and is not just the header
    (``NIC statistics:`` alone → {}: a driver with no statistics).
    """
    stats: dict[str, int] = {}
    for name, value in _LINE.findall(text):
        name = safe_text(name.strip())  # a driver's (or a node's) words: shown, never obeyed
        if name and name not in stats:
            number = int(value)
            if number <= _U64_MAX:
                stats[name] = number
    if not stats and not _HEADER.search(text):
        raise ParseError("ethtool -S: no 'name: value' line")
    return stats


# Per-queue and per-channel counters (mlx5 ``rx0_packets``/``ch0_events``, virtio
# ``rx_queue_0_packets``, bnx2x ``[0]: …``, be2net ``rxq0: …``): most of a multi-queue NIC's
# output and nothing the fabric view uses. The remote sampler drops them on the node with
# the same pattern (collectors/protocol.py), to keep its frames small.
PER_QUEUE = re.compile(PER_QUEUE_PATTERN)


def without_per_queue(stats: dict[str, int]) -> dict[str, int]:
    """``stats`` without the per-queue counters (``PER_QUEUE``), order kept."""
    return {name: value for name, value in stats.items() if not PER_QUEUE.match(name)}


def _pause(stats: Mapping[str, int], scope: str) -> PauseCounters:
    """``rx_<scope>_pause`` & co, the template of mlx5 ``en_stats.c`` (scope: prioN, global)."""
    g = stats.get
    return PauseCounters(
        g(f"rx_{scope}_pause"),
        g(f"rx_{scope}_pause_duration"),
        g(f"tx_{scope}_pause"),
        g(f"tx_{scope}_pause_duration"),
        g(f"rx_{scope}_pause_transition"),
    )


def pfc_view(stats: Mapping[str, int]) -> PfcCounters:
    """The pause and buffer counters of one netdev (mlx5 names), None where absent.

    Per priority 0..7: ``{rx,tx}_prio{p}_pause``, ``…_pause_duration`` (µs),
    ``rx_prio{p}_pause_transition`` — mlx5 prints them only for priorities with PFC on.
    Global 802.3x pause likewise (``rx_global_pause`` …). Also ``{rx,tx}_pause_ctrl_phy``,
    ``{rx,tx}_discards_phy``, ``rx_out_of_buffer`` (or plain ``out_of_buffer``) and the
    ``tx_pause_storm_{warning,error}_events`` of devices with stall detection.
    """
    g = stats.get
    out_of_buffer = g("rx_out_of_buffer")
    if out_of_buffer is None:
        out_of_buffer = g("out_of_buffer")
    return PfcCounters(
        priorities=tuple(_pause(stats, f"prio{p}") for p in range(8)),
        global_pause=_pause(stats, "global"),
        rx_pause_ctrl_phy=g("rx_pause_ctrl_phy"),
        tx_pause_ctrl_phy=g("tx_pause_ctrl_phy"),
        rx_discards_phy=g("rx_discards_phy"),
        tx_discards_phy=g("tx_discards_phy"),
        rx_out_of_buffer=out_of_buffer,
        tx_pause_storm_warning_events=g("tx_pause_storm_warning_events"),
        tx_pause_storm_error_events=g("tx_pause_storm_error_events"),
    )
