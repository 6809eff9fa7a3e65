"""A latency test's report as a document: JSON (``netui bench ping --json``, the UI's
export), CSV, and plain text for the terminal; and back from JSON.

RTTs are milliseconds, round trip; loss is percent; ``null`` is unknown or not measured.
Field names never change meaning; new fields may be added (``version`` changes when a
field does).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from netui.checks.latency import KIND
from netui.checks import report_common
from netui.checks.report_common import csv_cell, matrix_lines, write_export
from netui.checks.latency.runner import LatencyReport
from netui.checks.latency.tools import LatencySettings
from netui.checks.latency.model import LatencyResult, rtt_text
from netui.model.text import safe_tree

SCHEMA_VERSION = 1


def _num(value, digits: int = 4):
    return None if value is None else round(value, digits)


def summary(report: LatencyReport) -> str:
    """The verdict in words, led by what could not be tested and whether it was cancelled."""
    cannot_send = [f"Cannot send: {'; '.join(report.cannot_send.values())}"] if report.cannot_send else []
    verdict = report.verdict
    text = None
    if verdict is not None and verdict.untested_note:
        # the pairs not tested are those of the nodes named before the verdict: said once
        said = set(report.problems.values()) | set(report.cannot_send.values())
        if all(r.error in said for r in verdict.untested):
            text = verdict.text.removesuffix(". " + verdict.untested_note)
    return report_common.summary(report, "pairs", also=cannot_send, verdict_text=text)


def loss_text(r: LatencyResult) -> str:
    """"0 %", "35 %", "12.5 %"; "—" when not counted."""
    if r.loss_percent is None:
        return "—"
    return f"{r.loss_percent:.3g} %"


def cell_text(r: LatencyResult) -> str:
    """A matrix cell: the average RTT, with the loss when there was any ("48 µs", "51 µs 35%",
    "100% loss", "failed")."""
    if not r.ok:
        return "failed"
    if r.rtt_avg_ms is None:
        return f"{r.loss_percent:.0f}% loss" if r.loss_percent is not None else "—"
    loss = f" {r.loss_percent:.0f}%" if r.loss_percent else ""
    return rtt_text(r.rtt_avg_ms) + loss


def latency_rows(report: LatencyReport) -> list[dict]:
    """One dict per result: the numbers, pass/fail and why, outlier."""
    verdict = report.verdict or report.judge()
    failing = {id(r) for r in verdict.failing}
    outliers = {id(r) for r in verdict.outliers}
    untested = {id(r) for r in verdict.untested}
    return [{
        "sender": r.sender,
        "receiver": r.receiver,
        "tool": r.tool,
        "ok": r.ok,
        "tested": id(r) not in untested,
        "pass": None if id(r) in untested else id(r) not in failing,
        "why": verdict.reasons.get(r.pair) if id(r) in failing else None,
        "outlier": id(r) in outliers,
        "sent": r.sent,
        "received": r.received,
        "loss_percent": _num(r.loss_percent, 2),
        "rtt_avg_ms": _num(r.rtt_avg_ms),
        "rtt_p50_ms": _num(r.rtt_p50_ms),
        "rtt_p99_ms": _num(r.rtt_p99_ms),
        "rtt_min_ms": _num(r.rtt_min_ms),
        "rtt_max_ms": _num(r.rtt_max_ms),
        "error": r.error,
        "kind": r.kind,
    } for r in report.results]


def report_document(report: LatencyReport) -> dict:
    verdict = report.verdict or report.judge()
    index = {node: i for i, node in enumerate(report.nodes)}
    loss: list[list[float | None]] = [[None] * len(report.nodes) for _ in report.nodes]
    for r in report.results:
        i, j = index.get(r.sender), index.get(r.receiver)
        if i is not None and j is not None and r.ok:
            loss[i][j] = _num(r.loss_percent, 2)
    return {
        **report_common.document_head(report, SCHEMA_VERSION, KIND, "ping"),
        "tools": dict(report.tools),
        "problems": dict(report.problems),
        "cannot_send": dict(report.cannot_send),
        "started": _num(report.started_wall_s, 3),
        "elapsed_s": _num(report.elapsed_s, 3),
        "tests_done": report.tests_done,
        "tests_total": report.tests_total,
        "cancelled": report.cancelled,
        "refused": report.refused,
        "pairs": latency_rows(report),
        # row = sender, column = receiver
        "rtt_avg_ms_matrix": [[_num(v) for v in row] for row in verdict.matrix(report.nodes)],
        "loss_percent_matrix": loss,
        "verdict": {
            "status": verdict.status,
            "passed": verdict.passed,
            "text": verdict.text,
            "suspects": list(verdict.suspects),
            "baseline_ms": _num(verdict.baseline_ms),
            "limit_ms": _num(verdict.limit_ms),
        },
        "summary": summary(report),
    }


def load_report(doc: dict) -> LatencyReport:
    """A report from its JSON document (the verdict is judged again from the results)."""
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise ValueError("not a netui latency-test document")
    doc = safe_tree(doc)  # a file's words (a recording's test, a saved report): shown, never obeyed
    settings = LatencySettings.from_dict(doc.get("settings") or {})
    results = [
        LatencyResult(p["sender"], p["receiver"], p.get("tool") or "ping", bool(p.get("ok")),
                      int(p.get("sent") or 0), int(p.get("received") or 0), p.get("loss_percent"),
                      p.get("rtt_avg_ms"), p.get("rtt_p50_ms"), p.get("rtt_p99_ms"), p.get("rtt_min_ms"),
                      p.get("rtt_max_ms"), error=p.get("error"), kind=p.get("kind"))
        for p in doc.get("pairs") or []
    ]
    report = LatencyReport(settings, list(doc.get("nodes") or []), bool(doc.get("matrix")), results=results,
                           addresses=dict(doc.get("addresses") or {}), interfaces=dict(doc.get("interfaces") or {}),
                           tools=dict(doc.get("tools") or {}), how=doc.get("network") or "",
                           problems=dict(doc.get("problems") or {}), cannot_send=dict(doc.get("cannot_send") or {}),
                           tests_done=int(doc.get("tests_done") or 0), tests_total=int(doc.get("tests_total") or 0),
                           started_wall_s=float(doc.get("started") or 0), elapsed_s=float(doc.get("elapsed_s") or 0),
                           cancelled=bool(doc.get("cancelled")), refused=str(doc.get("refused") or ""))
    report.judge()
    return report


_CSV_FIELDS = ("sender", "receiver", "tool", "ok", "tested", "pass", "why", "outlier", "sent", "received", "loss_percent",
               "rtt_avg_ms", "rtt_p50_ms", "rtt_p99_ms", "rtt_min_ms", "rtt_max_ms", "kind", "error")


def report_csv(report: LatencyReport) -> str:
    """One line per result (sender, receiver), milliseconds and percent."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV_FIELDS)
    for row in latency_rows(report):
        writer.writerow([csv_cell(row[f]) for f in _CSV_FIELDS])
    return out.getvalue()


