"""Health that holds up: levels held over intervals, the retransmit floor, immediate states,
a stable worst-first order."""

from __future__ import annotations

import pytest

from netui.engine.document import node_document
from netui.model.health import HEALTHY, Health, HealthRules, HeldHealth, Level, reason_key
from netui.model.node import Node, NodeState
from netui.ui.columns import sort_key
from tests.factories import make_iface, make_sample

W, C, K = Level.WARNING, Level.CRITICAL, Level.CAREFUL


def feed_all(held: HeldHealth, intervals) -> list[Health]:
    return [held.feed(list(rated)) for rated in intervals]


# --- HeldHealth, pure ---------------------------------------------------------------------------


def test_one_interval_blip_is_no_alarm():
    shown = feed_all(HeldHealth(3), [[], [(C, "TCP retransmits 100.00% of segments")], [], [], []])

    assert [h.level for h in shown] == [Level.OK] * 5
    assert all(h == HEALTHY for h in shown)


def test_a_level_rises_after_hold_intervals_agree_with_the_reasons_of_the_latest():
    drops = [[(W, "eth0 drops 200/s")], [(W, "eth0 drops 300/s")], [(W, "eth0 drops 400/s")]]

    shown = feed_all(HeldHealth(3), drops)

    assert [h.level for h in shown] == [Level.OK, Level.OK, W]
    assert shown[-1].reasons == ("eth0 drops 400/s",)


def test_a_level_falls_only_after_hold_intervals_agree_and_keeps_the_reasons_that_made_it():
    held = HeldHealth(3)
    feed_all(held, [[(W, "eth0 drops 200/s")]] * 3)

    shown = feed_all(held, [[], [], []])

    # still warning for two intervals, with the reason that made it (nothing newer to word it by)
    assert [h.level for h in shown] == [W, W, Level.OK]
    assert shown[0].reasons == shown[1].reasons == ("eth0 drops 200/s",)
    assert shown[2] == HEALTHY


def test_going_up_through_mixed_levels_lands_on_the_lowest_they_all_agree_on():
    held = HeldHealth(3)
    shown = feed_all(held, [
        [(W, "eth0 drops 200/s")],
        [(C, "eth0 drops 20k/s"), (W, "TCP retransmits 0.50% of segments")],
        [(C, "eth0 drops 30k/s")],
    ])

    # all three say at least warning; the reasons are the warning interval's, worded now
    assert shown[-1].level is W
    assert shown[-1].reasons == ("eth0 drops 30k/s",)
    # and critical at the third critical interval in a row
    assert held.feed([(C, "eth0 drops 30k/s")]) == Health(C, ("eth0 drops 30k/s",))


def test_while_held_the_shown_reasons_are_the_held_levels_not_newer_worse_ones():
    held = HeldHealth(3)
    feed_all(held, [[(K, "eth0 drops 1/s")]] * 3)

    shown = held.feed([(K, "eth0 drops 2/s"), (C, "backlog drops 5k/s")])

    assert shown.level is K
    assert shown.reasons == ("eth0 drops 2/s",)  # the careful finding, in this interval's words


def test_intervals_that_flip_direction_never_add_up():
    held = HeldHealth(3)
    feed_all(held, [[(W, "eth0 drops 200/s")]] * 3)

    shown = feed_all(held, [[], [(C, "eth0 drops 20k/s")], [], [(C, "eth0 drops 20k/s")], []])

    assert [h.level for h in shown] == [W] * 5


def test_an_interval_at_the_held_level_starts_the_count_again():
    held = HeldHealth(3)
    shown = feed_all(held, [[(W, "a 1/s")], [(W, "a 1/s")], [], [(W, "a 1/s")], [(W, "a 1/s")], [(W, "a 1/s")]])

    assert [h.level for h in shown] == [Level.OK] * 5 + [W]


def test_hold_one_is_at_once():
    held = HeldHealth(1)

    assert held.feed([(C, "eth0 drops 20k/s")]).level is C
    assert held.feed([]) == HEALTHY


def test_immediate_findings_are_shown_at_once_and_go_at_once():
    held = HeldHealth(3)
    feed_all(held, [[(K, "eth0 drops 1/s")]] * 3)

    shown = held.feed([(K, "eth0 drops 1/s")], [(C, "mlx5_0/1 DOWN, phys Polling")])
    assert shown.level is C
    assert shown.reasons == ("mlx5_0/1 DOWN, phys Polling", "eth0 drops 1/s")

    assert held.feed([(K, "eth0 drops 1/s")]) == Health(K, ("eth0 drops 1/s",))


