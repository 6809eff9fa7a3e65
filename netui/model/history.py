"""Bounded history: rings of float32 (NaN for unknown), and 16-bit log-scale rings for the
many per-interface rate series of a big fleet. Each row keeps the time it was taken at
(seconds, float64; NaN when not given), so a chart places points by their real time, and a
ring can be resized (``resize``) keeping its newest rows when the interval changes."""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from operator import add

from netui.speedups import float_row, peak_sum, rate_row

NAN = float("nan")


class Ring:
    """The last ``capacity`` values of one series (float32; None is stored as NaN).

    Memory is ``4 * capacity`` bytes whatever happens, so 15 minutes of history for a
    thousand nodes stays bounded. Subclasses store values another way by giving
    ``_typecode``, ``_encode`` and ``_decode``.
    """

    __slots__ = ("_buf", "_t", "_start", "_len")
    _typecode = "f"

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._buf = array(self._typecode, bytes(array(self._typecode).itemsize * capacity))
        self._t = array("d", [NAN]) * capacity
        self._start = 0
        self._len = 0

    @staticmethod
    def _encode(value: float | None) -> float:
        return NAN if value is None else value

    @staticmethod
    def _decode(raw: list) -> list[float | None]:
        return [None if math.isnan(v) else v for v in raw]

    @property
    def capacity(self) -> int:
        return len(self._buf)

    def __len__(self) -> int:
        return self._len

    def append(self, value: float | None, t: float = NAN) -> None:
        """One value, taken at time ``t`` (seconds; NaN: unknown)."""
        cap = len(self._buf)
        v = self._encode(value)
        if self._len < cap:
            at = (self._start + self._len) % cap
            self._len += 1
        else:
            at = self._start
            self._start = (self._start + 1) % cap
        self._buf[at] = v
        self._t[at] = t

    def _newest(self, buf: array, last: int | None) -> list:
        n = self._len if last is None else max(0, min(last, self._len))
        cap = len(self._buf)
        first = (self._start + self._len - n) % cap
        if first + n <= cap:
            return buf[first : first + n].tolist()
        return buf[first:].tolist() + buf[: (first + n) - cap].tolist()

    def values(self, last: int | None = None) -> list[float | None]:
        """Oldest first; unknown comes back as None. ``last`` keeps only the newest values."""
        return self._decode(self._newest(self._buf, last))

    def times(self, last: int | None = None) -> list[float]:
        """The times of ``values(last)``, oldest first (NaN where none was given)."""
        return self._newest(self._t, last)

    def oldest_t(self) -> float:
        """The time of the oldest value kept (NaN: none, or unknown)."""
        return self._t[self._start] if self._len else NAN

    def resize(self, capacity: int) -> None:
        """Hold ``capacity`` values from now on, keeping the newest of those held."""
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        n = min(self._len, capacity)
        raw, times = self._newest(self._buf, n), self._newest(self._t, n)
        self._buf = array(self._typecode, bytes(array(self._typecode).itemsize * capacity))
        self._buf[:n] = array(self._typecode, raw)
        self._t = array("d", [NAN]) * capacity
        self._t[:n] = array("d", times)
        self._start, self._len = 0, n

    def latest(self) -> float | None:
        if not self._len:
            return None
        return self._decode([self._buf[(self._start + self._len - 1) % len(self._buf)]])[0]


# RateRing codes: round(log2(1 + v) * _STEPS); 65535 is "unknown"
_STEPS = 1500
_CODE_MAX = 65534
_UNKNOWN = 65535
_CEILING = 2.0 ** (_CODE_MAX / _STEPS) - 1  # ~1.4e13: 113 Tbit/s in bytes/s
RATE_CEILING = _CEILING
_DECODE: list[float | None] | None = None


def _decode_table() -> list[float | None]:
    global _DECODE
    if _DECODE is None:
        _DECODE = [2.0 ** (c / _STEPS) - 1.0 for c in range(_CODE_MAX + 1)] + [None]
        _DECODE[0] = 0.0
    return _DECODE


