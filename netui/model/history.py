"""Bounded history: fixed-size rings of float32 (NaN for unknown), and 16-bit log-scale
rings for the many per-interface rate series of a big fleet."""

from __future__ import annotations

import math
from array import array

NAN = float("nan")


class Ring:
    """The last ``capacity`` values of one series (float32; None is stored as NaN).

    Memory is ``4 * capacity`` bytes whatever happens, so 15 minutes of history for a
    thousand nodes stays bounded. Subclasses store values another way by giving
    ``_typecode``, ``_encode`` and ``_decode``.
    """

    __slots__ = ("_buf", "_start", "_len")
    _typecode = "f"

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._buf = array(self._typecode, bytes(array(self._typecode).itemsize * capacity))
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

    def append(self, value: float | None) -> None:
        cap = len(self._buf)
        v = self._encode(value)
        if self._len < cap:
            self._buf[(self._start + self._len) % cap] = v
            self._len += 1
        else:
            self._buf[self._start] = v
            self._start = (self._start + 1) % cap

    def values(self, last: int | None = None) -> list[float | None]:
        """Oldest first; unknown comes back as None. ``last`` keeps only the newest values."""
        n = self._len if last is None else min(last, self._len)
        cap = len(self._buf)
        first = (self._start + self._len - n) % cap
        if first + n <= cap:
            raw = self._buf[first : first + n].tolist()
        else:
            raw = self._buf[first:].tolist() + self._buf[: (first + n) - cap].tolist()
        return self._decode(raw)

    def latest(self) -> float | None:
        if not self._len:
            return None
        return self._decode([self._buf[(self._start + self._len - 1) % len(self._buf)]])[0]


# RateRing codes: round(log2(1 + v) * _STEPS); 65535 is "unknown"
_STEPS = 1500
_CODE_MAX = 65534
_UNKNOWN = 65535
_CEILING = 2.0 ** (_CODE_MAX / _STEPS) - 1  # ~1.4e13: 113 Tbit/s in bytes/s
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
