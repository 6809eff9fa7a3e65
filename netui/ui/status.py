"""The one-line status bar at the top of every screen."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from netui.model import units
from netui.model.node import NodeState


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    StatusBar.-paused {
        background: $warning 40%;
    }
    """

    def update_from(self, app, *, sort: str | None = None, filter: str | None = None, title: str | None = None,
                    totals: bool = True) -> None:
        """``totals``: show cluster RX/TX (the cluster screen has its own totals row)."""
        fleet = app.monitor.fleet
        counts = fleet.count_by_state()
        theme = app.theme_variables
        text = Text()
        text.append("netui", style="bold")
        if title:
            text.append(f" {title}", style="bold")
        text.append(" ")
        text.append(f"{len(fleet)} node{'s' if len(fleet) != 1 else ''}: ")
        for i, (state, count) in enumerate(counts.items()):
            if i:
                text.append(", ")
            color = theme.get("success") if state is NodeState.UP else (
                theme.get("warning") if state in (NodeState.CONNECTING, NodeState.STALE) else theme.get("error"))
            text.append(f"{count} {state.value}", style=color or "")
        if fleet.stragglers:  # the short plank first: it is why the user is here
            s = fleet.stragglers[0]
            more = f" (+{len(fleet.stragglers) - 1})" if len(fleet.stragglers) > 1 else ""
            # its numbers; the rule and the other findings are in the grid and on the node's screen
            style = f"bold {theme.get('warning', '')}".strip()
            text.append(f" │ straggler {s.headline or s.reason}{more}", style=style)
        if totals:
            rx, tx = fleet.totals()
            as_bytes = app.grid_options.as_bytes
            text.append(f" │ RX {units.bits_per_s(rx, as_bytes=as_bytes)} TX {units.bits_per_s(tx, as_bytes=as_bytes)}")
        text.append(f" │ {app.monitor.interval_s:g}s")
        if getattr(app.monitor, "replay", False):
            from netui.ui.timeline import play_state

            text.append(f" │ replay {play_state(app.monitor)}", style="bold")
        recorder = getattr(app.monitor, "recorder", None)
        if recorder is not None:
            if recorder.error:
                text.append(f" │ ● REC stopped: {recorder.error}", style=theme.get("error") or "")
            else:
                text.append(" │ ")
                text.append("● REC", style=f"bold {theme.get('error', '')}".strip())
                text.append(f" {recorder.path.name} {units.si(recorder.size_bytes, 'B')}")
        if app.paused:
            text.append(" │ PAUSED", style="bold")
        if sort:
            text.append(f" │ sort: {sort}")
        if filter:
            text.append(f" │ filter: {filter}")
        self.set_class(app.paused, "-paused")
        if text != self.content:  # most ticks change nothing here
            self.update(text, layout=False)  # one line, always: no layout pass, which repaints every widget
