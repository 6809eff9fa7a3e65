"""Confirm before blaming: which pairs a verdict that names a node or a link reruns, and the
verdict on the confirmed numbers (as NVIDIA ClusterKit retests its bad pairs).

Pure: no I/O. The runner (checks/pairs/runner.py) asks ``pairs_to_confirm`` once the matrix is
done, reruns those pairs each alone (no other test in its round), and the report judges again
with ``confirmed``. The rules, as docs/checks.md says them:

- **What is rerun.** Only when the verdict names a node or a part of the fabric: every
  failing pair of a suspect node (those it is blamed for first, the fastest first: nearest to
  passing, the likeliest to be a busy round's artefact), two of a fabric suspect's (the
  fastest; an uplink has many, all alike), and for every node whose good health the blame rests on (the other
  ends of a suspect node's failing pairs; both ends of a fabric suspect's pairs) its best
  clearing pair when every one it has is marginal (``Verdict.marginal``: a pass near its mark
  or below the best pairs' share, or a failing pair that clears it all the same). At most
  ``RETEST_LIMIT`` pairs.
- **Until what is named was confirmed.** The pairs rerun alone change the pass mark and the
  healthy evidence, so the verdict on the confirmed numbers may name what the matrix's did not
  (a busy machine's matrix: the uplink's pairs and the in-leaf pairs rerun alone, the in-leaf
  pairs now run 10× faster, and the cross-leaf pairs that avoid the uplink, slow only for the
  matrix's busy rounds, fail the new mark: the spine is named on pairs nobody reran). Its
  deciding pairs are rerun in turn, never a pair twice, until the verdict names nothing
  unconfirmed: at most ``CONFIRM_WAVES`` waves and ``RETEST_LIMIT`` pairs in all.
- **The confirmed numbers.** A rerun pair's retest replaces its matrix figure; the verdict is
  judged again on them (both figures are kept: ``Verdict.retested``).
- **A retest that contradicts.** When the first verdict named a node or a link, a failing pair
  passed on its retest, and the confirmed verdict names nothing, the result is inconclusive and
  says so ("inconclusive: fn3→fn4 16.2 Gbit/s on retest, 6.00 in the matrix").
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


def _fastest_first(results: Sequence[PairResult]) -> list[PairResult]:
    """Measured ones by rate, the fastest first, then the runs that gave no number."""
    return sorted(results, key=lambda r: (not _measured(r), -(r.gbps or 0.0) if _measured(r) else 0.0,
                                          r.sender, r.receiver))


def pairs_to_confirm(verdict: Verdict, budget: int = RETEST_LIMIT) -> list[Pair]:
    """The pairs to rerun alone before ``verdict`` blames (module docstring), in the order to
    run them: the suspects' failing pairs first, then the marginal clearing ones; at most
    ``budget``. A pair ``verdict`` has already rerun (``Verdict.retested``: a verdict on
    confirmed numbers) is not chosen again: a suspect whose deciding pairs (a node's failing
    ones, a fabric suspect's fastest two on the confirmed numbers) were all rerun is confirmed.
    Empty when the verdict names no node and no part of the fabric, or all it rests on was
    rerun."""
    if not verdict.suspects and not verdict.fabric or budget <= 0:
        return []
    chosen: list[Pair] = []
    done = set(verdict.retested)

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
    figures, and a retest that contradicts a blame is said (module docstring)."""
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
    if named_before and not named_now and flipped:
        words = ", ".join(f"{a}→{b} {_words(again[(a, b)])} on retest, {_words(replaced[(a, b)])} in the matrix"
                          for a, b in flipped[:4])
        text = (f"inconclusive: {words} — the failures did not hold when each pair ran alone "
                f"(on the confirmed numbers: {verdict.text})")
        verdict = dataclasses.replace(verdict, status=INCONCLUSIVE, text=text)
    elif verdict.status == FAIL and replaced:
        verdict = dataclasses.replace(verdict, text=verdict.text + ". Retested alone: " + retest_words(verdict))
    return verdict


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
