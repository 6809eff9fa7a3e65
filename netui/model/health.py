"""Health levels from thresholds that are configuration data (as Glances does).

A node's level is the worst level of its metrics; each metric past its ``careful``
threshold adds a reason in words ("eth0 RX drops 120/s"), worst first. ``HeldHealth``
holds that level over time: it changes only after ``hold_intervals`` consecutive intervals
agree, so one interval's blip on an idle node is no alarm.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from operator import itemgetter


class Level(IntEnum):
    OK = 0
    CAREFUL = 1
    WARNING = 2
    CRITICAL = 3

    @property
    def label(self) -> str:
        return self.name.lower()


# the levels as module constants: a member read through its Enum class is several times
# slower than a global on CPython 3.11, and these are read for every finding of every sample
_OK, _CAREFUL, _WARNING, _CRITICAL = Level.OK, Level.CAREFUL, Level.WARNING, Level.CRITICAL


@dataclass(frozen=True, slots=True)
class Threshold:
    """Values at or above each bound reach that level."""

    careful: float
    warning: float
    critical: float

    def level(self, value: float | None) -> Level:
        if value is None:
            return _OK
        if value >= self.critical:
            return _CRITICAL
        if value >= self.warning:
            return _WARNING
        if value >= self.careful:
            return _CAREFUL
        return _OK


# Any increase of an integer counter over a real interval is far above this: "> 0/s".
ABOVE_ZERO = 1e-9

# The defaults, fit for a training cluster (where a single drop is worth a look). Units: per
# second unless said; ratios 0..1; percentages 0..100. ``~/.config/netui/config.toml``
# overrides them metric by metric (netui/config.py).
DEFAULT_THRESHOLDS: dict[str, Threshold] = {
    "drops_per_s": Threshold(ABOVE_ZERO, 100, 10_000),
    "errors_per_s": Threshold(ABOVE_ZERO, 10, 1_000),
    "retrans_ratio": Threshold(0.001, 0.001, 0.01),  # > 0.1 % warning, > 1 % critical
    "softirq_percent": Threshold(50, 50, 90),  # any CPU: > 50 % warning, > 90 % critical
    "softnet_drops_per_s": Threshold(1, 10, 1_000),
    "time_squeeze_per_s": Threshold(10, 100, 1_000),
    "link_percent": Threshold(80, 90, 98),
    # the fabric (model/fabric.py port_health). port_down counts a port that is not ACTIVE
    # (1 per port): critical by default; a site whose second ports are unplugged on every
    # node can make it careful ({ careful = 1, warning = inf, critical = inf }) or silence
    # it (all three inf)
    "port_down": Threshold(1, 1, 1),
    "rdma_errors_per_s": Threshold(ABOVE_ZERO, math.inf, math.inf),
    "rdma_discards_per_s": Threshold(ABOVE_ZERO, math.inf, math.inf),
    "roce_loss_per_s": Threshold(ABOVE_ZERO, math.inf, math.inf),
    "pause_per_s": Threshold(ABOVE_ZERO, math.inf, math.inf),
}


_MERGED: dict[int, tuple[dict[str, Threshold], dict[str, Threshold]]] = {}  # id(thresholds) → them, merged


def merged(thresholds: dict[str, Threshold] | None) -> dict[str, Threshold]:
    """The defaults with ``thresholds`` laid over them, metric by metric: one dict for every
    call with the same ones (a configuration's, rated at every sample of every node with a
    finding; neither is changed once made, as DEFAULT_THRESHOLDS is not)."""
    if not thresholds:
        return DEFAULT_THRESHOLDS
    kept = _MERGED.get(id(thresholds))
    if kept is None or kept[0] is not thresholds:
        if len(_MERGED) >= 64:  # (many configurations in one process: tests)
            _MERGED.clear()
        kept = _MERGED[id(thresholds)] = (thresholds, DEFAULT_THRESHOLDS | thresholds)
    return kept[1]


@dataclass(frozen=True, slots=True)
class HealthRules:
    """How a node's health is judged over time (``[health]`` in config.toml).

    ``retrans_min_segments``: the TCP retransmit ratio is judged only over an interval in
    which the node sent at least this many segments (ΔOutSegs); below, 3 retransmits of 2
    segments are shown but judge nothing. ``hold_intervals``: a node's level changes only
    after this many consecutive intervals agree, going up or down (1: at once).
    """

    retrans_min_segments: int = 1000
    hold_intervals: int = 3


DEFAULT_RULES = HealthRules()


@dataclass(frozen=True, slots=True)
class Health:
    level: Level
    reasons: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.level.label


HEALTHY = Health(Level.OK, ())

# a reading of one metric to be rated, (metric, value, reason): the reason is text, or a callable
# making it (worded only when the value crosses a threshold — most readings of a healthy fleet
# never are). Not the doctor's Finding (checks/doctor/model.py): a reading is not yet judged.
Reading = tuple[str, "float | None", "str | Callable[[], str]"]


def assess(readings: list[Reading], thresholds: dict[str, Threshold] | None = None) -> Health:
    """Health from ``(metric, value, reason)`` readings.

    ``metric`` names a threshold; a reading whose metric has none is ignored. ``thresholds``
    overrides the defaults metric by metric (the others keep their defaults).
    """
    return health_of(rate(readings, thresholds))


def rate(readings: list[Reading], thresholds: dict[str, Threshold] | None = None) -> list[tuple[Level, str]]:
    """``(level, reason)`` of each reading past its careful threshold (see ``assess``)."""
    thresholds = merged(thresholds)
    rated: list[tuple[Level, str]] = []
    for metric, value, text in readings:
        t = thresholds.get(metric)
        if t is None:
            continue
        level = t.level(value)
        if level > _OK:
            rated.append((level, text if isinstance(text, str) else text()))
    return rated


def health_of(rated: list[tuple[Level, str]]) -> Health:
    """The worst level, and every reason worst first (a stable order within a level)."""
    if not rated:
        return HEALTHY
    if len(rated) == 1:
        return Health(rated[0][0], (rated[0][1],))
    rated = _worst_first(rated)
    return Health(rated[0][0], tuple(map(_text, rated)))


_level, _text = itemgetter(0), itemgetter(1)  # of a (level, reason)


def _worst_first(rated: list[tuple[Level, str]]) -> list[tuple[Level, str]]:
    """``rated`` sorted worst level first, in their order within a level (``reverse`` keeps a
    sort stable; one key function for every call, none made at each)."""
    return sorted(rated, key=_level, reverse=True)


def reason_key(text: str) -> str:
    """A reason without its figures: the same finding in two intervals has the same key
    ("eth0 drops 12/s" and "eth0 drops 3/s" are both "eth0 drops")."""
    return " ".join(w for w in text.split() if not (w[0].isdigit() or w[0] in "—.+-"))


class HeldHealth:
    """A node's health level, held: it changes only after ``hold_intervals`` consecutive
    intervals agree. Fed once per sample with that interval's ``(level, reason)`` findings.

    Going up, the held level becomes the lowest of the agreeing intervals (all of them say
    at least that); going down, the highest (none says more). Its reasons are those of the
    latest interval that had that very level, worded from the current interval where the
    same finding (``reason_key``) is still there. ``immediate`` findings (a fabric port that
    is down: a state, not a level) are never held: they count from the interval they are in.
    """

    __slots__ = ("hold", "level", "_reasons", "_streak")

    def __init__(self, hold_intervals: int = DEFAULT_RULES.hold_intervals) -> None:
        self.hold = max(1, int(hold_intervals))
        self.level = Level.OK
        self._reasons: list[tuple[Level, str]] = []  # what produced ``level``
        self._streak: list[tuple[Level, list[tuple[Level, str]]]] = []  # intervals that disagree, one way

    @property
    def pending(self) -> int:
        """How many consecutive intervals so far disagree with the held level."""
        return len(self._streak)

    def feed(self, rated: list[tuple[Level, str]], immediate: list[tuple[Level, str]] | tuple[()] = (),
             interval: Health | None = None) -> Health:
        """The health to show after one more interval whose findings are ``rated``.
        ``interval``: that interval's own health (``health_of(rated)``) when the caller has
        made it already: while the level holds it is what is shown, not made again."""
        now = (rated[0][0] if len(rated) == 1 else max(map(_level, rated))) if rated else _OK
        if now == self.level:
            if self._streak:
                self._streak.clear()
            self._reasons = rated
            if interval is not None and not immediate:
                return interval
        else:
            up = now > self.level
            if self._streak and (self._streak[0][0] > self.level) != up:
                self._streak.clear()  # the other way now: start again
            self._streak.append((now, rated))
            if len(self._streak) >= self.hold:
                levels = [level for level, _ in self._streak]
                self.level = min(levels) if up else max(levels)
                for level, found in reversed(self._streak):  # (a loop, not a generator: no closure cells in feed)
                    if level == self.level:
                        self._reasons = found
                        break
                # the latest intervals past the new level still count towards the next step
                keep = len(self._streak)
                while keep and (self._streak[keep - 1][0] > self.level if up else self._streak[keep - 1][0] < self.level):
                    keep -= 1
                del self._streak[:keep]
            if self._reasons is not rated and self._reasons and rated:
                self._reword(rated)
        if not immediate:
            if not self._reasons:
                return HEALTHY if self.level is _OK else Health(self.level, ())
            return Health(self.level, tuple(map(_text, _worst_first(self._reasons))))
        both = _worst_first([*immediate, *self._reasons])
        return Health(max(self.level, max(map(_level, immediate))), tuple(map(_text, both)))

    def _reword(self, rated: list[tuple[Level, str]]) -> None:
        """The reasons of the level shown, in this interval's (``rated``) words where still
        true (the same ``reason_key``)."""
        held = self._reasons
        current = {reason_key(found[1]): found for found in rated}
        # (get: this interval's finding of the same key, or the held one)
        self._reasons = list(map(current.get, map(reason_key, map(_text, held)), held))
