"""Hostile text in what node commands print: ping, fping, iperf3, perftest, the doctor's and
the pair test's probes, lldpctl, and the failures of SSH, HTTP and Prometheus. Each parser's
result, and the reports that print it (netui bench ping/iperf3 text and CSV), hold no
character a terminal would obey (tests/hostile_text.py has the strings)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from netui.checks.doctor.probe import parse_doctor_probe
from netui.checks.latency.parse_ping import parse_fping, parse_ping
from netui.checks.latency.report import report_csv as latency_csv
from netui.checks.latency.report import text_report as latency_text
from netui.checks.latency.runner import LatencyReport
from netui.checks.latency.tools import LatencySettings, sender_results
from netui.checks.pairs.model import PairResult
from netui.checks.pairs.parse_iperf3 import parse_iperf3
from netui.checks.pairs.parse_perftest import parse_perftest
from netui.checks.pairs.report import report_csv as pair_csv
from netui.checks.pairs.report import text_report as pair_text
from netui.checks.pairs.runner import PairTestReport
from netui.checks.pairs.tools import PairSettings
from netui.collectors.lldp import lldp_state
from netui.collectors.node_exporter import ScrapeFailure, http_failure
from netui.checks.pairs.probe import parse_probe
from netui.collectors.prometheus import PrometheusError, names_for_instances
from netui.collectors.shell import CommandFailed, CommandResult
from netui.collectors.ssh_connect import Failure
from netui.model.node import NodeState
from tests.hostile_text import HOSTILE, HOSTILE_LINE, HOSTILE_NAME, leaked


def strings(obj) -> list[str]:
    """Every string held by ``obj``: dataclass fields, mappings (keys too), sequences."""
    if isinstance(obj, str):
        return [obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [s for f in dataclasses.fields(obj) for s in strings(getattr(obj, f.name))]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in strings(k) + strings(v)]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [s for v in obj for s in strings(v)]
    return []


def none_leaked(obj) -> None:
    found = {s: leaked(s, lines=True) for s in strings(obj) if leaked(s, lines=True)}
    assert found == {}


def test_ping_and_fping_words():
    ping = parse_ping(f"PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.\nFrom 198.18.0.1 icmp_seq=1 {HOSTILE_LINE}\n",
                      HOSTILE, 1)
    none_leaked(ping)
    assert ping.error and "evil\\x00" in ping.error
    fping = parse_fping(f"198.18.0.2 : {HOSTILE_LINE}\n{HOSTILE}\n", "", 2)
    none_leaked(fping)
    results = sender_results("ping", "a", {"198.18.0.2": ["b"]}, CommandResult(2, "", HOSTILE_LINE), 10)
    none_leaked(results)
    report = LatencyReport(LatencySettings(), ["a", "b"], False, results=list(results), tests_done=1, tests_total=1)
    for text in (latency_text(report), latency_csv(report)):
        assert leaked(text) == []
    assert "evil\\x00" in latency_text(report)


def test_iperf3_words_in_its_json_and_around_it():
    stdout = json.dumps({"start": {}, "end": {}, "error": HOSTILE}) + "\n" + HOSTILE
    parsed = parse_iperf3(stdout, HOSTILE, 1)
    none_leaked(parsed)
    assert not parsed.ok and parsed.error.startswith("evil\\x00")
    result = PairResult.of("a", "b", "iperf3", parsed)
    report = PairTestReport(PairSettings(duration_s=2, threshold_gbps=1.0), ["a", "b"], False, results=[result],
                            tests_done=1, tests_total=1)
    report.judge()
    for text in (pair_text(report), pair_csv(report)):
        assert leaked(text) == []
    assert "evil\\x00" in pair_text(report)


def test_perftest_words():
    stdout = (" RDMA_Write BW Test\n Device         : " + HOSTILE_NAME + "\n " + HOSTILE_NAME + " : " + HOSTILE_LINE
              + "\n" + HOSTILE)
    parsed = parse_perftest(stdout, HOSTILE, 1)
    none_leaked(parsed)
    assert parsed.error is not None


def test_probe_outputs():
    doctor = parse_doctor_probe(f"@sysctl\n/proc/sys/net/core/rmem_max:{HOSTILE_LINE}\n@irqs\n"
                                f"irq {HOSTILE_NAME} 45\n/proc/irq/45/effective_affinity_list:3\n"
                                f"@qdisc {HOSTILE_NAME}\n{HOSTILE}\n@exit 0\n@{HOSTILE_NAME}\n@end\n")
    none_leaked(doctor)
    probe = parse_probe(f"@tool\n{HOSTILE_LINE}\n@addr\n{HOSTILE_NAME} 198.18.0.1/24\n{HOSTILE}\n")
    none_leaked(probe)


def test_lldpctl_failure_words():
    _, state = lldp_state(1, "", f"lldpctl: {HOSTILE_LINE}\n")
    assert leaked(state) == [] and state.startswith("no LLDP: lldpctl: evil\\x00")


@pytest.mark.parametrize("make", [
    lambda: Failure(NodeState.DOWN, HOSTILE),
    lambda: ScrapeFailure(NodeState.DOWN, HOSTILE),
    lambda: http_failure(500, "Internal Server Error", HOSTILE_LINE.encode()),
    lambda: PrometheusError(HOSTILE),
    lambda: CommandFailed(HOSTILE),
], ids=["ssh", "http", "http-body", "prometheus", "command"])
def test_failures_that_quote_a_remote_say_it_safely(make):
    exc = make()
    assert leaked(str(exc), lines=False) == [] and "evil" in str(exc)
    assert leaked(getattr(exc, "reason", ""), lines=False) == []


def test_prometheus_instances_and_nodenames_become_safe_distinct_names():
    names = names_for_instances({"198.18.0.1:9100": HOSTILE, "198.18.0.2:9100": HOSTILE + "x",
                                 f"{HOSTILE_NAME}:9100": None})
    assert all(leaked(n, lines=False) == [] for n in names.values())
    assert len(set(names.values())) == 3  # cut to one length, still told apart


def test_a_report_read_back_from_a_file_is_safe_to_show():
    """A recording's pair or latency test (or a saved report) whose strings a hand made hostile."""
    from netui.checks.latency.report import load_report as load_latency
    from netui.checks.latency.report import report_document as latency_document
    from netui.checks.pairs.report import load_report as load_pairs
    from netui.checks.pairs.report import report_document as pair_document

    pairs = PairTestReport(PairSettings(duration_s=2, threshold_gbps=1.0), ["a", "b"], False,
                           results=[PairResult("a", "b", "iperf3", None, False, error="x")], tests_done=1, tests_total=1)
    latency = LatencyReport(LatencySettings(), ["a", "b"], False, results=[], tests_done=0, tests_total=1)
    for report, document, load, text in ((pairs, pair_document, load_pairs, pair_text),
                                         (latency, latency_document, load_latency, latency_text)):
        doc = json.loads(json.dumps(document(report)))
        doc["problems"] = {"a": HOSTILE}
        doc["network"] = HOSTILE
        for p in doc.get("pairs") or ():
            p["error"] = HOSTILE
        loaded = load(doc)
        none_leaked(loaded)
        assert leaked(text(loaded)) == []
    deep: list = []
    for _ in range(200):
        deep = [deep]
    doc = json.loads(json.dumps(pair_document(pairs)))
    doc["problems"] = {"a": deep}
    with pytest.raises(ValueError):
        load_pairs(doc)


def test_a_recorded_event_is_said_safely():
    """The timeline and the toasts of a replay say recorded events in words (model/events.py)."""
    from netui.model.events import event_text

    for rec in ({"type": "state", "node": HOSTILE, "state": "down", "reason": HOSTILE},
                {"type": "health", "node": "n1", "was": HOSTILE, "level": "critical", "reasons": [HOSTILE]},
                {"type": "straggler", "flagged": True, "reason": HOSTILE},
                {"type": "test", "kind": "pair-test", "report": {"tool": HOSTILE, "summary": HOSTILE}}):
        text = event_text(rec)
        assert leaked(text, lines=False) == [] and "evil\\x00" in text
