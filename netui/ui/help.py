"""The help screen (?): every key, in one place."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from netui.ui.scrolling import LESS_KEYS, page_lines, scroll_by

KEYS = (
    ("Enter", "open the selected node"),
    ("Escape", "back to the cluster / unmark the marked nodes, then clear the filter"),
    ("s", "cycle the sort order (worst first, node, RX, TX, drops, …)"),
    ("/", "filter nodes by name or state"),
    ("b", "bits/s ↔ bytes/s (the badge on the right of the status bar says which)"),
    ("a", "node screens: show the hidden interfaces too (loopback, veth, bridges …) or the data "
          "plane only; the grid always counts the data plane"),
    ("p", "pause / resume the display (sampling goes on)"),
    ("+ / -", "longer / shorter sampling interval"),
    ("space", "mark / unmark the node under the cursor (for pair tests, latency, doctor)"),
    ("M / U", "mark every node shown (the filter's) / unmark all"),
    ("t / T", "iperf3: the 2 marked nodes, one way / all pairs of the marked (or all), both ways"),
    ("r / R", "the same with ib_write_bw (RDMA)"),
    ("l", "latency: RTT and loss, every marked node (or all) pinging every other"),
    ("e / Esc", "pair or latency test: export CSV and JSON / cancel it, then back"),
    ("P", "peer matrix: the TCP flows between watched nodes as a heatmap (m: throughput, RTT, "
          "retransmits/s), the worst pairs listed below"),
    ("D", "doctor: MTU, link speeds, RDMA ports, sysctls … of the marked (or all)"),
    ("o", "ring order (with --topology or --slurm): switch crossings of a ring through the marked "
          "(or all) in the order watched, and a topology-ordered list"),
    ("g", "group by leaf switch (with --topology or --slurm): a row per leaf — its nodes' RX/TX summed, "
          "how many are up, the worst health, its uplink's load bounded from host counters — with its "
          "nodes below; g again: the leaf rows alone; again: one row per node. space on a leaf row "
          "marks its nodes"),
    ("w", "record to netui-<time>.ndjson.gz here / stop (● REC in the status bar)"),
    ("ctrl+r", "try a node that is down again now (the cursor's, the marked, or all waiting)"),
    ("x", "replay (netui replay FILE): speed 1×, 10×, 60×; p pauses"),
    ("← / →", "replay: back / forward 10 s (shift: 1 min); or click the timeline"),
    ("n / N", "replay: jump to the next event (state, health, straggler, test) / straggler"),
    ("t T r R l", "replay: the last pair or latency test recorded before this point"),
    ("ctrl+p", "command palette: every action by any word of it (straggler, suspect, jump, record …)"),
    ("j / k", "down / up a row in the grid, a line here and on every screen that scrolls; G (End) the "
              "last row; here g / G, space / b: the top, the end, a page down / up, as in less"),
    ("?", "this help"),
    ("ctrl+z", "suspend to the shell; fg brings netui back"),
    ("q", "quit"),
)


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close"), *LESS_KEYS]
    CLOSE = "Esc, q or ? closes this"
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; height: auto; max-height: 90%;
        border: round $primary; background: $surface; padding: 1 2;
    }
    """

    def compose(self) -> ComposeResult:
        keys = Table.grid(padding=(0, 2))
        keys.add_column(justify="right", style="bold", no_wrap=True)
        keys.add_column()  # descriptions wrap inside their own column
        for key, what in KEYS:
            keys.add_row(key, what)
        foot = Text.from_markup(
            "\nThe status bar's badges: ● REC (recording), PAUSED, FILTER, marked nodes, the sort "
            "(▼ also on the sorted column), bits/s or bytes/s.\n"
            "The Why column: why a node is down (and when it is tried again) or bad, in a few words.\n"
            "Health colours: ok, [i]careful[/i], warning, critical — worst first in the grid.\n"
            "— means unknown: a counter reset, a reboot, or a value the kernel does not give."
        )
        head = Text.assemble(("netui keys", "bold"), f"   ({self.CLOSE})\n")
        recorder = self.app.monitor.recorder  # type: ignore[attr-defined]
        if recorder is not None and not recorder.error:
            from netui.ui.status import recording_words

            words = recording_words(recorder)
            head.append(f"● {words[:1].upper()}{words[1:]} — w stops\n", style="bold")
        # the keys are the screen's (LESS_KEYS), not the box's: a burst typed before the first
        # layout scrolls as far as it asked (ui/scrolling.py)
        with VerticalScroll(can_focus=False) as box:
            box.border_subtitle = self.CLOSE
            yield Static(Group(head, keys, foot))

    def action_scroll_lines(self, lines: float) -> None:
        scroll_by(self.query_one(VerticalScroll), lines)

    def action_scroll_pages(self, pages: int) -> None:
        box = self.query_one(VerticalScroll)
        scroll_by(box, pages * page_lines(box))
