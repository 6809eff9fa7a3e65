"""What changed in the fleet from one tick to the next, as records: node state changes with
their reason, health level changes, stragglers flagged and cleared (held, as shown), a
fabric suspect as a straggler named by its link ("leaf2's uplink", ``"link": true``).

Pure: ``EventTracker.changes(fleet)`` compares the fleet with what it saw at the previous
call. The recorder writes these records; replay finds the same ones again by running the
model over the recorded samples (so a recording made before events were recorded has
them too).
"""

from __future__ import annotations

from netui import checks
from netui.model.fleet import Fleet
from netui.model.health import Level
from netui.model.node import WAITING_STATES, NodeState, without_countdown
from netui.model.text import safe_line

EVENT_TYPES = ("state", "health", "straggler", "test")


class EventTracker:
    def __init__(self) -> None:
        self._state: dict[str, tuple[NodeState, str | None]] = {}
        self._level: dict[str, Level] = {}
        self._straggler: dict[str, str] = {}  # node → what names it: "pairs" or "traffic"
        self._links: set[str] = set()  # the fabric's suspects named (model/fabric_suspects.py)

    def changes(self, fleet: Fleet) -> list[dict]:
        """The records of what changed since the last call (without their time ``t``)."""
        out: list[dict] = []
        for node in fleet:
            was = self._state.get(node.name, (NodeState.CONNECTING, None))
            # an up node's error is the list of files it could not read: not a change of state;
            # a failure's countdown to its retry is none either
            now = (node.state, None if node.state is NodeState.UP or node.error is None
                   else without_countdown(node.error))
            if now != was:
                # (written once and read later, in a replay's Why column too: no countdown)
                reason = node.error if node.state is NodeState.UP or node.error is None else now[1]
                out.append({"type": "state", "node": node.name, "state": node.state.value, "reason": reason,
                            "was": was[0].value})
                self._state[node.name] = now
            level = node.health.level if node.state is NodeState.UP else node.level
            before = self._level.get(node.name, Level.OK)
            if level != before:
                out.append({"type": "health", "node": node.name, "level": level.label, "was": before.label,
                            "reasons": list(node.health.reasons)})
                self._level[node.name] = level
            s = node.straggler
            # held (model/blame.py): an event when a node becomes a straggler or stops being
            # one, or a pair test names it, not when the rule that names it by its traffic
            # changes from one interval to the next
            if s is not None and self._straggler.get(node.name) != _source(s.metric):
                out.append({"type": "straggler", "node": node.name, "flagged": True, "metric": s.metric,
                            "value": s.value, "median": s.median, "reason": s.reason})
                self._straggler[node.name] = _source(s.metric)
            elif s is None and node.name in self._straggler:
                del self._straggler[node.name]
                out.append({"type": "straggler", "node": node.name, "flagged": False,
                            "reason": f"{node.name} is no longer a straggler"})
        # a fabric suspect (a leaf's uplink) as a straggler named by the link ("link": true)
        named = {s.name: s for s in fleet.fabric_suspects}
        for name, s in named.items():
            if name not in self._links:
                out.append({"type": "straggler", "node": name, "link": True, "flagged": True, "metric": s.rule,
                            "value": s.share, "median": None, "reason": s.reason})
        for name in sorted(self._links - named.keys()):
            out.append({"type": "straggler", "node": name, "link": True, "flagged": False,
                        "reason": f"{name} is no longer a straggler"})
        self._links = set(named)
        return out


def _source(metric: str) -> str:
    return "pairs" if metric == "pairs" else "traffic"


_WAITING_VALUES = frozenset(state.value for state in WAITING_STATES)  # as a recording's events name them


def event_level(rec: dict) -> Level:
    """How bad an event is, for its colour on a timeline."""
    kind = rec.get("type")
    if kind == "state":
        state = rec.get("state")
        if state == NodeState.UP.value:
            return Level.OK
        return Level.WARNING if state in _WAITING_VALUES else Level.CRITICAL
    if kind == "health":
        try:
            return Level[str(rec.get("level", "ok")).upper()]
        except KeyError:
            return Level.OK
    if kind == "straggler":
        return Level.WARNING if rec.get("flagged") else Level.OK
    if kind == "test":
        passed = ((rec.get("report") or {}).get("verdict") or {}).get("passed")
        return Level.OK if passed else Level.WARNING
    return Level.OK


def event_text(rec: dict) -> str:
    """One event in words: "node3: down (connection refused)", "node3: straggler — …"; a
    recording's words shown as model/text.py shows any text netui did not make."""
    return safe_line(_event_words(rec))


def _event_words(rec: dict) -> str:
    kind = rec.get("type")
    node = rec.get("node")
    if kind == "state":
        reason = f" ({rec['reason']})" if rec.get("reason") and rec.get("state") != "up" else ""
        return f"{node}: {rec.get('state')}{reason}"
    if kind == "health":
        reasons = rec.get("reasons") or []
        return f"{node}: {rec.get('was')} → {rec.get('level')}" + (f" ({reasons[0]})" if reasons else "")
    if kind == "straggler":
        return (f"straggler {rec.get('reason')}" if rec.get("flagged") else f"{node}: straggler cleared")
    if kind == "test":
        report = rec.get("report") or {}
        check = checks.by_kind(rec.get("kind"))
        what = check.title_of(report) if check is not None else f"{report.get('tool', 'a')} test"
        return f"{what}: {report.get('summary') or ((report.get('verdict') or {}).get('text')) or 'done'}"
    return str(kind)
