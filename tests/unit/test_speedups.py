"""netui._speedups (C) against its pure-Python twins in netui.speedups: the same results and
the same errors, on the real fixtures and on fuzzed input. Without the compiled module
(no compiler at install) only the twins are checked, and in CI (which builds it) nothing
is skipped."""

from __future__ import annotations

import math
import os
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui import speedups
from tests.testdata import VENDORED, data_path

try:
    from netui import _speedups as compiled
except ImportError:  # pragma: no cover - CI builds it
    compiled = None

# as root (CI) the module must have been built: the test command installs a compiler
needs_c = pytest.mark.skipif(compiled is None and os.geteuid() != 0, reason="netui._speedups was not built")


def outcome(fn, *args):
    """(result, None) or (None, the exception's type and message)."""
    try:
        return fn(*args), None
    except (ValueError, TypeError, OverflowError) as exc:
        return None, (type(exc).__name__, str(exc))


def same_parse(*args):
    c = outcome(compiled.parse_rows, *args)
    py = outcome(speedups.py_parse_rows, *args)
    assert c == py, args
    return c


# --- behaviour of the contract (whichever implementation netui uses) ----------------------------


def test_parse_rows_reads_labelled_rows_of_numbers():
    labels, width, raw = speedups.parse_rows("cpu0 1 2 3\ncpu12 4 5 6\n", " ", 2, -1)
    assert (tuple(speedups.u64s(labels)), width, tuple(speedups.u64s(raw))) == ((0, 12), 3, (1, 2, 3, 4, 5, 6))
    names, width, raw = speedups.parse_rows("  eth0: 7 8\n lo:9 10\n\n", ":", 1, 2)
    assert (names, width, tuple(speedups.u64s(raw))) == (["eth0", "lo"], 2, (7, 8, 9, 10))
    _, width, raw = speedups.parse_rows("00000010 ffffffff\n", " ", 0, -1, 16)
    assert tuple(speedups.u64s(raw)) == (16, 0xFFFFFFFF)


@pytest.mark.parametrize("text, sep, mode, width, base", [
    ("1 2\n3\n", " ", 0, -1, 10),  # a short row
    ("1 -2\n", " ", 0, -1, 10),  # a sign
    ("1 2x\n", " ", 0, -1, 10),
    ("18446744073709551616\n", " ", 0, -1, 10),  # 2**64
    ("1 2 3\n", " ", 0, 2, 10),
    ("cpu 1 2\n", " ", 2, -1, 10),  # no number in the label
    ("12 1 2\n", " ", 2, -1, 10),  # no name in the label
    ("eth0 1 2\n", ":", 1, 2, 10),  # no separator
    ("é 1\n", " ", 0, -1, 10),  # not ASCII
    ("0x10\n", " ", 0, -1, 16),
])
def test_parse_rows_refuses_what_is_not_its_format(text, sep, mode, width, base):
    with pytest.raises(ValueError):
        speedups.parse_rows(text, sep, mode, width, base)


def test_the_largest_u64_is_read_and_one_more_is_refused():
    _, _, raw = speedups.parse_rows("18446744073709551615 0000000000000000000001\n", " ", 0, -1)
    assert tuple(speedups.u64s(raw)) == (2**64 - 1, 1)
    _, _, raw = speedups.parse_rows("ffffffffffffffff\n", " ", 0, -1, 16)
    assert tuple(speedups.u64s(raw)) == (2**64 - 1,)
    with pytest.raises(ValueError):
        speedups.parse_rows("10000000000000000\n", " ", 0, -1, 16)


def test_deltas_mark_a_counter_that_went_backwards_and_wrap_32_bit_counters():
    prev, cur = array("Q", [10, 20, 2**32 - 5]), array("Q", [30, 5, 3])
    values, unknown = speedups.deltas(prev, cur, 0.5, False)
    assert values.typecode == "d" and values[0] == 10.0 and math.isnan(values[1]) and unknown == 2  # 2**32-5 → 3: backwards in 64 bits
    values, unknown = speedups.deltas(prev, cur, 1.0, True)
    assert tuple(values) == (20.0, float((5 - 20) % 2**32), 8.0) and unknown == 0
    values, _ = speedups.deltas(array("I", [2**32 - 1]), array("I", [1]), 1.0, True)
    assert tuple(values) == (2.0,)
    with pytest.raises(TypeError):
        speedups.deltas(array("I", [1]), array("I", [2]), 1.0, False)  # 64-bit counters need u64
    with pytest.raises(ValueError):
        speedups.deltas(array("Q", [1]), array("Q", [1, 2]), 1.0, False)


