"""A node over time: observe → rates, summary, health in words, history; failures; data plane."""

from __future__ import annotations

import pytest

from netui.model.health import DEFAULT_THRESHOLDS, HEALTHY, HealthRules, Level, Threshold, assess
from netui.model.node import Node, NodeState, NodeTotals, data_plane, is_hidden
from netui.model.samples import InterfaceTable, SoftnetStat
from tests.factories import make_cpu, make_iface, make_sample

AT_ONCE = HealthRules(hold_intervals=1)  # each interval judged on its own (tests/unit/test_health_hold.py holds)


def traffic(t: float, *, eth0_rx: int, lo: int = 0, veth: int = 0, **eth0):
    """A node with a physical eth0, busy loopback and a busy veth at node time ``t``."""
    return make_sample(
        t,
        make_iface("eth0", rx_bytes=eth0_rx, **eth0),
        make_iface("lo", ifindex=1, kind="loopback", rx_bytes=lo, tx_bytes=lo),
        make_iface("veth3f", ifindex=7, kind="veth", rx_bytes=veth, tx_bytes=veth),
    )


def test_observe_builds_rates_summary_and_history_over_a_sequence():
    node = Node("gpu01", history_s=10, interval_s=1)

    node.observe(traffic(0.0, eth0_rx=0))
    assert node.state is NodeState.UP and node.error is None
    assert node.rates is None and node.summary == NodeTotals()
    assert node.history["rx_bytes_per_s"].values() == [None]

    node.observe(traffic(1.0, eth0_rx=1_000_000, lo=10**9, veth=10**9))
    node.observe(traffic(2.0, eth0_rx=3_000_000, lo=2 * 10**9, veth=2 * 10**9))

    assert node.samples_seen == 3
    # loopback and veth traffic is not the node's network traffic
    assert node.summary.rx_bytes_per_s == 2_000_000
    assert node.summary.tx_bytes_per_s == 0
    assert node.history["rx_bytes_per_s"].values() == [None, 1_000_000, 2_000_000]
    assert node.iface_history["eth0"][0].values() == pytest.approx([1_000_000, 2_000_000], rel=3e-4)
    assert node.iface_history["lo"][0].values() == pytest.approx([10**9, 10**9], rel=3e-4)
    assert node.health == HEALTHY and node.level is Level.OK


def test_drops_raise_the_health_level_with_a_reason_in_words():
    node = Node("gpu01", rules=AT_ONCE)
    node.observe(traffic(0.0, eth0_rx=0, rx_dropped=0))
    node.observe(traffic(1.0, eth0_rx=0, rx_dropped=200))

    assert node.summary.drops_per_s == 200
    assert node.level is Level.WARNING
    assert node.health.reasons == ("eth0 drops 200/s",)


def test_health_reasons_are_worst_first():
    prev = make_sample(
        0.0,
        make_iface("eth0", speed_mbps=10_000),
        tcp={"RetransSegs": 0, "OutSegs": 0},
        cpu=make_cpu({0: 0, 3: 0}, {0: 0, 3: 0}),
        softnet=SoftnetStat((0,), (0,), (0,), (0,)),
    )
    cur = make_sample(
        1.0,
        make_iface("eth0", speed_mbps=10_000, tx_bytes=1_187_500_000),  # 9.5 Gb/s of 10
        tcp={"RetransSegs": 20, "OutSegs": 1_000},
        cpu=make_cpu({0: 10, 3: 96}, {0: 100, 3: 100}),
        softnet=SoftnetStat((0,), (5_000,), (20,), (150,)),
    )
    node = Node("gpu01", rules=AT_ONCE)
    node.observe(prev)
    node.observe(cur)

    assert node.level is Level.CRITICAL
    # the defaults: retransmits > 1 % and softirq > 90 % are critical
    assert node.health.reasons == (
        "TCP retransmits 2.00% of segments",
        "softirq 96% on cpu3",
        "eth0 at 95% of link speed",
        "backlog drops 20/s",
        "NET_RX squeezed 150/s",
    )
    s = node.summary
    assert (s.hottest_cpu, s.hottest_softirq_percent) == (3, pytest.approx(96.0))
    assert s.retrans_ratio == pytest.approx(0.02) and s.max_link_percent == pytest.approx(95.0)
    assert (s.softnet_drops_per_s, s.time_squeeze_per_s) == (20, 150)