class RateRing(Ring):
    """A Ring of non-negative rates in 2 bytes a value instead of 4.

    Values are kept on a log scale, ``log2(1 + v)`` in 1,500 steps per doubling: a value
    ``v`` from 0 to ~1.4e13 comes back within 0.025 % of ``1 + v`` (0 exactly), larger
    values as that ceiling. That is far finer than a sparkline or a plot can show, and it
    halves the memory of the per-interface history that dominates a 1,024-node fleet's
    footprint. Negative values and NaN are stored as unknown.
    """

    __slots__ = ()
    _typecode = "H"

    @staticmethod
    def _encode(value: float | None) -> int:
        if value is None or not value >= 0:  # None, NaN, negative
            return _UNKNOWN
        if value >= _CEILING:
            return _CODE_MAX
        return round(math.log2(1.0 + value) * _STEPS)

    @staticmethod
    def _decode(raw: list) -> list[float | None]:
        table = _decode_table()
        return [table[c] for c in raw]


def capacity_for(history_s: float, interval_s: float) -> int:
    """Ring size holding ``history_s`` seconds at one sample per ``interval_s``."""
    return max(2, math.ceil(history_s / max(interval_s, 0.01)))


def rows_after(times: list[float], t0: float) -> int:
    """How many of the newest ``times`` (oldest first) are after ``t0``; a time that is
    unknown (NaN) counts as after."""
    n = 0
    for t in reversed(times):
        if t <= t0:
            break
        n += 1
    return n


class RateColumn:
    """One series of a RateTable (or FloatTable), read like a Ring (``values``, ``latest``,
    ``len``)."""

    __slots__ = ("_table", "_name")

    def __init__(self, table: RateTable, name: str) -> None:
        self._table = table
        self._name = name

    @property
    def capacity(self) -> int:
        return self._table.capacity

    def __len__(self) -> int:
        return self._table.length(self._name)

    def values(self, last: int | None = None) -> list[float | None]:
        return self._table.column(self._name, last)

    def times(self, last: int | None = None) -> list[float]:
        """The times of ``values(last)``, oldest first (NaN where none was given)."""
        length = len(self)
        return self._table.times(length if last is None else min(last, length))

    def latest(self) -> float | None:
        values = self.values(1)
        return values[0] if values else None


