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