def test_thresholds_are_configuration():
    lenient = DEFAULT_THRESHOLDS | {"drops_per_s": Threshold(1_000, 2_000, 3_000)}
    node = Node("gpu01", thresholds=lenient, rules=AT_ONCE)
    node.observe(traffic(0.0, eth0_rx=0, rx_dropped=0))
    node.observe(traffic(1.0, eth0_rx=0, rx_dropped=200))

    assert node.level is Level.OK


@pytest.mark.parametrize(
    ("value", "level"),
    [(None, Level.OK), (0, Level.OK), (0.99, Level.OK), (1, Level.CAREFUL), (99, Level.CAREFUL),
     (100, Level.WARNING), (10_000, Level.CRITICAL), (1e12, Level.CRITICAL)],
)
def test_threshold_bounds_are_inclusive(value, level):
    assert Threshold(1, 100, 10_000).level(value) is level


def test_assess_ignores_unknown_values_and_metrics_without_threshold():
    findings = [("drops_per_s", None, "eth0 drops —/s"), ("no_such_metric", 1e9, "ignored"),
                ("errors_per_s", 12.0, "eth0 errors 12/s")]

    health = assess(findings)

    assert health.level is Level.WARNING and health.label == "warning"
    assert health.reasons == ("eth0 errors 12/s",)


def test_fail_makes_the_node_critical_with_the_reason_and_keeps_the_last_sample():
    node = Node("gpu02")
    node.observe(traffic(0.0, eth0_rx=0))
    last = traffic(1.0, eth0_rx=500)
    node.observe(last)

    node.fail(NodeState.DOWN, "connection refused")

    assert node.state is NodeState.DOWN and node.error == "connection refused"
    assert node.level is Level.CRITICAL
    assert node.health.level is Level.CRITICAL
    assert node.health.reasons == ("down: connection refused",)
    assert node.rates is None and node.summary == NodeTotals()
    assert node.sample is last


def test_a_node_back_after_a_failure_is_up_again():
    node = Node("gpu02")
    node.observe(traffic(0.0, eth0_rx=0))
    node.fail(NodeState.AUTH_FAILED, "permission denied (publickey)")
    node.observe(traffic(4.0, eth0_rx=4_000))

    assert node.state is NodeState.UP and node.error is None
    assert node.level is Level.OK
    assert node.summary.rx_bytes_per_s == 1_000


def test_stale_is_a_warning():
    node = Node("gpu03")
    node.observe(traffic(0.0, eth0_rx=0))

    node.set_state(NodeState.STALE, "no sample for 12 s")

    assert node.level is Level.WARNING
    assert node.health.reasons == ("stale: no sample for 12 s",)


def test_a_connecting_node_is_not_an_alarm():
    assert Node("gpu04").level is Level.OK


def test_a_sample_with_nothing_readable_is_a_parse_error():
    node = Node("gpu05")

    node.observe(make_sample(0.0, problems=("net/dev: not readable", "stat: not readable")))

    assert node.state is NodeState.PARSE_ERROR
    assert node.level is Level.CRITICAL
    assert "net/dev: not readable" in node.error and "stat: not readable" in node.error


def test_a_partial_sample_is_up_and_says_what_is_missing():
    node = Node("gpu05")

    node.observe(make_sample(0.0, make_iface(), problems=("net/snmp: not readable",)))

    assert node.state is NodeState.UP
    assert node.error == "net/snmp: not readable"


def test_a_reboot_leaves_a_gap_in_the_history():
    node = Node("gpu06", history_s=10, interval_s=1)
    node.observe(make_sample(0.0, make_iface(rx_bytes=0), boot_id="a"))
    node.observe(make_sample(1.0, make_iface(rx_bytes=100), boot_id="a"))
    node.observe(make_sample(2.0, make_iface(rx_bytes=5), boot_id="b"))
    node.observe(make_sample(3.0, make_iface(rx_bytes=55), boot_id="b"))

    assert node.history["rx_bytes_per_s"].values() == [None, 100, None, 50]


def test_interface_history_forgets_interfaces_that_are_gone():
    node = Node("gpu07")
    node.observe(make_sample(0.0, make_iface("eth0"), make_iface("veth1", ifindex=9, kind="veth")))
    node.observe(make_sample(1.0, make_iface("eth0"), make_iface("veth1", ifindex=9, kind="veth")))
    node.observe(make_sample(2.0, make_iface("eth0")))

    assert set(node.iface_history) == {"eth0"}


# --- which interfaces carry the node's traffic -----------------------------------------------