def test_deltas_above_their_ceiling_are_unknown_as_a_reset_is():
    prev, cur = array("Q", [0, 0, 5, 0]), array("Q", [10, 100, 1, 2**64 - 1])
    values, unknown = speedups.deltas(prev, cur, 1.0, False, 50.0)  # one ceiling for all
    assert values[0] == 10.0 and all(math.isnan(v) for v in values[1:]) and unknown == 3
    values, unknown = speedups.deltas(prev, cur, 1.0, False, array("d", [50.0, 1e30]))  # one a row of 2
    assert values[0] == 10.0 and math.isnan(values[1])
    assert math.isnan(values[2]) and values[3] == float(2**64 - 1) and unknown == 2
    values, unknown = speedups.deltas(array("Q", [0]), array("Q", [2**64 - 1]), 1e300, False, 1e12)
    assert math.isnan(values[0]) and unknown == 1  # 1.8e319 is infinity: above any ceiling
    values, unknown = speedups.deltas(array("I", [4]), array("I", [3]), 1.0, True, 100.0)  # a 32-bit reset
    assert math.isnan(values[0]) and unknown == 1
    with pytest.raises(ValueError):
        speedups.deltas(prev, cur, 1.0, False, array("d", [1.0, 2.0, 3.0]))  # 3 rows of 4/3
    with pytest.raises(TypeError):
        speedups.deltas(prev, cur, 1.0, False, array("Q", [1, 2]))


def test_share_is_unknown_unless_the_part_moved_within_the_whole():
    values, unknown = speedups.share(array("Q", [0, 0, 5, 0]), array("Q", [10, 30, 1, 0]),
                                     array("Q", [0, 0, 0, 7]), array("Q", [100, 20, 100, 7]), 100.0)
    assert values.typecode == "d" and values[0] == 10.0 and all(math.isnan(v) for v in values[1:]) and unknown == 3


def test_columns_and_rate_codes():
    assert tuple(speedups.u64s(speedups.columns(array("Q", [1, 2, 3, 4, 5, 6]), 3, 2))) == (1, 4, 2, 5, 3, 9)
    codes = speedups.rate_codes(array("d", [0.0, 1.0, float("nan"), -1.0]), 2, (0, 1), 1e9)
    assert codes.typecode == "H" and tuple(codes) == (0, 1500, 65535, 65535)


# --- the C module and the twins agree -------------------------------------------------------------


def fixture_texts() -> list[tuple[str, str, int, int, int]]:
    cases = []
    for path in sorted(p for name in VENDORED for p in data_path(name).rglob("*")):
        if not path.is_file() or path.stat().st_size > 200_000:
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for sep, mode, base in ((" ", 0, 10), (" ", 2, 10), (":", 1, 10), (" ", 0, 16)):
            cases.append((text, sep, mode, -1, base))
            lines = [line for line in text.splitlines() if line.strip()]
            for line in lines[:40]:
                cases.append((line, sep, mode, -1, base))
    return cases


@needs_c
def test_the_twins_agree_on_every_fixture_file_and_line():
    cases = fixture_texts()
    assert len(cases) > 500
    accepted = sum(same_parse(*case)[0] is not None for case in cases)
    assert accepted > 50  # the fixtures hold real rows each function reads


tokens = st.sampled_from(["0", "7", "42", "cpu", "cpu3", "CPU12", "eth0:", ":", " ", "  ", "\t", "\n", "\r", "-1", "+3",
                          "18446744073709551615", "18446744073709551616", "ffffffff", "0x1f", "abc", "é", "\x0b",
                          "\x1c", "00000000000000000000001", "NET_RX:", "9" * 25])
texts = st.one_of(st.text(max_size=200), st.lists(tokens, max_size=60).map("".join))


@pytest.mark.slow
@needs_c
@settings(max_examples=600, deadline=None)
@given(texts, st.sampled_from([" ", ":"]), st.integers(0, 2), st.integers(-1, 12), st.sampled_from([10, 16]))
def test_the_twins_agree_on_fuzzed_text(text, sep, mode, width, base):
    same_parse(text, sep, mode, width, base)


@pytest.mark.slow
@needs_c
@settings(max_examples=600, deadline=None)
@given(texts, st.integers(0, 2), st.sampled_from([10, 16]),
       st.sampled_from([-1, 0, 0b101, 0x1007, 1 << 63 | 1, b"", b"\x01\x00\x01", b"\x00\x01" * 40]),
       st.sampled_from([2**64 - 1, 2**32 - 1, 5, 0]), st.data())
def test_the_twins_agree_on_kept_columns_limits_and_spans(text, mode, base, keep, limit, data):
    ends = [i for i, ch in enumerate(text) if ch == "\n"] + [len(text), -1, 0]
    stop = data.draw(st.sampled_from(ends))
    start = data.draw(st.integers(-1, max(stop, len(text)) + 1))
    c = outcome(lambda: compiled.parse_rows(text, ":", mode, -1, base, keep, limit, start, stop))
    py = outcome(lambda: speedups.py_parse_rows(text, ":", mode, -1, base, keep, limit, start, stop))
    assert c == py


