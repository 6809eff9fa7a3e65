"""bench_fleet's share of late node-samples (tests/bench/arrivals.py): what counts as late."""

from tests.bench.arrivals import arrival_figures


def steady(start: float, count: int, delay: float = 0.01, every: float = 1.0) -> list[tuple[float, float, float]]:
    """A node observed every ``every`` seconds from ``start``, each ``delay`` after it was sent."""
    return [(start + i * every, 1000.0 + start + i * every - delay, delay) for i in range(count)]


def test_a_fleet_on_time_has_no_late_samples_and_no_growing_lag():
    # judged: what was sent in the window's first 9 s (each could still arrive on time by its end)
    fig = arrival_figures({"a": steady(0.2, 10), "b": steady(0.7, 10)}, 2, 0.0, 10.0, 1.0)
    assert (fig.due, fig.observed, fig.on_time) == (18, 20, 18)
    assert fig.late_share == 0.0
    assert not fig.growing(1.0)


def test_a_sample_delivered_more_than_an_interval_after_it_was_sent_is_late():
    seen = steady(0.5, 10)
    seen[4] = (seen[4][0], seen[4][1] - 1.2, 1.2)
    fig = arrival_figures({"a": seen}, 1, 0.0, 10.0, 1.0)
    assert fig.late_by_delay == 1
    assert fig.late_share == 1 / 9


def test_a_silent_node_is_late_for_the_samples_it_missed_even_when_what_comes_is_fresh():
    # a sender held back (its stamps fresh, its frames few): observed at 0.5, 1.5, then 4.5 ... 9.5
    seen = steady(0.5, 2) + steady(4.5, 6)
    fig = arrival_figures({"a": seen}, 1, 0.0, 10.0, 1.0)
    assert fig.never == 2 and fig.sent_late == 1
    assert fig.late_share == 2 / 9


def test_a_sample_not_yet_arrived_at_the_end_is_judged_only_once_its_interval_has_passed():
    # sent at 8.49, 9.49: the first should have arrived by 9.49 (late), the second may still come
    fig = arrival_figures({"a": steady(0.5, 8)}, 1, 0.0, 10.0, 1.0)
    assert (fig.due, fig.on_time, fig.never) == (9, 8, 1)


def test_nodes_never_observed_count_as_late_and_observations_outside_the_window_do_not_count():
    fig = arrival_figures({"a": steady(-2.5, 15)}, 2, 0.0, 10.0, 1.0)
    assert fig.observed == 10
    assert fig.late_share == 0.5


def test_a_delay_that_climbs_through_the_window_is_growing_lag():
    seen = [(0.5 + i, 1000.0 + i * 0.9, 0.05 + 0.05 * i) for i in range(10)]
    fig = arrival_figures({"a": seen}, 1, 0.0, 10.0, 1.0)
    assert fig.late_share == 0.0
    assert fig.growing(1.0)
