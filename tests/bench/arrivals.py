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

LATE_GAP = 1.5  # intervals between a sender's stamps past which its schedule slipped


@dataclass(frozen=True)
class ArrivalFigures:
    """How a window's node-samples arrived. Counts are node-samples; times in seconds.

    The node-samples judged are those sent in the window's first ``window − 1 interval``: by
    the window's end each was either observed within one interval of being sent (on time),
    observed later, or not yet observed — late too."""

    due: int  # the judged node-samples the nodes' schedules hold (those never sent included)
    observed: int  # observed in the window (judged or not)
    on_time: int
    late_by_delay: int  # judged, observed more than one interval after being sent
    never: int  # judged, not observed by the window's end (or not sent: the sender slipped)
    sent_late: int  # the sender's stamps > LATE_GAP intervals apart (its schedule slipped)
    delay_p50_s: float | None
    delay_p99_s: float | None
    delay_max_s: float | None
    delay_mean_halves_s: tuple[float | None, float | None]  # by arrival: the window's first, second half

    @property
    def late_share(self) -> float:
        """The share of the judged node-samples not observed on time (late or never), 0..1."""
        return (self.due - self.on_time) / self.due if self.due else 0.0

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


def _slots(reference_s: float, start_s: float, end_s: float, interval_s: float) -> int:
    """How many of the times ``reference_s + k × interval_s`` (k any integer) lie in [start_s, end_s)."""
    return max(0, math.ceil((end_s - reference_s) / interval_s) - math.ceil((start_s - reference_s) / interval_s))


def arrival_figures(arrivals: dict[str, list[tuple[float, float, float]]], nodes: int,
                    start_s: float, end_s: float, interval_s: float) -> ArrivalFigures:
    """The figures of the observations logged in ``[start_s, end_s)`` (monotonic), over
    ``nodes`` nodes that each send once per ``interval_s`` on a schedule of their own (nodes
    absent from ``arrivals`` sent nothing the monitor saw).

    A node-sample sent in ``[start_s, end_s − interval_s)`` is judged: on time when observed at
    most one interval after it was sent (its send time on the monitor's clock: arrival minus
    delay). Each node's schedule (the times it should have sent) is placed by its first
    observation, and a slot of it with no observation is late (never observed, or never sent);
    a node never observed has ``(end − start) / interval − 1`` slots, all late.
    Late share = 1 − on time / due."""
    judged_end = end_s - interval_s
    middle = (start_s + end_s) / 2
    delays: list[float] = []
    halves: tuple[list[float], list[float]] = ([], [])
    due = on_time = by_delay = never = sent_late = observed = 0
    for seen in arrivals.values():
        judged = 0
        reference = previous_sent = None
        for arrived, sent, delay in seen:
            if not start_s <= arrived < end_s:
                continue
            observed += 1
            delays.append(delay)
            halves[arrived >= middle].append(delay)
            sent_here = arrived - delay  # on the monitor's clock
            if reference is None:
                reference = sent_here
            if start_s <= sent_here < judged_end:
                judged += 1
                if delay > interval_s:
                    by_delay += 1
                else:
                    on_time += 1
            if previous_sent is not None and sent - previous_sent > LATE_GAP * interval_s:
                sent_late += 1
            previous_sent = sent
        if reference is None:
            continue
        slots = max(judged, _slots(reference, start_s, judged_end, interval_s))
        due += slots
        never += slots - judged
    unseen = nodes - sum(1 for seen in arrivals.values() if any(start_s <= a < end_s for a, _, _ in seen))
    if unseen > 0:
        slots = unseen * max(0, round((judged_end - start_s) / interval_s))
        due += slots
        never += slots
    delays.sort()
    return ArrivalFigures(
        due=due, observed=observed, on_time=on_time, late_by_delay=by_delay, never=never,
        sent_late=sent_late, delay_p50_s=_percentile(delays, 0.5), delay_p99_s=_percentile(delays, 0.99),
        delay_max_s=delays[-1] if delays else None,
        delay_mean_halves_s=tuple(sum(h) / len(h) if h else None for h in halves),
    )
