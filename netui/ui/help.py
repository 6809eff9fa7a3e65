"""The help screen (?): every key, as ``ui.keys`` declares them."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from netui.ui.base import NetuiModalScreen
from textual.widgets import Static

from netui.ui import keys as key_table
from netui.ui.scrolling import LESS_KEYS, page_lines, scroll_by


class HelpScreen(NetuiModalScreen):
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
        for key in key_table.rows():  # with the registered checks' own rows
            keys.add_row(key.shown, key.help)
        foot = Text.from_markup(
            "\nThe status bar's badges: ● REC (recording), PAUSED, FILTER, marked nodes, the sort "
            "(▼ also on the sorted column), bits/s or bytes/s.\n"
            "The Why column: why a node is down (and when it is tried again) or bad, in a few words.\n"
            "Health colours: ok, [i]careful[/i], warning, critical — worst first in the grid.\n"
            "— means unknown: a counter reset, a reboot, or a value the kernel does not give."
        )
        head = Text.assemble(("netui keys", "bold"), f"   ({self.CLOSE})\n")
        recorder = self.app.monitor.recorder
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