def test_a_column_not_kept_may_hold_any_token():
    _, width, raw = speedups.parse_rows("1 a\x00b 2\n3 zz 4", " ", 0, -1, keep=0b101)
    assert (width, tuple(speedups.u64s(raw))) == (3, (1, 2, 3, 4))
    with pytest.raises(ValueError):  # a kept one may not
        speedups.parse_rows("1 a\x00b 2\n", " ", 0, -1, keep=0b11)
    with pytest.raises(ValueError):
        speedups.parse_rows("7 70000000000\n", " ", 0, -1, limit=2**32 - 1)
    _, _, raw = speedups.parse_rows("x 1 2\n3 4\n5 6\n", " ", 0, -1, start=6, stop=9)
    assert tuple(speedups.u64s(raw)) == (3, 4)
    with pytest.raises(ValueError):  # a stop inside a line
        speedups.parse_rows("x 1 2\n3 4\n5 6\n", " ", 0, -1, start=6, stop=8)


u64 = st.integers(0, 2**64 - 1)


@pytest.mark.slow
@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(u64, u64, u64, u64), max_size=40), st.floats(1e-3, 1e3), st.booleans(),
       st.floats(0, 1e20))
def test_the_twins_agree_on_rates(rows, scale, wrap32, ceiling):
    cols = [array("Q", c) for c in zip(*rows)] if rows else [array("Q")] * 4

    def same(a, b):
        assert a[1] == b[1]
        assert type(a[0]) is type(b[0]) is array and a[0].typecode == b[0].typecode == "d"
        assert [x if x == x else "nan" for x in a[0]] == [x if x == x else "nan" for x in b[0]]

    same(compiled.deltas(cols[0], cols[1], scale, wrap32), speedups.py_deltas(cols[0], cols[1], scale, wrap32))
    same(compiled.deltas(cols[0], cols[1], scale, wrap32, ceiling),
         speedups.py_deltas(cols[0], cols[1], scale, wrap32, ceiling))
    if rows:  # a ceiling per row of two
        pair = array("Q", [v for r in rows for v in r[:2]]), array("Q", [v for r in rows for v in r[2:]])
        tops = array("d", [ceiling * (i % 3) for i in range(len(rows))])
        same(compiled.deltas(*pair, scale, wrap32, tops), speedups.py_deltas(*pair, scale, wrap32, tops))
    same(compiled.share(*cols, 100.0), speedups.py_share(*cols, 100.0))
    assert compiled.columns(array("Q", [v for r in rows for v in r]), 4, 3) == speedups.py_columns(
        array("Q", [v for r in rows for v in r]), 4, 3)


@pytest.mark.slow
@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True), st.floats(0, 1e14)), max_size=64))
def test_the_twins_agree_on_rate_codes(values):
    values = values[: len(values) // 2 * 2]
    buf = array("d", values)
    from netui.model.history import RATE_CEILING
    assert compiled.rate_codes(buf, 2, (0, 1), RATE_CEILING) == speedups.py_rate_codes(buf, 2, (0, 1), RATE_CEILING)


def _field(key: bytes, value: bytes) -> bytes:
    return key + b"\0" + len(value).to_bytes(4, "little") + value


frame_payload = st.one_of(
    st.lists(st.tuples(st.binary(min_size=1, max_size=20).filter(lambda k: b"\0" not in k), st.binary(max_size=40)),
             max_size=6).map(lambda fs: b"".join(_field(k, v) for k, v in fs)),
    st.binary(max_size=80),
)


@pytest.mark.slow
@needs_c
@settings(max_examples=500, deadline=None)
@given(frame_payload, st.integers(0, 8))
def test_the_twins_agree_on_frame_fields(payload, cut):
    for data in (payload, payload[: max(0, len(payload) - cut)], bytearray(payload)):
        c = outcome(compiled.frame_fields, data)
        py = outcome(speedups.py_frame_fields, data)
        assert c == py


def test_frame_fields_reads_what_the_sampler_writes():
    from netui.collectors.frames import encode_fields

    pairs = [("wall", b"1.5"), ("cpu", bytes(range(256)) * 3), ("if/ens\u00e9", b""), ("wall", b"2.5")]
    for fields in (speedups.frame_fields, speedups.py_frame_fields):
        assert fields(encode_fields(pairs)) == {"wall": b"2.5", "cpu": bytes(range(256)) * 3, "if/ens\u00e9": b""}
        assert fields(b"") == {}
        long_key = "k" * 1025
        assert outcome(fields, encode_fields([(long_key, b"x")]))[1] == ("ValueError", "not a field key")
        assert outcome(fields, encode_fields([("k" * 1024, b"x")]))[0] == {"k" * 1024: b"x"}
        assert outcome(fields, encode_fields(pairs)[:-1])[1] == ("ValueError", "truncated field")
        assert outcome(fields, b"wall\0\x01\0")[1] == ("ValueError", "truncated field")
        assert outcome(fields, "wall")[1][0] == "TypeError"


def test_peak_sum_reads_the_newest_rows_of_a_ring_and_skips_unknowns():
    nan = math.nan
    # a ring of 4 rows of 3 floats; rows 0..3 hold (1, 2), (NaN, 5), (7, NaN), (NaN, NaN)
    ring = array("f", [1, 2, 3, nan, 5, 6, 7, nan, 9, nan, nan, 1])
    for peak_sum in (speedups.peak_sum, speedups.py_peak_sum):
        assert peak_sum(ring, 3, 4, 4, 4, 0, 1) == 7.0  # all four rows: 3, 5, 7, none
        assert peak_sum(ring, 3, 4, 2, 9, 0, 1) == 5.0  # two appended: rows 0 and 1 only
        assert peak_sum(ring, 3, 4, 6, 3, 0, 1) == 5.0  # wrapped: rows 3, 0, 1 are the newest 3
        assert peak_sum(ring, 3, 4, 4, 1, 0, 1) is None  # the newest row knows neither
        assert peak_sum(ring, 3, 4, 0, 4, 0, 1) is None  # nothing appended
        assert peak_sum(ring, 3, 4, 4, 0, 0, 1) is None
        assert peak_sum(ring, 3, 4, 4, 4, 1, 2) == 11.0  # 5 + 6
        for bad in ((3, 4, 4, 4, 0, 3), (3, 5, 4, 4, 0, 1), (0, 4, 4, 4, 0, 0), (3, 4, -1, 4, 0, 1)):
            assert outcome(peak_sum, ring, *bad)[1] == ("ValueError", "peak_sum: not a ring of capacity x width floats")
        assert outcome(peak_sum, array("d", [1.0]), 1, 1, 1, 1, 0, 0)[1] == ("TypeError", "expected a buffer of floats")


@pytest.mark.slow
@needs_c
@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(0, 20), st.integers(-1, 8), st.data())
def test_the_twins_agree_on_peak_sum(width, capacity, count, last, data):
    values = data.draw(st.lists(st.one_of(st.just(math.nan), st.floats(-1e9, 1e9, width=32)),
                                min_size=width * capacity, max_size=width * capacity))
    i, j = data.draw(st.integers(0, width - 1)), data.draw(st.integers(0, width - 1))
    ring = array("f", values)
    assert outcome(compiled.peak_sum, ring, width, capacity, count, last, i, j) == \
        outcome(speedups.py_peak_sum, ring, width, capacity, count, last, i, j)