def test_a_reason_is_the_same_finding_whatever_its_figures():
    assert reason_key("eth0 drops 12/s") == reason_key("eth0 drops 3.4k/s") == "eth0 drops"
    assert reason_key("TCP retransmits 1.50% of segments") == reason_key("TCP retransmits 0.20% of segments")
    assert reason_key("eth0 drops 1/s") != reason_key("eth1 drops 1/s")


# --- a node ---------------------------------------------------------------------------------------


def tcp_sample(t: float, retrans: int, out: int, dropped: int = 0):
    return make_sample(t, make_iface("eth0", rx_dropped=dropped), tcp={"RetransSegs": retrans, "OutSegs": out})


def test_an_idle_nodes_retransmits_are_shown_but_not_judged_below_the_floor():
    node = Node("acc1", rules=HealthRules(hold_intervals=1))
    node.observe(tcp_sample(0.0, 10, 500))
    node.observe(tcp_sample(1.0, 13, 502))  # 3 retransmits of 2 segments

    assert node.summary.retrans_ratio == 1.0
    assert node.summary.retrans_judged is False
    assert node.level is Level.OK and node.health == HEALTHY
    doc = node_document(node)
    assert doc["tcp"]["retrans_judged"] is False and doc["tcp"]["rates"]["retrans_ratio"] == 1.0


def test_over_the_floor_the_ratio_is_judged():
    node = Node("acc1", rules=HealthRules(hold_intervals=1, retrans_min_segments=1000))
    node.observe(tcp_sample(0.0, 0, 0))
    node.observe(tcp_sample(1.0, 50, 1000))  # 5 % of 1000 segments

    assert node.summary.retrans_judged is True
    assert node.level is Level.CRITICAL
    assert node.health.reasons == ("TCP retransmits 5.00% of segments",)
    assert node_document(node)["tcp"]["retrans_judged"] is True


def test_the_floor_is_configurable():
    node = Node("acc1", rules=HealthRules(hold_intervals=1, retrans_min_segments=2))
    node.observe(tcp_sample(0.0, 10, 500))
    node.observe(tcp_sample(1.0, 13, 502))

    assert node.summary.retrans_judged is True and node.level is Level.CRITICAL


def test_a_node_holds_its_level_over_samples_with_the_default_hold():
    node = Node("acc1")
    assert node.rules.hold_intervals == 3
    node.observe(tcp_sample(0.0, 0, 0, dropped=0))
    levels, interval = [], []
    for t, dropped in enumerate((200, 400, 600, 800), start=1):
        node.observe(tcp_sample(float(t), 0, 0, dropped=dropped))
        levels.append(node.level)
        interval.append(node.interval_health.level)

    assert interval == [W, W, W, W]  # each interval's own judgement is at once
    assert levels == [Level.OK, Level.OK, W, W]
    assert node.health.reasons == ("eth0 drops 200/s",)


def test_node_states_are_immediate_and_not_held():
    node = Node("acc1")
    node.observe(tcp_sample(0.0, 0, 0))
    node.observe(tcp_sample(1.0, 0, 0))

    node.fail(NodeState.DOWN, "connection refused")
    assert node.level is Level.CRITICAL and node.health.reasons == ("down: connection refused",)

    node.set_state(NodeState.UP)
    node.observe(tcp_sample(2.0, 0, 0))
    assert node.level is Level.OK and node.health == HEALTHY


# --- worst first ------------------------------------------------------------------------------------


class _Node:
    """What the sort reads of a node."""

    def __init__(self, name, level=Level.OK, *, straggler=None, state=NodeState.UP, drops=None, ratio=None):
        from netui.model.node import NodeTotals

        self.name, self.level, self.straggler, self.state = name, level, straggler, state
        self.straggler_rank = 0 if straggler is not None else 1 << 30  # the fleet's order of its stragglers
        self.summary = NodeTotals(drops_per_s=drops, retrans_ratio=ratio)


def test_worst_first_is_level_then_straggler_then_not_up_then_name():
    nodes = [_Node("a"), _Node("b", W), _Node("c", W, straggler=object()), _Node("d", W, state=NodeState.STALE),
             _Node("e", C), _Node("f", state=NodeState.CONNECTING)]

    order = [n.name for n in sorted(nodes, key=sort_key("worst"))]

    assert order == ["e", "c", "d", "b", "f", "a"]


def test_healthy_tied_nodes_never_swap_rows_as_their_figures_move():
    orders = set()
    for step in range(6):
        nodes = [_Node(f"acc{i}", drops=(i * 7 + step * 3) % 5 or None, ratio=((i + step) % 4) / 1000)
                 for i in (3, 1, 4, 2)]
        orders.add(tuple(n.name for n in sorted(nodes, key=sort_key("worst"))))

    assert orders == {("acc1", "acc2", "acc3", "acc4")}


