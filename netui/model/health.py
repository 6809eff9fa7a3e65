"""Health levels from thresholds that are configuration data (as Glances does).

A node's level is the worst level of its metrics; each metric past its ``careful``
threshold adds a reason in words ("eth0 RX drops 120/s"), worst first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum


class Level(IntEnum):
    OK = 0
    CAREFUL = 1
    WARNING = 2
    CRITICAL = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Threshold:
    """Values at or above each bound reach that level."""

    careful: float
    warning: float
    critical: float

    def level(self, value: float | None) -> Level:
        if value is None:
            return Level.OK
        if value >= self.critical:
            return Level.CRITICAL
        if value >= self.warning:
            return Level.WARNING
        if value >= self.careful:
            return Level.CAREFUL
        return Level.OK


# The defaults. Units: per second unless said; ratios 0..1; percentages 0..100.
DEFAULT_THRESHOLDS: dict[str, Threshold] = {
    "drops_per_s": Threshold(1, 100, 10_000),
    "errors_per_s": Threshold(0.5, 10, 1_000),
    "retrans_ratio": Threshold(0.001, 0.01, 0.05),
    "softirq_percent": Threshold(50, 80, 95),
    "softnet_drops_per_s": Threshold(1, 10, 1_000),
    "time_squeeze_per_s": Threshold(10, 100, 1_000),
    "link_percent": Threshold(80, 90, 98),
}


@dataclass(frozen=True, slots=True)
class Health:
    level: Level
    reasons: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.level.label


HEALTHY = Health(Level.OK, ())

# (metric, value, reason): the reason is text, or a callable making it (worded only when
# the value crosses a threshold — most findings of a healthy fleet never are)
Finding = tuple[str, "float | None", "str | Callable[[], str]"]


def assess(findings: list[Finding], thresholds: dict[str, Threshold] | None = None) -> Health:
    """Health from ``(metric, value, reason)`` findings.

    ``metric`` names a threshold; a finding whose metric has none is ignored. ``thresholds``
    overrides the defaults metric by metric (the others keep their defaults).
    """
    thresholds = DEFAULT_THRESHOLDS if not thresholds else DEFAULT_THRESHOLDS | thresholds
    rated: list[tuple[Level, str]] = []
    for metric, value, text in findings:
        t = thresholds.get(metric)
        if t is None:
            continue
        level = t.level(value)
        if level > Level.OK:
            rated.append((level, text if isinstance(text, str) else text()))
    if not rated:
        return HEALTHY
    rated.sort(key=lambda x: -x[0])
    return Health(rated[0][0], tuple(text for _, text in rated))