def _mesh_row(family: int, raw: bytes, port: int, answered: int, lost: int, rtts: list[int], listed=None) -> bytes:
    import struct

    n = len(rtts) if listed is None else listed
    return struct.pack("<B3x16sHHHH", family, raw, port, answered, lost, n) + struct.pack(f"<{len(rtts)}I", *rtts)


class _Reading(tuple):
    pass


_A, _B = bytes([198, 18, 0, 2]) + bytes(12), bytes([198, 18, 0, 3]) + bytes(12)
_TEXTS = {b"\x02" + _A: "198.18.0.2", b"\x02" + _B: "198.18.0.3"}


def test_mesh_rows_reads_the_rows_a_sampler_packs():
    value = b"head" + _mesh_row(2, _A, 5000, 3, 1, [120, 95, 130]) + _mesh_row(2, _B, 5001, 0, 2, [])
    for mesh_rows in (speedups.mesh_rows, speedups.py_mesh_rows):
        got = mesh_rows(value, 4, 2, 64, _TEXTS, _Reading)
        assert got == (("198.18.0.2", 5000, 3, 1, (120, 95, 130)), ("198.18.0.3", 5001, 0, 2, ()))
        assert type(got) is tuple and all(type(r) is _Reading for r in got)
        assert mesh_rows(b"head", 4, 0, 64, {}, _Reading) == ()
        assert mesh_rows(value, 4, 2, 64, {b"\x02" + _A: "a"}, _Reading) is None  # an address to put in texts
        assert outcome(mesh_rows, value, 4, 3, 64, {}, _Reading)[1] is None  # (None: the first row's address)
        assert outcome(mesh_rows, value, 4, 3, 64, _TEXTS, _Reading)[1] == ("ValueError", "mesh: cut inside a peer's row")
        assert outcome(mesh_rows, value, 4, 1, 64, _TEXTS, _Reading)[1] == ("ValueError", "mesh: 28 bytes after its last row")
        assert outcome(mesh_rows, value, 4, 2, 2, _TEXTS, _Reading)[1] == ("ValueError", "mesh: 3 RTTs listed for 3 answers")
        assert outcome(mesh_rows, value[:-29], 4, 1, 64, _TEXTS, _Reading)[1] == \
            ("ValueError", "mesh: 3 RTTs listed for 3 answers")  # cut inside its RTTs
        assert outcome(mesh_rows, _mesh_row(2, _A, 1, 1, 0, [7, 8]), 0, 1, 64, _TEXTS, _Reading)[1] == \
            ("ValueError", "mesh: 2 RTTs listed for 1 answers")
        assert outcome(mesh_rows, value, -1, 2, 64, _TEXTS, _Reading)[1] == \
            ("ValueError", "mesh_rows: negative start or rows")
        assert outcome(mesh_rows, value, 4, 2, 64, [], _Reading)[1] == ("TypeError", "mesh_rows: texts must be a dict")
        assert outcome(mesh_rows, value, 4, 2, 64, _TEXTS, list)[1] == \
            ("TypeError", "mesh_rows: reading must be a subclass of tuple")
        assert outcome(mesh_rows, "text", 0, 0, 64, _TEXTS, _Reading)[1][0] == "TypeError"


