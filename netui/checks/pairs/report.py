"""A pair test's report as a document: JSON (``netui bench --json``, the UI's export), CSV,
and plain text for the terminal; and back from JSON, so a saved run can be shown again.

Gbit/s are 10^9 bit/s of goodput; ``null`` is unknown or not measured. Field names never
change meaning; new fields may be added (``version`` changes when a field does).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import statistics
from collections.abc import Callable
from pathlib import Path

from netui.checks.pairs import KIND
from netui.checks import report_common
from netui.checks.pairs.runner import PairTestReport
from netui.checks.pairs.tools import DIRECTION_LABELS, SHIFT, PairSettings
from netui.checks.pairs.counters import COUNTER_KEYS
from netui.checks.pairs.model import PairResult
from netui.checks.pairs.verdict import NodeSummary, Verdict
from netui.checks.report_common import csv_cell, matrix_lines, write_export
from netui.model import units
from netui.model.topology import Attachment, Switch, Topology, leaf_sections
from netui.model.text import safe_tree

SCHEMA_VERSION = 1


def _num(value, digits: int = 3):
    return None if value is None else round(value, digits)


def _rate(gbps):
    """A rate in Gbit/s to 1 kbit/s: the verdict judged again from the document (the grid's
    suspects, a replay) is the one the test's screen gave, to the figures it prints."""
    return _num(gbps, 6)


def summary(report: PairTestReport) -> str:
    """The verdict in words, led by what could not be tested and whether it was cancelled."""
    return report_common.summary(report, "tests")


def pair_rows(report: PairTestReport) -> list[dict]:
    """One dict per result: the numbers, pass/fail, outlier, both ends' counters. A retested
    pair keeps its matrix figures, with ``retest_gbps`` beside them; ``pass`` is judged on the
    confirmed numbers."""
    verdict = report.verdict or report.judge()
    failing = {id(r) for r in verdict.failing}
    outliers = {id(r) for r in verdict.outliers}
    tested = {id(r) for r in verdict.results}
    rows = []
    for r in verdict.results + verdict.untested:  # failing first, the slowest first
        need = verdict.required_gbps.get(r.pair)
        first = verdict.retested.get(r.pair)  # the matrix's result, when a retest replaced it
        rows.append({
            "sender": r.sender,
            "receiver": r.receiver,
            "tool": r.tool,
            "gbps": _rate((first or r).gbps),  # as measured in the matrix
            "sent_gbps": _rate((first or r).sent_gbps),
            # rerun alone to confirm the verdict (null when not): the figure the verdict used
            "retest_gbps": _rate(r.gbps) if first is not None else None,
            "retest_error": r.error if first is not None and not r.ok else None,
            "ok": (first or r).ok,
            "pass": id(r) not in failing and id(r) in tested,
            "required_gbps": _rate(need),
            "outlier": id(r) in outliers,
            "error": (first or r).error,
            "kind": (first or r).kind,
            "retransmits": (first or r).retransmits,
            "counters": dict((first or r).counters),
        })
    return rows


def by_switch(report: PairTestReport) -> tuple[list[str], dict[str, str]]:
    """The report's nodes ordered leaf by leaf (leaves in tree order, the order tested kept
    within a leaf, unplaced nodes last), and the leaf each group starts with: first node → leaf
    ("" for the unplaced). The order tested and no groups without a topology."""
    return leaf_sections(report.topology, report.nodes)


def fabric_row(f) -> dict:
    """A fabric suspect (checks/pairs/verdict_fabric.py) as JSON."""
    return {"kind": f.kind, "name": f.name, "uplinks": list(f.uplinks), "switches": list(f.switches),
            "direction": f.direction or None, "pairs": len(f.pairs),
            "failing": [{"sender": a, "receiver": b} for a, b in f.pairs],
            "median_gbps": _rate(f.median_gbps), "low_gbps": _rate(f.low_gbps), "high_gbps": _rate(f.high_gbps),
            "in_leaf_gbps": _rate(f.in_leaf_gbps), "elsewhere_gbps": _rate(f.elsewhere_gbps), "text": f.text}


def topology_part(report: PairTestReport) -> dict | None:
    """The switches and where each tested node sits: what the verdict judged the fabric by."""
    topo = report.topology
    if topo is None:
        return None
    return {"source": report.topology_source or None,
            "switches": [{"name": s.name, "parent": s.parent, "uplink_gbps": s.uplink_gbps}
                         for s in topo.switches.values()],
            "leaves": {n: topo.leaf_of(n) for n in report.nodes}}


