"""Why a node is not well, in a few words: the grid's Why column, short enough for 80 columns.

A node that is down says what failed and when it is tried again (``refused, retry 12s``,
counting down: the seconds come from the engine, ``Monitor.retry_in_s``); a straggler how
it compares with the cluster (``RX 12% of median``, ``idle 0% of median``); a node in bad
health its worst metric (``retr 2.10%``, ``drops 120/s``); a node whose probes the probe
mesh's suspect explains, that suspect (``lossy: node3 link 2.10%``, ``link loss 2.10%``).
``long_why`` is the same in more words, for a wide terminal.

The order, when several apply: a straggler's finding (measured on the job's own traffic), then
the mesh's suspect (where packets are lost), then what slows a victim, a slow link, health.
"""

from __future__ import annotations

from collections.abc import Callable

from netui.model import units
from netui.model.mesh import ABOVE, NODE, PAIR, PATH, UPLINK, MeshSuspect, NodeMesh
from netui.model.node import Node, NodeState, NodeTotals, without_countdown
from netui.model.straggler import Straggler


# a failure's reason → its short form (by prefix)
_SHORT_FAILURES = (
    ("connection refused", "refused"),
    ("connection timed out", "timed out"),
    ("connection lost", "conn lost"),
    ("host key changed", "host key changed"),
    ("host key unknown", "host key unknown"),
    ("authentication failed", "auth failed"),
    ("the sampler stopped", "sampler stopped"),
    ("bad data from the node", "bad data"),
    ("no route to host", "no route"),
    ("network is unreachable", "unreachable"),
)

# the states whose name says it all
_SELF_EXPLAINING = (NodeState.HOST_KEY_CHANGED, NodeState.HOST_KEY_UNKNOWN, NodeState.AUTH_FAILED)


def _reason(node: Node) -> str:
    """The failure's reason without the collector's "(retrying in N s)" (the countdown
    replaces it)."""
    return without_countdown(node.error or node.state.value)


def failure_short(node: Node) -> str:
    if node.state in _SELF_EXPLAINING:
        return node.state.value
    reason = _reason(node)
    lower = reason.lower()
    for prefix, short in _SHORT_FAILURES:
        if lower.startswith(prefix):
            return short
    return reason


def _retry_text(retry_in_s: float | None, *, short: bool) -> str:
    if retry_in_s is None:
        return ""
    seconds = max(0, round(retry_in_s))
    if short:
        return ", retry now" if seconds == 0 else f", retry {seconds}s"
    return ", retrying now" if seconds == 0 else f", retry in {seconds} s"


# metric → (its value in the summary, its short words): the worst of them says why
_METRICS: tuple[tuple[str, Callable[[NodeTotals], float | None], Callable[[float, NodeTotals], str]], ...] = (
    ("retrans_ratio", lambda s: s.retrans_ratio, lambda v, s: f"retr {units.ratio_percent(v)}"),
    ("drops_per_s", lambda s: s.drops_per_s, lambda v, s: f"drops {units.per_s(v)}/s"),
    ("errors_per_s", lambda s: s.errors_per_s, lambda v, s: f"errors {units.per_s(v)}/s"),
    ("softirq_percent", lambda s: s.hottest_softirq_percent,
     lambda v, s: units.softirq(v, s.hottest_cpu, short=True)),
    ("link_percent", lambda s: s.max_link_percent, lambda v, s: f"link {v:.0f}% full"),
    ("softnet_drops_per_s", lambda s: s.softnet_drops_per_s, lambda v, s: f"backlog drops {units.per_s(v)}/s"),
    ("time_squeeze_per_s", lambda s: s.time_squeeze_per_s, lambda v, s: f"squeezed {units.per_s(v)}/s"),
    ("rdma_errors_per_s", lambda s: s.rdma_errors_per_s, lambda v, s: f"RDMA errors {units.per_s(v)}/s"),
    ("pause_per_s", lambda s: s.pause_per_s, lambda v, s: f"pause {units.per_s(v)}/s"),
)


def health_short(node: Node) -> str:
    """The worst metric past its threshold, in a few words; else the first health reason."""
    if node.health.level == 0:
        return ""
    s = node.summary
    best, best_level = "", 0
    for metric, value_of, words in _METRICS:
        value = value_of(s)
        if value is None:
            continue
        level = node.threshold(metric).level(value)
        if level > best_level:
            best, best_level = words(value, s), level
    if best and best_level >= node.health.level:
        return best
    return node.health.reasons[0] if node.health.reasons else node.health.label


SHORT_CELLS = 18  # the Why column's own width: what it shows whole at 80 columns

