"""The probe mesh in ``snapshot --json``'s document (docs/json.md) and in the exports' metrics:
each node's loss, probes and RTT p99 over the window, the suspects as held, the worst pairs
(at most 20), and ``null`` while the mesh is off."""

from __future__ import annotations

import io
import json
from dataclasses import replace

from netui.engine.document import MESH_WORST_PAIRS, SCHEMA_VERSION, fleet_document
from netui.engine.export import export_csv, export_prom, mesh_of, node_rows
from netui.engine.monitor import judge_tick, take_sample
from netui.engine.recording.codec import header_record, sample_record
from netui.engine.recording.playback import load
from netui.engine.recording.writer import RecordingWriter
from netui.model.fleet import Fleet
from netui.model.mesh import MeshPeerReading, MeshSample
from tests.synth import node_sample

NODES = [f"n{i}" for i in range(1, 7)]  # 30 ordered pairs: more than the document lists


def address(name: str) -> str:
    return f"198.18.0.{NODES.index(name) + 1}"


def sample(name: str, k: int, *, lossy: str = "n3", available: bool = True, blocked=lambda a, b: False):
    """5 probes of every other node settled a frame (none at ``k`` 0, where the nodes first say
    where they answer); one lost on a pair of ``lossy``'s every fifth frame; RTTs 200-249 µs,
    and 900 µs toward n6 from n5."""
    readings = []
    for j, peer in enumerate(p for p in NODES if p != name and k):
        lost = 5 if blocked(name, peer) else int(lossy in (name, peer) and (k + j) % 5 == 0)
        slow = 700 if (name, peer) == ("n5", "n6") else 0
        readings.append(MeshPeerReading(address(peer), 40_000, 5 - lost, lost,
                                        tuple(200 + slow + (k * 7 + i) % 50 for i in range(5 - lost))))
    s = node_sample(k)
    mesh = MeshSample(s.mono_s, port=40_000, peers=5, answers=5 * k, refused=2, readings=tuple(readings),
                      address=address(name)) if available else \
        MeshSample(s.mono_s, available=False, error="mesh unavailable: Operation not permitted")
    return replace(s, mesh=mesh)


def fed(ticks: int, **kw) -> Fleet:
    fleet = Fleet(list(NODES))
    for k in range(ticks + 1):
        for name in NODES:
            take_sample(fleet, name, sample(name, k, **kw))
        judge_tick(fleet)
    return fleet


def mesh_doc(fleet: Fleet) -> dict:
    return json.loads(json.dumps(fleet_document(fleet)))["mesh"]


def test_the_mesh_is_null_while_it_is_off_and_the_documents_version_stays():
    fleet = Fleet(["n1"])
    for k in (1, 2):
        take_sample(fleet, "n1", node_sample(k))
        judge_tick(fleet)
    doc = json.loads(json.dumps(fleet_document(fleet)))
    assert doc["mesh"] is None and doc["version"] == SCHEMA_VERSION == 2


def test_each_node_has_its_loss_probes_and_rtt_p99_and_the_suspect_is_named_as_held():
    fleet = fed(30)
    doc = mesh_doc(fleet)
    assert doc["window_s"] == 60.0 and doc["pairs"] == 30
    nodes = {n["node"]: n for n in doc["nodes"]}
    assert [n["node"] for n in doc["nodes"]] == NODES
    n3 = nodes["n3"]
    assert n3["probes"] == 10 * 5 * 30 and n3["lost"] == 60 and n3["loss"] == 0.04
    assert n3["peers"] == 5 and n3["lossy_peers"] == 5 and n3["p99_rtt_s"] == 0.000249
    assert nodes["n1"]["lossy_peers"] == 1 and nodes["n5"]["p99_rtt_s"] == 0.000949
    assert n3 | {"probes": 0} == n3 | {"available": True, "error": None, "address": "198.18.0.3", "port": 40000,
                                        "answered": 150, "refused": 2, "probes": 0}
    [suspect] = doc["suspects"]
    assert {k: suspect[k] for k in ("kind", "name", "nodes", "probes", "lost", "loss", "elsewhere_loss")} == \
           {"kind": "node", "name": "n3 link", "nodes": ["n3"], "probes": 1500, "lost": 60, "loss": 0.04,
            "elsewhere_loss": 0.0}
    assert suspect["reason"] == fleet.mesh_suspects[0].text


