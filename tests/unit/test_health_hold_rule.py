"""HeldHealth, fed at every sample of every node, is written for few allocations (no
closures, no key function made per call); what it shows must be what the plain rule below
shows, interval after interval, whatever the findings."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from netui.model.health import HEALTHY, Health, HeldHealth, Level, health_of, reason_key


class RuleHealth:
    """The hold as first written (netui before the allocations were cut): the rule the
    shipped ``HeldHealth`` must follow."""

    def __init__(self, hold_intervals: int) -> None:
        self.hold = max(1, int(hold_intervals))
        self.level = Level.OK
        self._reasons: list = []
        self._streak: list = []

    def feed(self, rated, immediate=(), interval=None) -> Health:
        now = (rated[0][0] if len(rated) == 1 else max([r[0] for r in rated])) if rated else Level.OK
        if now == self.level:
            if self._streak:
                self._streak.clear()
            self._reasons = rated
            if interval is not None and not immediate:
                return interval
        else:
            up = now > self.level
            if self._streak and (self._streak[0][0] > self.level) != up:
                self._streak.clear()
            self._streak.append((now, rated))
            if len(self._streak) >= self.hold:
                levels = [level for level, _ in self._streak]
                self.level = min(levels) if up else max(levels)
                self._reasons = next(r for level, r in reversed(self._streak) if level == self.level)
                keep = len(self._streak)
                while keep and (self._streak[keep - 1][0] > self.level if up else self._streak[keep - 1][0] < self.level):
                    keep -= 1
                del self._streak[:keep]
            if self._reasons is not rated and self._reasons and rated:
                current = {reason_key(text): (level, text) for level, text in rated}
                self._reasons = [current.get(reason_key(text), (level, text)) for level, text in self._reasons]
        if not immediate:
            if not self._reasons:
                return HEALTHY if self.level is Level.OK else Health(self.level, ())
            return Health(self.level, tuple(t for _, t in sorted(self._reasons, key=lambda x: -x[0])))
        both = sorted([*immediate, *self._reasons], key=lambda x: -x[0])
        return Health(max(self.level, max(level for level, _ in immediate)), tuple(t for _, t in both))


def rule_health_of(rated) -> Health:
    if not rated:
        return HEALTHY
    if len(rated) == 1:
        return Health(rated[0][0], (rated[0][1],))
    rated = sorted(rated, key=lambda x: -x[0])
    return Health(rated[0][0], tuple(text for _, text in rated))


_LEVELS = st.sampled_from([Level.CAREFUL, Level.WARNING, Level.CRITICAL])
# findings worded as nodes word them: a few subjects, figures that change between intervals
_WORDS = st.builds(lambda subject, figure: f"{subject} {figure}/s",
                   st.sampled_from(["eth0 drops", "eth1 drops", "eth0 errors", "NET_RX squeezed", "backlog drops"]),
                   st.sampled_from(["1.0", "12", "3.5k", "120"]))
_FINDINGS = st.lists(st.tuples(_LEVELS, _WORDS), max_size=5)
_INTERVALS = st.lists(st.tuples(_FINDINGS, st.lists(st.tuples(_LEVELS, _WORDS), max_size=2), st.booleans()),
                      max_size=14)


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 4), _INTERVALS)
def test_the_held_health_shown_is_the_rules_interval_after_interval(hold, intervals):
    held, rule = HeldHealth(hold), RuleHealth(hold)
    for rated, immediate, with_interval in intervals:
        # the node hands over its own health of the interval when it made it (ports up)
        interval = health_of(rated) if with_interval and not immediate else None
        shown = held.feed(list(rated), list(immediate), interval)
        expected = rule.feed(list(rated), list(immediate), interval)
        assert shown == expected
        assert held.level == rule.level and held.pending == len(rule._streak)  # noqa: SLF001


@settings(max_examples=300, deadline=None)
@given(_FINDINGS)
def test_an_intervals_own_health_is_the_rules(rated):
    assert health_of(rated) == rule_health_of(rated)