_LOW_LABELS = {"rx": "RX", "tx": "TX", "total": "traffic", "rdma_rx": "RDMA RX", "rdma_tx": "RDMA TX"}
_HIGH = {
    "retrans": ("retr", units.ratio_percent),
    "drops": ("drops", lambda v: f"{units.per_s(v)}/s"),
    "softirq": ("softirq", units.percent),
    "pause": ("pause", lambda v: f"{units.per_s(v)}/s"),
    "cnp": ("CNP", lambda v: f"{units.per_s(v)}/s"),
}


def _pairs_short(s: Straggler) -> str:
    """A pair test's suspect: the rate it got the way it is suspect in (bytes/s in ``value``)."""
    return f"pair test {units.bits_per_s(s.value)}" if s.value > 0 else "pair test suspect"


def straggler_short(node: Node, cells: int = SHORT_CELLS) -> str:
    """The straggler's finding in at most ``cells`` cells (SHORT_CELLS at least), for each of
    ``straggler.METRICS``: a low throughput as its share of the median, an excess with the
    median when that fits, a pair test's suspect with the rate it got."""
    s = node.straggler
    if s is None:
        return ""
    cells = max(cells, SHORT_CELLS)
    if s.metric in _LOW_LABELS:
        share = s.value / s.median * 100 if s.median else 100.0
        # idle only at nothing at all: a node ramping up at 36 Mb/s of a 10 Gb/s median is
        # "RX 0.4% of median", not idle
        label = "idle" if s.value <= 0 else _LOW_LABELS[s.metric]
        pct = f"{share:.1f}" if 0 < share < 1 else f"{share:.0f}"
        words = f"{label} {pct}% of median"
        return words if len(words) <= cells else f"{label} {pct}% of med"
    if s.metric == "pairs":
        return _pairs_short(s)
    if s.metric not in _HIGH:  # not one of METRICS: its headline, which the column cuts
        return (s.headline or s.reason).split(": ", 1)[-1]
    label, show = _HIGH[s.metric]
    for words in (f"{label} {show(s.value)}, med {show(s.median)}", f"{label} {show(s.value)} vs {show(s.median)}"):
        if len(words) <= cells:
            return words
    return f"{label} {show(s.value)}"


def victim_short(node: Node, cells: int = SHORT_CELLS) -> str:
    """"slowed by node3" for a node slowed by a straggler; "slowed: leaf2 uplink" where the
    whole words do not fit ``cells`` (what slows it is what to read); "" for any other."""
    v = node.victim
    words = v.cause or "" if v is not None else ""
    if len(words) > max(cells, SHORT_CELLS) and words.startswith("slowed by "):
        return "slowed: " + words.removeprefix("slowed by ")
    return words


def mesh_loss_text(s: MeshSuspect) -> str:
    """The pooled loss of the probes through a mesh suspect: "2.10%"."""
    return units.ratio_percent(s.through.loss)


def mesh_words(s: MeshSuspect) -> str:
    """A mesh suspect's figures: "2.10% of 1,200 probes lost, 0% elsewhere"."""
    elsewhere = s.elsewhere.loss
    tail = f", {units.ratio_percent(elsewhere)} elsewhere" if elsewhere is not None else ""
    return f"{mesh_loss_text(s)} of {s.through.probes:,} probes lost{tail}"


def mesh_short(node: Node, cells: int = SHORT_CELLS) -> str:
    """The mesh suspect that explains ``node``, in at most ``cells`` cells (SHORT_CELLS at
    least): "lossy: node3 link 2.10%", else in the row's own terms — "link loss 2.10%" (its own
    link), "loss ↔node3 2.10%" (the path to one node), "uplink loss 2.10%" (its leaf's uplink),
    "path loss 2.10%" (between two leaves), "spine loss 2.10%" (the switch above); "" for none."""
    s = node.mesh_suspect
    if s is None:
        return ""
    cells = max(cells, SHORT_CELLS)
    pct = mesh_loss_text(s)
    others = [n for n in s.nodes if n != node.name]
    own = {NODE: "link loss", PAIR: f"loss ↔{others[0]}" if others else "path loss", UPLINK: "uplink loss",
           PATH: "path loss", ABOVE: f"{s.name} loss"}.get(s.kind, "loss")
    for words in (f"lossy: {s.name} {pct}", f"{own} {pct}", f"loss {pct}"):
        if len(words) <= cells:
            return words
    return f"loss {pct}"


def mesh_long(node: Node) -> str:
    """The mesh suspect that explains ``node`` in words: "lossy: node3 link, 2.10% of 1,200
    probes lost, 0% elsewhere"; "" for none."""
    s = node.mesh_suspect
    return f"lossy: {s.name}, {mesh_words(s)}" if s is not None else ""


