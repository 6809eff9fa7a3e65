"""The replay timeline: where the replay is in the recording, and what happened when.

Line 1: play state and speed, position / duration, the time of day (UTC), then a bar: the
played part, the position (●) and a mark per event — ✗ a node failed, ▲ a straggler, !
a health level at warning or worse, ◆ a recorded test, · a recovery. Line 2: the last event
at or before the position (a recorded test with the key that shows it), and the keys. Set by its screen with ``show``; a click on the
bar posts ``Timeline.Seek``.
"""

from __future__ import annotations

import time

from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import Static

from netui import checks
from netui.model.events import event_level, event_text
from netui.model.health import Level
from netui.ui.render import level_styles


def clock_text(seconds: float) -> str:
    """"0:07", "12:30", "1:02:03"."""
    seconds = int(max(0.0, seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def mark(rec: dict) -> str:
    kind = rec.get("type")
    level = event_level(rec)
    if kind == "test":
        return "◆"
    if kind == "state" and level >= Level.CRITICAL:
        return "✗"
    if kind == "straggler" and rec.get("flagged"):
        return "▲"
    if kind == "health" and level >= Level.WARNING:
        return "!"
    return "·"


_MARK_RANK = {"·": 0, "!": 1, "▲": 2, "◆": 3, "✗": 4}


def play_state(monitor) -> str:
    if monitor.playing:
        return f"▶ {monitor.speed}×"
    return "■ end" if monitor.at_end else f"‖ {monitor.speed}×"  # (⏸ is double width in some fonts)


class Timeline(Static):
    DEFAULT_CSS = """
    Timeline {
        height: 2;
        background: $panel;
        padding: 0 1;
    }
    """

    class Seek(Message):
        """The user clicked the bar: go to ``t`` (seconds since the epoch)."""

        def __init__(self, t: float) -> None:
            super().__init__()
            self.t = t

    _bar: tuple[int, int, float, float] | None = None  # first cell, cells, start_t, duration

    def on_click(self, event: events.Click) -> None:
        if self._bar is None or event.y != 0:
            return
        first, cells, start, duration = self._bar
        at = event.x - self.styles.padding.left - first
        if 0 <= at < cells:
            event.stop()
            self.post_message(self.Seek(start + duration * at / max(1, cells - 1)))

    def show(self, monitor) -> None:
        rec = monitor.recording
        width = max(10, (self.content_size.width or self.size.width or 80))
        theme = self.app.theme_variables
        styles = level_styles(theme)
        accent = Style(color=theme.get("accent") or theme.get("primary"), bold=True)
        muted = Style(dim=True)
        duration = rec.duration_s
        here = monitor.elapsed_s
        line = Text()
        # spaces end a span rather than start the next one: SVG exports drop leading blanks
        line.append(play_state(monitor) + "  ", style="bold")
        line.append(f"{clock_text(here)} / {clock_text(duration)}  ")
        line.append(time.strftime("%H:%M:%S UTC ", time.gmtime(min(monitor.clock_t, rec.end_t))), style=muted)
        cells = max(4, width - line.cell_len - 1)
        marks: dict[int, tuple[str, Level]] = {}
        for e in monitor.events:
            at = 0 if duration <= 0 else min(cells - 1, int((e.t - rec.start_t) / duration * (cells - 1) + 0.5))
            m = mark(e.record)
            if at not in marks or _MARK_RANK[m] > _MARK_RANK[marks[at][0]]:
                marks[at] = (m, event_level(e.record))
        pos = 0 if duration <= 0 else min(cells - 1, int(here / duration * (cells - 1) + 0.5))
        line.append(" ")
        self._bar = (line.cell_len, cells, rec.start_t, duration)
        for i in range(cells):
            if i == pos:
                line.append("●", style=accent)
            elif i in marks:
                m, level = marks[i]
                line.append(m, style=styles[level] if m != "·" else muted)
            else:
                line.append("━" if i < pos else "─", style=accent if i < pos else muted)
        line.append("\n")
        last = None
        for e in monitor.events:
            if e.frame < monitor.position:
                last = e
        if last is not None:
            line.append(f"{clock_text(last.t - rec.start_t)} ", style=muted)
            if last.record.get("type") == "test":  # the key first: a long verdict is cut at the end
                check = checks.by_kind(last.record.get("kind"))
                line.append(check.key if check is not None else "T", style="bold")
                line.append(" shows it: ", style=muted)
            line.append(event_text(last.record), style=styles[event_level(last.record)])
            line.append("   ")
        line.append("p play/pause · x speed · ←/→ 10 s, shift 1 min · n next event", style=muted)
        line.no_wrap = True
        line.overflow = "ellipsis"
        self.update(line)