mesh_rows_of = st.lists(st.tuples(st.sampled_from([2, 10, 7]), st.sampled_from([_A, _B]), st.integers(0, 65535),
                                  st.integers(0, 70), st.integers(0, 3), st.lists(st.integers(0, 2**32 - 1), max_size=70),
                                  st.one_of(st.none(), st.integers(0, 70))), max_size=5)


@pytest.mark.slow
@needs_c
@settings(max_examples=500, deadline=None)
@given(mesh_rows_of, st.integers(-2, 2), st.integers(0, 40), st.integers(0, 3), st.booleans())
def test_the_twins_agree_on_mesh_rows(rows, extra_rows, cut, start, known):
    value = bytes(start) + b"".join(_mesh_row(*r) for r in rows)
    texts = {b"\x02" + _A: "a", b"\x02" + _B: "b", b"\x0a" + _A: "c"}
    if not known:
        texts.pop(b"\x02" + _B)
    for data in (value, value[: max(0, len(value) - cut)], bytearray(value)):
        n = max(0, len(rows) + extra_rows)
        c = outcome(compiled.mesh_rows, data, start, n, 64, texts, _Reading)
        py = outcome(speedups.py_mesh_rows, data, start, n, 64, texts, _Reading)
        assert c == py
        assert c[0] is None or [type(r) for r in c[0]] == [_Reading] * n


def _pair_tables(draw, n: int, leaves: int) -> dict:
    """PairIndex's tables (model/mesh_index.py) for ``n`` nodes of ``leaves`` leaves, any counts."""
    small = st.integers(0, 25)
    return {
        "probes": [draw(st.lists(small, min_size=n, max_size=n)) for _ in range(n)],
        "alive": draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        "node_probes": draw(st.sampled_from([list, lambda v: array("q", v)]))(  # (as PairIndex keeps it: 'q')
            draw(st.lists(small, min_size=n, max_size=n))),
        "sums_of": [draw(st.lists(small, min_size=4, max_size=4)) for _ in range(n)],
        "leaf_rows": [[[draw(small), 0] for _ in range(leaves + 1)] for _ in range(leaves + 1)],
        "leaf_ix": draw(st.lists(st.integers(-1, leaves - 1), min_size=n, max_size=n)),
    }


@pytest.mark.slow
@needs_c
@settings(max_examples=400, deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.sampled_from([1, -1]), st.data())
def test_the_twins_agree_on_pool_entries(n, leaves, sign, data):
    import copy

    tables = _pair_tables(data.draw, n, leaves)
    a = data.draw(st.integers(0, n - 1))
    entries = array("I", [x for _ in range(data.draw(st.integers(0, 6)))
                          for x in (data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, 3)),
                                    data.draw(st.sampled_from([0, 0, 0, 1])))])
    at = data.draw(st.sampled_from([0, 3, 6, 1, len(entries) + 3]))
    got = []
    for pool in (compiled.pool_entries, speedups.py_pool_entries):
        t = copy.deepcopy(tables)
        got.append((outcome(pool, entries, at, sign, a, t["probes"], t["alive"], t["node_probes"], t["sums_of"],
                            t["leaf_rows"][t["leaf_ix"][a]], t["leaf_ix"]), t))
    assert got[0] == got[1]


@pytest.mark.slow
@needs_c
@settings(max_examples=400, deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.data())
def test_the_twins_agree_on_pool_readings(n, leaves, data):
    import copy

    tables = _pair_tables(data.draw, n, leaves)
    a = data.draw(st.integers(0, n - 1))
    rtts = st.one_of(st.tuples(), st.tuples(st.integers(0, 2**32 - 1)), st.tuples(st.integers(0, 999), st.integers(0, 999)),
                     st.just((1.5,)), st.just((2**70,)))
    reading = st.one_of(st.tuples(st.just("10.0.0.1"), st.integers(0, 65535), st.integers(0, 30),
                                  st.sampled_from([0, 0, 0, 1]), rtts),
                        st.just(("x", 1, 1, 0)), st.just(("x", 1, 1.0, 0, ())))
    readings = data.draw(st.lists(reading, max_size=6))
    ids = {f"n{b}": b for b in range(n)} | {"x": "not a number"}
    targets = [data.draw(st.sampled_from([*ids, "", "gone"])) for _ in readings]
    heard = bytearray(data.draw(st.lists(st.sampled_from([255, 255, 0, 3]), min_size=n, max_size=n)))
    kept = {b: [] for b in data.draw(st.lists(st.integers(0, n - 1), max_size=2))}
    at = data.draw(st.sampled_from([0, 0, 1, -1]))
    highest = data.draw(st.integers(0, 500))
    got = []
    for pool in (compiled.pool_readings, speedups.py_pool_readings):
        t, added = copy.deepcopy(tables), [7]
        got.append((outcome(pool, readings, targets, ids, at, a, heard, t["probes"], t["node_probes"], t["sums_of"],
                            t["leaf_rows"][t["leaf_ix"][a]], t["leaf_ix"], kept, 20, highest, added), t, added))
    assert got[0] == got[1]