def blocked_words(m: NodeMesh) -> str:
    """A node whose mesh probes, or its peers' probes of it, were never answered (model/mesh.py
    ``NodeMesh.blocked``), in words: not a loss, UDP blocked at it."""
    if m.answers_none and m.answered_none:
        return f"no probe to or from it ever answered: UDP blocked at {m.node}? (its firewall)"
    if m.answers_none:
        return f"answers none of its peers' probes, its own are answered: UDP to {m.node} blocked? (its firewall)"
    return f"none of its probes ever answered, it answers its peers': UDP from {m.node} blocked?"


def mesh_blocked_long(node: Node) -> str:
    """``blocked_words`` of the node's mesh, "mesh: …"; "" for a node not blocked."""
    m = node.mesh
    return f"mesh: {blocked_words(m)}" if m is not None and m.blocked else ""


def mesh_blocked_short(node: Node, cells: int = SHORT_CELLS) -> str:
    """``mesh_blocked_long`` in at most ``cells`` cells: "mesh: UDP blocked?"; "" for none."""
    m = node.mesh
    if m is None or not m.blocked:
        return ""
    return "mesh: UDP blocked?" if cells >= 18 else "UDP blocked?"


def short_why(node: Node, retry_in_s: float | None = None, cells: int = SHORT_CELLS) -> str:
    """Why the node is not well, in about ``cells`` cells (the Why column's width); "" for
    a healthy node."""
    state = node.state
    if state is NodeState.CONNECTING:
        return ""
    if state is not NodeState.UP:
        return failure_short(node) + _retry_text(retry_in_s, short=True)
    return (straggler_short(node, cells) or mesh_short(node, cells) or victim_short(node, cells)
            or (node.slow_links[0] if node.slow_links else "") or health_short(node) or mesh_blocked_short(node, cells))


def long_why(node: Node, retry_in_s: float | None = None) -> str:
    """Every reason in words (a wide terminal); the retry countdown as ``short_why``'s."""
    state = node.state
    if state is NodeState.CONNECTING:
        return ""
    if state is not NodeState.UP:
        if retry_in_s is None:
            return node.error or state.value
        return _reason(node) + _retry_text(retry_in_s, short=False)
    reasons = list(node.slow_links) + list(node.health.reasons[:2])
    if node.straggler is None and node.victim is not None:
        reasons.insert(0, f"{node.victim.cause}: " + node.victim.reason.split(": ", 1)[-1])
    if node.mesh_suspect is not None:
        s = node.mesh_suspect
        reasons.insert(0, f"lossy: {s.name} {mesh_loss_text(s)}")
    if blocked := mesh_blocked_long(node):
        reasons.append(blocked)
    if node.straggler is not None:
        reasons.insert(0, "straggler: " + node.straggler.reason.split(": ", 1)[-1])
    return "; ".join(reasons) or node.health.label


def flag_line(node: Node) -> str:
    """Why the grid flags the node, in one line for the top of its screen; "" when it does
    not. What sets its level comes first, as ``level · what: words``: not up (what failed),
    a straggler (its finding), a pair test's suspect (what the test found), a link slower
    than its peers', the probe mesh naming its own link, or its health (held: said so when
    the last interval alone is better). A victim says what slows it; the mesh's suspect that
    explains the node is said after what sets the level ("; lossy: leaf2 uplink, 2.10% of …")."""
    state = node.state
    if state is NodeState.CONNECTING:
        return ""
    level = node.level
    if state is not NodeState.UP:
        return f"{level.label} · {state.value}: {node.failure_words()}"  # the grid counts down to the next try
    mesh = mesh_long(node) or mesh_blocked_long(node)
    also = f"; {mesh}" if mesh else ""  # said after what sets the level, when something else does
    s = node.straggler
    if s is not None:
        words = s.reason.split(": ", 1)[-1]
        if s.metric == "pairs":
            return f"{level.label} · pair test suspect: {words.removeprefix('the pair test names it: ')}{also}"
        return f"{level.label} · straggler: {words}{also}"
    if node.slow_links:
        return f"{level.label} · slow link: {node.slow_links[0]}{also}"
    health = node.health
    if mesh:
        # its own link: what sets its level; a path, an uplink, a switch its probes cross: said
        # as a victim's cause is, with its health after
        if node.lossy_link and health.level <= level:
            return f"{level.label} · {mesh}"
        lead = mesh if health.level == 0 else f"{health.label} · {health.reasons[0] if health.reasons else health.label}"
        return lead if health.level == 0 else f"{lead}; {mesh}"
    if node.victim is not None:
        lead = f"{node.victim.cause}: {node.victim.reason.split(': ', 1)[-1]}"
        return lead if health.level == 0 else f"{lead}; {health.label}: {health.reasons[0] if health.reasons else ''}"
    if health.level == 0:
        return ""
    line = f"{health.label} · {health.reasons[0] if health.reasons else health.label}"  # the worst; the rest below
    if node.interval_health.level < health.level:
        line += f" — held: the last interval alone is {node.interval_health.label}"
    return line
