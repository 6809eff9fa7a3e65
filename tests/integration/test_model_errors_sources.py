"""The one error boundary (Monitor.observe), source by source: a bug of the model while
judging a node's sample is that node's ``internal error``, the same for this host, an SSH
node, a node_exporter and Prometheus; the source goes on (an SSH node is not reported down
and reconnected), and the app does not end.

The bug is real and in the model, not patched in: thresholds whose bounds are not numbers
(what config.py refuses to load) make judging any interval raise TypeError in
``Threshold.level``; every sample after a node's first has an interval to judge.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncssh
import pytest
from aiohttp import web

from netui.collectors.local import LiveReader
from netui.collectors.node_exporter import HttpClient, HttpSettings, NodeExporterSource
from netui.collectors.prometheus import PrometheusNode, PrometheusReader
from netui.engine.monitor import Monitor
from netui.engine.sources import LocalSource
from netui.model.health import Threshold
from netui.model.node import NodeState
from tests.bench.fake_fleet import NodeFrames
from tests.echo_ssh import loopback_ssh_server, watch_scenarios
from tests.prometheus_api import served

# careful at -1: every drop rate (0/s too) is a finding, and rating it compares with a str
UNJUDGEABLE = {"drops_per_s": Threshold(-1.0, "not a number", "not a number")}
SCRAPE = (Path(__file__).parents[1] / "data" / "node_exporter" / "lab-node2-full.prom").read_bytes()


def assert_internal_error(monitor: Monitor, name: str) -> None:
    node = monitor.fleet[name]
    assert node.state is NodeState.INTERNAL_ERROR, (node.state, node.error)
    assert "TypeError" in node.error and "bug of netui" in node.error


async def until(predicate, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not predicate():
        await asyncio.sleep(0.05)


@pytest.mark.slow
def test_the_local_host():
    monitor = Monitor([LocalSource(LiveReader())], interval_s=0.2, history_s=30, thresholds=UNJUDGEABLE)
    name = monitor.sources[0].name

    async def main():
        try:
            await monitor.run(polls=4)  # returns: the app goes on
        finally:
            await monitor.close()

    asyncio.run(main())
    assert monitor.fleet[name].samples_seen >= 1
    assert_internal_error(monitor, name)


FRAMES = NodeFrames()


async def streaming_node(process: asyncssh.SSHServerProcess) -> None:
    """Six frames, a fifth of a second apart, then the channel held open."""
    try:
        for step in range(6):
            process.stdout.write(FRAMES.frame(step, time.time(), time.monotonic()))
            await process.stdout.drain()
            await asyncio.sleep(0.2)
        await process.stdin.read()
    except (asyncssh.Error, OSError):
        pass


@pytest.mark.slow
async def test_an_ssh_node_is_not_reported_down_and_keeps_its_session(tmp_path):
    async with loopback_ssh_server(tmp_path, streaming_node) as config:
        monitor = await watch_scenarios(config, ["stream"], lambda m: m.sources[0].frames >= 6, timeout_s=30,
                                        thresholds=UNJUDGEABLE)
    source, node = monitor.sources[0], monitor.fleet["stream"]
    assert source.frames == 6  # one session read to the end: never cut and reconnected
    assert_internal_error(monitor, "stream")
    assert node.last_failure[0] is NodeState.INTERNAL_ERROR  # never down on the way


@pytest.fixture
async def exporter():
    """A node_exporter on 127.0.0.1 serving a real capture, its node's clock moving."""
    async def handle(request: web.Request) -> web.Response:
        body = SCRAPE.replace(b"node_time_seconds 1.7960060724266322e+09", f"node_time_seconds {time.time()!r}".encode())
        return web.Response(body=body, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", handle)
    async with served(app) as port:
        yield port


@pytest.mark.slow
async def test_a_node_exporter_node_is_scraped_on(exporter):
    http = HttpClient(HttpSettings(timeout_s=2, backoff_first_s=60, backoff_max_s=60))
    source = NodeExporterSource("ne", "127.0.0.1", http, port=exporter)
    monitor = Monitor([source], interval_s=0.2, history_s=30, connector=http, thresholds=UNJUDGEABLE)
    task = asyncio.ensure_future(monitor.run())
    try:
        await until(lambda: source.scrapes >= 4)
    finally:
        await monitor.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert source.scrapes >= 4 and source.retry_at is None  # scraped on, never backing off
    assert_internal_error(monitor, "ne")


@pytest.mark.slow
async def test_a_prometheus_node_is_read_on(prometheus_api):
    url, state = prometheus_api
    http = HttpClient(HttpSettings(timeout_s=2, backoff_first_s=60, backoff_max_s=60))
    reader = PrometheusReader(url, http, instances={"198.18.0.2:9100": "node2"})
    monitor = Monitor([PrometheusNode("node2", reader)], interval_s=0.2, history_s=30, connector=http,
                      thresholds=UNJUDGEABLE)
    task = asyncio.ensure_future(monitor.run())
    try:
        await until(lambda: state["queries"] >= 4 and monitor.fleet["node2"].samples_seen >= 1)
    finally:
        await monitor.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert state["queries"] >= 4  # the reader's loop goes on
    assert_internal_error(monitor, "node2")
