"""The base of netui's screens: each sees its app as the ``NetuiApp`` it is, for the type
checker (Textual's ``getters.app``; at run time the inherited property, which returns the same
app), so every ``self.app.fleet`` or ``self.app.start_check`` is held to the app's real
attributes; and each answers ``refresh_data`` after a tick, which the app calls on whatever
screen is on top (a screen that shows no live data keeps the default: nothing to do).
``NetuiStatic`` is the same typed app for a Static widget that reads the app (a panel asking
whether this is a replay)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.screen import ModalScreen, Screen
from textual.widgets import Static

if TYPE_CHECKING:
    from textual import getters

    from netui.ui.app import NetuiApp


class NetuiScreen(Screen[Any]):
    if TYPE_CHECKING:
        app = getters.app(NetuiApp)

    def refresh_data(self) -> None:
        """Repaint from the app's fleet after a tick (the app calls it while not paused)."""


class NetuiModalScreen(ModalScreen[Any]):
    if TYPE_CHECKING:
        app = getters.app(NetuiApp)

    def refresh_data(self) -> None:
        """Repaint from the app's fleet after a tick (the app calls it while not paused)."""


class NetuiStatic(Static):
    if TYPE_CHECKING:
        app = getters.app(NetuiApp)
