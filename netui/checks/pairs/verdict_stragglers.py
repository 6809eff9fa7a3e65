"""A pair test's suspects as the grid's stragglers (metric "pairs"): the pair check's
``stragglers`` (checks/pairs/__init__.py), which the engine calls when a pair test ends,
live or in a replay (engine/monitor.py ``take_test``).

Pure: a verdict in, stragglers out.
"""

from __future__ import annotations

from netui.checks.pairs.verdict import BOTH_WAYS, RECEIVING, SENDING, Verdict
from netui.model import units
from netui.model.straggler import Straggler


def pair_stragglers(verdict: Verdict) -> list[Straggler]:
    """The suspects of a pair test's verdict as stragglers (metric "pairs"), most failing
    tests first: value the node's median Gbit/s as bytes/s the way it is suspect in, median
    the best pairs' rate (or the pairs' median) in bytes/s."""
    out = []
    if verdict.expected_gbps is not None:
        reference, against = verdict.expected_gbps, "the best pairs'"
    else:
        reference, against = verdict.median_gbps, "the pairs' median"
    for name in verdict.suspects:
        s = verdict.nodes.get(name)
        if s is None or not s.suspect:
            continue
        sends = f"{s.sends_failing} of {s.sends} sends fail"
        receives = f"{s.receives_failing} of {s.receives} receives fail"
        if s.suspect == SENDING:
            words, gbps = f"sends slowly, {sends}", s.out_median_gbps
        elif s.suspect == RECEIVING:
            words, gbps = f"receives slowly, {receives}", s.in_median_gbps
        else:
            assert s.suspect == BOTH_WAYS
            medians = [g for g in (s.out_median_gbps, s.in_median_gbps) if g is not None]
            words, gbps = f"slow both ways, {sends}, {receives}", min(medians) if medians else None
        value = None if gbps is None else gbps * 1e9 / 8
        ref = None if reference is None else reference * 1e9 / 8
        numbers = "" if value is None else f" (median {units.bits_per_s(value)}" + (
            f" vs {against} {units.bits_per_s(ref)})" if ref is not None else ")")
        headline = f"{name}: the pair test names it: {words}"
        out.append(Straggler(name, "pairs", value if value is not None else 0.0, ref or 0.0, headline + numbers,
                             headline))
    return out
