"""The cluster screen: one row per node, worst first, live."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input

from netui.model.fleet import Fleet
from netui.model.node import Node
from netui.ui.columns import SORT_LABELS, SORTS, Column, GridOptions, cell_level, fit_columns, sort_key
from netui.ui.render import level_styles
from netui.ui.status import StatusBar


class NodeGrid(DataTable):
    """The fleet as a table. Rows are keyed by node name; only changed cells are updated."""

    class NodeChosen(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, cell_padding=0, **kwargs)
        self.sort = "worst"
        self.filter = ""
        self.options = GridOptions()
        self.width_cells = 80
        self._columns: tuple[Column, ...] = ()
        self._order: list[str] = []
        self._cells: dict[str, list] = {}
        self._followed: str | None = None  # the node the user put the cursor on
        self._placed: str | None = None  # the node show() put the cursor on

    def _wanted_columns(self) -> tuple[Column, ...]:
        return fit_columns(self.width_cells)

    def _column_width(self, col: Column, columns: tuple[Column, ...]) -> int:
        if col is columns[-1] and col.key == "health":
            return max(col.width, self.width_cells - sum(c.width + 1 for c in columns[:-1]) - 2)
        return col.width

    def _setup_columns(self) -> None:
        self.clear(columns=True)
        self._columns = self._wanted_columns()
        for c in self._columns:
            # one blank cell separates columns: before right-aligned, after left-aligned ones
            label = Text(c.label.rjust(c.width) + " " if c.right else c.label.ljust(c.width) + " ")
            self.add_column(label, key=c.key, width=self._column_width(c, self._columns) + 1)
        self._order = []
        self._cells = {}

    def visible_nodes(self, fleet: Fleet) -> list[Node]:
        needle = self.filter.lower()
        nodes = [n for n in fleet if not needle or needle in n.name.lower() or needle in n.state.value]
        return sorted(nodes, key=sort_key(self.sort))

    def show(self, fleet: Fleet) -> None:
        """Bring the table up to date with the fleet in one synchronous pass."""
        if self._columns != self._wanted_columns():
            self._setup_columns()
        styles = level_styles(self.app.theme_variables)
        nodes = self.visible_nodes(fleet)
        order = [n.name for n in nodes]
        rows = {n.name: [self._cell(c, n, styles) for c in self._columns] for n in nodes}
        if order != self._order:
            self.clear()
            for name in order:
                self.add_row(*rows[name], key=name)
            self._order = order
            # the cursor stays on the node the user chose; until then, on the worst one
            row = order.index(self._followed) if self._followed in order else 0
            self._placed = order[row] if order else None
            self.move_cursor(row=row, animate=False)
        else:
            for name in order:
                old = self._cells.get(name)
                for c, new, before in zip(self._columns, rows[name], old or [None] * len(rows[name])):
                    if new != before:
                        self.update_cell(name, c.key, new)
        self._cells = rows

    def _cell(self, col: Column, node: Node, styles) -> Text:
        level = cell_level(col, node)
        style = styles.get(level) if level is not None and (col.key in ("node", "state") or level > 0) else None
        text = col.text(node, self.options)
        width = self._column_width(col, self._columns)
        if len(text) > width:
            text = text[: width - 1] + "…"
        text = text.rjust(width) if col.right else text.ljust(width)
        return Text(text + " ", style=style or "", no_wrap=True)

    def _selected_name(self) -> str | None:
        if not self._order or self.cursor_row < 0 or self.cursor_row >= len(self._order):
            return None
        return self._order[self.cursor_row]

    @property
    def selected(self) -> str | None:
        return self._selected_name()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is not None and key != self._placed:
            self._followed = str(key)
            self._placed = None

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.NodeChosen(str(event.row_key.value)))


class ClusterScreen(Screen):
    BINDINGS = [
        Binding("s", "cycle_sort", "Sort"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Vertical(id="grid-box"):
            yield NodeGrid(id="grid")
        yield Input(placeholder="filter nodes by name or state — Enter to keep, Esc to clear", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.refresh_data()

    @property
    def grid(self) -> NodeGrid:
        return self.query_one(NodeGrid)

    def on_resize(self, event) -> None:
        self.grid.width_cells = self.size.width - 2  # the scrollbar
        self.refresh_data()

    def refresh_data(self) -> None:
        app = self.app
        self.grid.options = app.grid_options  # type: ignore[attr-defined]
        self.grid.show(app.monitor.fleet)  # type: ignore[attr-defined]
        self.query_one(StatusBar).update_from(app, sort=SORT_LABELS[self.grid.sort], filter=self.grid.filter)

    def action_cycle_sort(self) -> None:
        i = SORTS.index(self.grid.sort)
        self.grid.sort = SORTS[(i + 1) % len(SORTS)]
        self.refresh_data()
        self.notify(f"sorted by {SORT_LABELS[self.grid.sort]}", timeout=1.5)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.grid.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.grid.filter = event.value.strip()
        self.refresh_data()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            event.input.display = False
        self.grid.focus()

    def on_key(self, event) -> None:
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_focus:
            event.stop()
            self.action_clear_filter()

    def on_node_grid_node_chosen(self, event: NodeGrid.NodeChosen) -> None:
        self.app.open_node(event.name)  # type: ignore[attr-defined]
