"""Benchmark: the wall time of a directed (both ways) all-pairs iperf3 matrix on 6 lab nodes,
the shift pattern against disjoint pairs, side by side in one run.

Run (root, on the lab's packages): python -m tests.bench.bench_matrix [--duration S] [--runs N]

A 6-node lab (network namespaces, real sshd and iperf3, traffic only in 198.18.0.0/24) and one
monitor over SSH; the matrix runs RUNS times per pattern, interleaved, through the real runner
(``PairTest``), with the retests off (``confirm=False``: a healthy lab names nobody, and retests
are not rounds). Printed per pattern: the rounds, the median wall time of the rounds (from the
first round's start to the last one's end) and of the whole run (with the node checks first),
each as a ratio to rounds × duration: the floor no schedule can beat. Target for the shift
pattern: 5 rounds, rounds' wall ≤ 1.15 × rounds × duration.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from netui.checks.pairs.runner import PairTest
from netui.checks.pairs.tools import BOTH_WAYS, PAIRS, SHIFT, PairSettings
from tests.lab.cluster import Lab
from tests.lab.watch import lab_monitor, started_all_up, stop

NODES = 6


async def one_matrix(monitor, names: list[str], pattern: str, duration_s: int) -> tuple[int, float, float]:
    """(rounds, rounds' wall time, whole run's wall time), seconds."""
    marks: dict[str, float] = {}

    def progress(p) -> None:
        now = time.monotonic()
        if p.phase == "running":
            marks.setdefault("first", now)
        elif p.phase in ("done", "cancelled"):
            marks.setdefault("end", now)

    settings = PairSettings(duration_s=duration_s, direction=BOTH_WAYS, pattern=pattern, confirm=False)
    t0 = time.monotonic()
    report = await PairTest(monitor, names, settings, on_progress=progress).run()
    whole = time.monotonic() - t0
    if report.tests_done != NODES * (NODES - 1) or not all(r.ok for r in report.results):
        raise RuntimeError(f"{pattern}: {report.tests_done} tests, {[r.error for r in report.results if not r.ok]}")
    return report.rounds, marks["end"] - marks["first"], whole


async def bench(lab, duration_s: int, runs: int) -> None:
    names = [n.name for n in lab.nodes]
    monitor = lab_monitor(lab, names)
    task = await started_all_up(monitor)
    figures: dict[str, list[tuple[int, float, float]]] = {SHIFT: [], PAIRS: []}
    try:
        for _ in range(runs):
            for pattern in (SHIFT, PAIRS):
                figures[pattern].append(await one_matrix(monitor, names, pattern, duration_s))
    finally:
        await stop(monitor, task)
    print(f"{NODES}-node directed iperf3 matrix, {duration_s} s per test, {runs} runs per pattern (medians)")
    print(f"{'pattern':<8} {'rounds':>6} {'rounds wall':>12} {'ratio':>6} {'whole run':>10} {'ratio':>6}")
    for pattern, rows in figures.items():
        rounds = rows[0][0]
        floor = rounds * duration_s
        wall = statistics.median(r[1] for r in rows)
        whole = statistics.median(r[2] for r in rows)
        print(f"{pattern:<8} {rounds:>6} {wall:>10.1f} s {wall / floor:>5.2f}× {whole:>8.1f} s {whole / floor:>5.2f}×")
    shift = statistics.median(r[2] for r in figures[SHIFT])
    pairs = statistics.median(r[2] for r in figures[PAIRS])
    print(f"shift / pairs, whole run: {shift / pairs:.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=2, help="seconds per test (default 2)")
    parser.add_argument("--runs", type=int, default=3, help="matrices per pattern (default 3)")
    args = parser.parse_args()
    with Lab(NODES, name="bmtx1") as lab:  # built outside the event loop (pyroute2 runs its own)
        asyncio.run(bench(lab, args.duration, args.runs))


if __name__ == "__main__":
    main()
