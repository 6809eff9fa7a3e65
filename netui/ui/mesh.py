"""The probe mesh screen (m in the grid): what every node's probes of the others settled over the
mesh's window, live — a heatmap of loss (m: RTT p99), rows probe and columns answer, leaf by
leaf with a topology; the parts of the network the mesh names (held, as the grid shows them),
then the worst pairs. The figures and the judgement are the model's (model/mesh.py,
``Fleet.mesh_verdict``); this only lays them out.
"""

from __future__ import annotations

from statistics import median

from rich.cells import cell_len
from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from netui.model import units
from netui.model.health import Level
from netui.model.mesh import MIN_PROBES, UNANSWERED_PROBES, MeshVerdict, PairMesh, loss_level
from netui.model.topology import leaf_sections
from netui.ui.base import NetuiScreen
from netui.ui.flows import rtt_text
from netui.ui.matrix import matrix_table
from netui.ui.render import LEVEL_VARIABLES
from netui.ui.status import StatusBar
from netui.ui.timeline import Timeline
from netui.ui.why import blocked_words, mesh_words

METRICS = ("loss", "rtt")
METRIC_LABELS = {"loss": "loss", "rtt": "RTT p99"}
CELL = 7  # a cell: "100.00%", "0.25ms"
LABEL = 12  # a row's node name, at most

# an RTT p99 cell's level: its share of the mesh's typical p99 (the median of the pairs' p99:
# a tail against the others' tails, since a busy host's p99 is many times its p50 on every
# pair), and only when it is also RTT_MIN_EXCESS_US above it (scheduling jitter is no fault)
RTT_LEVELS = ((20.0, Level.CRITICAL), (5.0, Level.WARNING), (2.0, Level.CAREFUL))
RTT_MIN_EXCESS_US = 1000.0

OFF = ("The probe mesh is off: it shows the packet loss between every two nodes watched over SSH, on unless "
       "--mesh off or config.toml's mesh = \"off\" turns it off, or more than 1,024 nodes are watched over SSH "
       "(--mesh on turns it on).")
NO_PROBERS = ("The probe mesh is off: it needs two or more nodes watched over SSH, whose samplers probe each other "
              "over UDP; {} watched over SSH.")
OFF_REPLAY = "This recording has no probe mesh: it was made with the mesh off."
WAITING_REPLAY = "This recording has the probe mesh; no readings yet at this point of it."
NONE_ANSWERED_SCREEN = (
    f"No node answered any probe: is UDP blocked between the nodes? Each node probes its peers over UDP, on a "
    f"port the kernel chooses, at the address it was reached at over SSH; a firewall between them, or on every "
    f"host, drops the probes (docs/mesh.md). Nothing is named: a probe never answered is no loss.")
WAITING = (f"The probe mesh is on; no readings yet. Each node probes every other every few seconds; a pair's "
           f"loss shows once it has {MIN_PROBES} probes in the window.")


def rtt_cell(us: float | None) -> str:
    """An RTT in µs as a cell shows it: "0.25ms"."""
    return rtt_text(None if us is None else us / 1e6).replace(" ", "")


def rtt_level(p99_us: float | None, typical_us: float | None) -> Level | None:
    """An RTT p99 cell's level against the mesh's typical p99 (``RTT_LEVELS``, ``RTT_MIN_EXCESS_US``)."""
    if p99_us is None or not typical_us:
        return None
    if p99_us - typical_us < RTT_MIN_EXCESS_US:
        return Level.OK
    share = p99_us / typical_us
    return next((level for times, level in RTT_LEVELS if share >= times), Level.OK)


def worst_first(pairs: dict[tuple[str, str], PairMesh], metric: str) -> list[PairMesh]:
    """The pairs, the lossiest (``metric`` "loss") or slowest (RTT p99) first; those without a
    figure last, by name."""
    def key(p: PairMesh) -> tuple:
        value = p.loss if metric == "loss" else (p.p99_us if p.enough else None)
        second = p.p99_us or 0.0
        return (value is None, -(value or 0.0), -second, units.name_key(p.prober), units.name_key(p.target))
    return sorted(pairs.values(), key=key)


