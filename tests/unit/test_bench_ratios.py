"""bench_fleet's summary of a fleet size (``_print_ratios``): each variant against the floor of
its own round, a variant run twice in a round (the floor before and after the others) as the
mean of its runs, the median of the rounds."""

from __future__ import annotations

from tests.bench.bench_fleet import _print_ratios


def run(variant: str, us: float) -> dict:
    return {"variant": variant, "cpu_s": us * 1e-6 * 20_000, "node_samples": 20_000}


def test_a_floor_run_before_and_after_the_others_counts_as_their_mean(capsys):
    rounds = [{"floor": [run("floor", 60), run("floor", 100)], "engine": [run("engine", 128)],
               "ui": [run("ui", 150)]},
              {"floor": [run("floor", 80)], "engine": [run("engine", 120)], "ui": [run("ui", 176)]}]
    _print_ratios(1024, rounds)
    out = capsys.readouterr().out
    # round 1: 128 / 80 = 1.60, 150 / 80 = 1.88; round 2: 1.50, 2.20; medians 1.55, 2.04
    assert "engine / floor = 1.55× (rounds 1.60×, 1.50×)" in out, out
    assert "all included (ui) / floor = 2.04× (rounds 1.88×, 2.20×)" in out, out


def test_a_feature_is_measured_against_the_floor_that_read_the_same_frames(capsys):
    rounds = [{"floor": [run("floor", 80)], "floor+peers": [run("floor+peers", 90)],
               "engine+peers": [run("engine+peers", 144)]}]
    _print_ratios(1024, rounds)
    assert "engine+peers / floor+peers = 1.60× (target ≤ 1.6×)" in capsys.readouterr().out
