"""What the reports of the checks share (the pair test's, checks/pairs/report.py, and the
latency test's, checks/latency/report.py): the fields of a finished run (``CheckReport``), the
summary in words, the head of the JSON document, CSV cells, writing an export, and a result
matrix as text."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from netui.engine.newfiles import free_paths

SettingsT = TypeVar("SettingsT")
ResultT = TypeVar("ResultT")
VerdictT = TypeVar("VerdictT")


@dataclass
class CheckReport(Generic[SettingsT, ResultT, VerdictT]):
    """What a test over pairs of nodes found, whichever the test (the pair test's
    PairTestReport, the latency test's LatencyReport add their own fields after these).
    ``results`` in the order they finished."""

    settings: SettingsT
    nodes: list[str]
    matrix: bool
    results: list[ResultT] = field(default_factory=list)
    verdict: VerdictT | None = None
    addresses: dict[str, str] = field(default_factory=dict)  # node → its address on the network tested
    interfaces: dict[str, str] = field(default_factory=dict)  # node → its interface there
    how: str = ""  # which network, in words
    problems: dict[str, str] = field(default_factory=dict)  # node → why it could not take part
    tests_done: int = 0
    tests_total: int = 0
    started_wall_s: float = 0.0
    elapsed_s: float = 0.0
    cancelled: bool = False
    refused: str = ""  # why no test started


def summary(report: CheckReport, unit: str, also: Iterable[str] = (), verdict_text: str | None = None) -> str:
    """A report's verdict in words, led by whether it was cancelled (after how many of its
    ``unit``: "tests", "pairs"), what could not be tested and then ``also``; the refusal
    alone when no test started. ``verdict_text``: the verdict's words, when not its own
    ``text`` (without what the lead said already)."""
    if report.refused:
        return report.refused
    parts = []
    if report.cancelled:
        parts.append(f"Cancelled after {report.tests_done} of {report.tests_total} {unit}")
    if report.problems:
        names = ", ".join(report.problems)
        parts.append(f"Not tested: {names} ({'; '.join(dict.fromkeys(report.problems.values()))})")
    parts += also
    if report.verdict is not None:
        parts.append(report.verdict.text if verdict_text is None else verdict_text)
    return ". ".join(p.rstrip(".") for p in parts)


def document_head(report: CheckReport, version: int, kind: str, tool: str) -> dict:
    """The fields every check's JSON document starts with, in this order: its schema version,
    kind and tool, the settings, the nodes, whether it was a matrix, the network tested on
    and each node's address and interface there."""
    return {
        "version": version,
        "kind": kind,
        "tool": tool,
        "settings": report.settings.to_dict(),
        "nodes": list(report.nodes),
        "matrix": report.matrix,
        "network": report.how,
        "addresses": dict(report.addresses),
        "interfaces": dict(report.interfaces),
    }


def csv_cell(value) -> str:
    """A CSV cell: "" for unknown, "true"/"false", else the value as ``str`` gives it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_export(prefix: str, started_wall_s: float, directory: str | Path,
                 csv_text: str, document: dict) -> tuple[Path, Path]:
    """Write ``<prefix>-<local start time>.csv`` and ``.json`` (now when ``started_wall_s`` is 0)
    into ``directory``, never over a file that exists (``-2``, ``-3`` … after the time
    then); their paths."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started_wall_s or time.time()))
    for _ in range(3):  # a name taken between the check and the write: the next free one
        csv_path, json_path = free_paths(directory, f"{prefix}-{stamp}", (".csv", ".json"))
        try:
            with open(csv_path, "x", encoding="utf-8") as out:
                out.write(csv_text)
        except FileExistsError:
            continue
        try:
            with open(json_path, "x", encoding="utf-8") as out:
                out.write(json.dumps(document, indent=2) + "\n")
        except FileExistsError:
            csv_path.unlink()
            continue
        return csv_path, json_path
    raise FileExistsError(f"{Path(directory) / prefix}-{stamp}: no free name")


def matrix_lines(nodes: list[str], results, failing: set, *, corner: str, legend: str, min_width: int,
                 cell: Callable, sections: dict[str, str] | None = None) -> list[str]:
    """A result matrix as text: a header of receivers, then a row per sender; each cell is
    ``cell(result)`` and ✗ when its pair is in ``failing``, "·" on the diagonal and where there
    is no result. ``sections``: a line "── leaf1" before the row of each node it names (the
    first of a leaf; "" names the unplaced)."""
    by_pair = {r.pair: r for r in results}
    width = max([len(n) for n in nodes] + [min_width])
    lines = [corner.ljust(width) + "".join(n.rjust(width + 2) for n in nodes) + legend]
    for a in nodes:
        if sections and a in sections:
            lines.append(f"── {sections[a] or 'not in the topology'}")
        cells = []
        for b in nodes:
            r = by_pair.get((a, b))
            if a == b or r is None:
                cells.append("·".rjust(width + 2))
            else:
                cells.append((cell(r) + ("✗" if (a, b) in failing else " ")).rjust(width + 2))
        lines.append(a.ljust(width) + "".join(cells))
    return lines
