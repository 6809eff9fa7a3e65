"""A Prometheus API on 127.0.0.1 for the tests, answering with a real recorded answer
(tests/data/node_exporter/prometheus-query.json): the ``prometheus_api`` fixture (a plugin of
tests/conftest.py, so any test may ask for it), the recorded answer moved on per query, the
same node as a fleet of many instances, and a sink that keeps what a reader hands it."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from tests.testdata import data_bytes

RECORDED = json.loads(data_bytes("node_exporter/prometheus-query.json"))


def moving_answer(n: int, doc: dict = RECORDED) -> dict:
    """The recorded answer as the n-th query would see it: each scrape 1 s later, eth0's
    counters 1000 bytes further."""
    out = copy.deepcopy(doc)
    for item in out["data"]["result"]:
        metric, value = item["metric"], item["value"]
        value[0] += n
        if metric.get("netui") == "scrape_time":
            value[1] = repr(float(value[1]) + n)
        elif metric.get("__name__") == "node_network_receive_bytes_total" and metric.get("device") == "eth0":
            value[1] = str(int(value[1]) + 1000 * n)
    return out


@asynccontextmanager
async def served(app: web.Application, host: str = "127.0.0.1") -> AsyncIterator[int]:
    """``app`` served on ``host`` (a loopback address) for the block: its port, chosen by the system."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


@pytest.fixture
async def prometheus_api():
    """(url, state): POST /api/v1/query answers ``state["answer"](n)`` for the n-th query."""
    state = {"answer": moving_answer, "queries": 0}

    async def query(request: web.Request) -> web.Response:
        form = await request.post()
        state["queries"] += 1
        if "raw" in state:  # bytes ready for the query
            return web.Response(body=state["raw"](form["query"]), content_type="application/json")
        return web.json_response(state["answer"](state["queries"]))

    async def targets(request: web.Request) -> web.Response:
        return web.json_response({"status": "success", "data": {"activeTargets": []}})

    app = web.Application()
    app.router.add_post("/api/v1/query", query)
    app.router.add_get("/api/v1/targets", targets)
    async with served(app) as port:
        yield f"http://127.0.0.1:{port}", state


def fleet_answers(n_instances: int) -> tuple[dict[str, str], dict[frozenset, bytes]]:
    """The recorded answer's node1 as ``n_instances`` instances (198.18.x.y:9100): the node
    names, and the answer body per batch of instances (serialized once, up front, so that
    the server in this same event loop does not stall it while serving)."""
    from netui.collectors.prometheus import BATCH_INSTANCES

    node1 = [x for x in RECORDED["data"]["result"] if x["metric"]["instance"] == "198.18.0.1:9100"]
    names = {f"198.18.{i // 250}.{i % 250 + 1}:9100": f"n{i:04d}" for i in range(n_instances)}
    items = {inst: [{"metric": dict(x["metric"], instance=inst), "value": x["value"]} for x in node1]
             for inst in names}

    def body(instances) -> bytes:
        result = [item for inst in instances for item in items[inst]]
        return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()

    ordered = sorted(names)
    bodies = {frozenset(): body(ordered)}  # a query without an instance matcher: every instance
    for i in range(0, len(ordered), BATCH_INSTANCES):
        bodies[frozenset(ordered[i:i + BATCH_INSTANCES])] = body(ordered[i:i + BATCH_INSTANCES])
    return names, bodies


def queried_instances(promql: str) -> frozenset:
    import re

    found = re.search(r'instance=~"((?:[^"\\]|\\.)*)"', promql)
    if not found:
        return frozenset()
    return frozenset(a.replace("\\", "") for a in found.group(1).split("|"))


class Collected:
    """A sink that keeps what the reader hands it."""

    interval_s = 1.0

    def __init__(self) -> None:
        self.samples: dict = {}
        self.states: dict = {}

    def observe(self, name, sample) -> None:
        self.samples[name] = sample

    def report(self, name, state, reason) -> None:
        self.states[name] = (state, reason)
