"""The key table (netui/ui/keys.py) is what the screens bind and what the docs say: every
binding of every screen is a row of it, every row's actions are bound on the screens it
names (tests/ui/test_keys_ui.py: the help screen lists every row), and README.md's and docs/watching.md's key tables
document keys that exist, in words that say what they do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.app import App

from netui.checks.dialog_fields import SettingsDialog
from netui.checks.doctor.screen import DoctorScreen
from netui.checks.pairs.screen import MatrixScreen
from netui.ui import keys
from netui.ui.app import NetuiApp
from netui.ui.cluster import ClusterScreen
from netui.ui.flows import PeerMatrixScreen
from netui.ui.grid import FleetGrid
from netui.ui.help import HelpScreen
from netui.ui.keys import KEYS, Key
from netui.ui.mesh import MeshScreen
from netui.ui.node import NodeScreen
from netui.ui.ring import RingScreen

ROOT = Path(__file__).resolve().parents[2]
SCREENS = {keys.APP: NetuiApp, keys.CLUSTER: ClusterScreen, keys.GRID: FleetGrid, keys.NODE: NodeScreen,
           keys.FLOWS: PeerMatrixScreen, keys.MESH: MeshScreen, keys.HELP: HelpScreen, keys.RING: RingScreen, keys.TEST: MatrixScreen,
           keys.DOCTOR: DoctorScreen, keys.DIALOG: SettingsDialog}
# what the docs write for a Textual key name (letters and ctrl+… are written as they are)
WRITTEN = {"enter": "Enter", "escape": "Escape", "space": "space", "slash": "/", "question_mark": "?",
           "plus": "+", "equals_sign": "=", "minus": "-", "left": "←", "right": "→", "up": "↑", "down": "↓",
           "shift+left": "shift+←", "shift+right": "shift+→", "pageup": "PageUp", "pagedown": "PageDown",
           "home": "Home", "end": "End"}
ALIASES = {"Esc": "Escape"}


def bindings(owner) -> list[tuple[str, str]]:
    """(key, action) of every binding a screen, widget or app class declares itself, one per key;
    ``app.`` dropped from the action (a screen's way to the app's)."""
    out = []
    for b in owner.__dict__.get("BINDINGS", []):
        for key in b.key.split(","):
            out.append((key.strip(), b.action.removeprefix("app.")))
    return out


def rows_for(screen: str, key: str, action: str) -> list[Key]:
    return [k for k in KEYS if screen in k.screens and key in k.keys and action in k.actions]


@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_every_binding_of_a_screen_is_a_row_of_the_key_table(screen):
    missing = [(key, action) for key, action in bindings(SCREENS[screen]) if not rows_for(screen, key, action)]
    assert not missing, f"{screen}: bound but not in netui/ui/keys.py: {missing}"


@pytest.mark.parametrize("row", KEYS, ids=lambda k: k.shown)
def test_every_action_of_a_row_is_bound_to_its_keys_where_it_says(row):
    bound = {(key, action) for screen in row.screens for key, action in bindings(SCREENS[screen])}
    if row.actions == ("command_palette",):  # Textual's own binding
        bound = {(App.COMMAND_PALETTE_BINDING, "command_palette")}
    for action in row.actions:
        assert any((key, action) in bound for key in row.keys), (row.shown, action)
    for key in row.keys:  # and no key it names is bound to something else only
        assert not row.screens or any((key, action) in bound for action in row.actions) or \
            any(key in other.keys for other in KEYS if other is not row), (row.shown, key)


def key_table(path: Path) -> list[tuple[str, str]]:
    """(keys cell, description) of each row of the first table under the file's "## Keys"."""
    text = path.read_text(encoding="utf-8").split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and cells[0] not in ("key", "---"):
            rows.append((cells[0], "|".join(cells[1:])))
    assert rows, f"no key table under ## Keys in {path.name}"
    return rows


def written_keys(cell: str) -> list[str]:
    """The keys of a table's first cell: "t / T" → t, T; "x, ← / →, n / N" → x, ←, →, n, N."""
    if cell.strip() == "/":
        return ["/"]
    tokens = [t for t in re.split(r",\s*|\s+/\s+|\s+", cell) if t]
    return [ALIASES.get(t, t) for t in tokens]


def rows_written(token: str) -> list[Key]:
    return [k for k in KEYS if token in written_keys(k.shown) or token in (WRITTEN.get(n, n) for n in k.keys)]


@pytest.mark.parametrize("doc", ["README.md", "docs/watching.md"])
def test_every_documented_key_exists_and_does_what_the_doc_says(doc):
    wrong = []
    for cell, words in key_table(ROOT / doc):
        for token in written_keys(cell):
            rows = rows_written(token)
            if not rows:
                wrong.append(f"{token}: no such key in netui/ui/keys.py")
            elif not any(all(w.lower() in words.lower() for w in row.words) for row in rows):
                says = " or ".join(repr(row.words) for row in rows)
                wrong.append(f"{token}: the doc's words {words!r} do not say {says}")
    assert not wrong, "\n".join(wrong)


def test_every_key_of_the_cluster_screen_is_in_the_watching_docs_key_table():
    rows = key_table(ROOT / "docs" / "watching.md")
    documented = {t for cell, _ in rows for t in written_keys(cell)}
    text = " ".join(words for _, words in rows)
    missing = []
    for owner in (NetuiApp, ClusterScreen, FleetGrid):
        for key, _ in bindings(owner):
            written = WRITTEN.get(key, key)
            if written not in documented and not re.search(rf"(?<![\w+]){re.escape(written)}(?![\w+])", text):
                missing.append(written)
    assert not missing, f"bound on the cluster screen, not in docs/watching.md's key table: {missing}"
