"""The categories of node states, declared once on NodeState (model/node.py), and the parts
of netui that decide by them."""

from __future__ import annotations

import pytest

from netui.cli.headless import settled_states
from netui.engine.monitor import report_state
from netui.model.events import event_level
from netui.model.health import Level
from netui.model.node import FAILED_STATES, REACHABLE_STATES, WAITING_STATES, Node, NodeState

S = NodeState
# every state, and the categories it is in: a new state fails here until it is placed
CATEGORIES = {
    S.UP: {"healthy", "reachable"},
    S.STALE: {"reachable", "waiting"},
    S.CONNECTING: {"waiting"},
    S.DOWN: {"failed"},
    S.AUTH_FAILED: {"failed"},
    S.HOST_KEY_UNKNOWN: {"failed"},
    S.HOST_KEY_CHANGED: {"failed"},
    S.UNSUPPORTED: {"failed"},
    S.PARSE_ERROR: {"failed"},
    S.IMPOSSIBLE: {"failed"},
    S.CONFIG_ERROR: {"failed"},
    S.INTERNAL_ERROR: {"failed"},
}


def test_every_state_is_in_exactly_its_categories():
    assert set(CATEGORIES) == set(NodeState)
    for state, expected in CATEGORIES.items():
        found = {c for c in ("healthy", "failed", "reachable", "waiting") if getattr(state, c)}
        assert found == expected, state


def test_the_sets_are_the_properties():
    assert FAILED_STATES == {s for s in NodeState if s.failed}
    assert REACHABLE_STATES == {s for s in NodeState if s.reachable}
    assert WAITING_STATES == {s for s in NodeState if s.waiting}
    assert settled_states() == FAILED_STATES  # what snapshot, record, bench and doctor stop waiting for


@pytest.mark.parametrize("state", list(NodeState))
def test_a_transport_report_is_a_failure_exactly_for_a_failed_state(state):
    node = Node("n")
    report_state(node, state, "why")
    assert node.state is state
    assert (node.health.level is Level.CRITICAL and node.last_failure == (state, "why")) is state.failed
    assert node.level is {S.UP: Level.OK, S.CONNECTING: Level.OK, S.STALE: Level.WARNING}.get(state, Level.CRITICAL)


@pytest.mark.parametrize("state", list(NodeState))
def test_a_state_event_is_a_warning_while_waiting_and_critical_when_failed(state):
    level = event_level({"type": "state", "state": state.value})
    assert level is (Level.OK if state.healthy else Level.WARNING if state.waiting else Level.CRITICAL)


def test_a_retry_of_the_same_failure_drops_its_countdown_and_keeps_when_it_failed():
    node = Node("n1")
    report_state(node, NodeState.DOWN, "connection refused (retrying in 2 s)", 1000.0)
    report_state(node, NodeState.DOWN, "connection refused", 1002.0)  # tried again (collectors/ssh.py)
    assert node.error == "connection refused" and node.failed_at_s == 1000.0
    assert node.health.level is Level.CRITICAL
    report_state(node, NodeState.DOWN, "connection refused (retrying in 4 s)", 1003.0)  # failed again
    assert node.error == "connection refused (retrying in 4 s)" and node.failed_at_s == 1003.0
    report_state(node, NodeState.DOWN, "no route to host", 1009.0)  # another failure: its own time
    assert node.error == "no route to host" and node.failed_at_s == 1009.0
    report_state(node, NodeState.AUTH_FAILED, "no route to host", 1010.0)
    assert node.state is NodeState.AUTH_FAILED and node.failed_at_s == 1010.0
