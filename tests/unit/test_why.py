"""The Why column's words: short enough for 80 columns, and saying what matters."""

from __future__ import annotations

from netui.model.node import Node, NodeState
import re

import pytest

from netui.model.straggler import METRICS, Straggler
from netui.ui.columns import fit_columns
from netui.ui.why import long_why, short_why
from tests.synth import node_sample


def down(state: NodeState, reason: str) -> Node:
    n = Node("gpu07")
    n.fail(state, reason)
    return n


def test_a_down_node_says_what_failed_and_counts_down_to_its_next_try():
    n = down(NodeState.DOWN, "connection refused (retrying in 13 s)")
    assert short_why(n) == "refused"
    assert short_why(n, 12.4) == "refused, retry 12s"
    assert short_why(n, 0.2) == "refused, retry now"
    assert long_why(n, 12.4) == "connection refused, retry in 12 s"
    assert long_why(n) == "connection refused (retrying in 13 s)"  # no countdown known: the collector's words


def test_host_key_and_auth_failures_say_their_state():
    n = down(NodeState.HOST_KEY_CHANGED, "host key changed: refusing to connect (check known_hosts) (retrying in 4 s)")
    assert short_why(n, 3) == "host key changed, retry 3s"
    assert short_why(down(NodeState.AUTH_FAILED, "authentication failed: permission denied")) == "auth failed"
    assert short_why(down(NodeState.DOWN, "Name or service not known")) == "Name or service not known"


def test_a_bad_node_says_its_worst_metric_shortly():
    # four samples: three intervals, what a level takes to change by default (held levels)
    n = Node("gpu02")
    for k in range(4):
        n.observe(node_sample(k, rx_bps=9e9, drops_per_s=120))
    assert short_why(n) == "drops 120/s"
    n = Node("gpu03")
    for k in range(4):
        n.observe(node_sample(k, rx_bps=9e9, retrans_per_s=1680))  # of 80 k segments a second
    assert short_why(n) == "retr 2.10%"
    healthy = Node("gpu01")
    for k in range(3):
        healthy.observe(node_sample(k, rx_bps=9e9))
    assert short_why(healthy) == ""


def test_a_straggler_compares_itself_with_the_median():
    n = Node("gpu04")
    for k in range(3):
        n.observe(node_sample(k))
    n.straggler = Straggler("gpu04", "total", 0.0, 5e9, "gpu04: RX+TX 0 b/s vs cluster median 40 Gb/s (0 %)")
    assert short_why(n) == "idle 0% of median"
    n.straggler = Straggler("gpu04", "rx", 0.6e9, 5e9, "…")
    assert short_why(n) == "RX 12% of median"
    n.straggler = Straggler("gpu04", "rx", 36e6 / 8, 10e9 / 8, "…")  # ramping up: not idle
    assert short_why(n) == "RX 0.4% of median"
    n.straggler = Straggler("gpu04", "retrans", 0.021, 0.0, "…")
    assert short_why(n) == "retr 2.10%, med 0%"
    n.straggler = Straggler("gpu04", "drops", 120.0, 0.0, "…")
    assert short_why(n) == "drops 120/s vs 0/s"


def test_a_victim_says_which_straggler_slows_it_in_both_widths():
    n = Node("acc4")
    for k in range(3):
        n.observe(node_sample(k, rx_bps=150e6, tx_bps=1e9))
    n.victim = Straggler("acc4", "rx", 150e6 / 8, 1e9 / 8, "acc4: RX 150 Mb/s, 15 % of the busy nodes' median 1 Gb/s",
                         slow=("rx",), two_way=True, slowed_by=("acc3",))
    assert short_why(n) == "slowed by acc3"
    assert long_why(n).startswith("slowed by acc3: RX 150 Mb/s, 15 % of the busy nodes' median 1 Gb/s")
    assert n.level == 0  # no straggler: its own health only
    n.victim = Straggler("acc4", "rx", 1, 8, "acc4: RX …", slowed_by=("acc3", "acc7"))
    assert short_why(n, cells=40) == "slowed by acc3 or acc7"
    assert short_why(n) == "slowed: acc3 or acc7"  # 18 cells: the names kept whole
    # a fabric suspect's name is long: what slows it keeps the cells at 80 columns
    n.victim = Straggler("acc4", "rx", 1, 8, "acc4: RX …", slowed_by=("leaf2 uplink",))
    cells = _why_cells_at_80()
    assert short_why(n, cells=cells) == "slowed: leaf2 uplink"  # (the column cuts what still does not fit)
    assert short_why(n, cells=40) == "slowed by leaf2 uplink"


