"""The cluster screen: one row per node, worst first, live.

Its footer shows what the keys do, most important first, as many as fit (ui/keybar.py); the
status bar shows netui's state as badges that long text never pushes out (ui/status.py).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from netui.ui.base import NetuiScreen
from textual.widgets import Input, Static

from netui import checks
from netui.model import units

from netui.ui import keys
from netui.ui.columns import SORT_LABELS, next_sort
from netui.ui.grid import FleetGrid
from netui.ui.keybar import KeyFooter
from netui.ui.status import StatusBar
from netui.ui.timeline import Timeline


SORT_BADGES = {"worst": "worst"}  # the sort's badge in the status bar, where shorter than its label


class ClusterScreen(NetuiScreen):
    # In the footer's order: most important first (it shows as many as fit, then ? and q).
    # Pairs on one key are live labels: check_action lets one of them through.
    BINDINGS = [
        Binding("enter", "open_node", "Open", key_display="⏎"),
        Binding("space", "mark", "Mark", key_display="␣"),
        Binding("p", "app.pause", "Pause"),
        Binding("p", "app.resume", "Resume"),
        Binding("p", "app.play", "Play"),
        # pair bandwidth tests (the marks are the grid's: space)
        Binding("t", "pair_test('iperf3')", "Pair"),
        Binding("T", "pair_matrix('iperf3')", "Matrix", key_display="T"),
        Binding("l", "run_check('latency')", "Latency"),
        Binding("D", "run_check('doctor')", "Doctor", key_display="D"),
        Binding("g", "group", "Group"),  # by leaf switch; shown with a topology (--topology, --slurm)
        Binding("o", "ring_order", "Ring order"),  # shown with a topology
        Binding("ctrl+r", "retry", "Retry"),  # shown while a node waits to be tried again
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("w", "app.record", "Record"),
        Binding("w", "app.stop_recording", "Stop rec"),
        Binding("b", "app.bytes", "Bytes"),
        Binding("b", "app.bits", "Bits"),
        Binding("r", "pair_test('ib_write_bw')", "RDMA pair"),  # shown with RDMA in the fleet
        Binding("R", "pair_matrix('ib_write_bw')", "RDMA matrix", key_display="R"),
        Binding("M", "mark_all", "Mark all", key_display="M"),
        Binding("U", "unmark_all", "Unmark", key_display="U"),  # shown while nodes are marked
        Binding("P", "peers", "Peers", key_display="P"),  # the TCP flows between watched nodes
        Binding("m", "mesh", "Mesh"),  # the probe mesh's screen; shown with a mesh (on by default over SSH)
        Binding("escape", "escape", "Clear", show=False),
        # then a key for each registered check that netui's key table does not bind by hand
        # (ui/keys.py check_rows): __init__ adds them, the footer shows them last
    ]

    def __init__(self) -> None:
        super().__init__()
        for row in keys.check_rows():
            check = checks.by_name(row.check)
            # this screen's own bindings, as App.bind adds the app's; a key of its own (check_rows
            # refuses one taken), so the class's bindings stay as they are
            self._bindings.bind(check.key, row.actions[0], check.label, key_display=check.key)

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Vertical(id="grid-box"):
            yield FleetGrid(id="grid")
        yield Static(id="totals")
        yield Timeline(id="timeline")
        yield Input(placeholder="filter nodes by name or state — Enter to keep, Esc to clear", id="filter")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one(Timeline).display = self.app.replay
        self._footer_state: tuple = ()
        self._mark_hint: str | None = None  # the keys the last marks toast named
        self.refresh_data()
        self.set_interval(1.0, self._count_down)  # a down node's "retry 12s", each second

    def footer_hides(self, binding: Binding) -> bool:
        """Keys the footer leaves out now (they go on working)."""
        if isinstance(self.focused, Input):  # typing a filter: letters are the filter's
            return True
        action = binding.action
        if "ib_write_bw" in action:
            return not self.grid.fabric
        if action == "retry":
            return not self.grid.retry_in_s
        if action == "unmark_all":
            return not self.grid.marked
        if action in ("ring_order", "group"):
            return self.app.monitor.fleet.topology is None
        if action == "mesh":
            return not self.grid.mesh and self.app.monitor.mesh is None
        return False

    def _retry_in_s(self) -> dict[str, float]:
        return self.app.monitor.retry_in_s()

    def _count_down(self) -> None:
        if not self.app.paused and (self.grid.retry_in_s or self._retry_in_s()):
            self.grid.count_down(self._retry_in_s())
            self._check_footer()

    def _check_footer(self) -> None:
        """The footer again when what it leaves out changes (rarely: no layout pass a tick)."""
        grid = self.grid
        state = (grid.fabric, grid.mesh, bool(grid.retry_in_s), bool(grid.marked))
        if state != self._footer_state:
            self._footer_state = state
            self.refresh_bindings()

    @property
    def grid(self) -> FleetGrid:
        return self.query_one(FleetGrid)

    def on_resize(self, event) -> None:
        self.grid.width_cells = self.size.width - 2  # the scrollbar
        self.refresh_data()

    def refresh_data(self) -> None:
        app = self.app
        self.grid.options = app.grid_options
        self.grid.frozen = app.paused
        if not app.paused:
            self.grid.retry_in_s = self._retry_in_s()
        self.grid.show(app.fleet)
        sort = self.grid.sort
        self.query_one(StatusBar).update_from(app, sort=("▲" if sort == "node" else "▼") + SORT_BADGES.get(sort, SORT_LABELS[sort]),
                                              filter=self.grid.filter, totals=False, marked=len(self.grid.marked))
        self._show_totals(app)
        self._check_footer()
        if app.replay:
            self.query_one(Timeline).show(app.monitor)

    def _show_totals(self, app) -> None:
        fleet = app.fleet
        sums = fleet.sums(self.grid.shown_nodes)  # what the filter lets through
        as_bytes = app.grid_options.as_bytes
        shown = self.grid.row_count
        noun = "node" if len(fleet) == 1 else "nodes"
        scope = f"{shown} of {len(fleet)} {noun}" if shown != len(fleet) else f"{len(fleet)} {noun}"

        def rate(key: str) -> str:
            return units.bits_per_s(sums[key], as_bytes=as_bytes)

        def per_s(key: str) -> str:
            return f"{units.per_s(sums[key])}/s"

        # (long label, short label, figure): where the long line does not fit, short labels
        # and single blanks keep every figure, the retransmits' above all, on the line
        errors = ("errors", "err", per_s("errors_per_s"))
        parts = [("RX", "RX", rate("rx_bytes_per_s")), ("TX", "TX", rate("tx_bytes_per_s")),
                 ("drops", "drops", per_s("drops_per_s")), errors,
                 ("retransmits", "retr", per_s("retrans_segs_per_s"))]
        rdma = [("RDMA RX", "RDMA RX", rate("rdma_rx_bytes_per_s")), ("TX", "TX", rate("rdma_tx_bytes_per_s"))]
        width = self.size.width or 10_000
        text = ""
        for gap, short, order in (("   ", False, parts), ("  ", False, parts), ("  ", True, parts),
                                  (" ", True, parts), (" ", True, [p for p in parts if p is not errors] + [errors])):
            figures = order + (rdma if self.grid.fabric else [])
            text = gap.join([f"Σ {scope}"] + [f"{s if short else long} {v}" for long, s, v in figures])
            if len(text) <= width:
                break
        totals = self.query_one("#totals", Static)
        if text != totals.content:  # one line (netui.tcss): no layout pass, which repaints every widget
            totals.update(text, layout=False)

    def action_cycle_sort(self) -> None:
        self.grid.sort = next_sort(self.grid.sort, fabric=self.grid.fabric, mesh=self.grid.mesh)
        self.refresh_data()
        self.notify(f"sorted by {SORT_LABELS[self.grid.sort]}", timeout=1.5)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)  # now, not after the next refresh: the keys typed next are the box's

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
        elif event.key == "slash" and self.focused is not box:
            # here, not as a binding: a binding runs when the key reaches the app, after the
            # keys typed right behind it (a paste, tmux send-keys) have passed this screen
            event.stop()
            event.prevent_default()
            self.action_filter()
        elif self.focused is box and event.is_printable and event.character:
            # a key sent to the grid before the box had focus: it was meant for the box
            event.stop()
            event.prevent_default()
            box.insert_text_at_cursor(event.character)

    def action_escape(self) -> None:
        """Esc: the marks go first, then the filter."""
        if not self.grid.clear_marks():
            self.action_clear_filter()

    # marks, opening, retrying -------------------------------------------------------------
    def action_open_node(self) -> None:
        self.grid.action_choose()

    def action_mark(self) -> None:
        self.grid.action_toggle_mark()

    def action_mark_all(self) -> None:
        self.grid.mark_all()

    def action_unmark_all(self) -> None:
        self.grid.clear_marks()

    def action_retry(self) -> None:
        """Try again now the marked nodes that wait to retry, or the one under the cursor, or
        (when that one is not waiting) every node that is."""
        waiting = self._retry_in_s()
        marked = [n for n in self.grid.marked if n in waiting]
        selected = self.grid.selected
        names = marked or ([selected] if selected in waiting else list(waiting))
        tried = self.app.monitor.retry_now(names) if names else []
        if tried:
            self.notify(f"trying {', '.join(tried[:3])}{' …' if len(tried) > 3 else ''} again now", timeout=2)
        else:
            self.notify("no node is waiting to be tried again", timeout=2)
        self._count_down()

    def on_fleet_grid_node_chosen(self, event: FleetGrid.NodeChosen) -> None:
        self.app.open_node(event.name)

    # pair tests --------------------------------------------------------------------------
    def _marked(self) -> list[str]:
        """The marked nodes, in the order the user named them."""
        marked = self.grid.marked
        return [n.name for n in self.app.fleet if n.name in marked]

    def pair_to_test(self) -> tuple[str, str] | None:
        """The two marked nodes; else the node under the cursor and the next marked one
        below it (wrapping); None when that makes no pair."""
        marked = self._marked()
        if len(marked) == 2:
            return marked[0], marked[1]
        selected = self.grid.selected
        if selected is None:
            return None
        shown = [n.name for n in self.grid.visible_nodes(self.app.fleet)]
        if selected not in shown:
            return None
        at = shown.index(selected)
        for name in shown[at + 1:] + shown[:at]:
            if name in self.grid.marked:
                return selected, name
        return None

    def action_pair_test(self, tool: str) -> None:
        if self.app.replay:
            self.app.start_check("pairs", [], tool=tool, matrix=False)
            return
        pair = self.pair_to_test()
        if pair is None:
            self.notify("mark two nodes with space (or one, and put the cursor on the other)",
                        severity="warning", timeout=3)
            return
        self.app.start_check("pairs", list(pair), tool=tool, matrix=False)

    def action_pair_matrix(self, tool: str) -> None:
        nodes = self._marked() or [n.name for n in self.app.monitor.fleet]
        if len(nodes) < 2:
            self.notify("a matrix needs at least two nodes", severity="warning", timeout=3)
            return
        self.app.start_check("pairs", nodes, tool=tool, matrix=True)

    def action_peers(self) -> None:
        from netui.ui.flows import PeerMatrixScreen

        self.app.push_screen(PeerMatrixScreen())

    def action_mesh(self) -> None:
        """The probe mesh's screen; it says so when the mesh is off."""
        from netui.ui.mesh import MeshScreen

        self.app.push_screen(MeshScreen())

    def action_ring_order(self) -> None:
        """The ring order check of the marked nodes (all when none are marked), in the order watched."""
        fleet = self.app.monitor.fleet
        if fleet.topology is None:
            self.notify("no topology: start netui with --topology FILE (or --slurm on a Slurm cluster)",
                        severity="warning", timeout=4)
            return
        from netui.ui.ring import RingScreen

        marked = self._marked()
        names = [n.name for n in fleet if not marked or n.name in marked]
        self.app.push_screen(RingScreen(names, marked=bool(marked)))

    GROUP_WORDS = {"": "one row per node", "leaves": "grouped by leaf switch: a row per leaf, its nodes below",
                   "collapsed": "a row per leaf switch (g again: one row per node)"}

    def action_group(self) -> None:
        """Flat → a row per leaf with its nodes below → the leaf rows alone → flat."""
        if self.app.monitor.fleet.topology is None:
            self.notify("no topology: start netui with --topology FILE (or --slurm on a Slurm cluster)",
                        severity="warning", timeout=4)
            return
        grid = self.grid
        order = FleetGrid.GROUPINGS
        grid.grouping = order[(order.index(grid.grouping) + 1) % len(order)]
        self.refresh_data()
        self.notify(self.GROUP_WORDS[grid.grouping], timeout=2)

    NUMBERS = {1: "one node", 2: "two nodes", 3: "three nodes"}

    def action_run_check(self, name: str) -> None:
        """The check ``name`` (its key: l the latency test, D the doctor, or a registered
        check's) over the marked nodes, all when none are marked, up or down: the check judges
        a node it cannot reach. Fewer than its ``min_nodes``: a warning, no run. In a replay the
        app shows the last one recorded (``start_check``)."""
        check = checks.by_name(name)
        nodes = self._marked() or [n.name for n in self.app.monitor.fleet]
        if len(nodes) < check.min_nodes:
            fewest = self.NUMBERS.get(check.min_nodes, f"{check.min_nodes} nodes")
            self.notify(f"the {check.title} needs at least {fewest}", severity="warning", timeout=3)
            return
        self.app.start_check(name, nodes)

    MARK_HINTS = {2: "t/r pair test, l latency", 3: "T/R matrix, l latency"}

    def on_fleet_grid_marks_changed(self, event: FleetGrid.MarksChanged) -> None:
        """The status bar counts the marks; a toast only when the keys they open change (at
        two marks, and at three), not one per mark."""
        hint = self.MARK_HINTS.get(min(len(event.marked), 3))
        if hint is not None and hint != self._mark_hint:
            self.notify(f"{len(event.marked)} marked: {hint}", timeout=1.5)
        self._mark_hint = hint
        self.refresh_data()  # the marked count in the status bar, Unmark in the footer