def _topology_from(part) -> Topology | None:
    if not isinstance(part, dict):
        return None
    try:
        switches = [Switch(str(s["name"]), s.get("parent"), s.get("uplink_gbps")) for s in part.get("switches") or []]
        nodes = [Attachment(str(n), str(leaf)) for n, leaf in (part.get("leaves") or {}).items() if leaf]
        return Topology(switches, nodes)
    except (KeyError, TypeError, AttributeError, ValueError):
        return None  # a document edited by hand: judged without the fabric


def _result_row(r: PairResult) -> dict:
    return {"sender": r.sender, "receiver": r.receiver, "tool": r.tool, "gbps": _rate(r.gbps),
            "sent_gbps": _rate(r.sent_gbps), "ok": r.ok, "error": r.error, "kind": r.kind,
            "retransmits": r.retransmits, "counters": dict(r.counters)}


def _result_from(p: dict, tool: str) -> PairResult:
    return PairResult(p["sender"], p["receiver"], p.get("tool") or tool, p.get("gbps"), bool(p.get("ok")),
                      error=p.get("error"), retransmits=p.get("retransmits"), kind=p.get("kind"),
                      counters=dict(p.get("counters") or {}), sent_gbps=p.get("sent_gbps"))


def send_receive_matrices(report: PairTestReport) -> tuple[list[list[float | None]], list[list[float | None]]]:
    """mpiGraph's two matrices, in the order of ``report.nodes``: the send matrix (row sends to
    column, as the sender counted: iperf3's sum_sent, else the one figure) and the receive
    matrix (row receives from column, as the receiver counted). The matrix's own figures."""
    index = {n: i for i, n in enumerate(report.nodes)}
    size = len(report.nodes)
    send: list[list[float | None]] = [[None] * size for _ in range(size)]
    receive: list[list[float | None]] = [[None] * size for _ in range(size)]
    for r in report.results:
        i, j = index.get(r.sender), index.get(r.receiver)
        if i is None or j is None or i == j or not r.ok:
            continue
        send[i][j] = r.sent_gbps if r.sent_gbps is not None else r.gbps
        receive[j][i] = r.gbps
    return send, receive


def report_document(report: PairTestReport) -> dict:
    verdict = report.verdict or report.judge()
    matrix = verdict.matrix(report.nodes)
    send, receive = send_receive_matrices(report)
    first = report.first_verdict
    return {
        **report_common.document_head(report, SCHEMA_VERSION, KIND, report.settings.tool),
        "link_speeds_mbps": dict(report.link_speeds_mbps),
        "problems": dict(report.problems),
        "started": _num(report.started_wall_s),
        "elapsed_s": _num(report.elapsed_s),
        "nominal_speeds_mbps": {n: {"mbps": mbps, "kind": kind} for n, (mbps, kind) in
                                report.nominal_speeds_mbps.items()},
        "pattern": report.pattern,
        "rounds": report.rounds,
        "tests_done": report.tests_done,
        "tests_total": report.tests_total,
        "retests_done": len(report.retests),
        "retests_total": report.retests_total,
        "cancelled": report.cancelled,
        "pairs": pair_rows(report),
        "retests": [_result_row(r) for r in report.retests],
        # row = sender, column = receiver; a retested pair's confirmed figure
        "gbps_matrix": [[_rate(v) for v in row] for row in matrix],
        "send_matrix": [[_rate(v) for v in row] for row in send],  # row sends to column
        "receive_matrix": [[_rate(v) for v in row] for row in receive],  # row receives from column
        "refused": report.refused or None,
        "verdict": {
            "passed": verdict.passed,
            "status": "refused" if report.refused else verdict.status,
            "text": verdict.text,
            "suspects": list(verdict.suspects),
            "median_gbps": _rate(verdict.median_gbps),
            "expected_gbps": _rate(verdict.expected_gbps),
            "nodes": [node_row(s, report.topology) for s in verdict.nodes.values()],
            "fabric": [fabric_row(f) for f in verdict.fabric],
            # the verdict on the matrix alone, when retests changed the numbers
            "before_retests": None if first is None or first is verdict else {
                "status": first.status, "text": first.text, "suspects": list(first.suspects),
                "fabric": [f.name for f in first.fabric]},
        },
        "topology": topology_part(report),
        "summary": summary(report),
    }