# per metric, in its unit: (a typical value, its median), and the largest a node may show
_TYPICAL = {"rx": (0.6e9, 5e9), "tx": (23e6, 125e6), "rdma_rx": (1e9, 12e9), "rdma_tx": (0.0, 12e9),
            "retrans": (0.0102, 0.0005), "drops": (4.0, 0.0), "softirq": (95.0, 12.0), "pause": (1234.0, 0.5),
            "cnp": (56_000.0, 3.0), "pairs": (1.74e7, 1.2e9)}
_HUGE = {"rx": (1e9, 1e13), "tx": (1e3, 1e13), "rdma_rx": (1e6, 5e12), "rdma_tx": (1e6, 5e12),
         "retrans": (0.9999, 0.00012), "drops": (9.87e6, 1.23e5), "softirq": (100.0, 99.5),
         "pause": (9.99e8, 8.88e7), "cnp": (1.5e9, 2.5e8), "pairs": (1.25e12, 1.25e12)}


def _why_cells_at_80() -> int:
    """The Why column's width at 80 columns, as the grid lays it out (the screen less its
    scrollbar, the last column taking what is left)."""
    columns = fit_columns(78)
    assert columns[-1].key == "health"
    return max(columns[-1].width, 78 - sum(c.width + 1 for c in columns[:-1]) - 2)


@pytest.mark.parametrize("metric", METRICS)
def test_every_straggler_metric_has_short_words_that_fit_80_columns(metric):
    n = Node("acc3")
    for k in range(3):
        n.observe(node_sample(k))
    cells = _why_cells_at_80()
    for value, median in (_TYPICAL[metric], _HUGE[metric]):
        n.straggler = Straggler("acc3", metric, value, median, f"acc3: the long reason of {metric}",
                                f"acc3: the headline of {metric}")
        words = short_why(n, cells=cells)
        assert words and len(words) <= cells, (metric, words)
        assert "headline" not in words  # its own words, not the fallback for an unknown metric
        assert not re.search(r"\de[+-]\d|\d{5}", words), (metric, words)  # no raw numbers: bytes/s shown as rates


def test_a_pair_test_suspect_says_so_with_the_rate_it_got():
    n = Node("node3")
    for k in range(3):
        n.observe(node_sample(k))
    n.straggler = Straggler("node3", "pairs", 1.74e7, 1.2e9, "node3: the pair test names it: receives slowly",
                            "node3: the pair test names it: receives slowly")
    assert short_why(n) == "pair test 139 Mb/s"
    assert long_why(n).startswith("straggler: the pair test names it: receives slowly")
    n.straggler = Straggler("node3", "pairs", 0.0, 0.0, "node3: the pair test names it: slow both ways")
    assert short_why(n) == "pair test suspect"


def test_an_excess_keeps_the_median_only_where_it_fits():
    n = Node("acc1")
    for k in range(3):
        n.observe(node_sample(k))
    n.straggler = Straggler("acc1", "retrans", 0.1646, 0.0, "…")
    assert short_why(n) == "retr 16.46% vs 0%"
    n.straggler = Straggler("acc1", "retrans", 0.0102, 0.0005, "…")
    assert short_why(n) == "retr 1.02%"


def test_a_wider_why_column_keeps_the_median():
    n = Node("acc1")
    for k in range(3):
        n.observe(node_sample(k))
    n.straggler = Straggler("acc1", "retrans", 0.1723, 0.00009, "…")
    assert short_why(n) == "retr 17.23%"
    assert short_why(n, cells=25) == "retr 17.23%, med 0.009%"