def test_names_sort_in_natural_order_in_every_sort():
    names = ["node10", "node9", "node1", "node1b", "node100", "node2"]
    natural = ["node1", "node1b", "node2", "node9", "node10", "node100"]

    assert [n.name for n in sorted(map(_Node, names), key=sort_key("node"))] == natural
    assert [n.name for n in sorted(map(_Node, names), key=sort_key("worst"))] == natural  # all tied
    assert [n.name for n in sorted(map(_Node, names), key=sort_key("rx"))] == natural


# --- one-shot snapshot and replay ---------------------------------------------------------------


async def _record_demo(path, ticks: int = 4):
    from netui.engine.monitor import Monitor
    from tests.synth import demo_sources

    m = Monitor(demo_sources(), interval_s=1.0, history_s=60)
    clock = iter(float(1_800_000_000 + k) for k in range(1000))
    m.start_recording(path, clock=lambda: next(clock))
    for _ in range(ticks):
        await m.tick()
    m.stop_recording()


@pytest.mark.slow
async def test_a_snapshot_judges_at_once_whatever_the_configured_hold(tmp_path, capsys):
    """``netui snapshot`` has two samples: nothing to hold over, so gpu02's drops show."""
    import asyncio
    import json

    from netui.cli import main

    await _record_demo(tmp_path / "demo.ndjson.gz")
    config = tmp_path / "config.toml"
    config.write_text("[health]\nhold_intervals = 5\n")

    await asyncio.to_thread(main, ["snapshot", "--replay", str(tmp_path / "demo.ndjson.gz"), "--json",
                                          "--config", str(config)])

    doc = json.loads(capsys.readouterr().out)
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes["gpu02"]["health"]["level"] == "critical"
    assert "eth0 drops 250/s" in nodes["gpu02"]["health"]["reasons"]
    assert nodes["gpu02"]["tcp"]["retrans_judged"] is True


async def test_a_replay_holds_levels_as_the_configuration_says(tmp_path):
    from netui.cli.watch import build_parser, build_replay, read_config
    from netui.engine.recording.playback import load
    from netui.engine.replay import ReplayMonitor

    path = tmp_path / "demo.ndjson.gz"
    await _record_demo(path, ticks=8)
    config = tmp_path / "config.toml"

    def first_health_tick(monitor) -> int:
        return min(e.frame for e in monitor.events if e.record["type"] == "health" and e.record["node"] == "gpu02")

    assert first_health_tick(ReplayMonitor(load(path))) == 3  # the default hold: 3 intervals
    for hold, tick in ((1, 1), (5, 5)):
        config.write_text(f"[health]\nhold_intervals = {hold}\n")
        args = build_parser("replay").parse_args([str(path), "--config", str(config)])
        replay = build_replay(args.file, history_s=60, config=read_config(args.config))
        assert replay.fleet.rules.hold_intervals == hold
        assert first_health_tick(replay) == tick
        while not replay.at_end:
            await replay.tick()
        assert replay.fleet["gpu02"].level is Level.CRITICAL


def test_the_retr_cell_is_coloured_only_when_the_ratio_is_judged():
    from netui.ui.columns import COLUMNS, cell_level

    ratio = next(c for c in COLUMNS if c.key == "ratio")
    idle = Node("acc1")
    idle.observe(tcp_sample(0.0, 10, 500))
    idle.observe(tcp_sample(1.0, 13, 502))
    busy = Node("acc2")
    busy.observe(tcp_sample(0.0, 0, 0))
    busy.observe(tcp_sample(1.0, 50, 1000))

    assert ratio.text(idle, None) == "100.00%"  # shown
    assert cell_level(ratio, idle) is Level.OK  # not judged: plain
    assert cell_level(ratio, busy) is Level.CRITICAL


def test_a_configurations_thresholds_are_merged_with_the_defaults_once_and_rated_by_them():
    from netui.model.health import DEFAULT_THRESHOLDS, Threshold, merged, rate

    mine = {"drops_per_s": Threshold(50, 500, 5_000)}
    first = merged(mine)
    assert first == DEFAULT_THRESHOLDS | mine and merged(mine) is first  # one dict for every call
    assert merged(None) is DEFAULT_THRESHOLDS and merged({}) is DEFAULT_THRESHOLDS
    other = {"drops_per_s": Threshold(1, 2, 3)}  # another configuration: its own
    assert merged(other)["drops_per_s"] == Threshold(1, 2, 3) and merged(mine) is first
    readings = [("drops_per_s", 20.0, "eth0 drops 20/s"), ("time_squeeze_per_s", 150.0, "squeezed 150/s")]
    assert rate(readings, mine) == [(Level.WARNING, "squeezed 150/s")]  # 20/s is under this one's careful
    assert rate(readings, other) == [(Level.CRITICAL, "eth0 drops 20/s"), (Level.WARNING, "squeezed 150/s")]
