"""Bounded history: fixed-size rings of float32, NaN for unknown."""

from __future__ import annotations

import math
from array import array

NAN = float("nan")


class Ring:
    """The last ``capacity`` values of one series (float32; None is stored as NaN).

    Memory is ``4 * capacity`` bytes whatever happens, so 15 minutes of history for a
    thousand nodes stays bounded.
    """

    __slots__ = ("_buf", "_start", "_len")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._buf = array("f", bytes(4 * capacity))
        self._start = 0
        self._len = 0

    @property
    def capacity(self) -> int:
        return len(self._buf)

    def __len__(self) -> int:
        return self._len

    def append(self, value: float | None) -> None:
        cap = len(self._buf)
        v = NAN if value is None else value
        if self._len < cap:
            self._buf[(self._start + self._len) % cap] = v
            self._len += 1
        else:
            self._buf[self._start] = v
            self._start = (self._start + 1) % cap

    def values(self, last: int | None = None) -> list[float | None]:
        """Oldest first; NaN comes back as None. ``last`` keeps only the newest values."""
        n = self._len if last is None else min(last, self._len)
        cap = len(self._buf)
        first = (self._start + self._len - n) % cap
        if first + n <= cap:
            raw = self._buf[first : first + n].tolist()
        else:
            raw = self._buf[first:].tolist() + self._buf[: (first + n) - cap].tolist()
        return [None if math.isnan(v) else v for v in raw]

    def latest(self) -> float | None:
        if not self._len:
            return None
        v = self._buf[(self._start + self._len - 1) % len(self._buf)]
        return None if math.isnan(v) else v


def capacity_for(history_s: float, interval_s: float) -> int:
    """Ring size holding ``history_s`` seconds at one sample per ``interval_s``."""
    return max(2, math.ceil(history_s / max(interval_s, 0.01)))
