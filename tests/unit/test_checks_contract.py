"""The checks' contract (netui/checks/__init__.py): a check is one folder and one registration.

A check made here — a real ``Check`` with a trivial test, verdict and report of its own, no
mock — is registered from inside the test, and the registry, ``netui bench`` (its verbs, its
run, its exit status), the app's dispatch, the engine's stragglers and the events see it with
no other edit. netui's own checks keep the protocols the rest of netui reads them by."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from netui import checks
from netui.engine.monitor import Monitor
from netui.engine.sources import RecordedNode
from netui.model.straggler import Straggler
from tests.synth import node_sample

KIND = "echo-test"


@dataclass(frozen=True)
class EchoSettings:
    suspect: str = ""  # the node the echo test names; "" passes

    def check(self) -> EchoSettings:
        return self


@dataclass(frozen=True)
class EchoVerdict:
    status: str
    suspects: list[str]
    tested: frozenset[str]
    text: str
    untested: list[object] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == checks.PASS


@dataclass
class EchoReport:
    nodes: list[str]
    verdict: EchoVerdict | None = None
    refused: str = ""
    cancelled: bool = False
    tests_done: int = 0
    tests_total: int = 0


class EchoTest:
    """Judges nothing but its settings: names ``settings.suspect`` when it is one of the nodes."""

    def __init__(self, monitor, nodes, settings: EchoSettings, *, matrix: bool, on_progress=None) -> None:
        self.nodes, self.settings, self.cancelled = list(nodes), settings, False

    async def run(self) -> EchoReport:
        bad = [n for n in self.nodes if n == self.settings.suspect]
        verdict = EchoVerdict(checks.FAIL if bad else checks.PASS, bad, frozenset(self.nodes),
                              f"{bad[0]} echoes wrong" if bad else "every node echoes")
        return EchoReport(self.nodes, verdict, tests_done=len(self.nodes), tests_total=len(self.nodes))

    def cancel(self) -> None:
        self.cancelled = True


class EchoDocuments:
    """The echo check's report module."""

    @staticmethod
    def report_document(report: EchoReport) -> dict:
        v = report.verdict
        return {"kind": KIND, "nodes": report.nodes, "status": v.status, "suspects": v.suspects, "text": v.text}

    @staticmethod
    def text_report(report: EchoReport) -> str:
        return f"echo over {len(report.nodes)} nodes: {report.verdict.text}"

    @staticmethod
    def load_report(document: dict) -> EchoReport:
        if document.get("kind") != KIND:
            raise ValueError("not an echo document")
        verdict = EchoVerdict(document["status"], list(document["suspects"]), frozenset(document["nodes"]),
                              document["text"])
        return EchoReport(list(document["nodes"]), verdict)


def echo_stragglers(verdict: EchoVerdict) -> list[Straggler]:
    return [Straggler(n, "pairs", 0.0, 0.0, f"{n}: the echo test names it") for n in verdict.suspects]


STARTED: list[tuple] = []


def start_echo(app, nodes, **options) -> None:
    STARTED.append((app, list(nodes), options))


ECHO = checks.Check(name="echo", title="echo test", kind=KIND, key="E", recorded=True, verbs=("echo",),
                    aliases=("ping-back",), start=start_echo, screen=object, runner=EchoTest,
                    settings=EchoSettings, report=EchoDocuments, stragglers=echo_stragglers)


@pytest.fixture
def echo():
    checks.register(ECHO)
    STARTED.clear()
    try:
        yield ECHO
    finally:
        checks.unregister(ECHO.name)


def test_the_registry_finds_a_registered_check_by_name_kind_and_verb(echo):
    assert checks.by_name("echo") is echo and checks.by_kind(KIND) is echo
    assert checks.by_verb("echo") is echo and checks.by_verb("ping-back") is echo
    assert [c.name for c in checks.all_checks()] == ["pairs", "latency", "doctor", "echo"]
    assert checks.bench_verbs() == ["iperf3", "ib_write_bw", "latency", "echo", "ping", "ping-back"]
    with pytest.raises(ValueError, match="registered already"):
        checks.register(echo)
    with pytest.raises(ValueError, match="runs another check"):
        checks.register(checks.Check(name="echo2", title="", kind="", start=start_echo, screen=object,
                                     report=EchoDocuments, verbs=("iperf3",)))


def test_unregistered_it_is_gone_and_netuis_own_checks_stay():
    checks.register(ECHO)
    checks.unregister("echo")
    assert checks.by_kind(KIND) is None and checks.by_verb("echo") is None
    assert [c.name for c in checks.all_checks()] == list(checks.REGISTERED)
    with pytest.raises(ValueError):
        checks.unregister("pairs")