class MeshScreen(NetuiScreen):
    """The probe mesh: the heatmap, the suspects, the worst pairs."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("m", "cycle_metric", "Loss/RTT"),
    ]
    DEFAULT_CSS = """
    MeshScreen #mesh-body { height: 1fr; }
    MeshScreen #mesh-heat { height: auto; padding: 0 1; }
    MeshScreen #mesh-suspects { height: auto; padding: 0 1; }
    MeshScreen #mesh-worst { height: auto; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.metric = METRICS[0]

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with VerticalScroll(id="mesh-body"):
            yield Static(id="mesh-heat")
            yield Static(id="mesh-suspects")
            yield Static(id="mesh-worst")
        yield Timeline(id="timeline")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Timeline).display = self.app.replay
        self.refresh_data()

    def on_resize(self, event) -> None:
        self.refresh_data()

    def action_cycle_metric(self) -> None:
        self.metric = METRICS[(METRICS.index(self.metric) + 1) % len(METRICS)]
        self.refresh_data()

    def refresh_data(self) -> None:
        app = self.app
        fleet = app.fleet
        self.query_one(StatusBar).update_from(app, title=f"› mesh: {METRIC_LABELS[self.metric]}")
        if app.replay:
            self.query_one(Timeline).show(app.monitor)
        heat = self.query_one("#mesh-heat", Static)
        suspects = self.query_one("#mesh-suspects", Static)
        worst = self.query_one("#mesh-worst", Static)
        verdict: MeshVerdict | None = fleet.mesh_verdict
        if verdict is not None and verdict.none_answered and not (verdict.pairs or verdict.probed):
            heat.update(Text(NONE_ANSWERED_SCREEN, style=f"bold {app.theme_variables.get('warning', '')}".strip()))
            suspects.update(Text("no suspect: a probe never answered is no loss, and names no part of the network",
                                 style="dim"))
            worst.update("")
            return
        if verdict is None or not (verdict.pairs or verdict.probed):
            on = verdict is not None or app.monitor.mesh_on  # (a replay: its first readings still to come)
            waiting = WAITING_REPLAY if app.replay else WAITING
            off = OFF_REPLAY if app.replay else OFF if app.monitor.mesh_probers >= 2 else NO_PROBERS.format(
                "only one node here is" if app.monitor.mesh_probers else "no node here is")
            heat.update(Text(waiting if on else off, style="dim" if on else "bold"))
            suspects.update("")
            worst.update("")
            return
        involved = verdict.nodes.keys()
        names, sections = leaf_sections(fleet.topology_for([n.name for n in fleet if n.name in involved]),
                                        [n.name for n in fleet if n.name in involved])
        width = max(20, self.size.width - 2)
        shown = self._fitting(names, sections, width)
        heat.update(self._heatmap(verdict, shown, {n: leaf for n, leaf in sections.items() if n in shown},
                                  len(names) - len(shown)))
        suspects.update(self._suspects(fleet.mesh_suspects, verdict))
        rows = max(3, self.size.height - len(shown) - len(sections) - 10)
        worst.update(self._worst(verdict, rows))

    @staticmethod
    def _fitting(names: list[str], sections: dict[str, str], width: int) -> list[str]:
        """The first nodes whose columns fit in ``width`` cells (a leaf's rule takes two)."""
        label = min(LABEL, max((cell_len(n) for n in names), default=0)) + 1
        used = label
        out: list[str] = []
        for n in names:
            need = CELL + 1 + (2 if n in sections and out else 0)
            if used + need > width:
                break
            used += need
            out.append(n)
        return out

    def _style(self, level: Level | None) -> Style:
        """A cell in its level's colour from the theme (its background, the text in contrast)."""
        if level is None:
            return Style()
        var = self.app.theme_variables.get(LEVEL_VARIABLES[level])
        if not var:
            return Style()
        back = Color.parse(var)
        return Style(bgcolor=back.rich_color, color=back.get_contrast_text().rich_color, bold=level >= Level.WARNING)

    def _heatmap(self, verdict: MeshVerdict, names: list[str], sections: dict[str, str], more: int) -> Group:
        muted = Style(dim=True)
        pairs = verdict.pairs
        typical = median([p.p99_us for p in pairs.values() if p.p99_us is not None and p.enough] or [0.0])
        rtt = self.metric == "rtt"

        few = verdict.unkept > 0 and verdict.nodes.keys()  # pairs of a probe or two, kept as counts only

        unanswered = Style(bold=True, color=self.app.theme_variables.get("warning") or None)

        def cell(a: str, b: str) -> Text:
            if verdict.unanswered_pair(a, b):  # never answered: UDP blocked between them, not a loss
                return Text("×", style=unanswered)
            p = pairs.get((a, b))
            if p is None:  # no probe in the window, or too few and none lost
                return Text("·", style=muted) if few and a in few and b in few else Text("")
            if not p.enough:
                return Text("·", style=muted)
            if rtt:
                return Text(rtt_cell(p.p99_us), style=self._style(rtt_level(p.p99_us, typical)))
            return Text(units.ratio_percent(p.loss), style=self._style(loss_level(p.loss)))

        table = matrix_table(names, "probe ↓ answer →", CELL, cell, muted, sections or None, diagonal="")
        what = (f"RTT p99 on the prober's clock, coloured against the pairs' median p99 {rtt_cell(typical)}" if rtt
                else "probes lost")
        window = f"{verdict.window_s:.0f} s"
        never = f" · \"×\" never answered (UDP blocked?)" if verdict.unanswered else ""
        legend = (f"{what}, over {window} · \"·\" fewer than {MIN_PROBES} probes{never} · m: "
                  f"{'loss' if rtt else 'RTT p99'}" + (f" · {more} more nodes: see the pairs below" if more else ""))
        return Group(table, Text(legend, style=muted))

    def _suspects(self, held, verdict: MeshVerdict) -> Text:
        out = Text()
        named = {s.name for s in held}
        for s in held:
            out.append("lossy ", style=f"bold {self.app.theme_variables.get('warning', '')}".strip())
            out.append(f"{s.name}: {mesh_words(s)}\n")
        for s in verdict.suspects:
            if s.name not in named:
                out.append(f"judged now, named if it holds: {s.name}: {mesh_words(s)}\n", style="dim")
        if not out:
            out.append("no suspect: no part of the network loses beyond chance against the rest\n", style="dim")
        # never answered: no loss, named nowhere above; said as what it likely is
        warn = f"bold {self.app.theme_variables.get('warning', '')}".strip()
        for m in sorted((m for m in verdict.nodes.values() if m.blocked), key=lambda m: units.name_key(m.node)):
            out.append("no answer ", style=warn)
            out.append(f"{m.node}: {blocked_words(m)}\n")
        if verdict.unanswered:
            out.append(f"{verdict.unanswered:,} pairs never answered in {UNANSWERED_PROBES} probes or more "
                       f"(UDP blocked between them? not counted as loss)\n", style="dim")
        return out

    def _worst(self, verdict: MeshVerdict, rows: int) -> Text:
        ordered = worst_first(verdict.pairs, self.metric)
        what = "most loss first" if self.metric == "loss" else "longest RTT p99 first"
        out = Text(f"worst pairs ({what})", style="bold")
        width = max((cell_len(p.prober) + cell_len(p.target) for p in ordered[:rows]), default=0) + 3
        for p in ordered[:rows]:
            out.append("\n" + f"{p.prober} → {p.target}".ljust(width) + "  ")
            loss = units.ratio_percent(p.loss) if p.enough else "—"
            out.append(f"loss {loss:>6}  {p.counts.probes:>5,} probes  p50 {rtt_text(_s(p.p50_us))}  "
                       f"p99 {rtt_text(_s(p.p99_us))}")
            if not p.enough:
                out.append("  (too few probes)", style="dim")
        if len(ordered) > rows:
            out.append(f"\n… {len(ordered) - rows} more pairs", style="dim")
        if verdict.unkept:
            out.append(f"\n… and {verdict.unkept:,} pairs of fewer than {MIN_PROBES} probes, none lost", style="dim")
        return out


def _s(us: float | None) -> float | None:
    return None if us is None else us / 1e6