class RateTable:
    """RateRings of many series that are appended together, in one buffer: a row of 16-bit
    codes per append (see RateRing), so a node's per-interface history costs one write a
    sample instead of one per series.

    A series added later is as long as the appends since it came; a series that is gone is
    dropped. Columns are read with ``column`` or through ``RateColumn`` views.
    """

    __slots__ = ("capacity", "names", "_col", "_buf", "_t", "_count", "_born")
    _typecode = "H"

    @staticmethod
    def _decode(raw: list) -> list[float | None]:
        table = _decode_table()
        return [table[c] for c in raw]

    def __init__(self, capacity: int, names: tuple[str, ...] = ()) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        self._count = 0  # rows appended, ever (since the last resize)
        self._born: dict[str, int] = {}
        self._t = array("d", [NAN]) * capacity  # each physical row's time
        self._set_names(names, None)

    def _set_names(self, names: tuple[str, ...], old: RateTable | None) -> None:
        """Lay the buffer out for ``names``, keeping the rows of the series that stay."""
        cap, width = self.capacity, len(names)
        item = array(self._typecode).itemsize
        buf = array(self._typecode, bytes(item * cap * width)) if width else array(self._typecode)
        if old is not None and width and old.names:
            for j, name in enumerate(names):
                k = old._col.get(name)
                if k is not None:
                    buf[j::width] = old._buf[k :: len(old.names)]
        self._born = {n: (old._born.get(n, self._count) if old is not None else self._count) for n in names}
        self.names = names
        self._col = {n: j for j, n in enumerate(names)}
        self._buf = buf

    def append(self, names: tuple[str, ...], codes: array, t: float = NAN) -> None:
        """Append one row, taken at time ``t`` (seconds; NaN: unknown): ``codes[j]``
        (RateRing codes, array 'H') is the new value of ``names[j]``. Series not in
        ``names`` are dropped, new ones start here."""
        if names is not self.names and names != self.names:  # (the same tuple, sample after sample)
            self._set_names(names, self)
        row = self._count % self.capacity
        width = len(names)
        if width:
            if len(codes) != width:  # (a slice given more or fewer would resize the whole table)
                raise ValueError(f"{len(codes)} codes for {width} series")
            self._buf[row * width : (row + 1) * width] = codes
        self._t[row] = t  # (a row refused above leaves the table as it was)
        self._count += 1

    def append_rates(self, names: tuple[str, ...], values: array, stride: int, offsets: tuple[int, ...],
                     t: float = NAN) -> None:
        """``append`` of the codes of ``values[r * stride + o]`` (bytes/s, say; array 'd', NaN
        unknown) for every row r and every o in ``offsets``, row after row, as the new values
        of ``names``: written into the table in C, no codes made apart."""
        if names is not self.names and names != self.names:
            self._set_names(names, self)
        row = self._count % self.capacity
        width = len(names)
        if width:  # (ValueError unless they are ``width`` codes: the table as it was)
            rate_row(self._buf, row * width, width, values, stride, offsets, _CEILING)
        self._t[row] = t
        self._count += 1

    def _newest(self, buf: array, width: int, n: int) -> array:
        """The newest ``n`` rows of ``buf`` (``width`` items a row), oldest first."""
        cap = self.capacity
        end = (self._count % cap) or cap  # the physical row after the newest
        start = end - n
        if start >= 0:
            return buf[start * width : end * width]
        return buf[(cap + start) * width :] + buf[: end * width]

    def times(self, last: int | None = None) -> list[float]:
        """The times of the newest ``last`` rows (all rows held), oldest first."""
        rows = min(self._count, self.capacity)
        n = rows if last is None else max(0, min(last, rows))
        return self._newest(self._t, 1, n).tolist() if n else []

    def oldest_t(self) -> float:
        """The time of the oldest row held (NaN: none, or unknown)."""
        rows = min(self._count, self.capacity)
        return self._t[(self._count - rows) % self.capacity] if rows else NAN

    def resize(self, capacity: int) -> None:
        """Hold ``capacity`` rows from now on, keeping the newest of those held (a series
        keeps as many of its own as it had, at most ``capacity``)."""
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        width = len(self.names)
        n = min(self._count, self.capacity, capacity)
        lengths = {name: self.length(name) for name in self.names}
        buf = array(self._typecode, bytes(array(self._typecode).itemsize * capacity * width))
        times = array("d", [NAN]) * capacity
        if n:
            if width:
                buf[: n * width] = self._newest(self._buf, width, n)
            times[:n] = self._newest(self._t, 1, n)
        self.capacity, self._buf, self._t, self._count = capacity, buf, times, n
        self._born = {name: n - min(n, length) for name, length in lengths.items()}

    def length(self, name: str) -> int:
        born = self._born.get(name)
        return 0 if born is None else min(self.capacity, self._count - born)

    def column(self, name: str, last: int | None = None) -> list[float | None]:
        """The series' values, oldest first (``last``: only the newest ones).

        Reads only the rows returned: the last 12 values of 15 minutes of history cost
        12 reads, not 900 (the grid's sparklines read every node's, every tick)."""
        length = self.length(name)
        n = length if last is None else min(last, length)
        if n <= 0:
            return []
        width, cap, j, buf = len(self.names), self.capacity, self._col[name], self._buf
        end = (self._count % cap) or cap  # the physical row after the newest (n > 0: one was appended)
        start = end - n  # the oldest row wanted; negative: it wraps to the end of the buffer
        if start >= 0:
            raw = buf[start * width + j : end * width : width].tolist()
        else:
            raw = buf[(cap + start) * width + j :: width].tolist() + buf[j : end * width : width].tolist()
        return self._decode(raw)

    def view(self, name: str) -> RateColumn:
        return RateColumn(self, name)


