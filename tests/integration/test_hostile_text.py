"""Hostile text: a node, a file or a server that names things with escape sequences (OSC 52
clipboard writes, OSC 0 titles, CSI screen clears, DCS, C1 controls) never writes to the
user's terminal. Each entry point gets a string of every C0 and C1 control and those
sequences; what netui prints (snapshot text and JSON, doctor and bench reports, error
messages) holds none of it, and shows the sequences with their escapes visible.

Real parts: netui's own command line on a crafted --procfs/--sysfs tree, the real sampler on
that tree behind an asyncssh server on 127.0.0.1, node_exporter and Prometheus answers from
aiohttp servers on 127.0.0.1, topology files on disk.
"""

from __future__ import annotations

import copy
import json
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from aiohttp import web

from netui.cli.watch import _text_report
from netui.engine.document import fleet_document
from netui.engine.monitor import Monitor
from netui.model.node import NodeState
from tests.command import netui_async
from tests.echo_ssh import watch_scenarios
from tests.hostile_text import HOSTILE, HOSTILE_LINE, VISIBLE, hostile_ssh_server, hostile_tree, leaked
from tests.prometheus_api import served

DATA = Path(__file__).parents[1] / "data"


def names_in(doc: dict) -> list[str]:
    """Every node and interface name of a snapshot document."""
    return [n["name"] for n in doc["nodes"]] + [i["name"] for n in doc["nodes"] for i in n.get("interfaces") or ()]


# --- this host's reader on a crafted tree: the command line end to end ---------------------------

@pytest.mark.slow
async def test_snapshot_text_and_json_of_a_tree_with_hostile_names(tmp_path):
    procfs, sysfs = hostile_tree(tmp_path)
    status, text, err = await netui_async("snapshot", "--procfs", str(procfs), "--sysfs", str(sysfs))
    assert status in (0, 1), err
    assert leaked(text) == [] and leaked(err) == []
    assert "\\x1b]52;c;SEFDS0VEIEJZIE5PREU=\\x07" in text  # the interface, shown with its escapes
    assert text.startswith("evil\\x00\\x01")  # the node, named by its hostname
    status, out, err = await netui_async("snapshot", "--json", "--procfs", str(procfs), "--sysfs", str(sysfs))
    assert leaked(out) == [] and leaked(err) == []
    doc = json.loads(out)
    assert json.loads(json.dumps(doc)) == doc  # round-trips: the escapes are text in the document
    shown = [n for n in names_in(doc) if n.startswith("evil")]
    assert len(shown) == 2 and all(leaked(n, lines=False) == [] for n in shown)
    assert any("\\x1b]52;c;" in n for n in shown)


# --- the real sampler on that tree, over SSH; a sampler's last words ---------------------------

@pytest.fixture
async def hostile_ssh(tmp_path):
    async with hostile_ssh_server(tmp_path) as config:
        yield config


async def watched(config: Path, scenarios: list[str], until, timeout_s: float = 30) -> Monitor:
    return await watch_scenarios(config, scenarios, until, connect_timeout_s=10, timeout_s=timeout_s)


@pytest.mark.slow
async def test_sampler_frames_and_stderr_of_hostile_nodes_reach_no_terminal(hostile_ssh):
    def settled(m: Monitor) -> bool:
        return (m.fleet["names"].samples_seen >= 2 and m.fleet["exits"].state is NodeState.DOWN
                and m.fleet["nopython"].state is NodeState.UNSUPPORTED)

    m = await watched(hostile_ssh, ["names", "exits", "nopython"], settled)
    assert settled(m), {n.name: (n.state, n.error) for n in m.fleet}
    names = m.fleet["names"]
    assert names.sample.hostname.startswith("evil\\x00\\x01") and leaked(names.sample.hostname, lines=False) == []
    (iface,) = [i for i in names.sample.interfaces if i.startswith("evil")]
    assert leaked(iface, lines=False) == [] and "\\x1b]52;c;SEFDS0VEIEJZIE5PREU=\\x07" in iface
    assert m.fleet["exits"].error.startswith("sampler exited (status 1): evil\\x00")
    assert VISIBLE in m.fleet["exits"].error and VISIBLE in m.fleet["nopython"].error
    doc = fleet_document(m.fleet)
    text, dumped = _text_report(doc), json.dumps(doc, indent=2)
    assert leaked(text) == [] and leaked(dumped) == []
    assert "sampler exited (status 1): evil\\x00" in text and "no python3 on this node" in text
    assert json.loads(dumped) == doc


# --- node_exporter and Prometheus answers --------------------------------------------------------

SCRAPE = (DATA / "node_exporter" / "lab-node2-full.prom").read_text()
RECORDED = json.loads((DATA / "node_exporter" / "prometheus-query.json").read_bytes())


