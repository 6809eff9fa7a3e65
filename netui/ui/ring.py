"""The ring order screen (o): the cross-switch hops of an all-reduce ring through the nodes in
the order netui watches them (or the marked ones), and the topology-ordered list.

The words are ``engine/topologydoc.py``'s, the same as ``netui topology`` prints.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from netui.ui.base import NetuiModalScreen
from textual.widgets import Static

from netui.engine.topologydoc import ring_text
from netui.model.fleet import Fleet
from netui.model.topology import Attachment, Topology, ring_check
from netui.ui.scrolling import LESS_KEYS, page_lines, scroll_by


def fleet_ring(fleet: Fleet, names: list[str]) -> tuple[Topology, str]:
    """The topology seen by the fleet's node names (a node is found by the name watched or by
    the host name it reports), and the ring check's text for ``names`` in that order."""
    assert fleet.topology is not None
    by_name = [Attachment(n, p.switch, p.port, p.source, p.port_source)
               for n, p in ((n, fleet.placement(n)) for n in names) if p is not None]
    view = Topology(fleet.topology.switches.values(), by_name, fleet.topology.notes)
    return view, ring_text(ring_check(view, names), view, fleet.topology_source or "the topology")


class RingScreen(NetuiModalScreen):
    BINDINGS = [Binding("escape,q,o", "dismiss", "Close"), *LESS_KEYS]
    CLOSE = "Esc or o closes this"
    DEFAULT_CSS = """
    RingScreen { align: center middle; }
    RingScreen > VerticalScroll {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, names: list[str], marked: bool) -> None:
        super().__init__()
        self.names = names
        self.marked = marked

    def compose(self) -> ComposeResult:
        _, words = fleet_ring(self.app.monitor.fleet, self.names)
        which = "the marked nodes" if self.marked else "every node"
        head = Text.assemble(("Ring order", "bold"), f" of {which}, in the order netui watches them\n")
        with VerticalScroll(can_focus=False) as box:  # its keys are the screen's: LESS_KEYS
            box.border_subtitle = self.CLOSE
            yield Static(Text.assemble(head, words), id="ring-text")

    def action_scroll_lines(self, lines: float) -> None:
        scroll_by(self.query_one(VerticalScroll), lines)

    def action_scroll_pages(self, pages: int) -> None:
        box = self.query_one(VerticalScroll)
        scroll_by(box, pages * page_lines(box))
