"""The cluster grid's columns, declared once: label, width, how to sort, how to show."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from netui.model import units
from netui.model.health import Level
from netui.model.leafload import LeafLoad
from netui.model.mesh import loss_level
from netui.model.node import Node, NodeState
from netui.ui.render import spark
from netui.ui.why import SHORT_CELLS, long_why, short_why

SPARK_WIDTH = 12
_UP = NodeState.UP  # (``NodeState.healthy``, without its call: the sort asks it of every node)


@dataclass(frozen=True)
class GridOptions:
    as_bytes: bool = False
    # the scale of the trend sparklines: the busiest node's RX+TX (bytes/s), so a node
    # moving a tenth of what its peers move shows a tenth of their bars
    trend_top: float | None = None
    # node → seconds until its collector tries again (a node that is down): the Why column
    # counts down
    retry_in_s: Mapping[str, float] = field(default_factory=dict, compare=False)
    why_wide: bool = False  # the Why column is wide enough for every reason in words
    why_cells: int = SHORT_CELLS  # the Why column's width


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int
    text: Callable[[Node, GridOptions], str]
    sort_value: Callable[[Node], float] | None = None  # a sort by the column: largest first (Node: sort_key)
    threshold: str | None = None  # colour the cell by this metric's level
    value: Callable[[Node], float | None] | None = None
    right: bool = True
    priority: float = 99
    fabric: bool = False  # shown only when a node of the fleet has RDMA/ethtool data
    mesh: bool = False  # shown only when the fleet has a probe mesh verdict (on by default over SSH, or a recording of one)
    level: Callable[[Node], Level | None] | None = None  # the cell's level where no threshold gives it


def _v(x: float | None) -> float:
    return -1.0 if x is None else x


def _hot(n: Node) -> str:
    s = n.summary
    if s.hottest_softirq_percent is None:
        return units.UNKNOWN
    return f"{s.hottest_softirq_percent:3.0f}% {units.cpu(s.hottest_cpu)}"


# The trend column's scale never goes below this (bytes/s, 10 Mbit/s): an idle fleet's few kB/s
# of SSH draw the floor line, not full bars (the floor nload and btop keep too).
TREND_FLOOR_BYTES_PER_S = 1.25e6


def _trend(n: Node, o: GridOptions) -> str:
    if not n.state.reachable:
        return ""  # a node that is down has no trend: its last bars are not news
    table = n.history.table  # its columns read straight (the views' calls, on every row painted)
    rx = table.column("rx_bytes_per_s", SPARK_WIDTH)
    tx = table.column("tx_bytes_per_s", SPARK_WIDTH)
    both = [None if a is None and b is None else (a or 0) + (b or 0) for a, b in zip(rx, tx)]
    return spark(both, SPARK_WIDTH, top=o.trend_top)


def trend_top(nodes) -> float | None:
    """The busiest node's recent RX+TX (bytes/s), at least ``TREND_FLOOR_BYTES_PER_S``: the
    common scale of the trend column."""
    top = TREND_FLOOR_BYTES_PER_S
    for n in nodes:
        peak = n.history.peak_sum("rx_bytes_per_s", "tx_bytes_per_s", SPARK_WIDTH)
        if peak is not None and peak > top:
            top = peak
    return top


def _judged_ratio(n: Node) -> float | None:
    """The retransmit ratio when it counts for health (enough segments sent), for its colour."""
    return n.summary.retrans_ratio if n.summary.retrans_judged else None


def mesh_loss(n: Node) -> float | None:
    """The node's pooled mesh loss over the window (0..1): None when the mesh is off, the node
    is not up, or its pairs settled fewer than MIN_PROBES probes (never a 0 % without them)."""
    return n.mesh.loss if n.mesh is not None else None


def _loss_text(n: Node) -> str:
    """The Loss cell: the node's figure; "no ans" for a node whose probes (or its peers' probes
    of it) were never answered and that has no figure (UDP blocked at it: not a loss)."""
    if n.mesh is not None and n.mesh.blocked and n.mesh.loss is None:
        return "no ans"
    return units.ratio_percent(mesh_loss(n))


def _loss_level(n: Node) -> Level | None:
    """The Loss cell's level: its figure's (model/mesh.py ``loss_level``) on a node the mesh's
    suspect explains; elsewhere careful at most (a node that loses only toward the suspect's
    nodes shows its figure, not an alarm)."""
    level = loss_level(mesh_loss(n))
    if level is None or n.mesh_suspect is not None:
        return level
    return min(level, Level.CAREFUL)


def _state(n: Node, o: GridOptions) -> str:
    return n.state.value


def _why(n: Node, o: GridOptions) -> str:
    retry = o.retry_in_s.get(n.name)
    return long_why(n, retry) if o.why_wide else short_why(n, retry, o.why_cells)


WHY_WIDE = 40  # from this width on, the Why column says every reason in words


# Display order. ``priority``: lower is kept longer when the terminal is narrow.
COLUMNS: tuple[Column, ...] = (
    Column("node", "Node", 13, lambda n, o: n.name, right=False, priority=0),
    Column("state", "State", 11, _state, right=False, priority=1),
    Column("rx", "RX", 10, lambda n, o: units.bits_per_s(n.summary.rx_bytes_per_s, as_bytes=o.as_bytes),
           lambda n: _v(n.summary.rx_bytes_per_s), priority=2),
    Column("tx", "TX", 10, lambda n, o: units.bits_per_s(n.summary.tx_bytes_per_s, as_bytes=o.as_bytes),
           lambda n: _v(n.summary.tx_bytes_per_s), priority=3),
    Column("trend", "RX+TX trend", SPARK_WIDTH, _trend, right=False, priority=7),
    Column("rdma_rx", "RDMA RX", 10,
           lambda n, o: units.bits_per_s(n.summary.rdma_rx_bytes_per_s, as_bytes=o.as_bytes),
           lambda n: _v(n.summary.rdma_rx_bytes_per_s), priority=4.2, fabric=True),
    Column("rdma_tx", "RDMA TX", 10,
           lambda n, o: units.bits_per_s(n.summary.rdma_tx_bytes_per_s, as_bytes=o.as_bytes),
           lambda n: _v(n.summary.rdma_tx_bytes_per_s), priority=4.4, fabric=True),
    Column("rdma_err", "RDMAerr/s", 9, lambda n, o: units.per_s(n.summary.rdma_errors_per_s),
           lambda n: _v(n.summary.rdma_errors_per_s), "rdma_errors_per_s", lambda n: n.summary.rdma_errors_per_s,
           priority=6.5, fabric=True),
    Column("cnp", "CNP/s", 7, lambda n, o: units.per_s(n.summary.cnp_per_s),
           lambda n: _v(n.summary.cnp_per_s), priority=8.5, fabric=True),
    Column("pause", "Pause/s", 8, lambda n, o: units.per_s(n.summary.pause_per_s),
           lambda n: _v(n.summary.pause_per_s), "pause_per_s", lambda n: n.summary.pause_per_s,
           priority=5.5, fabric=True),
    # the probe mesh: the node's pairs' pooled loss; kept before Drops/s at 80 columns
    Column("loss", "Loss", 7, lambda n, o: _loss_text(n), lambda n: _v(mesh_loss(n)),
           priority=3.8, mesh=True, level=_loss_level),
    Column("drops", "Drops/s", 8, lambda n, o: units.per_s(n.summary.drops_per_s),
           lambda n: _v(n.summary.drops_per_s), "drops_per_s", lambda n: n.summary.drops_per_s, priority=4),
    Column("errors", "Err/s", 6, lambda n, o: units.per_s(n.summary.errors_per_s),
           lambda n: _v(n.summary.errors_per_s), "errors_per_s", lambda n: n.summary.errors_per_s, priority=8),
    Column("retrans", "Retr/s", 7, lambda n, o: units.per_s(n.summary.retrans_segs_per_s),
           lambda n: _v(n.summary.retrans_segs_per_s), priority=9),
    Column("ratio", "Retr%", 7, lambda n, o: units.ratio_percent(n.summary.retrans_ratio),
           lambda n: _v(n.summary.retrans_ratio), "retrans_ratio", lambda n: _judged_ratio(n), priority=5),
    Column("softirq", "SoftIRQ", 10, lambda n, o: _hot(n),
           lambda n: _v(n.summary.hottest_softirq_percent), "softirq_percent",
           lambda n: n.summary.hottest_softirq_percent, priority=6),
    Column("netrx", "NET_RX/s", 9, lambda n, o: units.per_s(n.summary.net_rx_per_s),
           lambda n: _v(n.summary.net_rx_per_s), priority=10),
    # at every width (after TX): why a node is down or bad, in a few words
    Column("health", "Why", 18, _why, right=False, priority=3.5),
)


def fit_columns(width: int, *, fabric: bool = False, mesh: bool = False) -> tuple[Column, ...]:
    """The columns that fit in ``width`` cells, most important first, in display order.

    The fabric columns (RDMA RX/TX, RDMA errors, CNP/s, pause/s) only when ``fabric``, the
    probe mesh's Loss only when ``mesh``. The last column (Why) grows to take what is left.
    """
    chosen: set[str] = set()
    used = 0
    offered = (c for c in COLUMNS if (fabric or not c.fabric) and (mesh or not c.mesh))
    for c in sorted(offered, key=lambda c: c.priority):
        if used + c.width + 1 <= width:
            chosen.add(c.key)
            used += c.width + 1
    return tuple(c for c in COLUMNS if c.key in chosen)


# Sort orders offered by the `s` key, in cycling order. "worst" is the default.
SORTS: tuple[str, ...] = ("worst", "node", "rx", "tx", "loss", "drops", "errors", "retrans", "ratio", "softirq",
                          "rdma_rx", "rdma_tx", "rdma_err", "cnp", "pause")
FABRIC_SORTS = frozenset(c.key for c in COLUMNS if c.fabric)
MESH_SORTS = frozenset(c.key for c in COLUMNS if c.mesh)
SORT_LABELS = {"worst": "worst first"} | {c.key: c.label for c in COLUMNS}


def fleet_has_fabric(nodes) -> bool:
    """True when a node has RDMA ports or ethtool counters: the fabric columns are shown."""
    # a list rather than any(): a fleet without RDMA is walked whole, and every tick
    return bool([n for n in nodes if n.sample is not None and n.sample.fabric is not None])


def fleet_has_mesh(fleet) -> bool:
    """True when the fleet has a probe mesh verdict: the Loss column is shown."""
    return fleet.mesh_verdict is not None


def next_sort(sort: str, *, fabric: bool, mesh: bool = False) -> str:
    """The sort after ``sort`` in SORTS (the fabric ones only when the fleet has a fabric, Loss
    only with a mesh)."""
    offered = [s for s in SORTS if (fabric or s not in FABRIC_SORTS) and (mesh or s not in MESH_SORTS)]
    i = offered.index(sort) if sort in offered else -1
    return offered[(i + 1) % len(offered)]


def sort_key(sort: str, name_rank: Callable[[str], object] = units.name_key) -> Callable[[Node], tuple]:
    """Key for ``sorted``: worst first, or the column descending (names ascending, in
    natural order: node9 before node10).

    Worst first is the held level, then a straggler (in the fleet's order of them, the
    first being the one the status line names), then a node that is not up (nothing
    is known of it), then the name: nothing that moves every sample, so nodes tied on all
    of these never swap rows from one sample to the next.

    ``name_rank``: a name's place in natural order; by default ``units.name_key``, or a
    lookup in ``natural_ranks`` of the names sorted (the grid's: an int compares faster than
    a name's key, which a sort at 1,024 nodes would also make anew every tick)."""
    if sort == "worst":
        return lambda n: (-n.level, n.straggler_rank, n.state is _UP, name_rank(n.name))
    if sort == "node":
        return lambda n: (name_rank(n.name),)
    col = next(c for c in COLUMNS if c.key == sort)
    sort_value = col.sort_value
    assert sort_value is not None
    return lambda n: (-sort_value(n), name_rank(n.name))


def sorted_nodes(nodes: list[Node], sort: str, name_ranks: Mapping[str, int]) -> list[Node]:
    """``sorted(nodes, key=sort_key(sort, name_ranks.__getitem__))``, the same order (KeyError
    for a name not in ``name_ranks``). Worst first, the default, sorts the keys made in one
    pass with each node beside its key (the rank, unique, decides before the node is reached):
    the grid sorts every node every tick, and a key function's call per node is a third of it."""
    if sort != "worst":
        return sorted(nodes, key=sort_key(sort, name_ranks.__getitem__))
    up = _UP
    keyed = [(-n.level, n.straggler_rank, n.state is up, name_ranks[n.name], n) for n in nodes]
    keyed.sort()
    return [k[4] for k in keyed]


def natural_ranks(names: Iterable[str]) -> dict[str, int]:
    """Each name's place among ``names`` in natural order (``units.name_key``): a
    ``sort_key``'s ``name_rank`` for these names, whose order it keeps exactly."""
    return {name: i for i, name in enumerate(sorted(names, key=units.name_key))}


def _share_text(low: float, high: float) -> str:
    """A share range in whole percent: "98–100%", or "100%" when the two ends round alike."""
    lo, hi = round(low * 100), round(high * 100)
    return f"{hi}%" if hi == lo else f"{lo}–{hi}%"


def uplink_text(load: LeafLoad, o: GridOptions, wide: bool) -> str:
    """A leaf's uplink load, bounded (model/leafload.py): "↑98–100% ↓0–2%" of its capacity,
    or in bits/s where the topology gives no uplink speed ("↑≤200 Mb/s"); wide: with words."""
    if load.leaving is None or load.entering is None:
        return "not in the topology" if not load.leaf else "no rate yet"
    parts = []
    for arrow, bound in (("↑", load.leaving), ("↓", load.entering)):
        share = bound.share(load.capacity_bytes_per_s)
        if share is not None:
            parts.append(arrow + _share_text(*share))
        else:
            tight = bound.high - bound.low <= 0.05 * bound.high  # ACKs coming back, counters read apart
            parts.append(arrow + ("" if tight else "≤") + units.bits_per_s(bound.high, as_bytes=o.as_bytes))
    if not wide:
        return " ".join(parts)
    of = (f" of {units.bits_per_s(load.capacity_bytes_per_s, as_bytes=o.as_bytes)}"
          if load.capacity_bytes_per_s else "")
    return f"uplink {' '.join(parts)}{of}"


def leaf_text(col: Column, load: LeafLoad, o: GridOptions, width: int) -> str:
    """A leaf row's cell in ``col``: its name, "3/4 up", its nodes' sums, its uplink in the
    Why column; blank where a sum says nothing (trend, ratios, the hottest CPU)."""
    key = col.key
    if key == "node":
        return load.leaf or "unplaced"
    if key == "state":
        return f"{load.up}/{len(load.nodes)} up"
    if key in ("rx", "tx"):
        return units.bits_per_s(load.rx_bytes_per_s if key == "rx" else load.tx_bytes_per_s, as_bytes=o.as_bytes)
    if key in ("drops", "errors", "retrans"):
        return units.per_s({"drops": load.drops_per_s, "errors": load.errors_per_s,
                            "retrans": load.retrans_segs_per_s}[key])
    if key == "health":
        if load.suspect:  # the short plank: what names it, before the load's bounds
            wide = f"straggler: {load.suspect}"
            return wide if len(wide) <= width else load.suspect_short
        wide = uplink_text(load, o, wide=True)
        return wide if len(wide) <= width else uplink_text(load, o, wide=False)
    return ""


# how a column's cell is coloured (``cell_kind``): the name and the state always wear their
# node's level's colour, Why when it is not ok; a metric its threshold's level, a levelled
# cell (Loss) its own, when not ok; plain cells none (all but Why dim on a stale node: the grid)
NAME, STATE, WHY, METRIC, LEVELLED, PLAIN = "name", "state", "why", "metric", "levelled", "plain"


def cell_kind(col: Column) -> str:
    """How ``col``'s cells are coloured: one of NAME, STATE, WHY, METRIC, LEVELLED, PLAIN."""
    if col.key == "node":
        return NAME
    if col.key == "state":
        return STATE
    if col.key == "health":
        return WHY
    if col.threshold and col.value:
        return METRIC
    return LEVELLED if col.level is not None else PLAIN


def cell_level(col: Column, node: Node) -> Level | None:
    """The level a cell is coloured with; None for plain cells."""
    kind = cell_kind(col)
    if kind is METRIC and col.threshold and col.value:  # (the test again: for the type checker)
        return node.threshold(col.threshold).level(col.value(node))
    if kind is LEVELLED and col.level is not None:
        return col.level(node)
    return None if kind is PLAIN else node.level
