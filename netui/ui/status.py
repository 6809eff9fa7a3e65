"""The one-line status bar at the top of every screen.

On the left what the fleet is doing (node counts, the straggler, totals, the interval); on
the right the badges of netui's own state — ● REC, PAUSED, FILTER, the units, the sort, the
marked count — which long text can never push out: the left part gives way first. Where it
is short of room it leaves out the interval, then the totals, then the node count, then the
straggler's numbers; the straggler's name goes last (cut with …). Without a straggler, the
probe mesh's suspect takes its place ("lossy node3 link: 2.10% of 1,200 probes lost"). While recording, ● REC
and the file's size are the badge; the file's name is in the toast that starts it, in help
(?) and in the command palette, not here.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from netui.model import units
from netui.model.node import NodeState
from netui.ui.why import mesh_loss_text, mesh_words, straggler_short

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
        self._lefts: list[Text] = [Text()]
        self._badges = Text()
        self._form: int | None = None  # which of the fleet's texts was shown last

    def update_from(self, app, *, sort: str | None = None, filter: str | None = None, title: str | None = None,
                    totals: bool = True, marked: int = 0) -> None:
        """``totals``: show cluster RX/TX (the cluster screen has its own totals row);
        ``sort`` ("▼worst first"), ``filter``, ``marked``: the grid's, as badges (the cluster
        screen)."""
        self._lefts = self._fleet_texts(app, title=title, totals=totals)
        self._badges = self._badge_text(app, sort=sort, filter=filter, marked=marked)
        self.set_class(app.paused, "-paused")
        self._show()

    def on_resize(self) -> None:
        self._show()

    def _show(self) -> None:
        width = self.content_size.width
        badges = self._badges
        room = width - badges.cell_len - 1 if width else 10_000
        form = next((i for i, t in enumerate(self._lefts[:-1]) if t.cell_len <= room), None)
        last = self._form
        if (form is not None and last is not None and form < last < len(self._lefts) - 1
                and self._lefts[form].cell_len > room - REGROW_CELLS):
            # a shorter form was shown: the longer one comes back only with room to spare, so
            # a badge a cell wider or narrower (the REC size growing) does not switch them each tick
            form = last
        self._form = form
        text = self._lefts[form].copy() if form is not None else _fitting(self._lefts, room)
        if width:
            text.pad_right(max(0, width - text.cell_len - badges.cell_len))
        else:
            text.append(" ")
        text.append_text(badges)
        if text != self.content:  # most ticks change nothing here
            self.update(text, layout=False)  # one line, always: no layout pass, which repaints every widget

    @staticmethod
    def _fleet_texts(app, *, title: str | None, totals: bool) -> list[Text]:
        """The fleet's text, most complete first, each shorter than the one before: what is
        left out first is the interval, then the totals, then "netui" and the node count
        (the Σ line has it), and the straggler's numbers last — its name stays."""
        fleet = app.fleet
        theme = app.theme_variables
        by_state = fleet.count_by_state()
        counts = Text()
        for i, (state, count) in enumerate(by_state.items()):
            if i:
                counts.append(", ")
            color = theme.get("success") if state is NodeState.UP else (
                theme.get("warning") if state.waiting else theme.get("error"))
            counts.append(f"{count} {state.value}", style=color or "")
        head = Text()
        head.append("netui", style="bold")
        if title:
            head.append(f" {title}", style="bold")
        head.append(f" {len(fleet)} node{'s' if len(fleet) != 1 else ''}: ")
        head.append_text(counts)
        short_head = Text(f"{title} ", style="bold") if title else Text()
        short_head.append_text(counts)
        # the fewest cells: how many of them are up ("3/5 up"), in the colour of the worst state
        up = by_state.get(NodeState.UP, 0)
        least = Text(f"{title} ", style="bold") if title else Text()
        least.append(f"{up} up" if up == len(fleet) else f"{up}/{len(fleet)} up",
                     style=counts.spans[-1].style if counts.spans else "")
        middle = Text()
        if app.monitor.mode.replay:
            from netui.ui.timeline import play_state

            middle.append(f" │ replay {play_state(app.monitor)}", style="bold")
        recorder = app.monitor.recorder
        if recorder is not None and recorder.error:  # while it records, the ● REC badge says so
            middle.append(f" │ recording stopped: {recorder.error}", style=theme.get("error") or "")
        sums = Text()
        if totals:
            rx, tx = fleet.totals()
            as_bytes = app.grid_options.as_bytes
            sums.append(f" │ RX {units.bits_per_s(rx, as_bytes=as_bytes)}"
                        f" TX {units.bits_per_s(tx, as_bytes=as_bytes)}")
        every = Text(f" │ every {app.monitor.interval_s:g}s")
        straggler, named = Text(), Text()
        plank = _short_plank(fleet)
        if plank is not None:
            style = f"bold {theme.get('warning', '')}".strip()
            lead, name, words, brief, count = plank
            more = f" (+{count - 1})" if count > 1 else ""
            named = Text(f" │ {lead} {name}{more}", style=style)
            straggler = Text(f" │ {lead} {name}{more}: {words}", style=style)
            # the Why column's words for it: its numbers whole where the sentence would be cut
            briefly = Text(f" │ {lead} {name}{more}: {brief}", style=style)
        elif (note := mesh_note(fleet)) is not None:  # nothing named: the mesh's own state, when it has one
            style = f"bold {theme.get('warning', '')}".strip()
            straggler = Text(f" │ mesh: {note[0]}", style=style)
            briefly = named = Text(f" │ mesh: {note[1]}", style=style)
        else:
            briefly = straggler
        return [Text.assemble(head, middle, sums, every, straggler), Text.assemble(head, middle, sums, straggler),
                Text.assemble(head, middle, straggler), Text.assemble(short_head, middle, straggler),
                Text.assemble(least, middle, straggler), Text.assemble(short_head, middle, briefly),
                Text.assemble(least, middle, briefly), Text.assemble(least, middle, named)]

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