class FloatTable(RateTable):
    """A RateTable of float32 values (NaN for unknown), for series that may be negative."""

    __slots__ = ()
    _typecode = "f"

    def append_floats(self, names: tuple[str, ...], values: Sequence[float | None], t: float = NAN) -> None:
        """``append`` of the row ``values`` (None: unknown), packed into the buffer in place
        (a node's own series, every sample: no array made for them)."""
        if names is not self.names and names != self.names:
            self._set_names(names, self)
        count = self._count
        row = count % self.capacity
        width = len(names)
        if width:  # (a row refused here, ValueError or TypeError: the table as it was)
            if type(values) is not tuple or len(values) != width:
                values = _floats_row(values, width)
            float_row(self._buf, row * width, values)  # (in C: nothing made)
        self._t[row] = t
        self._count = count + 1

    @staticmethod
    def _decode(raw: list) -> list[float | None]:
        return [None if math.isnan(v) else v for v in raw]


def _floats_row(values: Sequence[float | None], width: int) -> tuple:
    """``values`` as the tuple of ``width`` that ``float_row`` writes (ValueError: a row of
    another length)."""
    values = tuple(values)
    if len(values) != width:
        raise ValueError(f"{len(values)} values for {width} series")
    return values


class NodeHistory(Mapping):
    """A node's own series (grid sparklines, node charts): a mapping of name → RateColumn
    over one FloatTable, appended with one row a sample."""

    __slots__ = ("table", "names")

    def __init__(self, capacity: int, names: tuple[str, ...]) -> None:
        self.table = FloatTable(capacity, names)
        self.names = names

    def append(self, values: Sequence[float | None], t: float = NAN) -> None:
        """One sample taken at ``t`` (seconds): ``values[j]`` of ``names[j]`` (None unknown)."""
        self.table.append_floats(self.names, values, t)

    def __getitem__(self, name: str) -> RateColumn:
        if name not in self.names:
            raise KeyError(name)
        return self.table.view(name)

    def peak_sum(self, a: str, b: str, last: int) -> float | None:
        """The largest ``a + b`` in one of the last ``last`` samples (RX + TX, say), an
        unknown value counting as 0 beside a known one; None when no value is known.

        In C where built (the grid asks it of every node, every tick)."""
        table = self.table
        return peak_sum(table._buf, len(self.names), table.capacity, table._count, last,  # noqa: SLF001
                        self.names.index(a), self.names.index(b))

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


class IfaceHistory(Mapping):
    """Per interface, its (RX, TX) history of bytes/s: a mapping of name → (RateColumn,
    RateColumn) over one RateTable (series ``name/rx`` and ``name/tx``)."""

    __slots__ = ("table", "_names", "_series")

    def __init__(self, capacity: int) -> None:
        self.table = RateTable(capacity)
        self._names: tuple[str, ...] = ()
        self._series: tuple[str, ...] = ()

    def append(self, names: tuple[str, ...], codes: array, t: float = NAN) -> None:
        """One sample taken at ``t`` (seconds): ``codes`` holds RX then TX codes of each of ``names``."""
        if names is not self._names and names != self._names:  # (a steady node's layout: its very tuple)
            self._names = names
            self._series = tuple(f"{n}/{d}" for n in names for d in ("rx", "tx"))
        self.table.append(self._series, codes, t)

    def append_rates(self, names: tuple[str, ...], values: array, stride: int, offsets: tuple[int, int],
                     t: float = NAN) -> None:
        """``append`` of the RX and TX bytes/s of each of ``names`` read from rows of ``values``
        (array 'd', NaN unknown; row i is ``names[i]``'s, ``stride`` numbers long, RX and TX at
        ``offsets``), coded straight into the table (``RateTable.append_rates``)."""
        if names is not self._names and names != self._names:
            self._names = names
            self._series = tuple(f"{n}/{d}" for n in names for d in ("rx", "tx"))
        self.table.append_rates(self._series, values, stride, offsets, t)

    def __getitem__(self, name: str) -> tuple[RateColumn, RateColumn]:
        if name not in self._names:
            raise KeyError(name)
        return self.table.view(f"{name}/rx"), self.table.view(f"{name}/tx")

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
