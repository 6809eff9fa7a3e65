"""`netui doctor --latency FILE`: the buffer advice takes the RTT of a latency test's export;
a file that is not one is a usage error (exit 2), never a traceback. On this host."""

from __future__ import annotations

import json

import pytest

from netui.collectors.local import LiveReader
from netui.checks.latency.report import report_document
from netui.checks.latency.runner import LatencyReport
from netui.checks.latency.tools import LatencySettings
from netui.checks.latency.model import LatencyResult
from tests.command import netui
from tests.testdata import data_path


@pytest.mark.slow
def test_a_file_that_is_not_a_latency_export_is_a_usage_error(tmp_path):
    cases = {"missing.json": None, "other.json": '{"kind": "doctor"}', "cut.json": '{"kind": "latency-te'}
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        result = netui("doctor", "--latency", str(path))
        assert result.returncode == 2, result.stderr
        assert f"netui doctor: error: --latency {path}: " in result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_buffer_advice_takes_the_exported_rtt(tmp_path):
    me = LiveReader().name
    results = [LatencyResult(me, "peer", "fping", True, 20, 20, 0.0, 7.5, 7.5)]
    export = tmp_path / "netui-ping.json"
    export.write_text(json.dumps(report_document(LatencyReport(LatencySettings(), [me, "peer"], True, results=results))))
    result = netui("doctor", "--json", "--latency", str(export))
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    assert doc["facts"][me]["rtt_ms"] == 7.5
    buffers = [f for f in doc["findings"] if f["subject"] in ("net.core.rmem_max", "net.ipv4.tcp_rmem") and f["node"]]
    for f in buffers:  # this host's buffers below 128 MiB, if any: judged at 7.5 ms
        assert "the 7.5 ms round trip of the latency test's slowest pair needs" in f["evidence"]


@pytest.mark.slow
def test_this_host_is_asked_about_its_qdiscs_a_captured_tree_is_not():
    import shutil
    from pathlib import Path

    me = LiveReader().name
    live = json.loads(netui("doctor", "--json").stdout)
    has_tc = shutil.which("tc", path="/usr/sbin:/sbin:/usr/bin:/bin") is not None
    assert live["facts"][me]["tc"] is has_tc
    if has_tc:  # every data-plane interface of this host, read: its qdiscs are known
        assert live["facts"][me]["nic_settings"] and all(
            "qdiscs" in s for s in live["facts"][me]["nic_settings"].values())
    tree = data_path("prometheus-procfs")
    doc = json.loads(netui("doctor", "--json", "--procfs", str(tree / "proc"), "--sysfs", str(tree / "sys")).stdout)
    (facts,) = doc["facts"].values()
    assert facts["tc"] is None and facts["nic_settings"] == {}
    shaping = next(f for f in doc["findings"] if f["check"] == "traffic_shaping")
    assert shaping["evidence"] == "not checked on 1 node (a captured tree)"