def node_row(s: NodeSummary, topology: Topology | None = None) -> dict:
    """A node across its pairs: sends and receives, how many fail, their medians (Gbit/s),
    and "sending", "receiving", "sending and receiving" or null as a suspect; with a
    topology, its leaf switch (null when not placed)."""
    row = {"node": s.node, "sends": s.sends, "sends_failing": s.sends_failing,
           "out_median_gbps": _rate(s.out_median_gbps), "receives": s.receives,
           "receives_failing": s.receives_failing, "in_median_gbps": _rate(s.in_median_gbps),
           "suspect": s.suspect or None}
    if topology is not None:
        row["leaf"] = topology.leaf_of(s.node)
    return row


def load_report(doc: dict) -> PairTestReport:
    """A report from its JSON document (the verdict is judged again from the results)."""
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise ValueError("not a netui pair-test document")
    doc = safe_tree(doc)  # a file's words (a recording's test, a saved report): shown, never obeyed
    settings = PairSettings.from_dict(doc.get("settings") or {})
    results = [_result_from(p, settings.tool) for p in doc.get("pairs") or []]
    retests = [_result_from(p, settings.tool) for p in doc.get("retests") or []]
    nominal = {}
    for node, speed in (doc.get("nominal_speeds_mbps") or {}).items():
        if isinstance(speed, dict) and isinstance(speed.get("mbps"), int):
            nominal[str(node)] = (speed["mbps"], str(speed.get("kind") or ""))
    report = PairTestReport(settings, list(doc.get("nodes") or []), bool(doc.get("matrix")), results=results,
                            addresses=dict(doc.get("addresses") or {}), interfaces=dict(doc.get("interfaces") or {}),
                            how=doc.get("network") or "", problems=dict(doc.get("problems") or {}),
                            link_speeds_mbps=dict(doc.get("link_speeds_mbps") or {}), rounds=int(doc.get("rounds") or 0),
                            started_wall_s=float(doc.get("started") or 0), elapsed_s=float(doc.get("elapsed_s") or 0),
                            cancelled=bool(doc.get("cancelled")), tests_done=int(doc.get("tests_done") or 0),
                            tests_total=int(doc.get("tests_total") or 0), refused=str(doc.get("refused") or ""),
                            topology=_topology_from(doc.get("topology")), retests=retests,
                            retests_total=int(doc.get("retests_total") or len(retests)),
                            nominal_speeds_mbps=nominal, pattern=str(doc.get("pattern") or "pairs"),
                            topology_source=str((doc.get("topology") or {}).get("source") or "")
                            if isinstance(doc.get("topology"), dict) else "")
    report.judge()
    return report


_CSV_FIELDS = ("sender", "receiver", "tool", "gbps", "ok", "pass", "required_gbps", "outlier", "retransmits",
               "kind", "error", "retest_gbps", "sent_gbps")


def report_csv(report: PairTestReport) -> str:
    """One line per result; both ends' counters as ``sender_<key>``/``receiver_<key>``."""
    out = io.StringIO()
    keys = [f"{end}_{k}" for end in ("sender", "receiver") for k in COUNTER_KEYS]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*_CSV_FIELDS, *keys])
    for row in pair_rows(report):
        counters = row["counters"]
        ends = {"sender": row["sender"], "receiver": row["receiver"]}
        values = [counters.get(f"{ends[key.split('_', 1)[0]]}.{key.split('_', 1)[1]}") for key in keys]
        writer.writerow([csv_cell(row[f]) for f in _CSV_FIELDS] + [csv_cell(v) for v in values])
    return out.getvalue()


def export(report: PairTestReport, directory: str | Path = ".") -> tuple[Path, Path]:
    """Write ``netui-<tool>-<time>.csv`` and ``.json`` into ``directory``; their paths."""
    return write_export(f"netui-{report.settings.tool}", report.started_wall_s, directory,
                        report_csv(report), report_document(report))


# --- the terminal --------------------------------------------------------------------------


def gbps_text(gbps: float | None) -> str:
    """Gbit/s with three significant digits ("9.87", "24.1", "0.191"); "—" when unknown."""
    if gbps is None:
        return "—"
    return f"{gbps:.3g}" if gbps < 100 else f"{gbps:.0f}"


