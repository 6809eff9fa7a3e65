"""The keys of less, k9s and htop for the screens that are one scrolling text: j/k a line,
space/b (or PageDown/PageUp, ctrl+f/ctrl+b) a page, g/G (Home/End) the top and the end.

A burst of keys (tmux send-keys, a held key, a paste) can arrive before a new screen's first
layout, when its scroll box does not know yet how far it scrolls: Textual's own scroll keys
are skipped then. ``scroll_by`` keeps where the keys asked to go and applies it once the box
is laid out, so that every key counts.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.widget import Widget

TOP, END = -1e9, 1e9

# for a screen whose scroll box is not focusable (help, ring order): every key is the screen's
LESS_KEYS = [
    Binding("down,j", "scroll_lines(1)", "Down", show=False),
    Binding("up,k", "scroll_lines(-1)", "Up", show=False),
    Binding("pagedown,space,ctrl+f", "scroll_pages(1)", "Page down", show=False),
    Binding("pageup,b,ctrl+b", "scroll_pages(-1)", "Page up", show=False),
    Binding("home,g", f"scroll_lines({TOP})", "Top", show=False),
    Binding("end,G", f"scroll_lines({END})", "End", show=False),
]

_wanted: WeakKeyDictionary[Widget, float] = WeakKeyDictionary()
_LAYOUT_WAITS = 20  # refreshes a box may take to be laid out before the keys give up


def page_lines(box: Widget) -> int:
    """A page of ``box``: its height less a line of context (the app's height before layout)."""
    height = box.scrollable_content_region.height or box.app.size.height - 4
    return max(1, height - 1)


def scroll_by(box: Widget, lines: float) -> None:
    """Move ``box``'s view ``lines`` lines (TOP, END: all the way), counted from where the keys
    pressed before it asked to go, laid out or not yet."""
    base = _wanted.get(box, box.scroll_target_y)
    _wanted[box] = max(0.0, base + lines)
    box.call_after_refresh(_apply, box, _LAYOUT_WAITS)


def _apply(box: Widget, waits: int) -> None:
    wanted = _wanted.get(box)
    if wanted is None:
        return
    if not (box.size.height and box.virtual_size.height) and waits > 0:  # not laid out yet
        box.call_after_refresh(_apply, box, waits - 1)
        return
    del _wanted[box]
    box.scroll_to(y=min(wanted, box.max_scroll_y), animate=False, force=True)


def scroll_box(screen, focused: Widget | None) -> Widget | None:
    """What j/k scroll on ``screen``: the focused widget or the nearest of its containers that
    scrolls, else the screen's first scroll box."""
    node = focused
    while isinstance(node, Widget) and node is not screen:
        if isinstance(node, ScrollableContainer) or node.allow_vertical_scroll:
            return node
        node = node.parent
    return next(iter(screen.query(ScrollableContainer)), None)
