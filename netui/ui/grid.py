"""The cluster grid: the fleet as a virtual table that paints only the rows on screen.

A tick costs a filter, a sort, the trend column's scale (the newest values of every shown
node's history: ``NodeHistory.peak_sum``) and a ``refresh()``; cells are formatted when a row
is painted, once per node per tick. While the display is paused the screen shows it the
frame it was paused on (``Fleet.frozen``), so that scrolling, sorting and filtering show the
values of that moment. Line 0 is the header and does not scroll; line ``y`` below it shows
row ``scroll_y + y - 1``.

Grouped by leaf switch (``grouping``, with a topology): a row per leaf in tree order — its
nodes summed, their worst level, its uplink's traffic bounds (model/leafload.py) — with its
nodes below it in the grid's sort ("leaves"), or the leaf rows alone ("collapsed").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from netui.model.fleet import Fleet
from netui.model.health import Level
from netui.model.leafload import LeafLoad, leaf_loads, with_suspects
from netui.model.node import Node, NodeState
from netui.ui.columns import (LEVELLED, METRIC, NAME, PLAIN, SORT_LABELS, WHY, WHY_WIDE, Column, GridOptions,
                              cell_kind, fit_columns, fleet_has_fabric, fleet_has_mesh, leaf_text, natural_ranks,
                              sorted_nodes, trend_top)
from netui.ui.render import level_styles


class FormattedRow(NamedTuple):
    """A node's row as painted this tick."""

    texts: list[str]  # per column, padded to its width plus the blank that separates columns
    runs: list[tuple[str, Style | None]]  # adjacent cells of the same level style, joined
    cell_length: int