def test_data_plane_hides_loopback_veth_and_bridges():
    ifaces = {i.name: i for i in [
        make_iface("lo", kind="loopback"), make_iface("eth0", kind="physical"), make_iface("veth1", kind="veth"),
        make_iface("docker0", kind="bridge"), make_iface("ib0", kind="physical"), make_iface("bond0", kind="bond"),
    ]}

    assert data_plane(ifaces) == ["bond0", "eth0", "ib0"]
    assert is_hidden(ifaces["docker0"]) and not is_hidden(ifaces["bond0"])


def test_data_plane_of_a_lab_node_with_only_a_veth_falls_back_to_it():
    ifaces = {"lo": make_iface("lo", kind="loopback"), "eth0": make_iface("eth0", kind="veth")}

    assert data_plane(ifaces) == ["eth0"]


def test_a_lab_node_counts_its_veth_traffic():
    node = Node("lab-1")
    node.observe(make_sample(0.0, make_iface("lo", kind="loopback", rx_bytes=0), make_iface("eth0", kind="veth")))
    node.observe(make_sample(1.0, make_iface("lo", kind="loopback", rx_bytes=10**6),
                             make_iface("eth0", kind="veth", rx_bytes=300)))

    assert node.summary.rx_bytes_per_s == 300


def test_data_plane_never_falls_back_to_loopback():
    assert data_plane({"lo": make_iface("lo", kind=None)}) == []
    assert data_plane({"lo": make_iface("lo", kind=None), "eth0": make_iface("eth0", kind=None)}) == ["eth0"]


@pytest.mark.parametrize("kinds", [
    {"lo": "loopback", "eth0": "physical", "veth1": "veth", "docker0": "bridge", "ib0": "physical"},
    {"lo": "loopback", "eth0": "veth"},  # only a veth: it is the data plane
    {"lo": None, "eth0": None, "b": "bond"},
    {"lo": None},  # never loopback
    {"zz": "veth", "aa": "bridge", "lo": "loopback"},
])
def test_data_plane_is_one_rule_for_a_table_and_a_mapping(kinds):
    ifaces = {name: make_iface(name, kind=kind) for name, kind in kinds.items()}
    table = InterfaceTable.from_samples(ifaces)
    assert data_plane(ifaces) == data_plane(table) == list(table.layout.data_plane_names)
    assert [table.layout.names[i] for i in table.layout.data_plane] == data_plane(ifaces)


def test_a_frozen_fleet_keeps_its_values_and_histories_while_the_fleet_goes_on():
    from netui.model.fleet import Fleet
    from tests.synth import node_sample

    fleet = Fleet(["a", "b"], history_s=60, interval_s=1.0)
    for k in range(4):
        fleet["a"].observe(node_sample(k, rx_bps=1e9))
        fleet["b"].observe(node_sample(k, rx_bps=2e9))
    fleet.update_stragglers()
    frame = fleet.frozen()
    before = frame["a"].summary, frame["a"].history["rx_bytes_per_s"].values(), frame["a"].health
    for k in range(4, 8):
        fleet["a"].observe(node_sample(k, rx_bps=9e9, drops_per_s=500))
    fleet["b"].fail(NodeState.DOWN, "connection refused")
    fleet.update_stragglers()
    assert (frame["a"].summary, frame["a"].history["rx_bytes_per_s"].values(), frame["a"].health) == before
    assert frame["b"].state is NodeState.UP and frame.count_by_state() == {NodeState.UP: 2}
    assert fleet["a"].summary.rx_bytes_per_s == 9e9 / 8
    assert len(fleet["a"].history["rx_bytes_per_s"]) == len(before[1]) + 4


def test_a_failure_in_words_written_once_says_when_and_what_never_a_countdown():
    import time

    from netui.engine.monitor import report_state
    from netui.model.node import Node, NodeState

    node = Node("acc4")
    at = time.mktime((2026, 12, 2, 16, 13, 21, 0, 0, -1))
    report_state(node, NodeState.DOWN, "connection refused (retrying in 55 s)", at)
    assert node.failure_words() == "failed at 16:13:21: connection refused"
    assert node.error == "connection refused (retrying in 55 s)"  # the grid counts it down (ui/why.py)
    assert node.health.reasons == ("down: connection refused",)
    report_state(node, NodeState.CONNECTING, None)  # retrying: the last failure's words stay
    assert node.failure_words() == "failed at 16:13:21: connection refused"
    replayed = Node("acc5")  # a replay has no wall clock of the failure: the reason alone
    report_state(replayed, NodeState.DOWN, "connection refused (retrying in 2 s)")
    assert replayed.failure_words() == "connection refused"
