"""The help screen (?): every key, in one place."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = (
    ("Enter", "open the selected node"),
    ("Escape", "back to the cluster / clear the filter"),
    ("s", "cycle the sort order (worst first, node, RX, TX, drops, …)"),
    ("/", "filter nodes by name or state"),
    ("b", "bits/s ↔ bytes/s"),
    ("a", "show all interfaces (loopback, veth, bridges …) or data-plane only"),
    ("p", "pause / resume the display (sampling goes on)"),
    ("+ / -", "longer / shorter sampling interval"),
    ("space", "mark / unmark a node for pair tests"),
    ("t / T", "iperf3: the 2 marked nodes / all pairs of the marked (or all)"),
    ("r / R", "the same with ib_write_bw (RDMA)"),
    ("l", "latency: RTT and loss, every marked node (or all) pinging every other"),
    ("e / Esc", "pair or latency test: export CSV and JSON / cancel it, then back"),
    ("D", "doctor: MTU, link speeds, RDMA ports, sysctls … of the marked (or all)"),
    ("ctrl+p", "command palette: every action by name"),
    ("?", "this help"),
    ("q", "quit"),
)


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 76; height: auto; max-height: 90%;
        border: round $primary; background: $surface; padding: 1 2;
    }
    """

    def compose(self) -> ComposeResult:
        lines = ["[b]netui keys[/b]", ""]
        lines += [f"[b]{k:>8}[/b]  {what}" for k, what in KEYS]
        lines += ["", "Health colours: ok, [i]careful[/i], warning, critical — worst first in the grid.",
                  "— means unknown: a counter reset, a reboot, or a value the kernel does not give."]
        with Vertical():
            yield Static("\n".join(lines), markup=True)
