"""The doctor's report as a document: JSON (``netui doctor --json``), a summary line and
plain text for the terminal.

Field names never change meaning; new fields may be added (``version`` changes when a field
does).
"""

from __future__ import annotations

from netui.checks.doctor import KIND
from netui.checks.doctor.rules import CHECKS, Finding, NodeFacts, failing_nodes, grouped, nodes_text, not_examined
from netui.checks.doctor.runner import DoctorReport
from netui.model.health import Level
from netui.model.units import fold

SCHEMA_VERSION = 1


def finding_dict(f: Finding) -> dict:
    return {"check": f.check, "severity": f.severity.label, "node": f.node, "subject": f.subject,
            "evidence": f.evidence, "fix": f.fix, "look": f.look}


def _facts_dict(f: NodeFacts) -> dict:
    out: dict = {"examined": f.probe is not None, "why_not": f.unreachable or f.no_commands}
    if f.interfaces is not None:
        out["interfaces"] = {n: {"mtu": i.mtu, "speed_mbps": i.speed_mbps, "operstate": i.operstate, "kind": i.kind}
                             for n, i in sorted(f.interfaces.items())}
    if f.probe is not None:
        p = f.probe
        out |= {"sysctls": dict(p.sysctls), "cpus": p.cpus, "irqbalance": p.irqbalance,
                "rdma": [{"device": r.device, "port": r.port, "state": r.state, "phys_state": r.phys_state,
                          "rate": r.rate, "link_layer": r.link_layer, "netdevs": list(r.netdevs)} for r in p.rdma],
                "tc": p.tc, "ethtool": p.ethtool,
                "nic_settings": {n: _nic_dict(s) for n, s in sorted(p.nic_settings.items())}}
    out["rtt_ms"] = f.rtt_ms
    return out


def _nic_dict(s) -> dict:
    out: dict = {}
    if s.qdiscs is not None:
        out["qdiscs"] = [{"kind": q.kind, "handle": q.handle, "parent": q.parent,
                          "rate_bytes_per_s": q.rate_bytes_per_s} for q in s.qdiscs]
    if s.features is not None:
        out["offloads"] = {k: s.features[k][0] for k in ("generic-receive-offload", "tcp-segmentation-offload")
                           if k in s.features}
    if s.ring is not None:
        out["ring"] = {"rx": s.ring.rx, "rx_max": s.ring.rx_max, "tx": s.ring.tx, "tx_max": s.ring.tx_max}
    problems = {k: v for k, v in (("qdiscs", s.qdisc_problem), ("offloads", s.features_problem),
                                  ("ring", s.ring_problem)) if v}
    if problems:
        out["not_read"] = problems
    return out


def doctor_document(report: DoctorReport) -> dict:
    """The JSON document of ``netui doctor --json``. Field names never change meaning."""
    return {
        "version": SCHEMA_VERSION,
        "kind": KIND,
        "nodes": list(report.nodes),
        "failed": report.failed,
        "failing_nodes": failing_nodes(report.findings, report.nodes),
        "not_examined": report.not_examined,  # node → why: no finding, at no level
        "counts": report.counts(),  # findings, one per node
        "line_counts": report.line_counts(),  # the report's lines: alike findings on several nodes are one
        "started": round(report.started_wall_s, 3),
        "elapsed_s": round(report.elapsed_s, 3),
        "findings": [finding_dict(f) for f in report.findings],
        "facts": {n: _facts_dict(f) for n, f in report.facts.items()},
    }


PERSIST_NOTE = ("sysctl -w and ip link last until the next reboot: keep sysctls in /etc/sysctl.d/, "
                "the MTU in the interface's network configuration")


def summary(report: DoctorReport) -> str:
    """One line: the verdict, how many lines of each level the report shows (a finding alike
    on many nodes is one line), the nodes with a warning or worse, and the nodes that could
    not be examined (never counted at a level)."""
    nodes = nodes_text(len(report.nodes))
    bad = failing_nodes(report.findings, report.nodes)
    counts = report.line_counts()
    tally = ", ".join(f"{n} {label}{'s' if n > 1 and label == 'warning' else ''}"
                      for label, n in counts.items() if label != "ok")
    missing = report.not_examined
    unexamined = f" · not examined: {fold(list(missing))}" if missing else ""
    if not report.problems:
        if missing:
            return f"{nodes}: all checks passed on the {len(report.nodes) - len(missing)} examined{unexamined}"
        return f"{nodes}: all checks passed"
    head = f"{nodes}: {tally}"
    if not bad:
        return head + " · nothing failing" + unexamined
    worst = failing_nodes([f for f in report.findings if f.severity == Level.CRITICAL], report.nodes)
    named = f" (critical: {fold(worst)})" if worst and len(worst) < len(bad) else ""
    return head + f" · failing: {fold(bad)}{named}" + unexamined


def not_examined_lines(report: DoctorReport) -> list[str]:
    """A line per reason the doctor could not examine nodes, and where to look:
    "not examined: acc[4-5] is down (connection refused) · look: ssh acc4 true"."""
    return [f"not examined: {why} · look: ssh {nodes[0]} true" for nodes, why in not_examined(report.facts.values())]


def text_report(report: DoctorReport) -> str:
    """Findings worst first (alike ones once, with their nodes), each with its evidence and
    its command; then what passed."""
    rows = [(f, fold(nodes) or "all") for f, nodes in grouped(report.problems)]
    width = min(max([len(where) for _, where in rows] + [4]), 24)
    lines = [f"netui doctor · {summary(report)} · {report.elapsed_s:.1f} s", ""]
    missing = not_examined_lines(report)
    if missing:
        lines += [*missing, ""]
    indent = " " * (8 + 1 + width + 2)
    for f, where in rows:
        subject = f"{f.subject}: " if f.subject and not f.evidence.startswith(f.subject) else ""
        head = f"{f.severity.label.upper():<8} {where:<{width}}  "
        if len(where) > width:
            lines.append(f"{f.severity.label.upper():<8} {where}")
            head = indent
        lines.append(f"{head}{f.check:<16} {subject}{f.evidence}")
        if f.fix:
            lines.append(f"{indent}fix: {f.fix}")
        if f.look:
            lines.append(f"{indent}look: {f.look}")
    passed = [f for f in report.findings if f.severity == Level.OK]
    if passed:
        if report.problems:
            lines.append("")
        lines.append("passed:")
        for f in passed:
            lines.append(f"  {CHECKS[f.check] if not f.subject else f.subject}: {f.evidence}")
    if any(f.fix for f in report.problems):
        lines += ["", PERSIST_NOTE]
    return "\n".join(lines)
