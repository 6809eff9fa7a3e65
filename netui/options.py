"""Numbers on the command line, checked once for every command.

Every numeric option goes through one of these argparse types: a number that is not finite
(``inf``, ``nan``), out of range, or not a number at all is a usage error that says which
bounds hold — never an endless wait (``--interval inf``) nor an OverflowError from deep in a
timer (``--scrape-timeout 1e300``). The upper bounds are far above any sensible value; they
keep a typo from turning into a timer the event loop cannot hold or a history ring of
gigabytes.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

MAX_SECONDS = 86_400.0  # a day: no interval, timeout or duration netui takes is longer
MAX_COUNT = 1_000_000_000
MAX_NODES_DEFAULT = 10_000  # nodes watched unless --max-nodes says more
MAX_NODES = 100_000  # --max-nodes at most: more is taken for a typo in a range


def number(*, low: float = 0.0, high: float = MAX_SECONDS, low_inclusive: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite float in (low, high] (or [low, high] with ``low_inclusive``)."""
    bounds = f"must be {'at least' if low_inclusive else 'greater than'} {low:g} and at most {high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number: {bounds}")
        if value < low or (value == low and not low_inclusive) or value > high:
            raise argparse.ArgumentTypeError(f"{text}: {bounds}")
        return value

    parse.__name__ = "number"  # argparse names the type in some messages
    return parse


def whole(*, low: int = 1, high: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse type: an int in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text}: must be at least {low:,} and at most {high:,}")
        return value

    parse.__name__ = "whole"
    return parse


positive_float = number()  # seconds and factors: (0, a day]
positive_int = whole()
percent = number(low=0.0, high=100.0, low_inclusive=True)
port = whole(low=1, high=65535)
max_nodes = whole(low=1, high=MAX_NODES)