LINK = "link"  # a live figure from the interfaces' counters, not from the tool


def live_text(figures: list[tuple[str, str, float | None, str]], more: int = 0) -> str:
    """The running tests' throughput now, in Gbit/s as the results give it: each figure is
    (sender, receiver, Gbit/s, where it comes from: the tool's name for its own interval
    report, ``LINK`` for the interfaces' counters, which count every flow on the link). The
    source is said once when all agree ("iperf3 now: node1→node2 9.41 Gbit/s"), else after
    each figure; ``more``: running tests not shown."""
    if not figures:
        return ""
    sources = {source for *_, source in figures}

    def figure(a: str, b: str, gbps: float | None) -> str:
        return f"{a}→{b} {units.gbps(gbps)}"

    if len(sources) == 1:
        (source,) = sources
        head = "link now (all its flows)" if source == LINK else f"{source} now"
        words = ", ".join(figure(a, b, g) for a, b, g, _ in figures)
    else:
        head = "now"
        words = ", ".join(f"{figure(a, b, g)} ({source})" for a, b, g, source in figures)
    return f"{head}: {words}" + (f" … {more} more" if more > 0 else "")


def judged_word(verdict: Verdict) -> str:
    """What a pair that did not fail is called under ``verdict``: "pass", or "ran" when the
    verdict is inconclusive (it passed nothing that can be trusted)."""
    return "ran" if verdict.inconclusive else "pass"


def gbps_cell_format(values) -> Callable[[float | None], str]:
    """One precision for every cell of a matrix, so the decimals line up: from the largest
    value ("187", "24.1", "9.87"), with more digits when the smallest needs them to keep two
    significant ones (a 0.19 Gbit/s pair beside 10 Gbit/s ones: "10.20" and "0.19")."""
    known = [v for v in values if v is not None]
    top = max(known, default=0.0)
    low = min((v for v in known if v > 0), default=top)
    digits = 0 if top >= 100 else 1 if top >= 10 else 2
    if low > 0:
        digits = max(digits, min(3, 1 - math.floor(math.log10(low))))

    def fmt(gbps: float | None) -> str:
        return "—" if gbps is None else f"{gbps:.{digits}f}"

    return fmt


def counters_text(result: PairResult) -> str:
    """Both ends' counters in a few words, the sender's first:
    "sender/receiver retrans 47/9 · drops 0/0 · softirq 35%/33%"."""
    c = result.counters
    if not c:
        return ""
    ends = (result.sender, result.receiver)

    def both(key: str, fmt=str) -> str:
        values = [c.get(f"{n}.{key}") for n in ends]
        return "/".join("—" if v is None else fmt(v) for v in values)

    return (f"sender/receiver retrans {both('retrans')} · drops {both('drops')} · "
            f"softirq {both('softirq_percent', lambda v: f'{v:.0f}%')}")


def text_report(report: PairTestReport) -> str:
    """The matrix (row sends, column receives), every result, and the verdict."""
    verdict = report.verdict or report.judge()
    s = report.settings
    nodes, sections = by_switch(report)
    retests = f" + {len(report.retests)} {'retest' if len(report.retests) == 1 else 'retests'}" \
        if report.retests else ""
    lines = [f"{s.tool} {report.how or ''} · {len(nodes)} nodes · {DIRECTION_LABELS[s.direction]} · "
             f"{pattern_words(report)} · {report.rounds} rounds of {s.duration_s} s{retests} · "
             f"{report.elapsed_s:.1f} s"]
    failing = {r.pair for r in verdict.failing}
    cell_text = gbps_cell_format(r.gbps for r in verdict.results if r.ok)
    if report.pattern == SHIFT and not report.refused:
        # mpiGraph's two matrices: what each node sent, what each node received
        send, receive = report.results, [dataclasses.replace(r, sender=r.receiver, receiver=r.sender)
                                         for r in report.results]
        lines += matrix_lines(nodes, send, failing, corner="send", min_width=7, sections=sections,
                              legend="   (row sends to column, Gb/s as the sender counted)",
                              cell=lambda r: "failed" if not r.ok else cell_text(
                                  r.sent_gbps if r.sent_gbps is not None else r.gbps))
        lines.append("")
        lines += matrix_lines(nodes, receive, {(b, a) for a, b in failing}, corner="receive", min_width=7,
                              sections=sections, legend="   (row receives from column, Gb/s as the receiver counted)",
                              cell=lambda r: "failed" if not r.ok else cell_text(r.gbps))
    else:
        lines += matrix_lines(nodes, report.results, failing, corner="Gb/s",
                              legend="   (row sends, column receives)",
                              min_width=7, cell=lambda r: "failed" if not r.ok else cell_text(r.gbps),
                              sections=sections)
    lines.append("")
    if report.refused:
        return "\n".join([lines[0], report.refused])
    for r in verdict.results + verdict.untested:  # failing first, the slowest first
        state = "FAIL" if r.pair in failing else judged_word(verdict) if r in verdict.results else "not tested"
        what = result_words(r, verdict.retested.get(r.pair))
        extra = counters_text(verdict.retested.get(r.pair) or r)
        lines.append(f"{r.sender}→{r.receiver}  {state}  {what}" + (f"  ({extra})" if extra else ""))
    split = fabric_lines(report)
    if split:
        lines += ["", *split]
    if len(verdict.nodes) > 2:
        lines += ["", *node_lines(verdict)]
    lines += ["", summary(report)]
    return "\n".join(lines)


