"""The one-line status bar at the top of every screen.

On the left what the fleet is doing (node counts, the straggler, totals, the interval); on
the right the badges of netui's own state — ● REC, PAUSED, FILTER, the units, the sort, the
marked count — which long text can never push out: the left part is cut first (…).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from netui.model import units
from netui.model.node import NodeState

FILTER_SHOWN = 12  # cells of the filter text in its badge; longer is cut with …


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

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._left = Text()
        self._badges = Text()

    def update_from(self, app, *, sort: str | None = None, filter: str | None = None, title: str | None = None,
                    totals: bool = True, marked: int = 0) -> None:
        """``totals``: show cluster RX/TX (the cluster screen has its own totals row);
        ``sort`` ("▼worst first"), ``filter``, ``marked``: the grid's, as badges (the cluster
        screen)."""
        self._left = self._fleet_text(app, title=title, totals=totals)
        self._badges = self._badge_text(app, sort=sort, filter=filter, marked=marked)
        self.set_class(app.paused, "-paused")
        self._show()

    def on_resize(self) -> None:
        self._show()

    def _show(self) -> None:
        width = self.content_size.width
        badges = self._badges
        text = self._left.copy()
        room = width - badges.cell_len - 1 if width else 10_000
        if text.cell_len > room:
            text.truncate(max(room, 0), overflow="ellipsis")
        if width:
            text.pad_right(max(0, width - text.cell_len - badges.cell_len))
        else:
            text.append(" ")
        text.append_text(badges)
        if text != self.content:  # most ticks change nothing here
            self.update(text, layout=False)  # one line, always: no layout pass, which repaints every widget

    @staticmethod
    def _fleet_text(app, *, title: str | None, totals: bool) -> Text:
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
        if app.monitor.mode.replay:
            from netui.ui.timeline import play_state

            text.append(f" │ replay {play_state(app.monitor)}", style="bold")
        recorder = app.monitor.recorder
        if recorder is not None:
            if recorder.error:
                text.append(f" │ recording stopped: {recorder.error}", style=theme.get("error") or "")
            else:
                text.append(f" │ → {recorder.path.name}")
        if totals:
            rx, tx = fleet.totals()
            as_bytes = app.grid_options.as_bytes
            text.append(f" │ RX {units.bits_per_s(rx, as_bytes=as_bytes)} TX {units.bits_per_s(tx, as_bytes=as_bytes)}")
        text.append(f" │ every {app.monitor.interval_s:g}s")
        # the short plank: cut first when the line is too long. A fabric suspect first: the
        # nodes it slows are its victims, so the stragglers left are other faults
        planks = len(fleet.fabric_suspects) + len(fleet.stragglers)
        if planks:
            first = fleet.fabric_suspects[0] if fleet.fabric_suspects else fleet.stragglers[0]
            more = f" (+{planks - 1})" if planks > 1 else ""
            text.append(f" │ straggler {first.headline or first.reason}{more}",
                        style=f"bold {theme.get('warning', '')}".strip())
        return text

    @staticmethod
    def _badge_text(app, *, sort: str | None, filter: str | None, marked: int) -> Text:
        theme = app.theme_variables
        badges: list[tuple[str, str]] = []
        recorder = app.monitor.recorder
        if recorder is not None and not recorder.error:
            badges.append((f"● REC {units.si(recorder.size_bytes, 'B')}", f"bold {theme.get('error', '')}"))
        monitor = app.monitor
        if app.paused or (monitor.mode.replay and not monitor.playing and not monitor.at_end):
            badges.append(("PAUSED", f"bold reverse {theme.get('warning', '')}"))
        if filter:
            shown = filter if len(filter) <= FILTER_SHOWN else filter[: FILTER_SHOWN - 1] + "…"
            badges.append((f"FILTER {shown}", f"bold {theme.get('accent', '')}"))
        if marked:
            badges.append((f"{marked} marked", f"bold {theme.get('primary', '')}"))
        if sort:
            badges.append((sort, ""))
        badges.append(("bytes/s" if app.grid_options.as_bytes else "bits/s", ""))
        text = Text()
        for i, (words, style) in enumerate(badges):
            if i:
                text.append(" ")
            text.append(words, style=style.strip())
        return text
