"""History rings and the way numbers are shown."""

from __future__ import annotations

import math
from array import array
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.model import units
from netui.model.history import FloatTable, NodeHistory, RateRing, RateTable, Ring, capacity_for

# --- Ring ------------------------------------------------------------------------------------


def test_ring_keeps_the_newest_values_oldest_first():
    ring = Ring(3)
    for v in (1, 2, 3, 4, 5):
        ring.append(v)

    assert ring.values() == [3, 4, 5]
    assert len(ring) == 3 and ring.capacity == 3
    assert ring.latest() == 5


def test_ring_before_it_is_full():
    ring = Ring(4)
    assert ring.values() == [] and ring.latest() is None and len(ring) == 0

    ring.append(7)
    ring.append(8)

    assert ring.values() == [7, 8] and len(ring) == 2


def test_ring_stores_unknown_as_nan_and_gives_back_none():
    ring = Ring(3)
    ring.append(None)
    ring.append(1.5)
    ring.append(math.nan)

    assert ring.values() == [None, 1.5, None]
    assert ring.latest() is None


def test_ring_last_n_values_across_the_wrap():
    ring = Ring(4)
    for v in range(1, 7):  # 1..6: the buffer has wrapped
        ring.append(v)

    assert ring.values(last=2) == [5, 6]
    assert ring.values(last=3) == [4, 5, 6]
    assert ring.values(last=100) == [3, 4, 5, 6]


def test_ring_is_float32():
    ring = Ring(1)
    ring.append(0.1)

    assert ring.values()[0] == pytest.approx(0.1, rel=1e-6)
    assert ring.values()[0] != 0.1  # 4 bytes per value, not 8


def test_ring_needs_room_for_one_value():
    with pytest.raises(ValueError):
        Ring(0)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.lists(st.one_of(st.none(), st.integers(-1000, 1000))), st.integers(0, 10))
def test_ring_behaves_like_a_bounded_deque(capacity, values, last):
    ring, model = Ring(capacity), deque(maxlen=capacity)
    for v in values:
        ring.append(v)
        model.append(v)

    assert ring.values() == list(model)
    assert ring.values(last=last) == list(model)[len(model) - min(last, len(model)):]
    assert ring.latest() == (model[-1] if model else None)


@pytest.mark.parametrize(
    ("history_s", "interval_s", "capacity"),
    [(900, 1, 900), (900, 0.25, 3600), (900, 30, 30), (10, 3, 4), (1, 10, 2), (60, 0, 6000)],
)
def test_capacity_for_holds_the_history_window(history_s, interval_s, capacity):
    assert capacity_for(history_s, interval_s) == capacity


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.lists(st.one_of(st.none(), st.floats(0, 1e13), st.integers(0, 10**12))), st.integers(0, 8))
def test_rate_ring_is_a_bounded_deque_within_a_quarter_per_mille(capacity, values, last):
    ring, model = RateRing(capacity), deque(maxlen=capacity)
    for v in values:
        ring.append(v)
        model.append(v)

    def close(got, want):
        return got is None if want is None else abs(got - want) <= 2.5e-4 * (1 + want)

    assert len(ring.values()) == len(model)
    assert all(close(g, w) for g, w in zip(ring.values(), model))
    tail = list(model)[len(model) - min(last, len(model)):]
    assert all(close(g, w) for g, w in zip(ring.values(last=last), tail)) and len(ring.values(last=last)) == len(tail)
    assert close(ring.latest(), model[-1] if model else None)


def test_rate_ring_keeps_zero_exact_and_what_it_cannot_hold_as_unknown_or_ceiling():
    ring = RateRing(6)
    for v in (0, 0.0, -1.0, math.nan, 1e30, None):
        ring.append(v)

    got = ring.values()
    assert got[:2] == [0.0, 0.0] and got[2] is None and got[3] is None and got[5] is None
    assert 1.4e13 < got[4] < 1.5e13  # the ceiling, not an overflow
    assert ring.capacity == 6 and ring._buf.itemsize == 2  # half a float32 ring


# --- tables (many series appended together) ---------------------------------------------------


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.integers(1, 7), st.lists(st.tuples(st.one_of(st.none(), st.integers(-1000, 1000)), st.integers(0, 9))),
       st.integers(0, 10), st.integers(0, 12))
def test_float_table_columns_behave_like_bounded_deques(capacity, rows, last, born_at):
    # series "a" from the start; "b" joins after ``born_at`` rows, as a new interface does
    table, a, b = FloatTable(capacity, ("a",)), deque(maxlen=capacity), deque(maxlen=capacity)
    for k, (v, w) in enumerate(rows):
        if k < born_at:
            table.append(("a",), array("f", [math.nan if v is None else v]))
            a.append(v)
        else:
            table.append(("a", "b"), array("f", [math.nan if v is None else v, w]))
            a.append(v)
            b.append(float(w))
    for name, model in (("a", a), ("b", b)):
        assert table.column(name) == list(model)
        assert table.column(name, last) == list(model)[len(model) - min(last, len(model)):]
        assert table.view(name).latest() == (model[-1] if model else None)


