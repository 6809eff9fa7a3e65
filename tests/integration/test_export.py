"""netui export: csv (tidy), json, prom (OpenMetrics that Prometheus' own parser reads)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from netui.engine.export import export_csv, export_json, export_prom, intervals
from netui.engine.recording.playback import load
from tests.factories import record_demo

CAPTURE = Path(__file__).resolve().parents[1] / "data" / "lab-capture.jsonl"


@pytest.fixture(scope="module")
def capture():
    return load(CAPTURE)


@pytest.mark.slow
def test_prom_parses_with_the_openmetrics_parser_and_carries_node_exporter_names(capture):
    out = io.StringIO()
    count = export_prom(capture, out)
    families = {f.name: f for f in text_string_to_metric_families(out.getvalue())}
    assert sum(len(f.samples) for f in families.values()) == count > 10_000
    rx = families["node_network_receive_bytes"]
    assert rx.type == "counter"
    node3 = [s for s in rx.samples if s.labels == {"device": "eth0", "instance": "node3"}]
    assert len(node3) == 39  # one per recorded sample, with its time
    last = capture.frames[-1].records
    sample = next(r["sample"] for r in last if r["type"] == "sample" and r["node"] == "node3")
    assert node3[-1].value == sample.interfaces["eth0"].counters.rx_bytes  # the raw counter
    assert float(node3[-1].timestamp) == pytest.approx(sample.wall_s, abs=1e-3)
    for name in ("node_network_transmit_bytes", "node_network_receive_drop", "node_netstat_Tcp_RetransSegs",
                 "node_softnet_dropped", "node_softnet_times_squeezed", "node_cpu_seconds",
                 "node_softirqs_functions", "node_network_mtu_bytes", "netui_network_transmit_bytes_per_second",
                 "netui_tcp_retransmit_ratio", "netui_node_health_level", "netui_node_straggler", "netui_node_up"):
        assert name in families, name
    straggler = {s.labels["instance"]: s.value for s in families["netui_node_straggler"].samples if s.value}
    assert "node3" in straggler  # the retransmitting node was flagged at some point


@pytest.mark.slow
def test_prom_rates_are_the_models(capture):
    out = io.StringIO()
    export_prom(capture, out)
    families = {f.name: f for f in text_string_to_metric_families(out.getvalue())}
    tx = [s for s in families["netui_network_transmit_bytes_per_second"].samples
          if s.labels == {"device": "eth0", "instance": "node1"}]
    model = [fleet["node1"].rates.interfaces["eth0"].tx_bytes_per_s
             for step, fleet in intervals(capture) if "node1" in step.sampled and fleet["node1"].rates]
    assert [s.value for s in tx] == pytest.approx(model, rel=1e-12)
    assert max(model) * 8 > 5e9  # node1 sent at full speed


def test_csv_is_long_and_tidy(capture):
    out = io.StringIO()
    rows = export_csv(capture, out)
    table = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert len(table) == rows and list(table[0]) == ["time", "node", "device", "metric", "value"]
    keys = {(r["time"], r["node"], r["device"], r["metric"]) for r in table}
    assert len(keys) == rows  # one value per time, node, device and metric
    metrics = {r["metric"] for r in table}
    assert {"rx_bits_per_s", "tx_bits_per_s", "retrans_ratio", "softirq_percent", "health_level",
            "straggler", "out_segs_per_s", "softnet_dropped_per_s"} <= metrics
    node1_tx = [float(r["value"]) for r in table
                if (r["node"], r["device"], r["metric"]) == ("node1", "eth0", "tx_bits_per_s")]
    assert len(node1_tx) == 38  # the first sample has no rate: no row, not a zero
    cpu = {r["device"] for r in table if r["metric"] == "softirq_percent"}
    assert cpu == {"cpu0", "cpu1"}


def _keys(doc) -> set[str]:
    if isinstance(doc, dict):
        return set(doc) | {k for v in doc.values() for k in _keys(v)}
    if isinstance(doc, list):
        return {k for v in doc for k in _keys(v)}
    return set()


def test_csv_names_and_values_are_the_json_documents(capture):
    """One vocabulary: a CSV metric is a rate of the JSON document under the same name, in
    the same unit (throughput in bits per second, as the grid shows it)."""
    out = io.StringIO()
    export_csv(capture, out)
    table = list(csv.DictReader(io.StringIO(out.getvalue())))
    doc = io.StringIO()
    export_json(capture, doc)
    document = json.loads(doc.getvalue())
    names = _keys(document["intervals"])
    assert {r["metric"] for r in table} - {"health_level", "straggler"} <= names
    def node1_eth0(interval):
        node1 = next(n for n in interval["nodes"] if n["name"] == "node1")
        return node1, next(i for i in node1["interfaces"] if i["name"] == "eth0")

    # the interval where node1 sent fastest
    node1, eth0 = max((node1_eth0(i) for i in document["intervals"]),
                      key=lambda ne: ne[1]["rates"]["tx_bits_per_s"] or 0)
    t = f"{node1['time']:.3f}"
    row = {(r["device"], r["metric"]): float(r["value"]) for r in table if (r["time"], r["node"]) == (t, "node1")}
    assert eth0["rates"]["tx_bits_per_s"] > 1e9  # node1 sends at full speed, in bits
    assert row[("eth0", "tx_bits_per_s")] == pytest.approx(eth0["rates"]["tx_bits_per_s"], rel=1e-3)
    assert row[("", "out_segs_per_s")] == pytest.approx(node1["tcp"]["rates"]["out_segs_per_s"], rel=1e-3)
    assert row[("", "tx_bits_per_s")] == pytest.approx(node1["totals"]["tx_bits_per_s"], rel=1e-3)


async def test_json_holds_each_interval_and_the_events(tmp_path):
    path = tmp_path / "demo.ndjson.gz"
    await record_demo(path, ticks=10)
    rec = load(path)
    out = io.StringIO()
    export_json(rec, out)
    doc = json.loads(out.getvalue())
    assert doc["kind"] == "netui-export" and doc["header"]["format"] == 2
    assert len(doc["intervals"]) == 10
    last = doc["intervals"][-1]
    states = {n["name"]: n["state"] for n in last["nodes"]}
    assert states == {"gpu01": "up", "gpu02": "up", "gpu03": "down"}
    gpu01 = next(n for n in last["nodes"] if n["name"] == "gpu01")
    assert next(i for i in gpu01["interfaces"] if i["name"] == "eth0")["rates"]["rx_bits_per_s"] > 0
    assert any(e["type"] == "state" and e["node"] == "gpu03" and e["state"] == "down" for e in doc["events"])


@pytest.mark.slow
def test_the_command_writes_a_file_and_says_what_is_wrong(tmp_path):
    out = tmp_path / "x.om"
    r = subprocess.run([sys.executable, "-m", "netui", "export", str(CAPTURE), "--format", "prom", "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert out.read_text().endswith("# EOF\n")
    r = subprocess.run([sys.executable, "-m", "netui", "export", str(tmp_path / "nope")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
@pytest.mark.skipif(__import__("shutil").which("promtool") is None, reason="promtool (Debian prometheus) is not installed")
def test_prometheus_backfills_the_prom_export(capture, tmp_path):
    om = tmp_path / "cap.om"
    with open(om, "w") as out:
        count = export_prom(capture, out)
    tsdb = tmp_path / "tsdb"
    r = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(om), str(tsdb)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert str(count) in r.stdout  # every sample went in
    (tsdb / "wal").mkdir(exist_ok=True)
    r = subprocess.run(["promtool", "tsdb", "dump", str(tsdb)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    series = [line for line in r.stdout.splitlines()
              if line.startswith('{__name__="node_network_receive_bytes_total", device="eth0", instance="node3"}')]
    assert len(series) == 39
    last = next(r["sample"] for r in capture.frames[-1].records if r["type"] == "sample" and r["node"] == "node3")
    value, stamp_ms = series[-1].rsplit(" ", 2)[1:]
    assert float(value) == last.interfaces["eth0"].counters.rx_bytes
    assert int(stamp_ms) == round(last.wall_s * 1000)


@pytest.mark.slow
def test_export_judges_by_the_configuration_file_as_live_does(capture, tmp_path):
    """The health levels an export writes follow config.toml (thresholds and [health]), as the
    app and the replay do; without one, the defaults."""
    from netui.config import parse_config

    def levels(config) -> dict[str, int]:
        out = io.StringIO()
        export_csv(capture, out, config)
        worst: dict[str, int] = {}
        for row in csv.DictReader(io.StringIO(out.getvalue())):
            if row["metric"] == "health_level":
                worst[row["node"]] = max(worst.get(row["node"], 0), int(float(row["value"])))
        return worst

    default = levels(None)
    assert default["node3"] == 3  # its retransmits: critical by the defaults
    lenient = parse_config('[thresholds]\nretrans_ratio = { careful = inf, warning = inf, critical = inf }\n'
                           'drops_per_s = { careful = inf, warning = inf, critical = inf }\n'
                           'softirq_percent = { careful = inf, warning = inf, critical = inf }\n'
                           'time_squeeze_per_s = { careful = inf, warning = inf, critical = inf }\n'
                           'softnet_drops_per_s = { careful = inf, warning = inf, critical = inf }\n')
    judged = levels(lenient)
    assert judged["node3"] < default["node3"], judged

    def flagged_rows(config) -> int:  # interval rows with any level above ok
        out = io.StringIO()
        export_csv(capture, out, config)
        return sum(1 for row in csv.DictReader(io.StringIO(out.getvalue()))
                   if row["metric"] == "health_level" and float(row["value"]) > 0)

    # levels held one interval instead of three: they rise and fall sooner, on other rows
    assert flagged_rows(parse_config("[health]\nhold_intervals = 1\n")) != flagged_rows(None)
    (tmp_path / "config.toml").write_text("[health]\nhold_intervals = 1\n")
    cli = subprocess.run([sys.executable, "-m", "netui", "export", str(CAPTURE), "--format", "csv",
                          "--config", str(tmp_path / "config.toml")], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    bad = subprocess.run([sys.executable, "-m", "netui", "export", str(CAPTURE), "--config",
                          str(tmp_path / "nope.toml")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "nope.toml: no such file" in bad.stderr


def test_a_stragglers_figures_are_in_the_documents_units(capture):
    """A straggler's value says its unit, and throughput is in bits per second as every
    other rate of the document (and as its reason reads): node3's TX, where it is first named
    (a held straggler keeps the figures it was named with), is its totals' TX."""
    out = io.StringIO()
    export_json(capture, out)
    seen = {}
    for interval in json.loads(out.getvalue())["intervals"]:
        nodes = {n["name"]: n for n in interval["nodes"]}
        for s in interval["stragglers"]:
            if s["metric"] in seen:
                continue
            seen[s["metric"]] = s["unit"]
            if s["metric"] == "tx":
                assert s["value"] == pytest.approx(nodes[s["node"]]["totals"]["tx_bits_per_s"], rel=1e-6)
            if s["metric"] == "drops":
                assert s["value"] == pytest.approx(nodes[s["node"]]["totals"]["drops_per_s"], rel=1e-6)
    assert seen == {"tx": "bits/s", "retrans": "ratio", "drops": "per_s"}
