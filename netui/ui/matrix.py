"""A node × node table, shared by the matrix screens (pair test, latency test, probe mesh), and
the colour scale their cells are drawn on: from the theme (error → warning → success)."""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.color import Color

SCALE_VARIABLES = ("error", "warning", "success")  # low → high


def scale_colors(theme_variables: dict[str, str]) -> list[Color]:
    return [Color.parse(theme_variables.get(v) or "grey") for v in SCALE_VARIABLES]


def scale_color(colors: list[Color], share: float) -> Color:
    """The colour at ``share`` (0..1) of the way along the scale."""
    share = max(0.0, min(1.0, share))
    if share <= 0.5:
        return colors[0].blend(colors[1], share * 2)
    return colors[1].blend(colors[2], (share - 0.5) * 2)


def matrix_table(nodes: list[str], corner: str, min_width: int, cell: Callable[[str, str], Text],
                 muted: Style, sections: dict[str, str] | None = None, diagonal: str = "·") -> Table:
    """A node × node table: a row per sender, a column per receiver, ``diagonal`` on the
    diagonal and ``cell(sender, receiver)`` elsewhere. ``sections``: a row naming the leaf ("── leaf1")
    before each node it names (checks/pairs/report.py ``by_switch``). Shared by the pair test's
    heatmap, the latency map (checks/) and the probe mesh's (ui/mesh.py)."""
    table = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False)
    table.add_column(Text(corner, style=muted), no_wrap=True)
    # with leaves: a thin rule before each leaf's columns but the first, a row naming each leaf
    rule = {n for n in (sections or {}) if n != nodes[0]} if nodes else set()
    for node in nodes:
        if node in rule:
            table.add_column(Text("│", style=muted), no_wrap=True, width=1, min_width=1)
        table.add_column(node, justify="right", no_wrap=True, min_width=min_width)

    def cells(fill: Callable[[str], Text], edge: Text) -> list[Text]:
        out: list[Text] = []
        for b in nodes:
            if b in rule:
                out.append(edge)
            out.append(fill(b))
        return out

    bar = Text("│", style=muted)
    for a in nodes:
        if sections and a in sections:
            table.add_row(Text(f"── {sections[a] or 'unplaced'}", style=muted + Style(italic=True)),
                          *cells(lambda b: Text(""), Text("┼", style=muted)))
        table.add_row(Text(a, style="bold"), *cells(lambda b: Text(diagonal, style=muted) if a == b else cell(a, b), bar))
    return table