def exposition_value(text: str) -> str:
    """``text`` as a label value of the exposition format (backslash, quote and newline escaped)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@pytest.fixture
async def http_servers():
    """(exporter port, failing exporter port, Prometheus URL): an exporter whose device label
    and nodename are hostile, one whose HTTP 500 body is, a Prometheus whose instance's
    nodename and device labels are."""
    hits = {"scrape": 0, "query": 0}

    async def scrape(request: web.Request) -> web.Response:
        hits["scrape"] += 1
        body = SCRAPE.replace('device="eth0"', f'device="{exposition_value(HOSTILE)}"')
        body = body.replace('nodename="', f'nodename="{exposition_value(HOSTILE)}', 1)
        body = body.replace(f'{{device="{exposition_value(HOSTILE)}"}} 3268',
                            f'{{device="{exposition_value(HOSTILE)}"}} {3268 + 1000 * hits["scrape"]}')
        return web.Response(text=body, content_type="text/plain")

    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=500, body=(HOSTILE_LINE + "\nsecond line").encode())

    async def query(request: web.Request) -> web.Response:
        form = await request.post()
        hits["query"] += 1
        doc = copy.deepcopy(RECORDED)
        if form["query"].startswith("group by (instance)"):  # discovery: the instances, one hostile nodename
            instances = sorted({r["metric"]["instance"] for r in doc["data"]["result"] if "instance" in r["metric"]})
            result = [{"metric": {"instance": i}, "value": [0, "1"]} for i in instances]
            result.append({"metric": {"instance": instances[0], "nodename": HOSTILE}, "value": [0, "1"]})
            return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})
        for item in doc["data"]["result"]:
            item["value"][0] += hits["query"]
            if item["metric"].get("netui") == "scrape_time":
                item["value"][1] = repr(float(item["value"][1]) + hits["query"])
            if item["metric"].get("device") == "eth0":
                item["metric"]["device"] = HOSTILE
        return web.json_response(doc)

    async def targets(request: web.Request) -> web.Response:
        return web.json_response({"status": "success", "data": {"activeTargets": []}})

    async with AsyncExitStack() as servers:
        ports = []
        for routes in ([web.get("/metrics", scrape)], [web.get("/metrics", broken)],
                       [web.post("/api/v1/query", query), web.get("/api/v1/targets", targets)]):
            app = web.Application()
            app.add_routes(routes)
            ports.append(await servers.enter_async_context(served(app)))
        yield ports[0], ports[1], f"http://127.0.0.1:{ports[2]}"


@pytest.mark.slow
async def test_node_exporter_labels_and_error_bodies_reach_no_terminal(http_servers):
    good, bad, _ = http_servers
    for extra in ((), ("--json",)):
        status, out, err = await netui_async("snapshot", "--source", "node-exporter", f"127.0.0.1:{good}",
                                       f"localhost:{bad}", *extra)
        assert status == 1, err  # the failing exporter is down
        assert leaked(out) == [] and leaked(err) == [], (out, err)
    doc = json.loads(out)
    down = [n for n in doc["nodes"] if n["state"] == "down"]
    assert len(down) == 1 and down[0]["error"].startswith("HTTP 500 Internal Server Error: evil\\x00"), down
    assert VISIBLE in down[0]["error"] and "second line" not in down[0]["error"]
    up = [n for n in doc["nodes"] if n["state"] == "up"]
    assert len(up) == 1 and up[0]["hostname"].startswith("evil\\x00")
    assert any(i["name"].startswith("evil\\x00") for i in up[0]["interfaces"])


@pytest.mark.slow
async def test_prometheus_nodenames_and_labels_reach_no_terminal(http_servers):
    _, _, url = http_servers
    for extra in ((), ("--json",)):
        status, out, err = await netui_async("snapshot", "--source", f"prometheus={url}", *extra)
        assert leaked(out) == [] and leaked(err) == [], (out, err)
    doc = json.loads(out)
    hostile = [n["name"] for n in doc["nodes"] if n["name"].startswith("evil")]
    assert len(hostile) == 1 and leaked(hostile[0], lines=False) == []  # the nodename became its name, safely
    assert any(i["name"].startswith("evil\\x00") for n in doc["nodes"] for i in n.get("interfaces") or ())


# --- files -----------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("text", [
    f"SwitchName={HOSTILE_LINE} Nodes=n[1-2]\n",
    f"SwitchName=s1 Nodes=n[1-2],{HOSTILE_LINE}\n",
    f"SwitchName=s1 Nodes=n1\nSwitchName=s2 Switches=s1,{HOSTILE_LINE}\n",
], ids=["switch", "node", "uplink"])
async def test_topology_file_names_reach_no_terminal(tmp_path, text):
    """(netui refuses such a name, quoting it with its escapes: a guard that it stays so.)"""
    path = tmp_path / "topology.conf"
    path.write_text(text)
    status, out, err = await netui_async("topology", "--topology", str(path), "n1", "n2")
    assert status != 0 and err
    assert leaked(out) == [] and leaked(err) == [], err


# --- a recording: one written by netui, and one whose names a hand (or an old netui) left raw ----

@pytest.mark.slow
async def test_exports_and_replays_of_a_recording_with_hostile_names(tmp_path):
    import gzip

    procfs, sysfs = hostile_tree(tmp_path / "tree")
    recorded = tmp_path / "rec.ndjson.gz"
    status, _, err = await netui_async("record", "-o", str(recorded), "--count", "2", "--interval", "0.2",
                                 "--procfs", str(procfs), "--sysfs", str(sysfs))
    assert status == 0, err
    lines = gzip.decompress(recorded.read_bytes()).decode().splitlines()
    doc = [json.loads(line) for line in lines]
    shown = next(r["hosts"][0] for r in doc if r.get("type") == "header")
    assert leaked(shown, lines=False) == [] and shown.startswith("evil\\x00")
    # the same recording with the raw strings in place of the shown ones
    raw = "\n".join(lines).replace(json.dumps(shown)[1:-1], json.dumps(HOSTILE)[1:-1])
    assert json.dumps(HOSTILE)[1:-1] in raw
    crafted = tmp_path / "crafted.ndjson"
    crafted.write_text(raw + "\n")
    for path in (recorded, crafted):
        for fmt in ("csv", "json", "prom"):
            status, out, err = await netui_async("export", "--format", fmt, str(path))
            assert status == 0, err
            assert leaked(out) == [] and leaked(err) == [], (path.name, fmt)
            assert "evil" in out
        status, out, err = await netui_async("snapshot", "--replay", str(path))
        assert leaked(out) == [] and leaked(err) == [], path.name


@pytest.mark.slow
async def test_doctor_text_and_json_of_a_tree_with_hostile_names(tmp_path):
    procfs, sysfs = hostile_tree(tmp_path)
    for extra in ((), ("--json",)):
        status, out, err = await netui_async("doctor", "--procfs", str(procfs), "--sysfs", str(sysfs), *extra)
        assert status in (0, 1), err
        assert leaked(out) == [] and leaked(err) == []
        assert "evil\\x00\\x01" in out if not extra else json.loads(out)["nodes"][0].startswith("evil\\x00\\x01")


# --- a node command's own words: the latency runner on this host, with a ping that lies ----------

@pytest.mark.slow
async def test_a_ping_that_prints_escape_sequences_reaches_no_report(tmp_path, monkeypatch):
    from netui.checks.latency.report import report_csv, text_report
    from netui.checks.latency.runner import LatencyTest
    from netui.checks.latency.tools import LatencySettings
    from tests.localnodes import local_monitor, ready

    words = tmp_path / "words"
    words.write_text(f"ping: {HOSTILE}\n{HOSTILE_LINE}\n")
    fake = tmp_path / "bin" / "ping"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ncat '{words}' >&2\ncat '{words}'\nexit 2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{__import__('os').environ['PATH']}")
    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    report = await LatencyTest(monitor, ["a", "b"], LatencySettings(count=2, test_net="127.0.0.0/8", tool="ping")).run()
    assert report.results and all(not r.ok and "evil\\x01" in r.error for r in report.results), report.results
    for text in (text_report(report), report_csv(report), json.dumps([r.__dict__ for r in report.results])):
        assert leaked(text) == []
    assert "evil\\x01" in text_report(report)


@pytest.mark.slow
async def test_an_iperf3_that_prints_escape_sequences_reaches_no_report(tmp_path, monkeypatch):
    import os

    from netui.checks.pairs.report import report_csv, report_document, text_report
    from netui.checks.pairs.runner import PairTest
    from netui.checks.pairs.tools import PairSettings
    from tests.localnodes import local_monitor, ready

    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"start": {"version": HOSTILE}, "end": {}, "error": HOSTILE}) + "\n")
    words = tmp_path / "words"
    words.write_text(f"iperf3: error - {HOSTILE_LINE}\n")
    fake = tmp_path / "bin" / "iperf3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n"
                    'case " $* " in *" -s "*) echo "Server listening on 5201"; cat "$0.words" >&2; sleep 3; exit 1;; esac\n'
                    f"cat '{answer}'\ncat '{words}' >&2\nexit 1\n")
    (tmp_path / "bin" / "iperf3.words").write_text(words.read_text())
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monitor = local_monitor(("a", "b"))
    await ready(monitor)
    report = await PairTest(monitor, ["a", "b"], PairSettings(duration_s=1, test_net="127.0.0.0/8")).run()
    assert report.results and all(not r.ok and "evil\\x0" in (r.error or "") for r in report.results), \
        (report.results, report.problems, report.refused)
    for text in (text_report(report), report_csv(report), json.dumps(report_document(report))):
        assert leaked(text) == []
    assert "evil\\x0" in text_report(report)
