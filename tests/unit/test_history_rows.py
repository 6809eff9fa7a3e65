"""A node's two history rows a sample are written straight into their tables (in C where
built: ``float_row``, ``rate_row``), nothing made apart. What the tables then hold, and so
what every chart and sparkline reads, must be what the rule they replace wrote: the node's
series packed as struct's native float32s, the interfaces' RX and TX coded by
``rate_codes`` and appended as a row."""

from __future__ import annotations

import math
import struct
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui import speedups
from netui.model.history import RATE_CEILING, FloatTable, IfaceHistory, NodeHistory, RateTable
from tests.unit.test_speedups import compiled, needs_c, outcome

NAN = float("nan")

_VALUE = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.floats(0, 1e14), st.integers(0, 10**15))


def _rule_float_row(buf: array, row: int, values) -> None:
    """How FloatTable wrote a row before: struct.pack_into, unknowns as NaN."""
    width = len(values)
    struct.Struct(f"{width}f").pack_into(buf, row * width * buf.itemsize,
                                          *[NAN if v is None else v for v in values])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5), st.lists(st.lists(_VALUE, min_size=3, max_size=3), max_size=12))
def test_a_node_series_row_is_the_float32s_struct_packed(capacity, rows):
    table, rule = FloatTable(capacity, ("a", "b", "c")), array("f", bytes(4 * capacity * 3))
    for k, values in enumerate(rows):
        table.append_floats(("a", "b", "c"), tuple(values), float(k))
        _rule_float_row(rule, k % capacity, values)
    assert table._buf.tobytes() == rule.tobytes()  # noqa: SLF001 (NaN included, bit for bit)
    history = NodeHistory(capacity, ("a", "b", "c"))
    for k, values in enumerate(rows):
        history.append(list(values), float(k))  # (a list, as some callers give)
    assert history.table._buf.tobytes() == rule.tobytes()  # noqa: SLF001


_LAYOUTS = st.sampled_from([("eth0",), ("eth0", "ib0"), ("ib0", "eth0", "lo"), ()])
_RATE = st.one_of(st.just(NAN), st.floats(-1.0, 1e14), st.floats(1e13, 1e15), st.just(0.0))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5), st.lists(st.tuples(_LAYOUTS, st.data()), max_size=14))
def test_an_interface_row_is_its_rate_codes_appended(capacity, samples):
    coded, rule = IfaceHistory(capacity), IfaceHistory(capacity)
    for k, (names, data) in enumerate(samples):
        flat = array("d", data.draw(st.lists(_RATE, min_size=16 * len(names), max_size=16 * len(names))))
        coded.append_rates(names, flat, 16, (0, 8), float(k))
        rule.append(names, speedups.py_rate_codes(flat, 16, (0, 8), RATE_CEILING), float(k))
        assert list(coded) == list(rule)
        for name in names:
            for mine, theirs in zip(coded[name], rule[name]):
                assert mine.values() == theirs.values()
                assert [t if t == t else None for t in mine.times()] == [t if t == t else None for t in theirs.times()]


def test_a_row_of_another_width_is_refused_and_nothing_written():
    table = RateTable(3, ("x/rx", "x/tx"))
    with pytest.raises(ValueError):
        table.append_rates(("x/rx", "x/tx"), array("d", [1.0] * 32), 16, (0, 8))
    with pytest.raises(ValueError):
        FloatTable(3, ("a", "b")).append_floats(("a", "b"), (1.0, 2.0, 3.0))
    assert table._buf.tolist() == [0] * 6  # noqa: SLF001


def _state(table) -> tuple:
    return (table.times(), [table.view(n).values() for n in table.names], table._buf.tobytes())  # noqa: SLF001


@pytest.mark.parametrize("kind", ["codes", "rates", "floats", "floats of no number"])
def test_a_refused_row_leaves_the_table_as_it_was(kind):
    """A row refused (the boundary then shows that node's internal error) neither advances the
    table's time nor count, nor resizes it: the next row is the second, after the first."""
    names = ("a", "b")
    if kind == "floats" or kind == "floats of no number":
        table = FloatTable(3, names)
        good = lambda t: table.append_floats(names, (1.0, 2.0), t)  # noqa: E731
        bad = (lambda: table.append_floats(names, (1.0, 2.0, 3.0), 9.0)) if kind == "floats" else \
            (lambda: table.append_floats(names, (1.0, "x"), 9.0))
    else:
        table = RateTable(3, names)
        good = lambda t: table.append(names, array("H", [3, 4]), t)  # noqa: E731
        bad = (lambda: table.append(names, array("H", [3, 4, 5]), 9.0)) if kind == "codes" else \
            (lambda: table.append_rates(names, array("d", [1.0] * 48), 16, (0, 8), 9.0))
    good(1.0)
    before = _state(table)
    with pytest.raises((ValueError, TypeError)):
        bad()
    assert _state(table) == before and len(table._buf) == 3 * 2  # noqa: SLF001
    good(2.0)
    assert table.times() == [1.0, 2.0]


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.integers(-2, 8), st.lists(st.one_of(_VALUE, st.text(max_size=2)), max_size=6), st.integers(0, 10))
def test_the_twins_agree_on_float_row(at, values, size):
    values = tuple(values)
    c, py = array("f", [1.0] * size), array("f", [1.0] * size)
    assert outcome(compiled.float_row, c, at, values) == outcome(speedups.py_float_row, py, at, values)
    assert c.tobytes() == py.tobytes()


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.integers(-2, 8), st.integers(0, 8), st.lists(_RATE, max_size=12), st.sampled_from([1, 2, 3]),
       st.sampled_from([(0,), (0, 1), (1, 0), (2,), ()]), st.integers(0, 12))
def test_the_twins_agree_on_rate_row(at, width, values, stride, offsets, size):
    flat = array("d", values)
    c, py = array("H", [7] * size), array("H", [7] * size)
    assert outcome(compiled.rate_row, c, at, width, flat, stride, offsets, RATE_CEILING) == \
        outcome(speedups.py_rate_row, py, at, width, flat, stride, offsets, RATE_CEILING)
    assert c == py


def test_a_value_past_float32_is_infinite_as_struct_wrote_it():
    table = FloatTable(2, ("a",))
    table.append_floats(("a",), (1e300,))
    assert table.column("a") == [math.inf]
