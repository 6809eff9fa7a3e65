"""What the grid's tick saves must not change what it shows: the sort by natural ranks keeps
``units.name_key``'s order, worst first sorted in one pass keeps
the key's, and a row's cells are measured as ``cell_len`` measures them."""

from __future__ import annotations

import random

from rich.cells import cell_len

from netui.model import units
from netui.model.health import Level
from netui.model.node import NodeState
from netui.ui.columns import SORTS, natural_ranks, sort_key, sorted_nodes
from netui.ui.grid import _cells
from tests.unit.test_health_hold import _Node

NAMES = ["node10", "node9", "node09", "gpu-a2", "gpu-a10", "x", "node1b", "node1a", "n0de", "Node3", "日本1"]


def test_natural_ranks_keep_the_order_of_name_keys():
    ranks = natural_ranks(NAMES)

    assert sorted(NAMES, key=ranks.__getitem__) == sorted(NAMES, key=units.name_key)


def test_every_sort_orders_as_before_with_ranks():
    r = random.Random(7)
    levels, states = list(Level), [NodeState.UP, NodeState.UP, NodeState.STALE, NodeState.CONNECTING]
    for _ in range(20):
        nodes = []
        for name in r.sample(NAMES, len(NAMES)):
            node = _Node(name, r.choice(levels), state=r.choice(states), drops=r.choice([None, 0.0, 3.0, 3.0, 9.5]),
                         ratio=r.choice([None, 0.0, 0.001]))
            node.straggler_rank = r.choice([0, 1, 1 << 30, 1 << 30])
            nodes.append(node)
        ranks = natural_ranks(n.name for n in nodes).__getitem__
        for sort in ("worst", "node", "drops", "ratio"):
            assert sort in SORTS
            assert sorted(nodes, key=sort_key(sort, ranks)) == sorted(nodes, key=sort_key(sort))


def test_a_rows_cells_are_counted_as_cell_len_counts_them():
    for texts in (["gpu0001 ", "up "], ["▁▂▃▇ ", "straggler: TX 1… "], ["日本 ", "x\u200dy "], [], [""]):
        assert _cells(texts) == cell_len("".join(texts))


def test_the_grid_ranks_names_it_has_not_seen():
    from netui.model.fleet import Fleet
    from netui.ui.grid import FleetGrid

    grid = FleetGrid()
    grid.sort = "node"
    assert [n.name for n in grid.visible_nodes(Fleet(["n10", "n9"]))] == ["n9", "n10"]
    # another fleet (a replay opened, say): its new names are ranked with the rest
    assert [n.name for n in grid.visible_nodes(Fleet(["n10", "n1", "n9", "m2"]))] == ["m2", "n1", "n9", "n10"]


def test_worst_first_sorted_in_one_pass_orders_as_the_key_does_whatever_the_order_given():
    r = random.Random(11)
    levels, states = list(Level), [NodeState.UP, NodeState.UP, NodeState.STALE, NodeState.CONNECTING]
    for _ in range(30):
        nodes = [_Node(name, r.choice(levels), state=r.choice(states), drops=r.choice([None, 0.0, 3.0]))
                 for name in r.sample(NAMES, len(NAMES))]
        for node in nodes:
            node.straggler_rank = r.choice([0, 1, 2, 1 << 30])
        ranks = natural_ranks(n.name for n in nodes)
        for sort in ("worst", "node", "drops"):
            expected = sorted(nodes, key=sort_key(sort))
            assert sorted_nodes(nodes, sort, ranks) == expected
            assert sorted_nodes(r.sample(nodes, len(nodes)), sort, ranks) == expected
