"""The Why column's words: short enough for 80 columns, and saying what matters."""

from __future__ import annotations

from netui.model.node import Node, NodeState
from netui.model.straggler import Straggler
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
    n.straggler = Straggler("gpu04", "drops", 120.0, 0.0, "…")
    assert short_why(n) == "drops 120/s, med 0/s"


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
    assert short_why(n) == "slowed by acc3 or acc7"
