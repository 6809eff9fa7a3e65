"""What the settings dialogs of the checks share (the pair test's, checks/pairs/dialog.py, and
the latency test's, checks/latency/dialog.py): their layout, turning a field's text into a
number, and the behaviour around the fields (plan, error line, Start and Cancel, the keys).

A dialog subclasses ``SettingsDialog`` and gives ``title_text()``, ``compose_fields()`` (a
label and a field a row), ``read()`` (the settings as typed, or ValueError) and
``plan_text(settings)`` (how many tests, about how long).
"""

from __future__ import annotations

import math
from typing import TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

SettingsT = TypeVar("SettingsT")  # PairSettings, LatencySettings

# The dialogs fit 80×24: one row per field (compact inputs, no borders), scrolling only when
# the screen is smaller still. DIALOG stands for the dialog's class name (dialog_css).
_DIALOG_CSS = """
DIALOG { align: center middle; }
DIALOG > Vertical {
    width: 84; max-width: 100%; height: auto; max-height: 100%; overflow-y: auto;
    border: round $primary; background: $surface; padding: 0 1;
}
DIALOG #pair-title { text-style: bold; padding: 0 0 1 0; }
DIALOG Grid { grid-size: 2; grid-columns: 24 1fr; grid-rows: auto; grid-gutter: 0 1; height: auto; }
DIALOG Grid > Label { padding: 0; }
DIALOG Input, DIALOG Select { width: 1fr; }
DIALOG #pair-error { color: $error; height: auto; }
DIALOG #pair-plan { color: $text-muted; height: auto; padding: 1 0 0 0; }
DIALOG Horizontal { height: auto; align: right middle; }
DIALOG Button { margin: 0 0 0 1; }
"""


def dialog_css(name: str) -> str:
    """The settings dialogs' CSS for the dialog class ``name``."""
    return _DIALOG_CSS.replace("DIALOG", name)


def whole_number(text: str, what: str) -> int | None:
    """A field's whole number; None when empty; ValueError naming ``what`` otherwise."""
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what}: not a whole number: {text!r}") from None


def finite_number(text: str, what: str) -> float | None:
    """A field's finite number; None when empty; ValueError naming ``what`` otherwise."""
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what}: not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{what}: not a finite number: {text!r}")
    return value


def field_text(value) -> str:
    """A setting as a field shows it: empty for None, ``%g`` for a float."""
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def field_row(label: str, widget_id: str, value, *, type: str = "text", placeholder: str = "") -> ComposeResult:
    """A row of a settings dialog's grid: ``label``, then a field showing ``value`` (field_text)
    of Textual's Input ``type`` ("integer", "number", "text"), ``placeholder`` while empty."""
    yield Label(label)
    yield Input(field_text(value), placeholder=placeholder, id=widget_id, type=type, compact=True)


class SettingsDialog(ModalScreen[SettingsT | None]):
    """What both settings dialogs share: the plan follows every edit, Enter or Start dismisses
    with ``read()``'s settings (or shows why they are not valid), Esc or Cancel with None; the
    first field (``FIRST_FIELD``) has the focus when the dialog opens."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    FIRST_FIELD = ""  # the id of the field focused first

    def __init__(self, settings: SettingsT, nodes: list[str], *, suggested_interface: str | None = None) -> None:
        """``settings``: the last ones used; ``suggested_interface``: the interface netui would
        test on, named in the "Test on" field's placeholder."""
        super().__init__()
        self.settings = settings
        self.nodes = nodes
        self.suggested_interface = suggested_interface

    def read(self) -> SettingsT:
        raise NotImplementedError

    def plan_text(self, settings: SettingsT) -> str:
        """How many tests ``settings`` makes and about how long, for the plan line."""
        raise NotImplementedError

    def title_text(self) -> str:
        """The dialog's first line: the test and the nodes it runs on."""
        raise NotImplementedError

    def compose_fields(self) -> ComposeResult:
        """The fields, each after its label (the grid's two columns)."""
        raise NotImplementedError

    def compose_test_net(self, value: str) -> ComposeResult:
        """The "Test on" row: a subnet or interface; empty, what netui picks (its placeholder,
        with the interface suggested in ``self.suggested_interface``)."""
        suggested = f" ({self.suggested_interface})" if self.suggested_interface else ""
        yield from field_row("Test on (subnet / iface)", "test-net", value,
                             placeholder=f"auto: the fastest subnet all nodes share{suggested}")

    def compose(self) -> ComposeResult:
        """The title, the fields, then the plan, the error line, Start and Cancel."""
        with Vertical():
            yield Static(self.title_text(), id="pair-title")
            with Grid():
                yield from self.compose_fields()
            yield Static("", id="pair-plan")
            yield Static("", id="pair-error")
            with Horizontal():
                yield Button("Start", variant="primary", id="start", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self._show_plan()
        self.query_one(f"#{self.FIRST_FIELD}", Input).focus()

    def _show_plan(self) -> None:
        try:
            settings = self.read()
        except ValueError:
            return
        self.query_one("#pair-plan", Static).update(self.plan_text(settings))

    def on_input_changed(self, event: Input.Changed) -> None:
        self._show_plan()

    def on_select_changed(self, event: Select.Changed) -> None:
        self._show_plan()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self._show_plan()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_start()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_start()
        else:
            self.action_cancel()

    def action_start(self) -> None:
        try:
            settings = self.read()
        except ValueError as exc:
            self.query_one("#pair-error", Static).update(str(exc))
            return
        self.dismiss(settings)

    def action_cancel(self) -> None:
        self.dismiss(None)
