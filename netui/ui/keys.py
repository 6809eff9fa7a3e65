"""Every key netui knows, declared once: what the help screen (?) lists, in its order, with
the Textual keys and actions each row stands for and the screens that bind them.

The screens keep their own ``BINDINGS``: their order is the footer's and their labels are
live (``p Pause`` / ``p Resume``, chosen by ``check_action``), which a help row does not
say. tests/unit/test_keys.py holds the two together — every binding of every screen is a
row of this table and every row's action is bound where it says — and holds README.md's and
docs/watching.md's key tables to it (``words``: what any description of the key says).

A registered check with a key (netui/checks/__init__.py) that no row here runs by hand gets
its row from its ``Check`` (``check_rows``), and the cluster screen its binding from that row:
``rows()`` is the help screen's table, these rows and theirs."""

from __future__ import annotations

from dataclasses import dataclass

from netui import checks
from netui.ui.scrolling import END, TOP

# the screens that bind keys, by the names used below
APP, CLUSTER, GRID, NODE, FLOWS, MESH, HELP, RING, TEST, DOCTOR, DIALOG = (
    "app", "cluster", "grid", "node", "flows", "mesh", "help", "ring", "test", "doctor", "dialog")


@dataclass(frozen=True)
class Key:
    """One row of the help screen. ``shown``: the keys as help and the docs write them;
    ``keys``: the Textual key names bound; ``actions``: the actions they run (as the
    bindings name them, without ``app.``); ``screens``: where they are bound; ``words``: what
    a description of the row must say; ``help``: the help screen's words; ``check``: the
    name of the registered check whose key the row binds by hand."""

    shown: str
    keys: tuple[str, ...]
    actions: tuple[str, ...]
    screens: tuple[str, ...]
    words: tuple[str, ...]
    help: str
    check: str = ""


