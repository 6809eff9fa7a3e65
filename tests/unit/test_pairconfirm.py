"""Confirm before blaming or failing: which pairs a failing verdict reruns alone (those of a node or
a link it names, or the few failing pairs of one that names no one), and the verdict on the
confirmed numbers (checks/pairs/verdict_confirm.py)."""

from __future__ import annotations

import dataclasses

import pytest

from netui.checks.pairs.model import PairResult, shift_rounds
from netui.checks.pairs.verdict import FAIL, INCONCLUSIVE, PASS, judge
from netui.checks.pairs.verdict_confirm import (
    CONFIRM_WAVES,
    FAILING_NAMING_NOBODY,
    RETEST_LIMIT,
    confirmed,
    pairs_to_confirm,
)
from netui.model.topology import Attachment, Switch, Topology

NODES4 = ["node1", "node2", "node3", "node4"]
SPEEDS = {n: 10_000 for n in NODES4}


def results(values: dict, nodes=NODES4, default: float = 9.4) -> list[PairResult]:
    return [PairResult(a, b, "iperf3", values.get((a, b), default), True) for r in shift_rounds(nodes) for a, b in r]


def rerun(pairs, gbps_of) -> list[PairResult]:
    return [PairResult(a, b, "iperf3", gbps_of(a, b), True) for a, b in pairs]


def test_a_verdict_that_does_not_fail_reruns_nothing():
    v = judge(results({}), link_speed_mbps=SPEEDS)
    assert v.status == PASS and pairs_to_confirm(v) == []
    v = judge(results({}))  # all alike, no mark: inconclusive, and nothing to confirm
    assert v.status == INCONCLUSIVE and pairs_to_confirm(v) == []


def test_a_suspects_fastest_failing_pairs_are_rerun_first():
    slow = {("node2", "node1"): 0.19, ("node2", "node3"): 0.25, ("node2", "node4"): 0.21}
    v = judge(results(slow), link_speed_mbps=SPEEDS)
    assert v.suspects == ["node2"]
    chosen = pairs_to_confirm(v)
    assert chosen[:2] == [("node2", "node3"), ("node2", "node4")]  # the fastest two of its three
    assert len(chosen) <= RETEST_LIMIT


def test_a_confirmed_blame_stays_and_shows_both_figures():
    slow = {("node2", "node1"): 0.19, ("node2", "node3"): 0.25, ("node2", "node4"): 0.21}
    matrix = results(slow)
    on = lambda rs: judge(rs, link_speed_mbps=SPEEDS)  # noqa: E731
    first = on(matrix)
    again = rerun(pairs_to_confirm(first), lambda a, b: 0.2 if a == "node2" else 9.4)
    v = confirmed(first, matrix, again, on)

    assert v.status == FAIL and v.suspects == ["node2"]
    assert v.retested[("node2", "node3")].gbps == 0.25  # the matrix's figure kept
    assert "Retested alone: node2→node3 250 Mb/s → 200 Mb/s" in v.text


def test_a_retest_that_contradicts_the_blame_makes_it_inconclusive():
    """node2's sends at 5 Gb/s in the matrix (its rounds shared a busy CPU), 9.4 alone: the
    blame does not hold, and the verdict says so rather than passing or blaming."""
    mild = {("node2", "node1"): 5.0, ("node2", "node3"): 5.2, ("node2", "node4"): 5.1}
    matrix = results(mild)
    on = lambda rs: judge(rs, link_speed_mbps=SPEEDS)  # noqa: E731
    first = on(matrix)
    assert first.suspects == ["node2"]
    chosen = pairs_to_confirm(first)
    v = confirmed(first, matrix, rerun(chosen, lambda a, b: 9.4), on)

    assert v.status == INCONCLUSIVE and v.suspects == []
    assert v.text.startswith("inconclusive: node2→node3 9.4 Gb/s on retest, 5.2 Gb/s in the matrix")
    assert "did not hold when each pair ran alone" in v.text


def test_nothing_retested_leaves_the_verdict_as_it_was():
    matrix = results({("node2", "node1"): 0.19, ("node2", "node3"): 0.25, ("node2", "node4"): 0.21})
    first = judge(matrix, link_speed_mbps=SPEEDS)
    assert confirmed(first, matrix, [], lambda rs: judge(rs, link_speed_mbps=SPEEDS)) is first