def test_pool_readings_stops_at_what_its_caller_takes():
    """The common reading settled in C; a lost probe, a target never answered or of no number,
    a kept pair, one reaching MIN_PROBES: left to the caller, in order."""
    IDS = {"n0": 0, "n1": 1, "n2": 2}
    for pool in (speedups.pool_readings, speedups.py_pool_readings):
        probes, node_probes, sums_of = [[0, 0, 0], [0, 0, 0], [0, 0, 19]], [0, 0, 0], [[0] * 4 for _ in range(3)]
        leaf_row, leaf_ix = [[0, 0], [0, 0]], [0, 0, 0]
        r = ("10.0.0.1", 7000, 1, 0, (150,))
        args = (probes, node_probes, sums_of, leaf_row, leaf_ix)
        added: list[int] = []
        heard = bytearray([255, 255, 255])
        assert pool([r, r], ["n1", "n0"], IDS, 0, 0, heard, *args, {}, 20, 100, added) == (2, 1, 1, 150)  # (itself: passed by)
        assert (probes[0], node_probes, sums_of[0], sums_of[1], leaf_row, added) == \
            ([0, 1, 0], [0, 1, 0], [0, 0, 1, 0], [0, 1, 1, 0], [[1, 0], [0, 0]], [1, 1, 0])
        lost = ("10.0.0.1", 7000, 0, 1, ())
        assert pool([r, lost, r], ["n1", "n1", "n1"], IDS, 0, 0, heard, *args, {}, 20, 0, []) == (1, 1, 0, 150)
        assert pool([r], [""], IDS, 0, 0, heard, *args, {}, 20, 0, [])[0] == 0
        assert pool([r], ["n1"], IDS, 0, 0, bytearray([255, 3, 255]), *args, {}, 20, 0, [])[0] == 0
        assert pool([r], ["n1"], IDS, 0, 0, heard, *args, {1: []}, 20, 0, [])[0] == 0
        assert pool([r], ["n1"], IDS, 0, 0, heard, *args, {}, 3, 0, [])[0] == 0  # (3 probes: MIN_PROBES of 3)
        assert pool([r], ["n2"], IDS, 0, 2, heard, *args, {}, 20, 0, [])[0] == 1


@pytest.mark.slow
@needs_c
@settings(max_examples=500, deadline=None)
@given(mesh_rows_of, st.integers(-2, 2), st.integers(0, 40), st.integers(0, 3))
def test_the_twins_agree_on_mesh_check_and_mesh_targets(rows, extra_rows, cut, start):
    value = bytes(start) + b"".join(_mesh_row(*r) for r in rows)
    at_port: list = [None] * 65536
    for i, (f, raw, port, *_) in enumerate(rows):
        if f in (2, 10) and i % 2 == 0:  # (every other peer known; some of a number that is not one)
            at_port[port] = (*(at_port[port] or ()), speedups.endpoint_key(f, raw), i - 1 if i % 4 else "x")
    if rows and isinstance(at_port[rows[-1][2]], tuple):  # (a port of many: a dict)
        peers = at_port[rows[-1][2]]
        at_port[rows[-1][2]] = dict(zip(peers[::2], peers[1::2]))
    for data in (value, value[: max(0, len(value) - cut)], bytearray(value)):
        n = max(0, len(rows) + extra_rows)
        assert outcome(compiled.mesh_check, data, start, n, 64) == outcome(speedups.py_mesh_check, data, start, n, 64)
        c = outcome(compiled.mesh_targets, data, start, n, at_port)
        assert c == outcome(speedups.py_mesh_targets, data, start, n, at_port)
        if outcome(compiled.mesh_check, data, start, n, 64)[1] is None:  # (checked rows: every one placed)
            assert c[0] is not None and len(c[0][0]) == 2 * n


def test_mesh_targets_numbers_each_rows_peer_by_its_address_and_port():
    mapped_b = bytes(10) + b"\xff\xff" + _B[:4]
    value = b"head" + _mesh_row(2, _A, 5000, 3, 1, [120, 95, 130]) + _mesh_row(10, mapped_b, 5001, 0, 2, []) \
        + _mesh_row(2, _A, 5001, 1, 0, [9])
    a, b = speedups.endpoint_key(2, _A), speedups.endpoint_key(2, _B)
    assert a == b"\x04" + bytes(12) + _A[:4] and b == speedups.endpoint_key(10, mapped_b)
    assert speedups.endpoint_key(10, _A) == b"\x06" + _A
    at_port: list = [None] * 65536
    at_port[5000], at_port[5001] = (a, 4), (b"\x06" + _A, 9, b, -1)
    for mesh_targets in (speedups.mesh_targets, speedups.py_mesh_targets):
        places, missing = mesh_targets(value, 4, 3, at_port)
        assert list(places) == [4, 4, -1, 4 + 40, -2, 4 + 68] and missing == [(2, 5001, a)]
        assert mesh_targets(value, 4, 0, at_port)[1] is None
        assert outcome(mesh_targets, value, 4, 3, {})[1] == ("TypeError", "mesh_targets: at_port must be a list of 65536")
        many = list(at_port)
        many[5000], many[5001] = {a: 4, b: 7}, {b"\x06" + _A: 9, b: -1}
        assert list(mesh_targets(value, 4, 3, many)[0]) == [4, 4, -1, 4 + 40, -2, 4 + 68]
        # a number that is not one of the window's (beyond a long, past int32, a bool): not known
        for odd in (2**70, -2**70, 2**31, -2, True):
            for table in ((a, odd), {a: odd}):
                bad = list(at_port)
                bad[5000] = table
                places, missing = mesh_targets(value, 4, 3, bad)
                assert list(places)[:2] == [-2, 4] and missing[0] == (0, 5000, a)