def pattern_words(report: PairTestReport) -> str:
    """"shift pattern", "disjoint pairs", "one at a time": how the matrix was scheduled."""
    if report.settings.one_at_a_time:
        return "one at a time"
    return "shift pattern" if report.pattern == SHIFT else "disjoint pairs"


def result_words(r: PairResult, first: PairResult | None = None) -> str:
    """"9.41 Gbit/s", "failed: <the tool's words>", or with a retest that replaced the matrix's
    figure: "6.00 → 16.2 Gbit/s on retest"."""
    if first is None:
        return units.gbps(r.gbps) if r.ok else f"failed: {r.error}"
    now = units.gbps(r.gbps) if r.ok and r.gbps is not None else f"failed: {r.error}"
    before = units.gbps(first.gbps) if first.ok and first.gbps is not None else "failed"
    return f"{before} → {now} on retest"


def fabric_lines(report: PairTestReport) -> list[str]:
    """With a topology: the in-leaf and the cross-switch pairs side by side (how many, how many
    fail, their median Gbit/s), then each fabric suspect in words. None without a topology."""
    topo = report.topology
    verdict = report.verdict or report.judge()
    if topo is None or not any(topo.leaf_of(n) for n in report.nodes):
        return []
    failing = {r.pair for r in verdict.failing}
    groups: dict[str, list] = {"in-leaf pairs": [], "cross-switch pairs": [], "pairs with an unplaced node": []}
    for r in verdict.results:
        path = topo.path(r.sender, r.receiver)
        key = ("in-leaf pairs" if path.same_leaf else "cross-switch pairs" if path.placed
               else "pairs with an unplaced node")
        groups[key].append(r)
    lines = ["by switch:"]
    for label, rs in groups.items():
        if not rs:
            continue
        numbers = [r.gbps for r in rs if r.ok and r.gbps is not None]
        median = statistics.median(numbers) if numbers else None
        bad = sum(r.pair in failing for r in rs)
        lines.append(f"  {label + ':':<29}{len(rs):>4}, {bad} failing, median "
                     f"{units.gbps(median)}")
    for f in verdict.fabric:
        lines.append(f"  ← {f.text}")
    return lines


def node_lines(verdict) -> list[str]:
    """Each node as a sender and as a receiver: "node3  sends 0.191 (3/3 fail)  receives
    10.4 (0/3 fail)  ← suspect: sending"; suspects first."""
    rows = sorted(verdict.nodes.values(), key=lambda s: (not s.suspect, s.node))
    width = max(len(s.node) for s in rows)

    def side(median, failing, total) -> str:
        return "—" if not total else f"{units.gbps(median)} ({failing}/{total} fail)"

    lines = ["per node (median of its pairs):"]
    for s in rows:
        line = (f"  {s.node.ljust(width)}  sends {side(s.out_median_gbps, s.sends_failing, s.sends):<25} "
                f"receives {side(s.in_median_gbps, s.receives_failing, s.receives)}")
        lines.append(line + (f"  ← suspect: {s.suspect}" if s.suspect else ""))
    return lines
