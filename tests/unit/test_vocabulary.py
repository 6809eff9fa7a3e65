"""One vocabulary: a rate is spelled as the grid spells it ("9.41 Gb/s", "91.7 Mb/s"), a CPU
as the kernel names it ("cpu1"), the same quantity in the same words on every screen and report.
The formatters are in netui/model/units.py; no other module spells a unit of its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from netui.model import units

ROOT = Path(__file__).resolve().parents[2] / "netui"
OTHER_SPELLINGS = re.compile(r"\b[kMGT]?bit/s\b")  # "Gbit/s", "Mbit/s": the grid says Gb/s, Mb/s


def _strings(tree: ast.AST):
    """Every string constant that is not a docstring (what reaches a user)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_no_module_spells_a_rate_otherwise_than_the_grid():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in _strings(ast.parse(path.read_text())):
            if OTHER_SPELLINGS.search(node.value):
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {node.value!r}")
    assert not found, "\n".join(found)


def test_the_formatters_scale_a_test_rate_as_the_grid_scales_a_counter_rate():
    # a pair test's 0.0917 Gbit/s and an interface's 11.46 MB/s are the same rate, in the same words
    assert units.gbps(0.0917) == units.bits_per_s(0.0917e9 / 8) == "91.7 Mb/s"
    assert units.gbps(9.41) == "9.41 Gb/s" and units.mbps(10_000) == units.gbps(10) == "10 Gb/s"
    assert units.gbps(None) == units.UNKNOWN


def test_softirq_reads_alike_in_the_why_column_and_the_node_screen():
    assert units.softirq(73.4, 1) == "softirq 73% on cpu1"
    assert units.softirq(73.4, 1, short=True) == "softirq 73% cpu1"
    assert len(units.softirq(99, 255, short=True)) <= 18  # the Why column's cells, at 256 CPUs
    assert units.softirq(73.4, None) == "softirq 73%"