# --- a failure that names no one: one unlucky pair among pairs all alike ---------------------------

# The CI run of tests/lab/test_verdict_lab.py::test_every_node_equally_slow_is_inconclusive_and_exits_3:
# every node's link shaped alike (tbf 200 Mbit/s), no mark but the best pairs', and one pair at a
# moment of CPU load at 88 % of its mark: "fail: 1 of 12 pairs fails" (exit 1) instead of "all alike".
ALIKE = [0.196, 0.199, 0.197, 0.198, 0.195, 0.199, 0.198, 0.197, 0.196, 0.199, 0.198]
UNLUCKY = ("node1", "node2")
NOMINAL = {n: (10_000, "veth") for n in NODES4}


def alike_matrix(unlucky_gbps: float = 0.88 * 0.9 * 0.199) -> list[PairResult]:
    rates = iter(ALIKE)
    return [PairResult(a, b, "iperf3", unlucky_gbps if (a, b) == UNLUCKY else next(rates), True)
            for r in shift_rounds(NODES4) for a, b in r]


def on_alike(rs):
    return judge(rs, nominal_mbps=NOMINAL)


def test_one_pair_just_under_the_mark_among_alike_pairs_is_rerun_alone():
    first = on_alike(alike_matrix())
    assert first.status == FAIL and first.suspects == [] and first.fabric == []
    assert "1 of 12 pairs fails" in first.text and "cannot tell which end" in first.text
    assert pairs_to_confirm(first) == [UNLUCKY]


def test_its_retest_passing_makes_the_pairs_alike_again_and_exits_3():
    from netui.checks.pairs.runner import PairTestReport
    from netui.checks.pairs.tools import PairSettings
    from netui.cli.bench import exit_status

    matrix = alike_matrix()
    first = on_alike(matrix)
    v = confirmed(first, matrix, rerun([UNLUCKY], lambda a, b: 0.198), on_alike)

    assert v.status == INCONCLUSIVE and v.failing == [] and v.suspects == []
    assert v.text.startswith("inconclusive: all 12 pairs are alike (the best at 199 Mb/s)"), v.text
    assert v.text.endswith("Retested alone, the pair that failed in the matrix passes: "
                           "node1→node2 158 Mb/s → 198 Mb/s"), v.text
    assert v.retested[UNLUCKY].gbps == matrix[0].gbps  # the matrix's figure kept beside the retest
    assert pairs_to_confirm(v) == []  # the next wave has nothing to rerun
    report = PairTestReport(PairSettings(duration_s=1), NODES4, True, verdict=v)
    assert exit_status(report) == 3


@pytest.mark.parametrize("matrix_gbps, alone_gbps", [
    (0.88 * 0.9 * 0.199, 0.15),  # just under the mark, and lower still alone
    (0.03, 0.031),  # a real bad path (the two ends fine elsewhere): as bad alone
])
def test_a_pair_that_fails_again_alone_keeps_the_fail(matrix_gbps, alone_gbps):
    matrix = alike_matrix(matrix_gbps)
    first = on_alike(matrix)
    assert first.status == FAIL and first.suspects == [] and pairs_to_confirm(first) == [UNLUCKY]
    v = confirmed(first, matrix, rerun([UNLUCKY], lambda a, b: alone_gbps), on_alike)

    assert v.status == FAIL and v.suspects == [] and [r.pair for r in v.failing] == [UNLUCKY]
    assert v.text.startswith("1 of 12 pairs fails") and "Retested alone: node1→node2 " in v.text
    assert pairs_to_confirm(v) == []  # confirmed: not rerun twice


def test_a_pair_just_under_a_hard_mark_that_passes_alone_passes():
    matrix = results({UNLUCKY: 8.8})  # 10G links: a 9 Gb/s mark
    on = lambda rs: judge(rs, link_speed_mbps=SPEEDS)  # noqa: E731
    first = on(matrix)
    assert first.status == FAIL and first.suspects == [] and pairs_to_confirm(first) == [UNLUCKY]
    v = confirmed(first, matrix, rerun([UNLUCKY], lambda a, b: 9.3), on)
    assert v.status == PASS
    assert v.text == ("all 12 pairs pass (≥ 90 % of link speed). Retested alone, the pair that failed in the "
                      "matrix passes: node1→node2 8.8 Gb/s → 9.3 Gb/s")


