"""The checks' contract (netui/checks/__init__.py): a check is one folder and one registration.

The echo check (tests/echo_check.py) — a real ``Check`` with a trivial test, verdict and
report of its own, no mock — is registered from inside the test, and the registry, ``netui
bench`` (its verbs, its run, its exit status), the app's dispatch, the engine's stragglers, the
events and the key table (its key, its help row) see it with no other edit; tests/ui/
test_checks_ui.py presses its key, opens the help and finds it in the command palette. netui's
own checks keep the protocols the rest of netui reads them by."""

from __future__ import annotations

import asyncio
import re

import pytest

from netui import checks
from netui.engine.monitor import Monitor
from netui.engine.sources import RecordedNode
from tests.echo_check import ECHO, KIND, STARTED, EchoDocuments, EchoSettings, EchoTest, registered, start_echo
from tests.synth import node_sample


@pytest.fixture
def echo():
    with registered() as check:
        yield check


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


def test_its_key_gets_a_row_of_the_key_table_after_netuis_checks(echo):
    from netui.ui import keys

    assert [(r.shown, r.actions, r.screens, r.check) for r in keys.check_rows()] == \
        [("E", ("run_check('echo')",), (keys.CLUSTER,), "echo")]
    row = keys.check_rows()[0]
    assert row.help == ("echo test: every node answers back — over the marked nodes (or all); in a replay, "
                        "the last one recorded before this point")
    rows = keys.rows()
    assert [r for r in rows if r != row] == list(keys.KEYS) and len(rows) == len(keys.KEYS) + 1
    assert rows[rows.index(row) - 1].check == "doctor"  # beside netui's own checks' keys in the help


def test_netuis_own_checks_keep_their_hand_made_rows():
    from netui.ui import keys

    assert keys.check_rows() == [] and keys.rows() == list(keys.KEYS)
    hand = {r.check: r for r in keys.KEYS if r.check}
    assert {name: hand[name].keys for name in hand} == {"pairs": ("t", "T"), "latency": ("l",),
                                                       "doctor": ("D", "r")}
    assert all(c.key in hand[c.name].keys for c in checks.all_checks())


def test_a_key_another_check_or_netui_binds_is_refused():
    from dataclasses import replace

    from netui.ui import keys

    with pytest.raises(ValueError, match="the key 'l' runs another check"):
        checks.register(replace(ECHO, key="l"))
    assert checks.by_name("latency").key == "l" and ECHO.name not in [c.name for c in checks.all_checks()]
    for key, row in (("s", "s: cycle the sort"), ("j", "j / k: down / up"), ("q", "q: quit"),
                     ("ctrl+p", "ctrl+p: command palette")):
        with registered(replace(ECHO, key=key)):
            with pytest.raises(ValueError, match=re.escape(f"the echo test's key '{key}' is netui's already ({row}")):
                keys.check_rows()
    with registered(replace(ECHO, key="")):  # no key: no row, nothing refused
        assert keys.check_rows() == []


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