def test_rate_table_columns_across_the_wrap():
    table = RateTable(5, ("x", "y"))
    for k in range(13):  # wraps twice, ends mid-buffer
        table.append(("x", "y"), array("H", [k, 100 + k]))
    assert len(table.column("x")) == 5 and table.column("x", 3) == table.column("x")[-3:]
    assert table.column("y", 1) == table.column("y")[-1:] and table.column("y", 0) == []


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 10**6)),
                                              st.one_of(st.none(), st.integers(0, 10**6)))), st.integers(0, 8))
def test_peak_sum_is_the_largest_known_sum_of_the_last_samples(capacity, rows, last):
    history, model = NodeHistory(capacity, ("rx", "tx", "other")), deque(maxlen=capacity)
    for rx, tx in rows:
        history.append([rx, tx, 7.0])
        model.append((rx, tx))
    tail = list(model)[len(model) - min(last, len(model)):]
    sums = [(rx or 0) + (tx or 0) for rx, tx in tail if rx is not None or tx is not None]
    assert history.peak_sum("rx", "tx", last) == (max(sums) if sums else None)


def test_reading_the_newest_values_reads_only_those():
    # the grid reads the last 12 values of every node's history every tick: with 15 minutes
    # (or a day) of history, that must cost 12 values, not the whole ring
    import tracemalloc

    history = NodeHistory(86_400, ("rx", "tx"))
    for k in range(86_400 + 100):
        history.append([float(k), 1.0])
    column = history["rx"]
    tracemalloc.start()
    try:
        assert column.values(12) == [float(k) for k in range(86_400 + 88, 86_400 + 100)]
        assert history.peak_sum("rx", "tx", 12) == 86_400 + 100
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16_384  # a full read of the column alone would take megabytes


# --- units -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "—"),
        (math.nan, "—"),
        (0, "0 b/s"),
        (0.5, "0.5 b/s"),
        (999, "999 b/s"),
        (1_000, "1 kb/s"),
        (1_500, "1.5 kb/s"),
        (12.5e6, "12.5 Mb/s"),
        (1.25e9, "1.25 Gb/s"),
        (250e9, "250 Gb/s"),
        (3e12, "3 Tb/s"),
    ],
)
def test_si_auto_scales(value, text):
    assert units.si(value, "b/s") == text


def test_si_pads_to_a_fixed_width():
    assert units.si(1.25e9, "b/s", width=11) == "  1.25 Gb/s"
    assert units.si(None, "b/s", width=4) == "   —"


def test_bits_per_s_takes_bytes_and_shows_bits():
    assert units.bits_per_s(125_000_000) == "1 Gb/s"  # 125 MB/s is a gigabit
    assert units.bits_per_s(125_000_000, as_bytes=True) == "125 MB/s"
    assert units.bits_per_s(3_125_000_000) == "25 Gb/s"
    assert units.bits_per_s(None) == "—"
    assert units.bits_per_s(None, width=6) == "     —"


@pytest.mark.parametrize(
    ("value", "text"), [(None, "—"), (0, "0"), (0.3, "0.3"), (3.5, "3.5"), (42, "42"), (950, "950")]
)
def test_per_s(value, text):
    assert units.per_s(value) == text


def test_per_s_scales_large_event_rates():
    assert units.per_s(12_345).replace(" ", "") == "12.3k"
    assert units.per_s(2_500_000).replace(" ", "") == "2.5M"
    assert units.per_s(None, width=5) == "    —"


@pytest.mark.parametrize(
    ("ratio", "text"),
    [(None, "—"), (0, "0%"), (0.0004, "0.040%"), (0.005, "0.50%"), (0.02, "2.00%"), (0.25, "25.00%"),
     (1.0, "100.00%")],
)
def test_ratio_percent(ratio, text):
    assert units.ratio_percent(ratio) == text


def test_percent_and_speed():
    assert units.percent(95.4) == "95%"
    assert units.percent(12.345, digits=1) == "12.3%"
    assert units.percent(None) == "—"
    assert units.speed(25_000) == "25G"
    assert units.speed(100) == "100M"
    assert units.speed(2_500) == "2500M"
    assert units.speed(None) == "—"


def _si_as_before(value, unit=""):
    """units.si as it was written first (each bound computed at each call): the reference."""
    if value is None or not -math.inf < value < math.inf:
        return units.UNKNOWN
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor * 0.9995:
            scaled = value / factor
            text = f"{scaled:.3g}" if scaled < 99.95 else f"{scaled:.0f}"
            return f"{text} {prefix}{unit}".rstrip()
    return (f"{value:.3g} {unit}" if value else f"0 {unit}").rstrip()


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**16), 10**16).map(float),
                 st.sampled_from([999.5, 999.4999, 999.5e3, 999.49e6, 999.5e9, 999.5e12, 0.0, -999.5])),
       st.sampled_from(["", "b/s", "B/s"]))
def test_si_words_every_value_as_before(value, unit):
    assert units.si(value, unit) == _si_as_before(value, unit)


def _per_s_as_before(value):
    if value is None:
        return units.UNKNOWN
    if value == 0:
        return "0"
    if value < 10:
        return f"{value:.1f}"
    return _si_as_before(value)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 2000),
                 st.sampled_from([9.99, 9.95, 10.0, 99.95, 999.4999, 999.5, 999.5000001, 1e3, -3.0])))
def test_per_s_words_every_rate_as_before(value):
    assert units.per_s(value) == _per_s_as_before(value)