def test_a_few_failing_pairs_naming_no_one_are_rerun_the_nearest_to_passing_first():
    slow = {("node1", "node2"): 7.0, ("node3", "node4"): 8.5, ("node2", "node3"): 8.1}
    first = judge(results(slow), link_speed_mbps=SPEEDS)
    assert first.status == FAIL and first.suspects == []
    assert pairs_to_confirm(first) == [("node3", "node4"), ("node2", "node3"), ("node1", "node2")]
    assert pairs_to_confirm(first, budget=2) == []  # not all of them: their retests could not change it


def test_more_failing_pairs_than_are_rerun_or_every_pair_failing_costs_no_retest():
    every = judge(results({}, default=5.0), link_speed_mbps=SPEEDS)
    assert every.status == FAIL and every.suspects == [] and len(every.failing) == 12
    assert pairs_to_confirm(every) == []
    # one more than are rerun, none of them naming a node: the verdict fails whatever a few show
    nodes6 = [f"node{i}" for i in range(1, 7)]
    slow = dict.fromkeys([("node1", "node2"), ("node3", "node4"), ("node5", "node6"), ("node2", "node5"),
                          ("node6", "node3")][:FAILING_NAMING_NOBODY + 1], 8.0)
    v = judge(results(slow, nodes=nodes6), link_speed_mbps=dict.fromkeys(nodes6, 10_000))
    assert v.status == FAIL and v.suspects == [] and len(v.failing) == FAILING_NAMING_NOBODY + 1
    assert pairs_to_confirm(v) == []


def test_a_retest_that_outruns_the_crowded_matrix_does_not_fail_the_pairs_nobody_reran():
    """No mark but the best pairs', the matrix's rounds crowded (a busy CPU): the unlucky pair runs
    4.5× faster alone. Judged with it, the 11 pairs that passed would fail a mark in the middle of
    that gap, and two nodes be blamed: the verdict compares nothing and says so."""
    matrix = alike_matrix()
    first = on_alike(matrix)
    v = confirmed(first, matrix, rerun([UNLUCKY], lambda a, b: 0.9), on_alike)
    assert v.status == INCONCLUSIVE and v.suspects == [] and v.fabric == []
    assert all(not n.suspect for n in v.nodes.values())
    assert v.text.startswith("inconclusive: node1→node2 900 Mb/s on retest, 158 Mb/s in the matrix — run alone, "
                             "faster than the matrix's pairs, it moved their pass mark: 11 pairs that passed "
                             "in the matrix and were not rerun would fail it"), v.text
    assert pairs_to_confirm(v) == []


def test_an_undone_blame_reruns_nothing_more_for_the_pair_it_leaves_failing():
    """node2's sends at 5 Gb/s in a busy round name it, and node3→node4 at 8.5 fails unexplained.
    Alone, node2 sends at 9.4: the blame does not hold, and the verdict is inconclusive already
    (not a fail), which no retest of node3→node4 could change: it is not rerun."""
    mild = {("node2", "node1"): 5.0, ("node2", "node3"): 5.2, ("node2", "node4"): 5.1, ("node3", "node4"): 8.5}
    matrix = results(mild)
    on = lambda rs: judge(rs, link_speed_mbps=SPEEDS)  # noqa: E731
    first = on(matrix)
    assert first.suspects == ["node2"] and ("node3", "node4") not in pairs_to_confirm(first)
    v = confirmed(first, matrix, rerun(pairs_to_confirm(first), lambda a, b: 9.4), on)
    assert v.status == INCONCLUSIVE and v.suspects == [] and [r.pair for r in v.failing] == [("node3", "node4")]
    assert "did not hold when each pair ran alone" in v.text
    assert pairs_to_confirm(v) == []


# --- the issue's fabric: the in-leaf pair decides ------------------------------------------------

