"""A pair test's report with a topology: the matrix leaf by leaf, in-leaf and cross-switch pairs
side by side, the fabric suspects in the JSON (and back from it), exit 1 when an uplink is named.

The report is built from results as the runner hands them over (no node needed); the runs
themselves are the lab's (tests/lab/test_pairtest_lab.py, tests/lab/test_fabric_lab.py).
"""

from __future__ import annotations

import json

from netui.cli.bench import exit_status
from netui.checks.pairs.report import by_switch, load_report, report_document, text_report
from tests.factories import FABRIC_TOPO as TOPO
from tests.factories import FABRIC_WATCHED as WATCHED
from tests.factories import fabric_report as report

def test_nodes_are_ordered_leaf_by_leaf():
    order, starts = by_switch(report())
    assert order == ["n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n11", "n12"]
    assert starts == {"n1": "leaf1", "n5": "leaf2", "n9": "leaf3"}
    assert by_switch(report(topology=None)) == (WATCHED, {})


def test_text_names_the_uplink_and_splits_in_leaf_from_cross_switch():
    text = text_report(report())
    lines = text.splitlines()
    assert lines[2] == "── leaf1" and lines[3].startswith("n1 ")
    assert "── leaf2" in lines and "── leaf3" in lines
    assert lines.index("── leaf2") == 7  # four rows of leaf1 between
    assert "  in-leaf pairs:                 36, 0 failing, median 9.4 Gb/s" in lines
    assert "  cross-switch pairs:            96, 64 failing, median 191 Mb/s" in lines
    assert any(line.startswith("  ← all 64 pairs crossing leaf1↔spine1 run at 191 Mb/s") for line in lines)
    assert lines[-1].startswith("all 64 pairs crossing leaf1↔spine1 run at 191 Mb/s, in-leaf pairs at "
                                "9.4 Gb/s, other cross-switch pairs at 9.4 Gb/s — suspect leaf1's uplink")
    assert "← suspect:" not in text  # no node


def test_json_carries_the_fabric_suspects_and_reads_back():
    rep = report()
    doc = json.loads(json.dumps(report_document(rep)))
    [f] = doc["verdict"]["fabric"]
    assert (f["kind"], f["name"], f["uplinks"], f["direction"], f["pairs"]) == \
           ("uplink", "leaf1↔spine1", ["leaf1"], "both", 64)
    assert f["median_gbps"] == 0.191 and f["in_leaf_gbps"] == 9.4
    assert {"sender": "n1", "receiver": "n5"} in f["failing"]
    assert doc["verdict"]["suspects"] == []
    assert doc["topology"]["leaves"]["n9"] == "leaf3" and doc["topology"]["source"] == "topology.conf"
    assert {n["node"]: n["leaf"] for n in doc["verdict"]["nodes"]}["n5"] == "leaf2"
    again = load_report(doc)
    assert [x.name for x in again.verdict.fabric] == ["leaf1↔spine1"]
    assert again.verdict.text == rep.verdict.text


def test_exit_1_when_an_uplink_is_named():
    assert exit_status(report()) == 1


def test_without_a_topology_the_document_has_none():
    doc = report_document(report(topology=None))
    assert doc["topology"] is None and doc["verdict"]["fabric"] == []
    assert "leaf" not in doc["verdict"]["nodes"][0]
    assert "by switch:" not in text_report(report(topology=None))