def test_pool_rows_takes_what_pool_readings_takes():
    """The same rows, packed: settled as pool_readings settles them, stopping where it stops."""
    r, lost = _mesh_row(2, _A, 7000, 1, 0, [150]), _mesh_row(2, _A, 7000, 0, 1, [])
    for pool_rows in (speedups.pool_rows, speedups.py_pool_rows):
        probes, node_probes, sums_of = [[0, 0, 0], [0, 0, 0], [0, 0, 19]], [0, 0, 0], [[0] * 4 for _ in range(3)]
        leaf_row, leaf_ix = [[0, 0], [0, 0]], [0, 0, 0]
        args = (probes, node_probes, sums_of, leaf_row, leaf_ix)
        heard = bytearray([255, 255, 255])
        places = array("i", [1, 0, 0, 28, -1, 0])  # n1, itself, no node there
        assert pool_rows(r * 3, places, 0, 0, heard, *args, {}, 20, 100) == (3, 1, 1, 150, array("I", [1, 1, 0]).tobytes())
        assert (probes[0], node_probes, sums_of[0], sums_of[1], leaf_row) == \
            ([0, 1, 0], [0, 1, 0], [0, 0, 1, 0], [0, 1, 1, 0], [[1, 0], [0, 0]])
        assert pool_rows(r + lost + r, array("i", [1, 0, 1, 28, 1, 56]), 0, 0, heard, *args, {}, 20, 0)[:4] == (1, 1, 0, 150)
        assert pool_rows(r, array("i", [-2, 0]), 0, 0, heard, *args, {}, 20, 0)[0] == 0  # (not numbered yet)
        assert pool_rows(r, array("i", [1, 0]), 0, 0, bytearray([255, 3, 255]), *args, {}, 20, 0)[0] == 0
        assert pool_rows(r, array("i", [1, 0]), 0, 0, heard, *args, {1: []}, 20, 0)[0] == 0
        assert pool_rows(r, array("i", [1, 0]), 0, 0, heard, *args, {}, 3, 0)[0] == 0  # (3 probes: MIN_PROBES of 3)
        assert pool_rows(r, array("i", [1, 9]), 0, 0, heard, *args, {}, 20, 0)[0] == 0  # (not a whole row there)
        assert outcome(pool_rows, r, array("I", [1, 0]), 0, 0, heard, *args, {}, 20, 0)[1] == \
            ("TypeError", "pool_rows: places must be an array of 'i'")


@pytest.mark.slow
@needs_c
@settings(max_examples=400, deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.data())
def test_the_twins_agree_on_pool_rows(n, leaves, data):
    import copy

    tables = _pair_tables(data.draw, n, leaves)
    a = data.draw(st.integers(0, n - 1))
    rows = data.draw(st.lists(st.tuples(st.integers(0, 30), st.sampled_from([0, 0, 0, 1]),
                                        st.lists(st.integers(0, 2**32 - 1), max_size=2)), max_size=6))
    value = b"".join(_mesh_row(2, _A, 7000, max(answered, len(rtts)), lost, rtts) for answered, lost, rtts in rows)
    places, off = array("i"), 0
    for answered, lost, rtts in rows:
        places += array("i", [data.draw(st.sampled_from([*range(n), -1, -2, n + 3])),
                               data.draw(st.sampled_from([off, off, off, 5]))])
        off += 28 + 4 * len(rtts)
    heard = bytearray(data.draw(st.lists(st.sampled_from([255, 255, 0, 3]), min_size=n, max_size=n)))
    kept = {b: [] for b in data.draw(st.lists(st.integers(0, n - 1), max_size=2))}
    at, highest = data.draw(st.sampled_from([0, 0, 1, -1])), data.draw(st.integers(0, 500))
    got = []
    for pool in (compiled.pool_rows, speedups.py_pool_rows):
        t = copy.deepcopy(tables)
        got.append((outcome(pool, value, places, at, a, heard, t["probes"], t["node_probes"], t["sums_of"],
                            t["leaf_rows"][t["leaf_ix"][a]], t["leaf_ix"], kept, 20, highest), t))
    assert got[0] == got[1]


