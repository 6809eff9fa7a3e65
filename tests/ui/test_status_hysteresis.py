"""The status bar's fleet words do not switch form tick after tick when a badge's width
wobbles by a cell (the REC badge's size: "9.87 kB", "10.1 kB", "998 kB", "1.01 MB")."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from netui.ui.status import REGROW_CELLS, StatusBar


class OneBar(App):
    def compose(self) -> ComposeResult:
        yield StatusBar()


@pytest.mark.slow
async def test_a_badge_a_cell_wider_then_narrower_keeps_the_shorter_form_until_there_is_room():
    app = OneBar()
    async with app.run_test(size=(42, 3)) as pilot:
        bar = app.query_one(StatusBar)
        await pilot.pause()
        room = bar.content_size.width
        long, short, least = Text("L" * 24), Text("S" * 12), Text("T" * 6)
        shown = []
        # the long form fits beside a badge of room-26 cells, not of room-24
        for badge in (room - 26, room - 24, room - 26, room - 26, room - 26 - REGROW_CELLS):
            bar._lefts, bar._badges = [long, short, least], Text("B" * badge)
            bar._show()
            shown.append(str(bar.content).split(" ")[0][0])
        assert shown == ["L", "S", "S", "S", "L"]