class FleetGrid(ScrollView, can_focus=True):
    """One row per node, sorted and filtered; a row cursor that follows the node it is on."""

    DEFAULT_CSS = """
    FleetGrid {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        & > .fleet-grid--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .fleet-grid--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .fleet-grid--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .fleet-grid--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
    }
    """
    COMPONENT_CLASSES = {"fleet-grid--header", "fleet-grid--cursor"}
    BINDINGS = [
        # j/k and G as in k9s, htop and less; g stays the screen's (group by leaf switch)
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
        # Enter and space are the screen's (cluster.py), so that the footer shows them in order
    ]

    MARK = "● "  # before the name of a marked node (pair tests: t, T, r, R)
    GROUPINGS = ("", "leaves", "collapsed")  # flat; leaf rows with their nodes; leaf rows alone
    STALE_STYLE = Style(dim=True)
    SORTED = {"node": "▲"}  # after the label of the column the rows are sorted by (default ▼)

    class NodeChosen(Message):
        """The user opened a node (Enter, or a click on the highlighted row)."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    class MarksChanged(Message):
        """The user marked or unmarked nodes (space, mark all, clear)."""

        def __init__(self, marked: frozenset[str]) -> None:
            super().__init__()
            self.marked = marked

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sort = "worst"
        self.filter = ""
        self.options = GridOptions()
        self.width_cells = 80  # set by the screen: its width less the scrollbar
        self.frozen = False  # set while the display is paused: the countdowns stand still
        self.marked: set[str] = set()  # nodes marked with space, for pair tests
        self.retry_in_s: Mapping[str, float] = {}  # set by the screen: node → seconds to its next try
        self.fabric = False  # a node of the fleet has RDMA or ethtool data: the fabric columns show
        self.mesh = False  # the fleet has a probe mesh verdict: the Loss column shows
        self.grouping = ""  # set by the screen: "" flat, "leaves" or "collapsed" (needs a topology)
        self.leaves: list[LeafLoad] = []  # this tick's leaf rows, when grouped
        self._lines: list[Node | LeafLoad] = []  # the rows shown: the nodes, or leaves and nodes
        self._placed_by: object = None  # the topology ``_placed`` was found in
        self._placed: dict[str, str] = {}  # node → its leaf ("" unplaced), when grouped
        self._columns: tuple[Column, ...] = ()
        self._widths: tuple[int, ...] = ()
        self._cells_plan: list[tuple] = []  # per column: how its cell is made (_plan_cells)
        self._shown: list[Node] = []
        self._cursor = 0
        self._followed: str | None = None  # the node the user put the cursor on
        self._name_ranks: dict[str, int] = {}  # each node's place by name (natural order), for the sort
        self._level_styles: dict[Level, Style] = {}
        self._formatted: dict[str, FormattedRow] = {}  # this tick's rows painted so far, by node
        # styles of the paint in progress, resolved once per render_lines
        self._base = Style()
        self._header_style = Style()
        self._row_styles: dict[Style | None, Style] = {}
        self._cursor_styles: dict[Style | None, Style] = {}
        self._paint_width = 0
        self._paint_top = 0

    # what tests and the screen read ----------------------------------------------------------
    @property
    def columns(self) -> tuple[Column, ...]:
        """The columns shown, in display order."""
        return self._columns

    @property
    def row_count(self) -> int:
        return len(self._shown)

    @property
    def shown_nodes(self) -> list[Node]:
        """The nodes shown this tick (filtered), in display order."""
        return self._shown

    @property
    def selected(self) -> str | None:
        """The name of the node under the cursor, or None when no row is shown (or the cursor
        is on a leaf row)."""
        line = self._lines[self._cursor] if self._lines else None
        return line.name if isinstance(line, Node) else None

    @property
    def selected_leaf(self) -> LeafLoad | None:
        """The leaf row under the cursor, when grouped."""
        line = self._lines[self._cursor] if self._lines else None
        return line if isinstance(line, LeafLoad) else None

    def rows_text(self) -> list[list[str]]:
        """The plain text of every cell, row by row in display order (leaf rows too, when
        grouped), stripped of padding."""
        return [[text.strip() for text in self._row(n).texts] for n in self._lines]

    def visible_nodes(self, fleet: Fleet) -> list[Node]:
        """The nodes that pass the filter (substring of name or state), in the grid's sort."""
        needle = self.filter.lower()
        nodes = [n for n in fleet if needle in n.name.lower() or needle in n.state.value] if needle else list(fleet)
        try:
            return sorted_nodes(nodes, self.sort, self._name_ranks)
        except KeyError:  # a name not ranked yet (the first tick, another fleet): rank them all again
            self._name_ranks = natural_ranks(n.name for n in fleet)
            return sorted_nodes(nodes, self.sort, self._name_ranks)

    # one tick -----------------------------------------------------------------------------
    def show(self, fleet: Fleet) -> None:
        """Take the fleet as it is now: filter, sort, place the cursor, repaint what is on screen."""
        self.fabric = fleet_has_fabric(fleet)
        self.mesh = fleet_has_mesh(fleet)
        self._columns = fit_columns(self.width_cells, fabric=self.fabric, mesh=self.mesh)
        self._widths = tuple(self._column_width(c, self._columns) for c in self._columns)
        self._plan_cells()
        self._level_styles = level_styles(self.app.theme_variables)
        cursor_was_in_view = self._in_view(self._cursor)
        self._shown = self.visible_nodes(fleet)
        if self.grouping and fleet.topology is not None:
            self._lines = self._grouped(fleet)
        else:
            self._lines, self.leaves = self._shown, []
        # the trend column's scale reads every shown node's recent history: only when it shows
        top = trend_top(self._shown) if any(c.key == "trend" for c in self._columns) else None
        why = [w for c, w in zip(self._columns, self._widths) if c.key == "health"]
        self.options = replace(self.options, trend_top=top, retry_in_s=self.retry_in_s,
                               why_wide=bool(why) and why[0] >= WHY_WIDE, why_cells=why[0] if why else 0)
        self._formatted = {}
        # the cursor stays on the row the user chose; until then (or while it is filtered out), on top
        followed = self._followed
        if followed is None:  # no row chosen yet: nothing to look for
            self._cursor = 0
        elif self._lines is self._shown:  # flat: names only (a tick at 1,024 nodes walks them all)
            self._cursor = next((i for i, n in enumerate(self._shown) if n.name == followed), 0)
        else:
            self._cursor = next((i for i, n in enumerate(self._lines) if _key(n) == followed), 0)
        self.virtual_size = Size(sum(w + 1 for w in self._widths), len(self._lines) + 1)
        if cursor_was_in_view:  # a user who scrolled away with the wheel is not pulled back
            self._scroll_to_cursor()
        self.refresh()

    def _grouped(self, fleet: Fleet) -> list[Node | LeafLoad]:
        """Leaf rows in tree order (the unplaced nodes last), each over all its watched nodes —
        the uplink carries their traffic whatever the filter shows — and, unless collapsed, the
        nodes the filter lets through below it in the grid's sort. A leaf none of whose nodes
        the filter lets through is left out."""
        assert fleet.topology is not None
        if self._placed_by is not fleet.topology:
            self._placed_by, self._placed = fleet.topology, {}
        leaf = self._placed  # a node's leaf holds while the topology does; an unplaced one is asked again
        for n in fleet:
            if not leaf.get(n.name):
                leaf[n.name] = p.switch if (p := fleet.placement(n.name)) is not None else ""
        self.leaves = leaf_loads(fleet, fleet.topology, leaf.get)
        if fleet.fabric_suspects:
            self.leaves = with_suspects(self.leaves, fleet.fabric_suspects)
        below: dict[str, list[Node]] = {}
        for n in self._shown:
            below.setdefault(leaf[n.name], []).append(n)
        lines: list[Node | LeafLoad] = []
        for load in self.leaves:
            if load.leaf not in below:
                continue
            lines.append(load)
            if self.grouping != "collapsed":
                lines.extend(below[load.leaf])
        return lines

    def count_down(self, retry_in_s: Mapping[str, float]) -> None:
        """New seconds to the next try of the nodes that are down: their rows only, repainted
        (between two ticks, so that the countdown moves each second whatever the interval)."""
        if self.frozen:
            return
        changed = set(retry_in_s) | set(self.retry_in_s)
        self.retry_in_s = retry_in_s
        self.options = replace(self.options, retry_in_s=retry_in_s)
        for name in changed:
            self._formatted.pop(name, None)
        if changed:
            self.refresh()

    def _column_width(self, col: Column, columns: tuple[Column, ...]) -> int:
        if col is columns[-1] and col.key == "health":  # Why takes what the others leave
            return max(col.width, self.width_cells - sum(c.width + 1 for c in columns[:-1]) - 2)
        return col.width

    def _row(self, line: Node | LeafLoad) -> FormattedRow:
        key = _key(line)
        row = self._formatted.get(key)
        if row is None:
            row = self._formatted[key] = (self._format(line) if isinstance(line, Node) else self._format_leaf(line))
        return row

    def _format_leaf(self, load: LeafLoad) -> FormattedRow:
        """A leaf's row, bold: its name (▾ with its nodes below, ▸ collapsed), how many of its
        nodes are up, the sums, and its uplink's load in the Why column; coloured by its level."""
        style = self._level_styles[load.level] + Style(bold=True) if load.level > 0 else Style(bold=True)
        open_ = "▸ " if self.grouping == "collapsed" else "▾ "
        texts = []
        for col, width in zip(self._columns, self._widths):
            text = leaf_text(col, load, self.options, width)
            if col.key == "node":
                text = open_ + text
            if len(text) > width:
                text = text[: width - 1] + "…"
            texts.append((text.rjust(width) if col.right else text.ljust(width)) + " ")
        joined = "".join(texts)
        return FormattedRow(texts, [(joined, style)], _cells(texts))

    def _format(self, node: Node) -> FormattedRow:
        texts: list[str] = []
        runs: list[tuple[str, Style | None]] = []
        run: list[str] = []
        run_style: Style | None = None
        styles = self._level_styles
        options = self.options
        stale = self.STALE_STYLE if node.state is NodeState.STALE else None
        level = node.level  # the name's, state's and Why's (``cell_level``): asked once a row
        marked = node.name in self.marked
        for kind, width, right, text_of, metric, value_of in self._cells_plan:
            # names and states always wear their level's colour; metrics only when not ok, and
            # the last values of a node that stopped answering are dim (``cell_level``)
            if kind is METRIC:
                cell = node.threshold(metric).level(value_of(node))
                style: Style | None = styles[cell] if cell else stale
            elif kind is LEVELLED:
                cell = value_of(node)
                style = styles[cell] if cell else stale
            elif kind is PLAIN:
                style = stale
            elif kind is WHY:
                style = styles[level] if level else None
            else:  # NAME, STATE
                style = styles[level]
            text = text_of(node, options)
            if marked and kind is NAME:
                text = self.MARK + text
            if len(text) > width:
                text = text[: width - 1] + "…"
            # one blank cell after every column separates it from the next
            text = text.rjust(width) + " " if right else text.ljust(width + 1)
            texts.append(text)
            if style is not run_style and run:
                runs.append(("".join(run), run_style))
                run = []
            run.append(text)
            run_style = style
        if run:
            runs.append(("".join(run), run_style))
        return FormattedRow(texts, runs, _cells(texts))

    def _plan_cells(self) -> None:
        """How each column's cell is made and coloured (``_format``, ``cell_kind``), once a
        tick rather than once a cell."""
        self._cells_plan = [(kind, width, col.right, col.text, col.threshold if kind is METRIC else None,
                             col.value if kind is METRIC else col.level if kind is LEVELLED else None)
                            for col, width in zip(self._columns, self._widths) for kind in (cell_kind(col),)]

    # painting -----------------------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        base = self._base = self.rich_style
        self._header_style = base + self.get_component_rich_style("fleet-grid--header")
        cursor = self.get_component_rich_style("fleet-grid--cursor")
        # as DataTable does: the cursor's colours win over a cell's level colour, its boldness stays
        pre, post = base + cursor, Style.from_color(cursor.color, cursor.bgcolor)
        bold = Style(bold=True)
        leaf_styles = [bold] + [s + bold for s in self._level_styles.values()]  # leaf rows (_format_leaf)
        # every style a formatted row's run can carry (_format, _format_leaf), the stale dim too
        every = [*self._level_styles.values(), *leaf_styles, self.STALE_STYLE]
        self._row_styles = {None: base} | {s: base + s for s in every}
        self._cursor_styles = {None: pre} | {s: pre + s + post for s in every}
        # the whole content width, the scrollbar's gutter too: Textual pads a narrower line to
        # it (a new Strip a line) before it crops the gutter off again
        self._paint_width = self.content_region.width
        self._paint_top = self.scroll_offset.y
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self._paint_width
        if y == 0:
            style = self._header_style
            labels = [Segment(self._label(c, w), style) for c, w in zip(self._columns, self._widths)]
            return Strip(labels).adjust_cell_length(width, style)
        index = self._paint_top + y - 1
        if index >= len(self._lines):
            return Strip.blank(width, self._base)
        row = self._row(self._lines[index])
        styles = self._cursor_styles if index == self._cursor else self._row_styles
        segments = [Segment(text, styles[style]) for text, style in row.runs]
        if row.cell_length > width:
            return Strip(segments, row.cell_length).crop(0, width)
        if row.cell_length < width:  # the cursor bar spans the whole width
            segments.append(Segment(" " * (width - row.cell_length), styles[None]))
        return Strip(segments, width)

    def _label(self, col: Column, width: int) -> str:
        """A column's header cell; the column the rows are sorted by wears ▼ (▲: ascending)."""
        label = col.label
        if col.key == "node" and self._lines is not self._shown:
            label = "Leaf / node"
        if col.key == self.sort:
            label = label[: col.width - 1] + self.SORTED.get(col.key, "▼")
        elif col is self._columns[-1] and col.key == "health" and self.sort in SORT_LABELS \
                and self.sort != "worst" and all(c.key != self.sort for c in self._columns):
            label += f" · by {SORT_LABELS[self.sort]}▼"  # the column sorted by is not shown: say which
        return (label.rjust(col.width) if col.right else label).ljust(width) + " "

    # the cursor ---------------------------------------------------------------------------
    @property
    def _page_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)  # less the header

    def _in_view(self, index: int) -> bool:
        top = self.scroll_offset.y
        return top <= index < top + self._page_rows

    def _scroll_to_cursor(self) -> None:
        top, rows = self.scroll_offset.y, self._page_rows
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False)
        elif self._cursor >= top + rows:
            self.scroll_to(y=self._cursor - rows + 1, animate=False)

    def move_cursor(self, index: int) -> None:
        """Put the cursor on row ``index`` (clamped) and follow that node (or leaf) from now on."""
        if not self._lines:
            return
        self._cursor = max(0, min(index, len(self._lines) - 1))
        self._followed = _key(self._lines[self._cursor])
        self._scroll_to_cursor()
        self.refresh()

    def action_cursor_up(self) -> None:
        self.move_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self._cursor + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self._cursor - self._page_rows)

    def action_page_down(self) -> None:
        self.move_cursor(self._cursor + self._page_rows)

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self._lines) - 1)

    def action_choose(self) -> None:
        if self.selected is not None:
            self.post_message(self.NodeChosen(self.selected))

    def action_toggle_mark(self) -> None:
        """Mark or unmark the node under the cursor. The cursor stays on it: rows sorted worst
        first move under it, and a cursor moved by row would land on another node than the
        user saw (the cursor follows its node, by name, from now on)."""
        leaf = self.selected_leaf
        if leaf is not None:  # a leaf row: all of its nodes, or none when all were marked
            self._followed = _key(leaf)
            nodes = set(leaf.nodes)
            self._set_marks(self.marked - nodes if nodes <= self.marked else self.marked | nodes)
            return
        name = self.selected
        if name is None:
            return
        self._followed = name
        self._set_marks(self.marked ^ {name})

    def mark_all(self) -> None:
        """Mark every node shown (those the filter lets through)."""
        self._set_marks(self.marked | {n.name for n in self._shown})

    def clear_marks(self) -> bool:
        """Unmark every node; False when none was marked."""
        if not self.marked:
            return False
        self._set_marks(set())
        return True

    def _set_marks(self, marked: set[str]) -> None:
        for name in marked ^ self.marked:
            self._formatted.pop(name, None)  # repaint its row with or without the mark
        self.marked = marked
        self.post_message(self.MarksChanged(frozenset(marked)))
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        index = self.scroll_offset.y + offset.y - 1
        if index >= len(self._lines):
            return
        event.stop()
        if index == self._cursor:
            self.action_choose()
        else:
            self.move_cursor(index)


def _cells(texts: list[str]) -> int:
    """The cells of a row's texts: their length, but for the cells that are not ASCII (a
    sparkline, an ellipsis, a hostile name), measured alone (``cell_len`` walks a text with a
    wide or special character one character at a time)."""
    cells = sum(map(len, texts))
    for text in texts:
        if not text.isascii():
            cells += cell_len(text) - len(text)
    return cells


def _key(line: Node | LeafLoad) -> str:
    """A row's key: a node's name, or NUL and a leaf's name (no node is named so)."""
    return line.name if isinstance(line, Node) else "\0" + line.leaf