def test_put_frame_ages_a_probers_frames_and_puts_its_rows_in():
    """A frame of ``since`` or before leaves (its pairs out of every pooled figure), the new
    frame's common rows go in as pool_rows puts them; it stops at a frame that lost a probe (-1)
    and at a row pool_rows leaves (its index)."""
    from collections import deque

    r, lost = _mesh_row(2, _A, 7000, 1, 0, [150]), _mesh_row(2, _A, 7000, 0, 1, [])
    for put_frame in (speedups.put_frame, speedups.py_put_frame):
        probes, alive, node_probes = [[0, 1, 0], [0, 0, 0], [0, 0, 0]], [True] * 3, [1, 1, 0]
        sums_of, sums, tops = [[0, 1, 1, 0], [0, 1, 1, 0], [0] * 4], [1, 0], {0: [150, 1]}
        leaf_row, leaf_ix = [[1, 0], [0, 0]], [0, 0, 0]
        frames = deque([[1.0, array("I", [1, 1, 0]), 150]])
        heard = bytearray([255, 255, 255])
        args = (probes, alive, node_probes, sums_of, sums, tops, leaf_row, leaf_ix, 20)
        # second 1 leaves (the pair (0, 1) with it), second 61 puts a probe of node 2 in
        assert put_frame(frames, 1.0, 61.0, r * 2, array("i", [2, 0, 0, 28]), 0, heard, *args) == (2, 0)
        assert probes[0] == [0, 0, 1] and node_probes == [1, 0, 1] and sums == [1, 0] and tops == {}
        assert sums_of == [[0, 1, 1, 0], [0, 0, 0, 0], [0, 1, 1, 0]] and leaf_row == [[1, 0], [0, 0]]
        assert [(f[0], list(f[1]), f[2]) for f in frames] == [(61.0, [2, 1, 0], 150)]
        # a frame at the same time joins it; a lost probe is the caller's (row 1)
        assert put_frame(frames, 1.0, 61.0, r + lost, array("i", [1, 0, 1, 28]), 0, heard, *args) == (1, 1)
        assert [(f[0], list(f[1]), f[2]) for f in frames] == [(61.0, [2, 1, 0, 1, 1, 0], 150)]
        frames[0][1][5] = 1  # (as if it lost one: ageing it is the caller's, nothing done)
        assert put_frame(frames, 61.0, 62.0, r, array("i", [1, 0]), 0, heard, *args) == (-1, 0)
        assert len(frames) == 1 and probes[0] == [0, 1, 1]
        assert outcome(put_frame, frames, 0.0, 62.0, r, array("I", [1, 0]), 0, heard, *args)[1] == \
            ("TypeError", "put_frame: places must be an array of 'i'")


@pytest.mark.slow
@needs_c
@settings(max_examples=500, deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.data())
def test_the_twins_agree_on_put_frame(n, leaves, data):
    import copy
    from collections import deque

    tables = _pair_tables(data.draw, n, leaves)
    a = data.draw(st.integers(0, n - 1))
    entry = st.tuples(st.sampled_from([*range(n), *range(n), n]), st.integers(0, 3), st.sampled_from([0, 0, 0, 0, 1]))
    frames = deque([m, array("I", [x for e in data.draw(st.lists(entry, max_size=4)) for x in e]),
                    data.draw(st.sampled_from([0, 0, 150, 300]))]
                   for m in sorted(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2, 3.5, 5.0]), max_size=4))))
    since = data.draw(st.sampled_from([-1.0, 0.0, 1, 2.0, 4.0, 6.0]))
    mono_s = data.draw(st.sampled_from([*(f[0] for f in frames), 7.0]))
    rows = data.draw(st.lists(st.tuples(st.integers(0, 30), st.sampled_from([0, 0, 0, 1]),
                                        st.lists(st.integers(0, 2**32 - 1), max_size=2)), max_size=6))
    value = b"".join(_mesh_row(2, _A, 7000, max(answered, len(rtts)), lost, rtts) for answered, lost, rtts in rows)
    places, off = array("i"), 0
    for answered, lost, rtts in rows:
        places += array("i", [data.draw(st.sampled_from([*range(n), -1, -2, n + 3])),
                               data.draw(st.sampled_from([off, off, off, 5]))])
        off += 28 + 4 * len(rtts)
    heard = bytearray(data.draw(st.lists(st.sampled_from([255, 255, 0, 3]), min_size=n, max_size=n)))
    tops = data.draw(st.sampled_from([{}, {a: [150, 1]}, {a: [300, 2]}, {a: [2**40, 1]}]))
    sums = [data.draw(st.integers(0, 25)), 0]
    got = []
    for put in (compiled.put_frame, speedups.py_put_frame):
        t, f, tp, s = copy.deepcopy(tables), copy.deepcopy(frames), copy.deepcopy(tops), list(sums)
        try:
            result = put(f, since, mono_s, value, places, a, heard, t["probes"], t["alive"], t["node_probes"],
                         t["sums_of"], s, tp, t["leaf_rows"][t["leaf_ix"][a]], t["leaf_ix"], 20), None
        except (ValueError, TypeError, IndexError) as exc:  # (a number out of its table: the same error and state)
            result = None, (type(exc).__name__, str(exc))
        got.append((result, t, [(x[0], list(x[1]), x[2]) for x in f], tp, s))
    assert got[0] == got[1]
