"""Small renderables shared by the screens: text sparklines and level colours."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.style import Style

from netui.model.health import Level

BARS = "▁▂▃▄▅▆▇█"


def spark(values: Sequence[float | None], width: int, *, top: float | None = None) -> str:
    """A one-line sparkline of the last ``width`` values, scaled to ``top`` (values above it
    are clipped) or, without one, to their own maximum.

    Unknown values are blanks, and so is anything that is not a finite number (NaN, an
    infinity: the model never makes one, and a sparkline must not be what fails when it
    does); an all-zero series is a flat floor line.
    """
    tail = list(values)[-width:]
    if top is None or not top < math.inf:  # (NaN too)
        top = max((v for v in tail if v is not None and -math.inf < v < math.inf), default=0.0)
    out = []
    for v in tail:
        if v is None or not -math.inf < v < math.inf:
            out.append(" ")
        elif top <= 0:
            out.append(BARS[0])
        else:
            out.append(BARS[max(0, min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5)))])
    return "".join(out).rjust(width)


def spark_sum(a: Sequence[float | None], b: Sequence[float | None], width: int, *, top: float | None = None) -> str:
    """``spark`` of the pairwise sums of ``a`` and ``b`` (an unknown value counting as 0
    beside a known one; both unknown: a blank), the same text: in one pass, as the grid's
    trend column draws RX + TX on every row painted."""
    if top is None or not 0 < top < math.inf:  # (NaN too) its own scale, or a floor line
        return spark([None if x is None and y is None else (x or 0) + (y or 0) for x, y in zip(a, b)],
                     width, top=top)
    inf = math.inf
    out = []
    for x, y in zip(a, b):
        if x is None:
            if y is None:
                out.append(" ")
                continue
            v = 0 + y
        else:
            v = x + (y or 0)
        if not -inf < v < inf:
            out.append(" ")
        elif v >= top:
            out.append(BARS[7])
        else:  # (as spark rounds: 0 <= index <= 7 here)
            out.append(BARS[int(v / top * 7 + 0.5)] if v > 0 else BARS[0])
    return "".join(out[-width:]).rjust(width)


# Theme variable carrying each level's colour.
LEVEL_VARIABLES = {
    Level.OK: "success",
    Level.CAREFUL: "accent",
    Level.WARNING: "warning",
    Level.CRITICAL: "error",
}


def level_styles(theme_variables: dict[str, str]) -> dict[Level, Style]:
    """Rich styles for the health levels, from the app theme's variables."""
    styles = {}
    for level, var in LEVEL_VARIABLES.items():
        color = theme_variables.get(var)
        styles[level] = Style(color=color, bold=level >= Level.WARNING) if color else Style()
    return styles
