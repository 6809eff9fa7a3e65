"""The node-exporter source's states against real HTTP servers on 127.0.0.1.

An aiohttp web server plays exporters that fail in each way (an HTTP error, a body that is
not the text format, no answer in time, an old exporter without a collector netui asks
for); each is one node's state while a healthy one carries on. No root needed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from aiohttp import web

from netui.collectors.node_exporter import HttpClient, HttpSettings, NodeExporterSource
from netui.collectors.prometheus import PrometheusNode, PrometheusReader
from netui.engine.monitor import Monitor
from netui.model.node import NodeState
from tests.prometheus_api import RECORDED, Collected, fleet_answers, moving_answer, queried_instances, served

SCRAPE = (Path(__file__).parents[1] / "data" / "node_exporter" / "lab-node2-full.prom").read_bytes()


@pytest.fixture
async def servers():
    """Port per behaviour; the healthy one serves a real capture with moving counters."""
    hits: dict[str, list[str]] = {}

    def app(kind: str):
        async def handle(request: web.Request) -> web.Response:
            hits.setdefault(kind, []).append(request.query_string)
            if kind == "ok":
                n = len(hits[kind])
                body = SCRAPE.replace(b'node_network_receive_bytes_total{device="eth0"} 3268',
                                      f'node_network_receive_bytes_total{{device="eth0"}} {3268 + 1000 * n}'.encode())
                body = body.replace(b"node_time_seconds 1.7960060724266322e+09",  # the node's clock moves
                                    f"node_time_seconds {time.time()!r}".encode())
                return web.Response(body=body, content_type="text/plain")
            if kind == "503":
                return web.Response(status=503, text="exporter overloaded")
            if kind == "garbage":
                return web.Response(text="<html>login required</html>")
            if kind == "slow":
                await asyncio.sleep(1.5)
                return web.Response(text="")
            if kind == "old":  # node_exporter 1.5 without the softirqs collector
                if "softirqs" in request.query.getall("collect[]", []):
                    return web.Response(status=400, text="Couldn't create filtered metrics handler: "
                                                         "couldn't create collector: missing collector: softirqs")
                return web.Response(body=SCRAPE, content_type="text/plain")
            raise AssertionError(kind)

        a = web.Application()
        a.router.add_get("/metrics", handle)
        return a

    async with AsyncExitStack() as servers:
        ports = {kind: await servers.enter_async_context(served(app(kind)))
                 for kind in ("ok", "503", "garbage", "slow", "old")}
        yield ports, hits


@pytest.mark.slow
async def test_each_failure_is_its_nodes_state_and_the_healthy_node_carries_on(servers):
    ports, hits = servers
    # a backoff well above the interval: under load a tick can take longer than 0.5 s, and a
    # failing node whose backoff ran out by then is rightly polled at that tick
    http = HttpClient(HttpSettings(timeout_s=0.5, backoff_first_s=0.5, backoff_max_s=2.0))
    m = Monitor([NodeExporterSource(k, "127.0.0.1", http, port=p) for k, p in ports.items()],
                interval_s=0.25, history_s=30, connector=http)
    task = asyncio.ensure_future(m.run())
    try:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            f = m.fleet
            if (f["ok"].rates is not None and f["old"].samples_seen >= 2 and f["slow"].state is NodeState.DOWN
                    and f["503"].state is NodeState.DOWN and f["garbage"].state is NodeState.PARSE_ERROR):
                break
            await asyncio.sleep(0.1)
        f = m.fleet
        states = {n.name: (n.state, n.error) for n in f}
        assert f["ok"].state is NodeState.UP, states
        assert f["ok"].rates.interfaces["eth0"].rx_bytes_per_s > 0
        assert f["503"].state is NodeState.DOWN and f["503"].error.startswith("HTTP 503 Service Unavailable: "
                                                                             "exporter overloaded"), states
        assert f["garbage"].state is NodeState.PARSE_ERROR and "<html>" in f["garbage"].error, states
        assert f["slow"].state is NodeState.DOWN and "no answer within 0.5 s" in f["slow"].error, states
        assert f["old"].state is NodeState.UP, states
        assert "retrying in" in f["503"].error
        await asyncio.sleep(1.0)  # long enough for the backoff to show in the hit counts below
    finally:
        await m.close()
        task.cancel()
    # the old exporter was asked again without softirqs, and only the first time with it
    old = hits["old"]
    assert "softirqs" in old[0] and all("softirqs" not in q for q in old[1:]) and len(old) >= 3
    assert all("collect[]=netdev" in q for q in old)
    # a failing node is retried with backoff, not at every interval
    assert len(hits["503"]) < len(hits["ok"])


# --- a Prometheus API on 127.0.0.1 answering with a real recorded answer (tests/prometheus_api.py)


def prometheus_monitor(url: str, instances: dict[str, str]) -> tuple[Monitor, PrometheusReader]:
    http = HttpClient(HttpSettings(timeout_s=2, backoff_first_s=0.2, backoff_max_s=0.5))
    reader = PrometheusReader(url, http, instances=instances)
    m = Monitor([PrometheusNode(n, reader) for n in reader.names], interval_s=0.2, history_s=30, connector=http)
    return m, reader


LAB_INSTANCES = {f"198.18.0.{i}:9100": f"node{i}" for i in range(1, 5)}


async def until(predicate, timeout_s: float, m: Monitor) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not predicate():
        await asyncio.sleep(0.05)
    assert predicate(), {n.name: (n.state, n.error) for n in m.fleet}


@pytest.mark.slow
async def test_one_instances_odd_series_is_its_nodes_state_not_the_fleets(prometheus_api):
    """A CPU label that is a digit but not a decimal ("²") once took every node down."""
    url, state = prometheus_api

    def answer(n):
        doc = moving_answer(n)
        doc["data"]["result"].append({"metric": {"__name__": "node_cpu_seconds_total", "cpu": "²", "mode": "softirq",
                                                 "instance": "198.18.0.3:9100", "job": "node"},
                                      "value": [RECORDED["data"]["result"][0]["value"][0] + n, "12.5"]})
        return doc

    state["answer"] = answer
    m, reader = prometheus_monitor(url, LAB_INSTANCES)
    task = asyncio.ensure_future(m.run())
    try:
        await until(lambda: all(n.rates is not None for n in m.fleet), 5, m)
        assert all(n.state is NodeState.UP for n in m.fleet)
        assert m.fleet["node3"].rates.cpu.cpus == (0, 1)  # the odd CPU label is left out
        assert m.fleet["node1"].rates.interfaces["eth0"].rx_bytes_per_s == pytest.approx(1000, rel=0.01)
    finally:
        await m.close()
        task.cancel()


@pytest.mark.slow
async def test_a_body_over_the_limit_is_the_nodes_state_and_is_not_read_to_its_end():
    """One server streams 64 MiB without a length, one announces 100 MiB: both nodes are down
    with the reason after at most 16 MiB read; a healthy node beside them carries on."""
    written: dict[str, int] = {"stream": 0, "declared": 0}
    line = b"node_filler_total 1\n" * 52429  # ~1 MiB

    def app(kind: str):
        async def handle(request: web.Request) -> web.StreamResponse:
            if kind == "ok":
                return web.Response(body=SCRAPE, content_type="text/plain")
            resp = web.StreamResponse()
            if kind == "declared":
                resp.content_length = 100 * len(line)
            await resp.prepare(request)
            try:
                for _ in range(64 if kind == "stream" else 100):  # bounded
                    await resp.write(line)
                    written[kind] += len(line)
            except (ConnectionError, RuntimeError):
                pass  # the client hung up: what the limit is for
            return resp

        a = web.Application()
        a.router.add_get("/metrics", handle)
        return a

    async with AsyncExitStack() as servers:
        ports = {kind: await servers.enter_async_context(served(app(kind))) for kind in ("ok", "stream", "declared")}
        http = HttpClient(HttpSettings(timeout_s=5, backoff_first_s=5, backoff_max_s=5))
        m = Monitor([NodeExporterSource(k, "127.0.0.1", http, port=p) for k, p in ports.items()],
                    interval_s=0.25, history_s=30, connector=http)
        task = asyncio.ensure_future(m.run())
        try:
            await until(lambda: m.fleet["ok"].samples_seen >= 2 and m.fleet["stream"].error is not None
                        and m.fleet["declared"].error is not None, 10, m)
            f = m.fleet
            assert f["ok"].state is NodeState.UP
            assert f["stream"].state is NodeState.DOWN and f["stream"].error.startswith("body over 16 MiB (retrying"), \
                f["stream"].error
            assert f["declared"].state is NodeState.DOWN
            assert f["declared"].error.startswith(f"body over 16 MiB (Content-Length {100 * len(line)})")
        finally:
            await m.close()
            task.cancel()
    assert written["stream"] < 48 * len(line)  # the client stopped reading well before the end


@pytest.mark.slow
async def test_doctor_and_tcp_panel_say_what_node_exporter_does_not_provide(servers):
    """The doctor names node_exporter, not a replay, as why no commands ran; the TCP panel says
    what node_exporter does not export instead of "nothing moved" or "net/snmp unreadable"."""
    import io

    from rich.console import Console

    from netui.checks.doctor.runner import examine
    from netui.ui.app import make_app

    ports, _hits = servers
    # a backoff well above the interval: under load a tick can take longer than 0.5 s, and a
    # failing node whose backoff ran out by then is rightly polled at that tick
    http = HttpClient(HttpSettings(timeout_s=0.5, backoff_first_s=0.5, backoff_max_s=2.0))
    m = Monitor([NodeExporterSource("ok", "127.0.0.1", http, port=ports["ok"]),
                 NodeExporterSource("503", "127.0.0.1", http, port=ports["503"])], interval_s=0.25, history_s=30,
                connector=http)
    app = make_app(m)

    def tcp_text() -> str:
        console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
        console.print(app.screen.query_one("#tcp").content)
        return console.export_text()

    async with app.run_test(size=(120, 50)) as pilot:
        await until(lambda: m.fleet["ok"].rates is not None and m.fleet["503"].state is NodeState.DOWN, 8, m)
        report = await examine(m, ["ok"])
        why = [f.evidence for f in report.findings if f.node == "ok" and f.check == "examined"]
        assert why and "read through node_exporter, which runs no commands" in why[0] and "replay" not in why[0]

        async def open_node(name: str) -> None:  # paused while the screen composes (FleetUpdated
            app.paused = True                     # could reach it before its StatusBar exists)
            app.open_node(name)
            await pilot.pause()
            await pilot.pause()
            app.paused = False

        await open_node("ok")
        await asyncio.sleep(0.6)
        await pilot.pause()
        text = tcp_text()
        assert "retransmits" in text
        assert "nothing moved of the 4 node_exporter exports" in text  # of those netui maps
        assert "other TcpExt counters: not available from node_exporter" in text
        assert "TcpExt: nothing moved\n" not in text

        app.paused = True
        await pilot.press("escape")
        await open_node("503")
        await asyncio.sleep(0.3)
        await pilot.pause()
        text = tcp_text()
        assert "no TCP counters: nothing read from node_exporter yet" in text
        assert "net/snmp" not in text


@pytest.mark.slow
async def test_a_thousand_node_answer_is_decoded_and_mapped_off_the_event_loop(prometheus_api, monkeypatch):
    """1,024 instances (~9 MB of JSON): json.loads of each answer and the mapping onto
    samples run in a worker thread (the event loop waited ~0.5 s per poll while they ran on
    it). Each is held, before it starts, until a coroutine has run on the event loop: were
    it on the loop's own thread, nothing else could run there while it is held."""
    from netui.collectors import prometheus

    url, state = prometheus_api
    names, bodies = fleet_answers(1024)
    assert len(bodies[frozenset()]) > 8e6
    asked: list[frozenset] = []

    def answer(promql: str) -> bytes:
        asked.append(queried_instances(promql))
        return bodies[asked[-1]]

    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    held: list[tuple[str, bool, bool]] = []  # (step, off the loop's thread, the loop ran meanwhile)

    async def heartbeat() -> bool:
        await asyncio.sleep(0)  # a turn of the loop, between others
        return True

    def held_until_the_loop_ticks(step: str, work):
        def run(*args):
            off_loop = threading.get_ident() != loop_thread
            # (on the loop's thread, waiting for the loop would wait for ever: it is recorded)
            ticked = off_loop and asyncio.run_coroutine_threadsafe(heartbeat(), loop).result(timeout=60)
            held.append((step, off_loop, ticked))
            return work(*args)
        return run

    monkeypatch.setattr(prometheus, "parse_vector", held_until_the_loop_ticks("json", prometheus.parse_vector))
    monkeypatch.setattr(prometheus, "map_answer", held_until_the_loop_ticks("map", prometheus.map_answer))
    state["raw"] = answer
    http = HttpClient(HttpSettings(timeout_s=20))
    reader = PrometheusReader(url, http, instances=names)
    sink = Collected()
    try:
        await reader.poll(sink)
    finally:
        await http.close()
    assert len(sink.samples) == 1024 and not sink.states
    assert all("eth0" in s.interfaces for s in sink.samples.values())
    # each batch's answer is mapped before the next is asked for: one answer held at a time
    assert held == [("json", True, True), ("map", True, True)] * 4, held
    assert len(asked) == 4 and all(len(a) == 256 for a in asked)  # batches also without hosts