def test_the_worst_pairs_come_first_and_at_most_twenty():
    worst = mesh_doc(fed(30))["worst_pairs"]
    assert len(worst) == MESH_WORST_PAIRS == 20
    assert {frozenset((p["from"], p["to"])) for p in worst[:10]} == {frozenset(("n3", n)) for n in NODES if n != "n3"}
    assert all(p["loss"] == 0.04 for p in worst[:10]) and worst[10]["loss"] == 0.0
    assert worst[10] == {"from": "n5", "to": "n6", "probes": 150, "lost": 0, "loss": 0.0, "p50_rtt_s": 0.000923,
                         "p99_rtt_s": 0.000949}  # lossless: the slowest first


def test_a_pair_of_too_few_probes_has_no_loss_figure():
    doc = mesh_doc(fed(3))  # 15 probes a pair: under MIN_PROBES
    assert all(p["loss"] is None and p["probes"] == 15 for p in doc["worst_pairs"])
    assert doc["suspects"] == []


def test_a_node_whose_mesh_is_unavailable_says_why():
    fleet = fed(3)
    take_sample(fleet, "n2", sample("n2", 4, available=False))
    judge_tick(fleet)
    n2 = mesh_doc(fleet)["nodes"][1]
    assert n2["node"] == "n2" and n2["available"] is False
    assert n2["error"] == "mesh unavailable: Operation not permitted" and n2["port"] is None


def test_the_csv_rows_give_the_nodes_mesh_loss_and_rtt_p99():
    fleet = fed(30)
    rows = {(d, m): v for d, m, v in node_rows(fleet["n3"], mesh_of(fleet, "n3"))}
    assert rows[("", "mesh_loss")] == 0.04 and rows[("", "mesh_p99_rtt_s")] == 0.000249
    assert not any(m.startswith("mesh") for _, m, _ in node_rows(fleet["n3"]))


def test_the_exports_carry_the_mesh_as_metrics(tmp_path):
    path = tmp_path / "mesh.ndjson.gz"
    w = RecordingWriter(path, header_record(100.0, hosts=NODES, interval_s=1.0))
    for k in range(31):
        for name in NODES:
            w.write(sample_record(100.0 + k, name, sample(name, k)))
        w.write({"type": "tick", "t": 100.0 + k})
    w.close()
    recording = load(path)
    csv_out, prom_out = io.StringIO(), io.StringIO()
    export_csv(recording, csv_out)
    export_prom(recording, prom_out)
    assert "1790000030.000,n3,,mesh_loss,0.04\n" in csv_out.getvalue()
    assert "1790000030.000,n3,,mesh_p99_rtt_s,0.000249\n" in csv_out.getvalue()
    prom = prom_out.getvalue()
    assert "# TYPE netui_mesh_loss_ratio gauge" in prom and "# TYPE netui_mesh_rtt_p99_seconds gauge" in prom
    assert 'netui_mesh_loss_ratio{instance="n3"} 0.04 1790000030.000\n' in prom


def test_a_node_never_answered_is_its_own_state_not_a_loss_and_blocked_everywhere_one_state():
    doc = mesh_doc(fed(10, lossy="", blocked=lambda a, b: "n4" in (a, b)))
    n4 = next(n for n in doc["nodes"] if n["node"] == "n4")
    assert n4 | {"answers_none": True, "answered_none": True, "unanswered_pairs": 10, "loss": None,
                 "probes": 0} == n4
    n1 = next(n for n in doc["nodes"] if n["node"] == "n1")
    assert (n1["loss"], n1["unanswered_pairs"], n1["answers_none"]) == (0.0, 2, False)
    assert doc["suspects"] == [] and doc["unanswered_pairs"] == 10 and doc["none_answered"] is False
    assert all("n4" not in (p["from"], p["to"]) for p in doc["worst_pairs"])
    everywhere = mesh_doc(fed(10, lossy="", blocked=lambda a, b: True))
    assert everywhere["none_answered"] is True and everywhere["suspects"] == [] and everywhere["pairs"] == 0
    assert not any(n["answers_none"] or n["answered_none"] for n in everywhere["nodes"])