def test_netui_bench_lists_the_verb_and_runs_the_check(echo, capsys):
    from netui.cli import bench
    from netui.cli import main

    with pytest.raises(SystemExit) as exit:
        main(["bench", "--help"])
    assert exit.value.code == 0
    assert "echo (the echo test)" in " ".join(capsys.readouterr().out.split())
    args = bench.build_parser().parse_intermixed_args(["echo", "a", "b"])
    check = checks.by_verb(args.tool)
    assert check is echo and bench.settings_of(check, args) == EchoSettings()

    async def bench_of(settings: EchoSettings):
        monitor = Monitor([RecordedNode("a"), RecordedNode("b")], interval_s=1.0, history_s=10)
        for name in ("a", "b"):
            monitor.observe(name, node_sample(0))  # up: the bench does not wait for it
        return await bench._bench(monitor, check, ["a", "b"], settings, matrix=True, connect_timeout_s=0,
                                  quiet=True)

    passed, failed = asyncio.run(bench_of(EchoSettings())), asyncio.run(bench_of(EchoSettings(suspect="b")))
    assert (bench.exit_status(passed), bench.exit_status(failed)) == (0, bench.EXIT_FAILED)
    assert echo.documents().text_report(failed) == "echo over 2 nodes: b echoes wrong"


def test_the_app_dispatches_to_it_and_its_suspects_become_stragglers(echo):
    from netui.model.events import event_text
    from netui.ui.app import make_app

    monitor = Monitor([RecordedNode("a"), RecordedNode("b")], interval_s=1.0, history_s=10)
    app = make_app(monitor, autostart=False)
    app.start_check("echo", ["a", "b"], loud=True)
    assert STARTED == [(app, ["a", "b"], {"loud": True})]
    report = asyncio.run(EchoTest(monitor, ["a", "b"], EchoSettings(suspect="b"), matrix=True).run())
    document = EchoDocuments.report_document(report)
    app.record_test(KIND, document)
    assert app.last_tests[KIND] == document
    assert list(monitor.fleet.pair_suspects) == ["b"]  # its check's stragglers, through the engine
    assert [s.reason for s in monitor.fleet.stragglers] == ["b: the echo test names it"]
    assert event_text({"type": "test", "kind": KIND, "report": document}).startswith("echo test")


def test_a_check_without_stragglers_leaves_the_fleet_alone(echo):
    from netui.engine.monitor import take_test

    monitor = Monitor([RecordedNode("a"), RecordedNode("b")], interval_s=1.0, history_s=10)
    document = {"kind": KIND, "nodes": ["a", "b"], "status": "fail", "suspects": ["b"], "text": "b"}
    assert take_test(monitor.fleet, KIND, document)
    checks.unregister("echo")
    checks.register(checks.Check(name="echo", title="echo test", kind=KIND, start=start_echo, screen=object,
                                 report=EchoDocuments))
    monitor.fleet.clear_pair_suspects()
    assert not take_test(monitor.fleet, KIND, document) and monitor.fleet.pair_suspects == {}
    assert not take_test(monitor.fleet, "no-such-test", document)


# --- netui's own checks keep the protocols ---------------------------------------------------------

def test_netuis_verdicts_and_reports_keep_the_protocols():
    from netui.checks.latency.model import LatencyResult, judge_latency
    from netui.checks.latency.runner import LatencyReport
    from netui.checks.latency.tools import LatencySettings
    from netui.checks.pairs.model import PairResult
    from netui.checks.pairs.runner import PairTestReport
    from netui.checks.pairs.tools import PairSettings
    from netui.checks.pairs.verdict import judge

    pairs = judge([PairResult(a, b, "iperf3", 0.2 if a == "n3" else 9.4, True)
                   for a in ("n1", "n2", "n3") for b in ("n1", "n2", "n3") if a != b])
    latency = judge_latency([LatencyResult("n1", "n2", "ping", True, 5, 5, 0.0, 0.1, 0.1, 0.1, 0.1, 0.1),
                             LatencyResult.failed("n1", "n3", "ping", "no ping", kind="unavailable")])
    for verdict in (pairs, latency):
        assert isinstance(verdict, checks.Verdict)
        assert verdict.status in checks.STATUSES and verdict.passed == (verdict.status == checks.PASS)
    assert pairs.suspects == ["n3"] and pairs.tested == {"n1", "n2", "n3"}
    assert latency.status == checks.PASS and latency.tested == {"n1", "n2"} and len(latency.untested) == 1
    assert isinstance(PairTestReport(PairSettings(), ["n1", "n2"], True), checks.Report)
    assert isinstance(LatencyReport(LatencySettings(), ["n1", "n2"], True), checks.Report)


def test_each_recorded_check_reads_back_what_it_writes():
    for check in checks.all_checks():
        if check.recorded:
            documents = check.documents()
            assert all(callable(getattr(documents, f, None)) for f in ("report_document", "text_report",
                                                                          "load_report")), check.name
            assert check.runner is not None and check.kind
    assert [c.kind for c in checks.all_checks()] == ["pair-test", "latency-test", "doctor"]
    assert checks.by_verb("ping") is checks.by_verb("latency") is checks.by_name("latency")
