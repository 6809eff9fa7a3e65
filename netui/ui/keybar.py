"""The footer of the cluster screen: what the keys do, k9s/htop style, as many as fit.

Textual's Footer shows every binding in one line and cuts what does not fit, wherever it
falls. This one takes the bindings in the order they are declared (the screen's first: most
important first), keeps those that fit the width, and always keeps the ``PINNED`` ones (help
and quit) at the end. A screen may hide bindings that mean nothing now (``footer_hides``:
RDMA tests on a fleet without RDMA, say) while their keys go on working. Live labels come
from pairs of bindings on one key whose ``check_action`` lets one through (``p`` Pause or
Resume): ``refresh_bindings()`` after the state changes.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PINNED = ("question_mark", "q")


class KeyFooter(Footer):
    def __init__(self, **kwargs) -> None:
        super().__init__(compact=True, show_command_palette=False, **kwargs)
        self._width = 0

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        hides = getattr(self.screen, "footer_hides", None)
        seen: set[str] = set()
        shown = []
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen or (hides is not None and hides(binding)):
                continue
            seen.add(binding.action)
            shown.append((binding, enabled, tooltip))
        pinned = sorted((b for b in shown if b[0].key in PINNED), key=lambda b: PINNED.index(b[0].key))
        rest = [b for b in shown if b[0].key not in PINNED]

        def cells(binding) -> int:  # "k Label" and the blank after it (compact)
            return cell_len(self.app.get_key_display(binding)) + 1 + cell_len(binding.description) + 1

        room = (self._width or self.app.size.width) + 1 - sum(cells(b) for b, _, _ in pinned)
        keep = []
        for item in rest:
            need = cells(item[0])
            if need > room:
                break  # most important first: a less important key never takes a place before it
            room -= need
            keep.append(item)
        for binding, enabled, tooltip in keep + pinned:
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                            disabled=not enabled, tooltip=tooltip or binding.tooltip).data_bind(
                compact=Footer.compact)

    def on_resize(self, event) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            self.call_after_refresh(self.recompose)