KEYS = (
    Key("Enter", ("enter",), ("open_node",), (CLUSTER,), ("open",),
        "open the selected node"),
    Key("Escape", ("escape",), ("escape", "pop_screen", "back", "dismiss", "cancel"),
        (CLUSTER, NODE, FLOWS, MESH, TEST, DOCTOR, HELP, RING, DIALOG),
        ("unmark", "filter", "back"),
        "back to the cluster / unmark the marked nodes, then clear the filter"),
    Key("s", ("s",), ("cycle_sort",), (CLUSTER,), ("sort",),
        "cycle the sort order (worst first, node, RX, TX, drops, …)"),
    Key("/", ("slash",), ("filter",), (CLUSTER,), ("filter",),
        "filter nodes by name or state"),
    Key("b", ("b",), ("bytes", "bits"), (APP, CLUSTER, FLOWS), ("bits/s", "bytes/s"),
        "bits/s ↔ bytes/s (the badge on the right of the status bar says which)"),
    Key("a", ("a",), ("all_ifaces", "data_ifaces"), (APP,), ("hidden interfaces",),
        "node screens: show the hidden interfaces too (loopback, veth, bridges …) or the data "
        "plane only; the grid always counts the data plane"),
    Key("p", ("p",), ("pause", "resume", "play"), (APP, CLUSTER), ("pause",),
        "pause / resume the display (sampling goes on)"),
    Key("+ / -", ("plus", "equals_sign", "minus"), ("slower", "faster"), (APP,), ("sampling interval",),
        "longer / shorter sampling interval"),
    Key("space", ("space",), ("mark",), (CLUSTER,), ("mark",),
        "mark / unmark the node under the cursor (for pair tests, latency, doctor)"),
    Key("M / U", ("M", "U"), ("mark_all", "unmark_all"), (CLUSTER,), ("mark every node", "unmark all"),
        "mark every node shown (the filter's) / unmark all"),
    Key("t / T", ("t", "T"), ("pair_test('iperf3')", "pair_matrix('iperf3')"), (CLUSTER,), ("iperf3",),
        "iperf3: the 2 marked nodes, one way / all pairs of the marked (or all), both ways", check="pairs"),
    Key("r / R", ("r", "R"), ("pair_test('ib_write_bw')", "pair_matrix('ib_write_bw')"), (CLUSTER,),
        ("ib_write_bw",),
        "the same with ib_write_bw (RDMA)"),
    Key("l", ("l",), ("run_check('latency')",), (CLUSTER,), ("latency",),
        "latency: RTT and loss, every marked node (or all) pinging every other", check="latency"),
    Key("e / Esc", ("e", "escape"), ("export", "back"), (TEST,), ("export csv and json",),
        "pair or latency test: export CSV and JSON / cancel it, then back"),
    Key("P", ("P", "m"), ("peers", "cycle_metric"), (CLUSTER, FLOWS), ("peer matrix",),
        "peer matrix: the TCP flows between watched nodes as a heatmap (m: throughput, RTT, "
        "retransmits/s), the worst pairs listed below"),
    Key("m", ("m",), ("mesh", "cycle_metric"), (CLUSTER, MESH), ("probe mesh", "loss"),
        "probe mesh (on by default over SSH up to 1,024 nodes; --mesh off|on): the loss between every two "
        "nodes as a heatmap (m on its screen: loss ↔ RTT p99), the worst pairs and the mesh's suspects below"),
    Key("D", ("D", "r"), ("run_check('doctor')", "rerun"), (CLUSTER, DOCTOR), ("doctor",),
        "doctor: MTU, link speeds, RDMA ports, sysctls … of the marked (or all); r on its screen "
        "runs it again", check="doctor"),
    Key("o", ("o",), ("ring_order", "dismiss"), (CLUSTER, RING), ("ring order",),
        "ring order (with --topology or --slurm): switch crossings of a ring through the marked "
        "(or all) in the order watched, and a topology-ordered list"),
    Key("g", ("g",), ("group",), (CLUSTER,), ("group", "leaf switch"),
        "group by leaf switch (with --topology or --slurm): a row per leaf — its nodes' RX/TX summed, "
        "how many are up, the worst health, its uplink's load bounded from host counters — with its "
        "nodes below; g again: the leaf rows alone; again: one row per node. space on a leaf row "
        "marks its nodes"),
    Key("w", ("w",), ("record", "stop_recording"), (APP, CLUSTER), ("record",),
        "record to netui-<time>.ndjson.gz here / stop (● REC in the status bar)"),
    Key("ctrl+r", ("ctrl+r",), ("retry",), (CLUSTER,), ("again",),
        "try a node that is down again now (the cursor's, the marked, or all waiting)"),
    Key("x", ("x",), ("cycle_speed",), (APP,), ("replay", "speed"),
        "replay (netui replay FILE): speed 1×, 10×, 60×; p pauses"),
    Key("← / →", ("left", "right", "shift+left", "shift+right"), ("seek(-10)", "seek(10)", "seek(-60)", "seek(60)"),
        (APP,), ("replay", "back", "forward"),
        "replay: back / forward 10 s (shift: 1 min); or click the timeline"),
    Key("n / N", ("n", "N"), ("next_event", "next_event('straggler')"), (APP,), ("replay", "next event", "straggler"),
        "replay: jump to the next event (state, health, straggler, test) / straggler"),
    Key("t T r R l", ("t", "T", "r", "R", "l"), (), (), ("replay", "test recorded"),
        "replay: the last pair or latency test recorded before this point"),
    Key("ctrl+p", ("ctrl+p",), ("command_palette",), (), ("command palette",),
        "command palette: every action by any word of it (straggler, suspect, jump, record …)"),
    Key("j / k", ("j", "k", "g", "G", "up", "down", "pageup", "pagedown", "ctrl+b", "ctrl+f", "home", "end",
                  "space", "b"),
        ("scroll_lines(1)", "scroll_lines(-1)", "scroll_lines(-1e9)", "scroll_lines(1e9)", f"scroll_lines({TOP})",
         f"scroll_lines({END})", "cursor_up",
         "cursor_down", "page_up", "page_down", "first", "last", "scroll_pages(1)", "scroll_pages(-1)"),
        (APP, GRID, HELP, RING), ("a row",),
        "down / up a row in the grid, a line here and on every screen that scrolls; G (End) the "
        "last row; here g / G, space / b: the top, the end, a page down / up, as in less"),
    Key("?", ("question_mark",), ("help", "dismiss"), (APP, HELP), ("help",),
        "this help"),
    Key("ctrl+z", ("ctrl+z",), ("suspend_process",), (APP,), ("suspend",),
        "suspend to the shell; fg brings netui back"),
    Key("q", ("q",), ("quit", "dismiss"), (APP, HELP, RING), ("quit",),
        "quit"),
)


# a key here is taken for the cluster screen: its own, its grid's (focused: they come first) and
# the app's; the keys of a row bound nowhere (ctrl+p: Textual's; the replay's t T r R l) too
_TAKEN_ON = {APP, CLUSTER, GRID}


def check_rows() -> list[Key]:
    """A row for each registered check with a key that no row of ``KEYS`` binds by hand, in
    registration order: its key runs ``run_check('<name>')`` on the cluster screen. A key
    netui binds already on the cluster screen raises ValueError, naming both."""
    hand = {k.check for k in KEYS if k.check}
    out = []
    for check in checks.all_checks():
        if not check.key or check.name in hand:
            continue
        taken = next((k for k in KEYS if check.key in k.keys and (not k.screens or _TAKEN_ON & set(k.screens))),
                     None)
        if taken is not None:
            raise ValueError(f"the {check.title}'s key {check.key!r} is netui's already "
                             f"({taken.shown}: {taken.help})")
        what = f"{check.title}: {check.description}" if check.description else check.title
        replay = "; in a replay, the last one recorded before this point" if check.recorded else ""
        out.append(Key(check.key, (check.key,), (f"run_check({check.name!r})",), (CLUSTER,), (check.title,),
                       f"{what} — over the marked nodes (or all){replay}", check=check.name))
    return out


def rows() -> list[Key]:
    """Every row of the help screen: ``KEYS``, with the registered checks' own rows after the
    last check's row there."""
    after = max(i for i, k in enumerate(KEYS) if k.check) + 1
    return [*KEYS[:after], *check_rows(), *KEYS[after:]]
