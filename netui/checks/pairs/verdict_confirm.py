"""Confirm before failing: which pairs a failing verdict reruns, and the verdict on the
confirmed numbers (as NVIDIA ClusterKit retests its bad pairs).

Pure: no I/O. The runner (checks/pairs/runner.py) asks ``pairs_to_confirm`` once the matrix is
done, reruns those pairs each alone (no other test in its round), and the report judges again
with ``confirmed``. The rules, as docs/checks.md says them:

- **What is rerun when the verdict names a node or a part of the fabric**: every
  failing pair of a suspect node (those it is blamed for first, the fastest first: nearest to
  passing, the likeliest to be a busy round's artefact), two of a fabric suspect's (the
  fastest; an uplink has many, all alike), and for every node whose good health the blame rests on (the other
  ends of a suspect node's failing pairs; both ends of a fabric suspect's pairs) its best
  clearing pair when every one it has is marginal (``Verdict.marginal``: a pass near its mark
  or below the best pairs' share, or a failing pair that clears it all the same). At most
  ``RETEST_LIMIT`` pairs.
- **What is rerun when a failing verdict names no one** (one pair just under the mark in a
  busy round, among pairs all alike): its failing pairs, the nearest to passing first (the
  largest share of the mark they needed), all of them or none: only when none was rerun yet
  and they are at most ``FAILING_NAMING_NOBODY`` (and the retests left allow). The verdict
  fails on any failing pair, so rerunning some while others still fail could not change it;
  more than ``FAILING_NAMING_NOBODY`` failing pairs cost no retest (nor, in the runner, a
  set of which a pair has an end with no test address).
- **Until what is named was confirmed.** The pairs rerun alone change the pass mark and the
  healthy evidence, so the verdict on the confirmed numbers may name what the matrix's did not
  (a busy machine's matrix: the uplink's pairs and the in-leaf pairs rerun alone, the in-leaf
  pairs now run 10× faster, and the cross-leaf pairs that avoid the uplink, slow only for the
  matrix's busy rounds, fail the new mark: the spine is named on pairs nobody reran). Its
  deciding pairs are rerun in turn, never a pair twice, until the verdict names nothing
  unconfirmed (and, naming no one, fails only on a pair that failed again alone, or on more
  than the rule above reruns): at most ``CONFIRM_WAVES`` waves and ``RETEST_LIMIT`` pairs in all.
- **The confirmed numbers.** A rerun pair's retest replaces its matrix figure; the verdict is
  judged again on them (both figures are kept: ``Verdict.retested``).
- **A retest that contradicts.** When the first verdict named a node or a link, a failing pair
  passed on its retest, and the confirmed verdict names nothing, the result is inconclusive and
  says so ("inconclusive: fn3→fn4 16.2 Gbit/s on retest, 6.00 in the matrix").
- **A failure that named no one and did not hold.** The verdict on the confirmed numbers
  stands (with no failing pair left: inconclusive when the pairs are all alike, or pass), and
  says what the retests showed ("Retested alone, the pair that failed in the matrix passes:
  node1→node2 158 Mb/s → 198 Mb/s"). When the pass mark is the best pairs' share, a pair
  alone may run far faster than the matrix's crowded rounds and raise the mark: when the
  confirmed numbers then fail only pairs that passed in the matrix and were not rerun, those
  are judged against a figure they did not share: the result is inconclusive, names no one
  and says so. A pair that fails again alone keeps the verdict failing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from netui.checks.pairs.model import Pair, PairResult
from netui.checks.pairs.verdict import FAIL, INCONCLUSIVE, Verdict, _explains, _measured
from netui.model import units

RETEST_LIMIT = 16
CONFIRM_WAVES = 3  # reruns, then reruns of what the confirmed verdict names anew, at most thrice
FAILING_PER_FABRIC_SUSPECT = 2
# a failing verdict that names no one reruns its failing pairs when they are at most this many:
# one or a few unlucky pairs, not a fleet whose every pair fails (that is the finding)
FAILING_NAMING_NOBODY = 4


def _fastest_first(results: Sequence[PairResult]) -> list[PairResult]:
    """Measured ones by rate, the fastest first, then the runs that gave no number."""
    return sorted(results, key=lambda r: (not _measured(r), -(r.gbps or 0.0) if _measured(r) else 0.0,
                                          r.sender, r.receiver))


def _nearest_passing_first(verdict: Verdict, results: Sequence[PairResult]) -> list[PairResult]:
    """Measured ones by the share of their mark they reached, the largest first, then the runs
    that gave no number."""
    def share(r: PairResult) -> float:
        need = verdict.required_gbps.get(r.pair)
        return (r.gbps or 0.0) / need if need else 0.0

    return sorted(results, key=lambda r: (not _measured(r), -share(r) if _measured(r) else 0.0,
                                          r.sender, r.receiver))


def pairs_to_confirm(verdict: Verdict, budget: int = RETEST_LIMIT) -> list[Pair]:
    """The pairs to rerun alone before ``verdict`` blames or fails (module docstring), in the
    order to run them: the suspects' failing pairs first, then the marginal clearing ones; at
    most ``budget``. When it fails and names no one: its failing pairs, the nearest to passing
    first, when they are at most ``FAILING_NAMING_NOBODY`` and ``budget``, else none. A pair
    ``verdict`` has already rerun (``Verdict.retested``: a verdict on confirmed numbers) is not
    chosen again: a suspect whose deciding pairs (a node's failing ones, a fabric suspect's
    fastest two on the confirmed numbers) were all rerun is confirmed, and so is a failure that
    names no one once one of its failing pairs failed again alone. Empty when the verdict does
    not fail, or all it rests on was rerun."""
    if budget <= 0:
        return []
    done = set(verdict.retested)
    if not verdict.suspects and not verdict.fabric:
        if verdict.status != FAIL:
            return []
        failing = list({r.pair: r for r in verdict.failing}.values())
        # all of them or none: any failing pair fails the verdict, so rerunning some while
        # the others still fail (or one failed again alone already) could not change it
        if not failing or len(failing) > min(FAILING_NAMING_NOBODY, budget) or any(r.pair in done for r in failing):
            return []
        return [r.pair for r in _nearest_passing_first(verdict, failing)]
    chosen: list[Pair] = []

    def take(pair: Pair) -> None:
        if pair not in chosen and pair not in done:
            chosen.append(pair)

    failing_ids = {id(r) for r in verdict.failing}
    ends: list[tuple[str, str]] = []  # (node, "sender"|"receiver") whose health the blame rests on
    for name in verdict.suspects:
        s = verdict.nodes[name]
        theirs = [r for r in verdict.failing if _explains(s, r)]
        # every failing pair of a suspect node, the ways it is not blamed in too (in the shift
        # pattern a node whose receiving is slow also sends slowly: its ACKs wait behind what
        # it receives), the fastest first, those it is blamed for first
        mine = [r for r in verdict.failing if name in r.pair]
        for r in _fastest_first(theirs) + _fastest_first([r for r in mine if r not in theirs]):
            take(r.pair)
        for r in theirs:
            if r.sender == name:
                ends.append((r.receiver, "receiver"))
            else:
                ends.append((r.sender, "sender"))
    by_pair = {r.pair: r for r in verdict.failing}
    for f in verdict.fabric:
        pairs = [by_pair[p] for p in f.pairs if p in by_pair]
        for r in _fastest_first(pairs)[:FAILING_PER_FABRIC_SUSPECT]:
            take(r.pair)
        for r in pairs:
            ends += [(r.sender, "sender"), (r.receiver, "receiver")]
    # the clearing evidence: what shows each end fine in its role, outside the blamed pairs
    blamed = set(chosen) | {p for f in verdict.fabric for p in f.pairs}
    marginal = {id(r) for r in verdict.marginal}
    for node, role in dict.fromkeys(ends):
        evidence = [r for r in verdict.results if getattr(r, role) == node and r.pair not in blamed
                    and _measured(r) and (id(r) not in failing_ids or id(r) in marginal)]
        if evidence and all(id(r) in marginal for r in evidence) and not any(r.pair in done for r in evidence):
            take(_fastest_first(evidence)[0].pair)
    return chosen[:budget]


def confirmed(first: Verdict, results: Sequence[PairResult], retests: Sequence[PairResult],
              judge: Callable[[list[PairResult]], Verdict]) -> Verdict:
    """The verdict on the confirmed numbers: ``results`` (the matrix) with each pair of
    ``retests`` replaced by its retest, judged by ``judge``; ``retested`` keeps the matrix's
    figures, and a retest that contradicts a blame, or that undoes a failure naming no one, is
    said (module docstring)."""
    again = {r.pair: r for r in retests}
    if not again:
        return first
    merged: list[PairResult] = []
    found: dict[Pair, PairResult] = {}
    for r in results:
        if r.pair in again and r.pair not in found:
            found[r.pair] = r
            merged.append(again[r.pair])
        elif r.pair not in again:
            merged.append(r)
    replaced = {p: found[p] for p in again if p in found}  # in the order they were rerun
    verdict = judge(merged)
    verdict = dataclasses.replace(verdict, retested=replaced)
    was_failing = {r.pair for r in first.failing}
    now_failing = {r.pair for r in verdict.failing}
    flipped = [p for p in replaced if p in was_failing and p not in now_failing]
    named_before = bool(first.suspects or first.fabric)
    named_now = bool(verdict.suspects or verdict.fabric)
    # pairs the matrix passed that fail on the confirmed numbers without a rerun of their own:
    # the retests moved a mark taken from the best pairs (alone, a pair outruns crowded rounds)
    moved = [p for p in dict.fromkeys(r.pair for r in verdict.failing) if p not in was_failing and p not in replaced]
    if not named_before and moved and flipped and not now_failing & set(replaced):
        # what the confirmed numbers fail (or blame) rests on pairs nobody reran, judged by a
        # figure they did not share: no blame, and no verdict either way
        words = _contradiction_words(flipped, again, replaced)
        k = len(moved)
        text = (f"inconclusive: {words} — run alone, faster than the matrix's pairs, "
                f"{'it' if len(flipped) == 1 else 'they'} moved their pass mark: {k} "
                f"{'pair' if k == 1 else 'pairs'} that passed in the matrix and {'was' if k == 1 else 'were'} "
                f"not rerun would fail it: figures alone and in the matrix's crowded rounds cannot be "
                f"compared (--threshold-gbps sets a pass mark)")
        nodes = {name: dataclasses.replace(n, suspect="") for name, n in verdict.nodes.items()}
        verdict = dataclasses.replace(verdict, status=INCONCLUSIVE, text=text, suspects=[], fabric=[], nodes=nodes)
    elif named_before and not named_now and flipped:
        words = _contradiction_words(flipped, again, replaced)
        text = (f"inconclusive: {words} — the failures did not hold when each pair ran alone "
                f"(on the confirmed numbers: {verdict.text})")
        verdict = dataclasses.replace(verdict, status=INCONCLUSIVE, text=text)
    elif verdict.status == FAIL and replaced:
        verdict = dataclasses.replace(verdict, text=verdict.text + ". Retested alone: " + retest_words(verdict))
    elif not named_before and flipped:
        k = len(flipped)
        which = "the pair that failed in the matrix passes" if k == 1 else f"the {k} pairs that failed in the matrix pass"
        verdict = dataclasses.replace(verdict, text=f"{verdict.text}. Retested alone, {which}: {retest_words(verdict)}")
    return verdict


def _contradiction_words(pairs: Sequence[Pair], again: dict[Pair, PairResult], replaced: dict[Pair, PairResult],
                         limit: int = 4) -> str:
    """"fn3→fn4 16.2 Gb/s on retest, 6 Gb/s in the matrix" for the first ``limit`` of ``pairs``."""
    return ", ".join(f"{a}→{b} {_words(again[(a, b)])} on retest, {_words(replaced[(a, b)])} in the matrix"
                     for a, b in pairs[:limit])


def _words(r: PairResult) -> str:
    return units.gbps(r.gbps) if _measured(r) else f"failed ({r.error or 'no result'})"


def retest_words(verdict: Verdict, limit: int = 6) -> str:
    """"fn3→fn4 6 Gb/s → 16.2 Gb/s, fn1→fn3 100 Mb/s → 120 Mb/s" for the retested pairs."""
    by_pair = {r.pair: r for r in verdict.results}
    words = []
    for pair, before in list(verdict.retested.items())[:limit]:
        after = by_pair.get(pair)
        if after is None:
            continue
        a, b = pair
        old = units.gbps(before.gbps) if _measured(before) else "failed"
        new = units.gbps(after.gbps) if _measured(after) else "failed"
        words.append(f"{a}→{b} {old} → {new}")
    more = len(verdict.retested) - limit
    return ", ".join(words) + (f", … {more} more" if more > 0 else "")
