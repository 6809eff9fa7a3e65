"""The one backoff every source waits by after failures (collectors/backoff.py)."""

from __future__ import annotations

import random

from netui.collectors.backoff import MAX_S, Backoff, backoff_s


def test_backoff_doubles_is_capped_and_jittered():
    rng = random.Random(1)
    delays = [[backoff_s(a, 1.0, 60.0, rng) for a in range(10)] for _ in range(50)]
    for attempt in range(10):
        d = min(60.0, 2.0 ** attempt)
        values = [row[attempt] for row in delays]
        assert all(d / 2 <= v <= d for v in values)
        assert len({round(v, 6) for v in values}) > 40  # jitter: no two nodes in lockstep
    assert max(max(row) for row in delays) <= 60.0


def test_many_nodes_failing_together_do_not_retry_together():
    # 1,000 nodes failing at the same moment, third attempt: spread over 2 s, not a storm
    delays = sorted(backoff_s(3, 1.0, 60.0, random.Random(i)) for i in range(1000))
    assert delays[0] >= 4.0 and delays[-1] <= 8.0
    per_100ms = [sum(1 for d in delays if t / 10 <= d < (t + 1) / 10) for t in range(40, 80)]
    assert max(per_100ms) < 60


def test_a_polling_source_never_retries_sooner_than_its_interval():
    rng = random.Random(2)
    assert all(backoff_s(0, 1.0, 60.0, rng, at_least_s=5.0) == 5.0 for _ in range(100))
    assert all(8.0 <= backoff_s(4, 1.0, 60.0, rng, at_least_s=5.0) <= 16.0 for _ in range(100))


def test_a_huge_attempt_count_stays_at_the_cap():
    assert MAX_S / 2 <= backoff_s(10**9, 1.0, MAX_S, random.Random(3)) <= MAX_S


def test_backoff_counts_failures_in_a_row_and_a_success_starts_over():
    waits = Backoff(1.0, 60.0, "gpu01")
    first = [waits.next_s() for _ in range(7)]
    assert [min(60.0, 2.0 ** a) / 2 <= d <= min(60.0, 2.0 ** a) for a, d in enumerate(first)] == [True] * 7
    assert waits.attempt == 7
    waits.reset()
    assert 0.5 <= waits.next_s() <= 1.0


def test_two_nodes_draw_different_waits_and_one_node_the_same_ones():
    a = [Backoff(1.0, 60.0, "gpu01").next_s() for _ in range(2)]
    b = Backoff(1.0, 60.0, "gpu02").next_s()
    assert a[0] == a[1] != b
