"""The events of a node's state (model/events.py): a failure is one event, however often its
collector counts down to the next retry."""

from __future__ import annotations

from netui.model.events import EventTracker
from netui.model.fleet import Fleet
from netui.model.node import NodeState


def states(changes: list[dict]) -> list[tuple[str, str | None]]:
    return [(c["state"], c["reason"]) for c in changes if c["type"] == "state"]


def test_a_failure_is_one_event_through_its_retries_and_a_new_failure_another():
    fleet = Fleet(["n1"], interval_s=1.0)
    tracker = EventTracker()
    node = fleet["n1"]
    assert states(tracker.changes(fleet)) == []  # connecting, as before any report
    node.set_state(NodeState.DOWN, "connection refused (retrying in 2 s)")
    assert states(tracker.changes(fleet)) == [("down", "connection refused")]  # written once: no countdown
    for reason in ("connection refused", "connection refused (retrying in 4 s)", "connection refused"):
        node.set_state(NodeState.DOWN, reason)  # tried again, refused again: the same failure
        assert states(tracker.changes(fleet)) == []
    node.set_state(NodeState.DOWN, "no route to host (retrying in 8 s)")
    assert states(tracker.changes(fleet)) == [("down", "no route to host")]
    node.set_state(NodeState.AUTH_FAILED, "no route to host (retrying in 8 s)")
    assert states(tracker.changes(fleet)) == [("auth failed", "no route to host")]
    node.set_state(NodeState.UP)
    assert states(tracker.changes(fleet)) == [("up", None)]