def export(report: LatencyReport, directory: str | Path = ".") -> tuple[Path, Path]:
    """Write ``netui-ping-<time>.csv`` and ``.json`` into ``directory``; their paths."""
    return write_export("netui-ping", report.started_wall_s, directory, report_csv(report), report_document(report))


def head_text(report: LatencyReport) -> str:
    s = report.settings
    tools = "/".join(sorted(set(report.tools.values()))) or s.tool
    what = f"{len(report.nodes)} nodes" if report.matrix else f"{report.nodes[0]} → {report.nodes[1]}"
    where = f" · {report.how}" if report.how else ""
    return f"latency ({tools}) · {what} · {s.count} probes every {s.interval_s:g} s{where}"


def result_line(r: LatencyResult) -> str:
    """"avg 48 µs · p50 45 µs · p99 90 µs · loss 0 % (20/20)", or the tool's words."""
    if not r.ok:
        return f"failed: {r.error}"
    numbers = (f"avg {rtt_text(r.rtt_avg_ms)} · p50 {rtt_text(r.rtt_p50_ms)} · p99 {rtt_text(r.rtt_p99_ms)} · "
               f"loss {loss_text(r)} ({r.received}/{r.sent})")
    return numbers + (f" — {r.error}" if r.error else "")


def text_report(report: LatencyReport) -> str:
    """The matrix of average RTTs (row pings, column answers), every result, the verdict."""
    verdict = report.verdict or report.judge()
    nodes = report.nodes
    failing = {r.pair for r in verdict.failing}
    lines = [head_text(report) + f" · {report.elapsed_s:.1f} s"]
    lines += matrix_lines(nodes, report.results, failing, corner="RTT avg", legend="   (row pings, column answers)",
                          min_width=10, cell=cell_text)
    lines.append("")
    untested = {id(r) for r in verdict.untested}
    for r in report.results:
        state = "n/a " if id(r) in untested else "FAIL" if r.pair in failing else "pass"
        lines.append(f"{r.sender}→{r.receiver}  {state}  {result_line(r)}")
    lines += ["", summary(report)]
    return "\n".join(lines)