def _short_plank(fleet) -> tuple[str, str, str, str, int] | None:
    """What the status bar names as the short plank: (its kind's word, its name, its numbers,
    the same in the Why column's few words, how many planks there are); None when there is
    none. A fabric suspect first: the nodes it slows are its victims, so the stragglers left
    are other faults. Then a straggler, measured on the job's own traffic; then the probe
    mesh's suspect ("lossy node3 link"): where probes are lost, which may slow nothing yet."""
    mesh = fleet.mesh_suspects
    planks = len(fleet.fabric_suspects) + len(fleet.stragglers) + len(mesh)
    if not planks:
        return None
    if fleet.fabric_suspects or fleet.stragglers:
        if fleet.fabric_suspects:
            first = fleet.fabric_suspects[0]
            name, brief = first.name, first.short
        else:
            first = fleet.stragglers[0]
            name = first.node
            node = fleet.nodes.get(name)
            brief = straggler_short(node) if node is not None and node.straggler is not None else ""
        words = (first.headline or first.reason).removeprefix(f"{name}: ")
        return "straggler", name, words, brief or words, planks
    lossy = mesh[0]
    return "lossy", lossy.name, mesh_words(lossy), mesh_loss_text(lossy), planks


NONE_ANSWERED = "no node answered any probe: is UDP blocked between the nodes?"


def mesh_note(fleet) -> tuple[str, str] | None:
    """The probe mesh's state when it is no fault to name, in words and in few: no node's
    probe ever answered (UDP blocked between the nodes: a firewall, said once, of the fleet);
    else the nodes never answered (UDP blocked at them). None otherwise."""
    verdict = fleet.mesh_verdict
    if verdict is None:
        return None
    if verdict.none_answered:
        return NONE_ANSWERED, "no answer (UDP blocked?)"
    blocked = sorted((m.node for m in verdict.nodes.values() if m.blocked), key=units.name_key)
    if not blocked:
        return None
    first = blocked[0] + (f" (+{len(blocked) - 1})" if len(blocked) > 1 else "")
    return f"{first} never answered: UDP blocked at {'it' if len(blocked) == 1 else 'them'}?", f"{first} UDP blocked?"


REGROW_CELLS = 3  # spare cells a longer form of the fleet's words needs to come back


def _fitting(texts: list[Text], room: int) -> Text:
    """The first of ``texts`` (longest first) that fits in ``room`` cells; else the one
    before the last cut with … where the last fits whole in what is left of it (the last
    holds what must stay, the one before it more of the same words); else the last, cut."""
    for text in texts[:-1]:
        if text.cell_len <= room:
            return text.copy()
    last = texts[-1]
    if last.cell_len == room:
        return last.copy()
    text = (texts[-2] if len(texts) > 1 and last.cell_len < room else last).copy()
    text.truncate(max(room, 0), overflow="ellipsis")
    return text


def recording_words(recorder) -> str:
    """"recording to /path/netui-….ndjson.gz (13.2 kB)": where a running recording goes, for
    help (?) and the command palette (the status bar has ● REC and the size)."""
    return f"recording to {recorder.path} ({units.si(recorder.size_bytes, 'B')})"
