"""Whether a fleet's samples reach the monitor within their interval: pure figures over the
arrivals a benchmark logged (bench_fleet).

Each observation of a node is ``(arrived_s, sent_s, delay_s)``: the monitor's monotonic clock
when the frame reached it, the sender's wall clock written into the frame as it was sent (its
``wall`` field), and the monitor's wall clock at arrival minus that stamp. On one machine the
two wall clocks are the same clock, so ``delay_s`` is what the frame spent in SSH, the sockets
and the monitor's loop before it was read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LATE_GAP = 1.5  # intervals between a node's observations (or a window's edge) past which it is late


@dataclass(frozen=True)
class ArrivalFigures:
    """How a window's node-samples arrived. Counts are node-samples; times in seconds."""

    due: int  # what the nodes' schedules hold in the window: nodes × window / interval
    observed: int
    on_time: int  # delay ≤ 1 interval and ≤ LATE_GAP intervals since the node's previous one
    late_by_delay: int  # observed more than 1 interval after being sent
    late_by_gap: int  # sent on time, but after a gap: the node was silent > LATE_GAP intervals
    sent_late: int  # the sender's own stamps > LATE_GAP intervals apart (its schedule slipped)
    delay_p50_s: float | None
    delay_p99_s: float | None
    delay_max_s: float | None
    delay_mean_halves_s: tuple[float | None, float | None]  # by arrival: the window's first, second half

    @property
    def late_share(self) -> float:
        """The share of the due node-samples not observed on time (late or never), 0..1."""
        return max(0, self.due - self.on_time) / self.due if self.due else 0.0

    def growing(self, interval_s: float) -> bool:
        """Whether the delay grows through the window (a backlog building): the second
        half's mean delay over the first half's by more than a tenth of an interval."""
        first, second = self.delay_mean_halves_s
        if first is None or second is None:
            return False
        return second - first > 0.1 * interval_s


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def arrival_figures(arrivals: dict[str, list[tuple[float, float, float]]], nodes: int,
                    start_s: float, end_s: float, interval_s: float) -> ArrivalFigures:
    """The figures of the observations in ``[start_s, end_s)`` (monotonic), over ``nodes``
    nodes that each send once per ``interval_s`` (nodes absent from ``arrivals`` sent
    nothing). A node-sample is on time when it arrived at most one interval after its send
    stamp and at most ``LATE_GAP`` intervals after the node's previous observation (the
    window's start, for its first): the gap catches what the stamp cannot, a sender held
    back by a monitor that does not read. Late share = 1 − on time / due."""
    gap_s = LATE_GAP * interval_s
    middle = (start_s + end_s) / 2
    delays: list[float] = []
    halves: tuple[list[float], list[float]] = ([], [])
    on_time = by_delay = by_gap = sent_late = observed = 0
    for seen in arrivals.values():
        previous, previous_sent = start_s, None
        for arrived, sent, delay in seen:
            if not start_s <= arrived < end_s:
                continue
            observed += 1
            delays.append(delay)
            halves[arrived >= middle].append(delay)
            if delay > interval_s:
                by_delay += 1
            elif arrived - previous > gap_s:
                by_gap += 1
            else:
                on_time += 1
            if previous_sent is not None and sent - previous_sent > gap_s:
                sent_late += 1
            previous, previous_sent = arrived, sent
    delays.sort()
    return ArrivalFigures(
        due=math.floor(nodes * (end_s - start_s) / interval_s), observed=observed, on_time=on_time,
        late_by_delay=by_delay, late_by_gap=by_gap, sent_late=sent_late,
        delay_p50_s=_percentile(delays, 0.5), delay_p99_s=_percentile(delays, 0.99),
        delay_max_s=delays[-1] if delays else None,
        delay_mean_halves_s=tuple(sum(h) / len(h) if h else None for h in halves),
    )