NODES6 = [f"fn{i}" for i in range(1, 7)]
LEAF = {n: ("leafa", "leafb", "leafc")[i // 2] for i, n in enumerate(NODES6)}
TOPO = Topology([Switch("spine")] + [Switch(leaf, parent="spine") for leaf in ("leafa", "leafb", "leafc")],
                [Attachment(n, LEAF[n]) for n in NODES6])


def crossing(a, b):
    return LEAF[a] != LEAF[b] and "leafb" in (LEAF[a], LEAF[b])


def test_the_in_leaf_pair_that_named_two_nodes_is_rerun_and_the_uplink_named():
    """10G links (a 9 Gb/s mark), leafb's uplink at 2–2.5 Gb/s, the in-leaf pair fn3↔fn4 at
    4.0 and 4.5 in a busy round: too close to the slow pairs to clear fn3 and fn4, so the matrix
    alone names them. Rerun alone, fn3→fn4 runs at 9.5: the uplink is named, not the nodes."""
    def gbps(a, b):
        if crossing(a, b):
            return 2.0 + 0.5 * (NODES6.index(a) + NODES6.index(b)) / 10
        return {("fn3", "fn4"): 4.0, ("fn4", "fn3"): 4.5}.get((a, b), 9.5)

    matrix = [PairResult(a, b, "iperf3", gbps(a, b), True) for r in shift_rounds(NODES6) for a, b in r]
    speeds = {n: 10_000 for n in NODES6}
    on = lambda rs: judge(rs, link_speed_mbps=speeds, topology=TOPO)  # noqa: E731
    first = on(matrix)
    assert sorted(first.suspects) == ["fn3", "fn4"] and first.fabric == []
    chosen = pairs_to_confirm(first)
    assert ("fn3", "fn4") in chosen and ("fn4", "fn3") in chosen
    assert all(crossing(*p) or {*p} == {"fn3", "fn4"} for p in chosen)

    again = rerun(chosen, lambda a, b: gbps(a, b) if crossing(a, b) else 9.5)
    v = confirmed(first, matrix, again, on)
    assert v.status == FAIL and v.suspects == []
    assert [f.name for f in v.fabric] == ["leafb↔spine"]
    assert "fn3→fn4 4 Gb/s → 9.5 Gb/s" in v.text
    assert v.retested[("fn3", "fn4")].gbps == 4.0
    # both verdicts are kept apart: the matrix's still names the nodes
    assert sorted(first.suspects) == ["fn3", "fn4"]


def test_a_marginal_clearing_pass_of_a_fabric_suspects_end_is_rerun():
    """The issue's numbers: the gap mark passes fn3→fn4 at 6.0, yet it is far below the best
    pairs and all that shows fn3 sends well: it is rerun with the uplink's fastest pairs."""
    import random

    rng = random.Random(2)

    def gbps(a, b):
        if crossing(a, b):
            return rng.uniform(0.03, 0.29)
        return {("fn3", "fn4"): 6.0, ("fn4", "fn3"): 7.0}.get((a, b)) or rng.uniform(15.0, 19.0)

    matrix = [PairResult(a, b, "iperf3", gbps(a, b), True) for r in shift_rounds(NODES6) for a, b in r]
    first = judge(matrix, topology=TOPO)
    assert [f.name for f in first.fabric] == ["leafb↔spine"]
    chosen = pairs_to_confirm(first)
    assert {("fn3", "fn4"), ("fn4", "fn3")} <= set(chosen)
    assert sum(crossing(*p) for p in chosen) == 2  # two of the uplink's 16, not all
    on = lambda rs: judge(rs, topology=TOPO)  # noqa: E731
    again = rerun(chosen, lambda a, b: 0.28 if crossing(a, b) else 16.2)
    v = confirmed(first, matrix, again, on)
    assert [f.name for f in v.fabric] == ["leafb↔spine"] and v.suspects == []
    assert "fn3→fn4 6 Gb/s → 16.2 Gb/s" in v.text


def test_a_retest_that_fails_to_run_is_a_failure_of_the_pair():
    slow = {("node2", "node1"): 0.19, ("node2", "node3"): 0.25, ("node2", "node4"): 0.21}
    matrix = results(slow)
    on = lambda rs: judge(rs, link_speed_mbps=SPEEDS)  # noqa: E731
    first = on(matrix)
    again = [dataclasses.replace(r, gbps=None, ok=False, error="connection refused", kind="refused")
             for r in rerun(pairs_to_confirm(first)[:1], lambda a, b: 0.0)]
    v = confirmed(first, matrix, again, on)
    assert v.status == FAIL and v.suspects == ["node2"]
    assert "→ failed" in v.text


# --- the report: both figures, in text and JSON, and back ------------------------------------------


def issue_report():
    import random

    from netui.checks.pairs.runner import PairTestReport
    from netui.checks.pairs.tools import BOTH_WAYS, SHIFT, PairSettings

    rng = random.Random(2)

    def gbps(a, b):
        if crossing(a, b):
            return round(rng.uniform(0.03, 0.29), 3)
        return {("fn3", "fn4"): 6.0, ("fn4", "fn3"): 7.0}.get((a, b)) or round(rng.uniform(15.0, 19.0), 2)

    matrix = [PairResult(a, b, "iperf3", gbps(a, b), True, sent_gbps=gbps(a, b))
              for r in shift_rounds(NODES6) for a, b in r]
    report = PairTestReport(PairSettings(duration_s=1, direction=BOTH_WAYS), NODES6, True, results=matrix,
                            topology=TOPO, pattern=SHIFT, rounds=5, tests_done=30, tests_total=30,
                            nominal_speeds_mbps={n: (10_000, "veth") for n in NODES6})
    chosen = pairs_to_confirm(report.judge())
    report.retests = rerun(chosen, lambda a, b: 0.28 if crossing(a, b) else 16.2)
    report.retests_total = len(report.retests)
    report.judge()
    return report


def test_the_text_report_shows_both_figures_and_both_matrices():
    from netui.checks.pairs.report import text_report

    text = text_report(issue_report())
    assert "shift pattern · 5 rounds of 1 s + 4 retests" in text
    assert "fn3→fn4  pass  6 Gb/s → 16.2 Gb/s on retest" in text
    assert "(row sends to column, Gb/s as the sender counted)" in text
    assert "(row receives from column, Gb/s as the receiver counted)" in text
    assert "link speeds only nominal (veth 10G)" in text
    assert "suspect leafb's uplink" in text and "Retested alone: " in text


def test_the_json_keeps_both_figures_and_a_saved_run_is_judged_alike():
    from netui.checks.pairs.report import load_report, report_document

    report = issue_report()
    doc = report_document(report)
    row = next(p for p in doc["pairs"] if (p["sender"], p["receiver"]) == ("fn3", "fn4"))
    assert (row["gbps"], row["retest_gbps"], row["pass"]) == (6.0, 16.2, True)
    assert doc["pattern"] == "shift" and doc["retests_done"] == doc["retests_total"] == 4
    assert len(doc["retests"]) == 4 and doc["verdict"]["before_retests"]["fabric"] == ["leafb↔spine"]
    i, j = NODES6.index("fn3"), NODES6.index("fn4")
    assert doc["send_matrix"][i][j] == 6.0 and doc["receive_matrix"][j][i] == 6.0
    assert doc["gbps_matrix"][i][j] == 16.2  # the confirmed figure
    again = load_report(doc)
    assert again.verdict.text == report.verdict.text and again.pattern == "shift"
    assert again.verdict.retested.keys() == report.verdict.retested.keys()


@pytest.mark.parametrize("alone_gbps, status, exit_code, line", [
    (0.198, INCONCLUSIVE, 3, "node1→node2  ran  158 Mb/s → 198 Mb/s on retest"),
    (0.15, FAIL, 1, "node1→node2  FAIL  158 Mb/s → 150 Mb/s on retest"),
])
async def test_the_runner_reruns_the_unlucky_pair_alone_and_the_report_says_what_it_showed(
        alone_gbps, status, exit_code, line):
    """The runner's confirming waves (PairTest._confirm) on the alike matrix, each retest's
    measurement stood in for: one wave of one pair alone, then the report and its exit status."""
    from types import SimpleNamespace

    from netui.checks.pairs.report import report_document, text_report
    from netui.checks.pairs.runner import PairTest
    from netui.checks.pairs.tools import PairSettings
    from netui.cli.bench import exit_status

    fleet = SimpleNamespace(topology_for=lambda nodes: None, topology_source="")
    test = PairTest(SimpleNamespace(fleet=fleet), NODES4, PairSettings(duration_s=1), shells={})
    report = test.report
    report.results, report.nominal_speeds_mbps = alike_matrix(), NOMINAL
    report.rounds, report.tests_done, report.tests_total = 3, 12, 12
    waves = []

    async def each_alone(rounds, staged, endpoints, *, first=0):
        waves.append(rounds)
        for pairs in rounds:
            test._finished(rerun(pairs, lambda a, b: alone_gbps))

    test._run_rounds = each_alone
    await test._confirm(dict.fromkeys(NODES4))

    assert waves == [[[UNLUCKY]]]  # one wave: the unlucky pair, alone in its round
    assert report.retests_total == len(report.retests) == 1
    verdict = report.judge()
    assert verdict.status == status and exit_status(report) == exit_code
    assert line in text_report(report).splitlines()
    doc = report_document(report)
    row = next(p for p in doc["pairs"] if (p["sender"], p["receiver"]) == UNLUCKY)
    assert row["gbps"] == pytest.approx(0.158, abs=0.001) and row["retest_gbps"] == alone_gbps
    assert doc["verdict"]["before_retests"]["status"] == FAIL and doc["retests_done"] == 1


# --- a busy machine's matrix: what the confirmed numbers name is confirmed in turn --------------

LAB6 = [f"node{i}" for i in range(1, 7)]
LAB_LEAF = {n: f"leaf{1 + i // 2}" for i, n in enumerate(LAB6)}
LAB_TOPO = Topology([Switch("spine")] + [Switch(f"leaf{k}", parent="spine") for k in (1, 2, 3)],
                    [Attachment(n, LAB_LEAF[n]) for n in LAB6])


def _rates(text: str) -> dict:
    pairs = (item.rsplit(" ", 1) for item in text.split(", "))
    return {tuple(pair.split("→")): float(gbps) for pair, gbps in pairs}


# Two matrices of one CI run (test_matrix_loaded_lab: leaf2's uplink shaped to 300 Mbit/s, a busy
# loop on each CPU, Gb/s as the shift pattern's five rounds measured them) and the first wave's
# retests. In the busy rounds every flow got ~1 Gb/s; alone, the in-leaf pairs ran at 7–18.
BUSY_MATRICES = {
    "run1": ("node4→node5 0.255, node1→node2 1.17, node2→node3 0.23, node3→node4 0.997, node6→node1 1.23, "
             "node5→node6 1.24, node5→node1 1.54, node2→node4 0.16, node3→node5 0.129, node4→node6 0.128, "
             "node1→node3 0.113, node6→node2 1.67, node2→node5 1.58, node1→node4 0.136, node5→node2 1.47, "
             "node4→node1 0.123, node3→node6 0.0956, node6→node3 0.122, node2→node6 1.04, node4→node2 0.0986, "
             "node3→node1 0.152, node5→node3 0.172, node6→node4 0.0455, node1→node5 0.913, node1→node6 1, "
             "node6→node5 1.03, node3→node2 0.25, node2→node1 0.987, node4→node3 1.13, node5→node4 0.227",
             "node4→node5 0.285, node3→node2 0.286, node4→node3 11.5, node3→node4 12.2, node5→node6 16.6, "
             "node1→node2 18.6"),
    "run2": ("node1→node2 0.892, node6→node1 0.824, node4→node5 0.142, node5→node6 0.809, node3→node4 0.809, "
             "node2→node3 0.147, node5→node1 1.08, node6→node2 1.14, node1→node3 0.107, node3→node5 0.125, "
             "node4→node6 0.11, node2→node4 0.105, node3→node6 0.177, node6→node3 0.13, node5→node2 3.16, "
             "node1→node4 0.123, node2→node5 3.91, node4→node1 0.133, node4→node2 0.0885, node3→node1 0.0595, "
             "node1→node5 4.56, node5→node3 0.0762, node2→node6 6.87, node6→node4 0.213, node1→node6 2.16, "
             "node5→node4 0.169, node4→node3 1.99, node2→node1 2.3, node6→node5 1.97, node3→node2 0.244",
             "node3→node2 0.287, node6→node4 0.286, node4→node3 7.09, node3→node4 7.85, node6→node5 6.88, "
             "node2→node1 12.1"),
}


@pytest.mark.parametrize("run", sorted(BUSY_MATRICES))
def test_a_switch_the_confirmed_numbers_name_anew_has_its_own_pairs_rerun(run):
    """The first wave reran the uplink's pairs and the in-leaf ones: alone, the in-leaf pairs ran
    10× faster, the pass mark rose, and every cross-leaf pair failed it — the spine named on
    leaf1↔leaf3 pairs nobody reran. The next wave reruns them (alone they run as in-leaf pairs
    do) and the verdict names leaf2's uplink and no node, as it should."""
    matrix_text, first_wave = BUSY_MATRICES[run]
    matrix = [PairResult(a, b, "iperf3", g, True) for (a, b), g in _rates(matrix_text).items()]
    nominal = {n: (10_000, "virtual") for n in LAB6}
    on = lambda rs: judge(rs, topology=LAB_TOPO, nominal_mbps=nominal)  # noqa: E731

    def alone(a, b):  # what the first wave measured, and the lab's rates alone otherwise
        through_leaf2 = LAB_LEAF[a] != LAB_LEAF[b] and "leaf2" in (LAB_LEAF[a], LAB_LEAF[b])
        return _rates(first_wave).get((a, b), 0.28 if through_leaf2 else 12.0)

    first = on(matrix)
    assert [f.name for f in first.fabric] == ["leaf2↔spine"] and first.suspects == []
    wave1 = pairs_to_confirm(first)
    assert set(wave1) == set(_rates(first_wave))  # the CI run's own first wave
    retests = rerun(wave1, alone)
    v = confirmed(first, matrix, retests, on)
    assert [f.name for f in v.fabric] == ["spine"]  # named on pairs the first wave did not rerun

    waves = 1
    while chosen := pairs_to_confirm(v, RETEST_LIMIT - len(retests)):
        assert not set(chosen) & {r.pair for r in retests}, "a pair rerun twice"
        waves += 1
        retests += rerun(chosen, alone)
        v = confirmed(first, matrix, retests, on)
    assert waves <= CONFIRM_WAVES and len(retests) <= RETEST_LIMIT
    assert [f.name for f in v.fabric] == ["leaf2↔spine"] and v.suspects == [], v.text
    assert any(LAB_LEAF[a] in ("leaf1", "leaf3") and LAB_LEAF[b] in ("leaf1", "leaf3") and LAB_LEAF[a] != LAB_LEAF[b]
               for a, b in v.retested), "no leaf1↔leaf3 pair was rerun"


async def test_a_failure_naming_no_one_is_not_rerun_in_part_when_a_pair_cannot_run():
    """All of them or none: two unlucky pairs, one with an end the runner has no test address
    for: rerunning the other alone could not change the verdict, so no retest runs."""
    from types import SimpleNamespace

    from netui.checks.pairs.runner import PairTest
    from netui.checks.pairs.tools import PairSettings

    other = ("node3", "node4")
    matrix = [dataclasses.replace(r, gbps=0.88 * 0.9 * 0.199) if r.pair == other else r
              for r in alike_matrix()]
    verdict = on_alike(matrix)
    assert verdict.status == FAIL and not verdict.suspects and not verdict.fabric
    assert sorted(pairs_to_confirm(verdict)) == sorted([UNLUCKY, other])
    fleet = SimpleNamespace(topology_for=lambda nodes: None, topology_source="")
    test = PairTest(SimpleNamespace(fleet=fleet), NODES4, PairSettings(duration_s=1), shells={})
    test.report.results, test.report.nominal_speeds_mbps = matrix, NOMINAL
    waves = []

    async def each_alone(rounds, staged, endpoints, *, first=0):
        waves.append(rounds)

    test._run_rounds = each_alone
    await test._confirm(dict.fromkeys(["node1", "node2", "node3"]))  # (node4: no test address)
    assert waves == [] and test.report.retests_total == 0
    await test._confirm(dict.fromkeys(NODES4))  # (with it: both, each alone)
    assert sorted(p for (p,) in waves[0]) == sorted([UNLUCKY, other])
