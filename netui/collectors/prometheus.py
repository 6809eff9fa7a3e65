"""Many nodes read from a Prometheus server that already scrapes their node_exporters.

Once per interval, one instant query (``POST /api/v1/query``) per batch of up to
``BATCH_INSTANCES`` instances fetches every series netui maps, for the whole batch at once —
a few queries for a fleet, never one per node. The answers are decoded and mapped in a
worker thread (a 1,024-node answer is ~9 MB of JSON), so the UI does not wait on them. The query unites (PromQL ``or``, one
evaluation, so one consistent view of the TSDB):

- the node_exporter series of collectors/exposition.py, selected by ``__name__`` regex;
- ``node_cpu_seconds_total{mode="softirq"}`` and the sum of all modes per CPU, labelled
  ``mode="total"`` (2 series per CPU instead of 8);
- ``max by (instance, job) (timestamp(node_network_receive_bytes_total))`` labelled
  ``netui="scrape_time"``: the time of the scrape those samples came from, taken from a
  node_exporter series itself (``up`` of another job relabelled onto the same instance
  would carry that job's scrape times). Rates use it — the samples' own timestamps, not the
  query's evaluation time — and a node whose scrape time did not move since the last query
  gives no new sample.

Every series is kept with its ``job``: when several jobs give node_exporter series for one
instance (a second scrape job relabelled onto it), one job is read — the one that covers
the most instances of the answer (the fleet's node_exporter job), ties by name; while the
job a node was read from misses a scrape, the node has no new sample rather than another
job's (for ``JOB_STICKY_S``). Counters and their time always come from the same scrapes.
``job=`` restricts the query to one job.

Nodes are matched to ``instance`` labels (``matching_names``); with no hosts given, every
instance that has ``node_network_receive_bytes_total`` is a node, named by its host part.
A node Prometheus has no current sample for is down with the target's last error (from
``/api/v1/targets``); a server that cannot be reached or answers an error puts every node
down with that reason, retried with backoff.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import json
import time
from collections import Counter
from collections.abc import Mapping

from netui.collectors import backoff
from netui.collectors.cancel import raise_if_cancelled
from netui.collectors.exposition import Series, sample_from_series, steady_boot_id
from netui.collectors.node_exporter import BodyTooLarge, HttpClient, ScrapeFailure, http_failure
from netui.collectors.source import BaseSource, Sink
from netui.model.node import NodeState
from netui.model.samples import NodeSample
from netui.model.text import safe_line, safe_names

BATCH_INSTANCES = 256
# What one answer may hold: a lab node's series are ~8 KB, a 256-CPU node with 200 interfaces
# ~1.5 MB; a batch of 256 instances may so hold 68 MiB, a single node 4.25 MiB (a decoded
# answer takes ~18x its bytes). All the answers of one poll: HttpSettings.max_poll_bytes.
ANSWER_BASE_BYTES = 4 << 20
ANSWER_BYTES_PER_INSTANCE = 256 << 10
# The discovery answer: two short series per instance (~220 bytes), 100,000 instances in 22 MB
DISCOVERY_MAX_BYTES = 32 << 20
JOB_STICKY_S = 60.0  # an instance keeps its job while that job was there this recently
REDISCOVER_S = 5.0  # while some node has no instance yet
TARGETS_REFRESH_S = 10.0

NAMES_REGEX = (
    "node_network_(receive|transmit)_[a-z]+_total|node_network_(info|up|carrier|mtu_bytes|speed_bytes|"
    "iface_id|protocol_type)|node_netstat_Tcp(Ext)?_.+|node_softnet_(processed|dropped|times_squeezed)_total|"
    "node_softirqs_functions_total|node_boot_time_seconds|node_uname_info"
)
SCRAPE_TIME_LABEL = "netui"


def _re2_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "\\.+*?()|[]{}^$" else ch for ch in text)


def _promql_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def instance_matcher(instances: list[str] | None, job: str | None = None) -> str:
    """``instance=~"a|b"`` (exact names, escaped), or "" for every instance; with
    ``job="X"`` when a job is given."""
    parts = []
    if instances:
        parts.append("instance=~" + _promql_string("|".join(_re2_escape(i) for i in instances)))
    if job:
        parts.append("job=" + _promql_string(job))
    return ",".join(parts)


def fleet_query(instances: list[str] | None, job: str | None = None) -> str:
    """The one PromQL expression that reads a batch of nodes (see the module docstring)."""
    m = instance_matcher(instances, job)
    extra = "," + m if m else ""
    sel = "{" + m + "}" if m else ""
    return (
        f'{{__name__=~{_promql_string(NAMES_REGEX)}{extra}}}'
        f' or node_cpu_seconds_total{{mode="softirq"{extra}}}'
        f' or label_replace(sum without (mode) (node_cpu_seconds_total{sel}), "mode", "total", "", "")'
        f' or label_replace(max by (instance, job) (timestamp(node_network_receive_bytes_total{sel})),'
        f' "{SCRAPE_TIME_LABEL}", "scrape_time", "", "")'
    )


DISCOVERY_QUERY = ("group by (instance) (node_network_receive_bytes_total)"
                   " or group by (instance, nodename) (node_uname_info)")


def answer_limit(instances: int, ceiling: int) -> int:
    """The most bytes netui reads of the answer for a batch of ``instances`` (never more than
    ``ceiling``)."""
    return min(ceiling, ANSWER_BASE_BYTES + ANSWER_BYTES_PER_INSTANCE * max(0, instances))


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


class PrometheusError(Exception):
    """Prometheus did not answer as expected; the message may hold the server's own words
    (made safe to show, model/text.py)."""

    def __init__(self, message: str) -> None:
        super().__init__(safe_line(message))


def parse_vector(body: bytes) -> list[tuple[dict[str, str], float]]:
    """The (labels, value) pairs of an instant-query answer; raises PrometheusError."""
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise PrometheusError(f"answer is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise PrometheusError("answer is not a JSON object")
    if doc.get("status") != "success":
        raise PrometheusError(f"{doc.get('errorType', 'error')}: {doc.get('error', 'no reason given')}")
    data = doc.get("data") or {}
    if data.get("resultType") != "vector":
        raise PrometheusError(f"expected a vector, got {data.get('resultType')!r}")
    out = []
    for item in data.get("result") or ():
        try:
            out.append((dict(item["metric"]), float(item["value"][1])))
        except (KeyError, IndexError, TypeError, ValueError):
            raise PrometheusError(f"malformed result item: {str(item)[:120]}") from None
    return out


def by_instance(vector: list[tuple[dict[str, str], float]], prefer: Mapping[str, str] | None = None,
                ) -> tuple[dict[str, list[Series]], dict[str, float]]:
    """Series grouped by instance, and each instance's scrape time (seconds since the epoch).

    Per instance, the series and the scrape time of one job (``pick_jobs``); an instance
    with a job in ``prefer`` is read from that job only (absent when that job is)."""
    series: dict[tuple[str, str], list[Series]] = {}
    scraped: dict[tuple[str, str], float] = {}
    for labels, value in vector:
        instance = labels.get("instance")
        if instance is None:
            continue
        key = (instance, labels.get("job", ""))
        if labels.get(SCRAPE_TIME_LABEL) == "scrape_time":
            scraped[key] = max(value, scraped.get(key, value))
            continue
        name = labels.get("__name__")
        if name is None and labels.get("mode") == "total":
            name = "node_cpu_seconds_total"
        if name is not None:
            series.setdefault(key, []).append((name, labels, value))
    jobs = pick_jobs([key for key in scraped if key in series], prefer)
    return ({i: series[i, j] for i, j in jobs.items()}, {i: scraped[i, j] for i, j in jobs.items()})


def pick_jobs(keys: list[tuple[str, str]], prefer: Mapping[str, str] | None = None) -> dict[str, str]:
    """instance → the job to read it from, of the (instance, job) pairs that have both
    series and a scrape time: the job covering the most instances, ties by name. The job
    in ``prefer`` (read last time) counts as there: when it ranks first but is absent, the
    instance is left out (a missed scrape), not read from another job."""
    prefer = prefer or {}
    covered: dict[str, int] = {}
    present: dict[str, set[str]] = {}
    for instance, job in keys:
        covered[job] = covered.get(job, 0) + 1
        present.setdefault(instance, set()).add(job)
    out: dict[str, str] = {}
    for instance, jobs in present.items():
        candidates = jobs | ({prefer[instance]} if instance in prefer else set())
        best = min(candidates, key=lambda j: (-covered.get(j, 0), j))
        if best in jobs:
            out[instance] = best
    return out


def _host_part(instance: str) -> str:
    if instance.startswith("["):
        return instance[1:].partition("]")[0]
    host, sep, port = instance.rpartition(":")
    return host if sep and port.isdigit() and ":" not in host else instance


def _short(host: str) -> str:
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return host.split(".", 1)[0]


def matching_names(instance: str, nodename: str | None = None) -> list[str]:
    """Names an inventory may use for this instance: as is, its host, its short host name,
    the node's own hostname (node_uname_info) and its short form."""
    host = _host_part(instance)
    names = [instance, host, _short(host)]
    if nodename:
        names += [nodename, _short(nodename)]
    return list(dict.fromkeys(names))


def match_instances(instances: Mapping[str, str | None], keys_by_name: Mapping[str, list[str]]) -> dict[str, str]:
    """instance → node name. ``instances``: instance → its nodename (or None);
    ``keys_by_name``: each node's names (name, host, host:port)."""
    lookup: dict[str, str] = {}
    for name, keys in keys_by_name.items():
        for k in keys:
            lookup.setdefault(k.lower(), name)
    out: dict[str, str] = {}
    taken: set[str] = set()
    for instance in sorted(instances):
        for candidate in matching_names(instance, instances[instance]):
            name = lookup.get(candidate.lower())
            if name is not None and name not in taken:
                out[instance] = name
                taken.add(name)
                break
    return out


def names_for_instances(instances: Mapping[str, str | None]) -> dict[str, str]:
    """Node names when Prometheus decides the fleet: the node's hostname where it is unique,
    else the instance's host part, else the full instance."""
    nodenames = Counter(n for n in instances.values() if n)  # counted once: 50,000 instances took minutes
    hosts = Counter(_host_part(i) for i in instances)
    out = {}
    for instance, nodename in instances.items():
        host = _host_part(instance)
        if nodename and nodenames[nodename] == 1:
            out[instance] = nodename
        else:
            out[instance] = host if hosts[host] == 1 else instance
    if len(set(out.values())) < len(out):  # a hostname that is also another instance's host
        out = {i: i for i in instances}
    # labels are the servers' words: a node's name is shown, never obeyed (model/text.py)
    return dict(zip(out, safe_names(out.values())))


def map_answer(vector: list[tuple[dict[str, str], float]], wanted: Mapping[str, float | None],
               prefer: Mapping[str, str] | None = None,
               ) -> dict[str, tuple[float | None, NodeSample | None, str | None, str | None]]:
    """Each wanted instance → (scrape time, sample, error). ``wanted`` maps an instance to the
    scrape time of its last sample: the same time again gives (time, None, None). No
    current sample: (None, None, None). The fourth item is the job read. Never raises: a
    failure mapping one instance is that instance's error, never the fleet's."""
    series, scraped = by_instance(vector, prefer)
    out: dict[str, tuple[float | None, NodeSample | None, str | None, str | None]] = {}
    for instance, last in wanted.items():
        data, ts = series.get(instance), scraped.get(instance)
        job = data[0][1].get("job", "") if data else None
        if not data or ts is None:
            out[instance] = (None, None, None, None)
        elif ts == last:
            out[instance] = (ts, None, None, job)
        else:
            try:
                out[instance] = (ts, sample_from_series(data, wall_s=ts, mono_s=ts), None, job)
            except Exception as exc:  # noqa: BLE001 - one instance's odd series is its node's state
                out[instance] = (ts, None, f"Prometheus series of {instance}: {type(exc).__name__}: {exc}", job)
    return out


class PrometheusReader:
    """The queries for the whole fleet, shared by its PrometheusNode sources."""

    def __init__(self, url: str, client: HttpClient, *, keys_by_name: Mapping[str, list[str]] | None = None,
                 instances: dict[str, str] | None = None, job: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.job = job  # read only this scrape job's series (None: pick_jobs decides)
        self.client = client
        self.keys_by_name = dict(keys_by_name or {})
        self.instances: dict[str, str] = dict(instances or {})  # instance → node name
        self.names: list[str] = list(self.keys_by_name) or list(self.instances.values())
        self.queries = 0
        self.last_query_s: float | None = None
        self._last_scrape: dict[str, float] = {}
        self._boot_ids: dict[str, str | None] = {}
        self._jobs: dict[str, tuple[str, float]] = {}  # instance → the job read, when last there
        self._target_errors: dict[str, str] = {}
        self._targets_at = 0.0
        self._discovered_at = 0.0
        self._task: asyncio.Task | None = None
        self.answer_bytes = 0  # the size of the last answer read

    async def query(self, promql: str, *, limit: int | None = None) -> list[tuple[dict[str, str], float]]:
        """The answer's (labels, value) pairs; ``limit``: the most bytes read of it (default
        the client's ``max_answer_bytes``; BodyTooLarge past it). ``answer_bytes``: its size."""
        self.answer_bytes = 0
        status, reason, body = await self.client.post(self.url + "/api/v1/query", {"query": promql}, limit=limit)
        self.answer_bytes = len(body)
        if status != 200:
            try:
                doc = json.loads(body)
                words = f"{doc['errorType']}: {doc['error']}"
            except (ValueError, KeyError, TypeError):
                raise http_failure(status, reason, body) from None
            raise ScrapeFailure(NodeState.DOWN, f"HTTP {status}: {words}")
        try:
            return await asyncio.to_thread(parse_vector, body)  # json.loads of MBs: off the event loop
        except PrometheusError as exc:
            raise ScrapeFailure(NodeState.PARSE_ERROR, f"Prometheus answer: {exc}") from None

    async def discover(self) -> dict[str, str | None]:
        """Every instance with node_network series → its hostname (node_uname_info), or None."""
        self._discovered_at = time.monotonic()
        found: dict[str, str | None] = {}
        nodenames: dict[str, str] = {}
        try:
            limit = min(DISCOVERY_MAX_BYTES, self.client.settings.max_answer_bytes)
            vector = await self.query(DISCOVERY_QUERY, limit=limit)
        except BodyTooLarge:
            raise ScrapeFailure(NodeState.DOWN, f"the list of instances is over {_size(DISCOVERY_MAX_BYTES)} "
                                                "(100,000 instances take ~22 MB): not read") from None
        for labels, _ in vector:
            instance = labels.get("instance")
            if instance is None:
                continue
            if "nodename" in labels:
                nodenames[instance] = labels["nodename"]
            else:
                found[instance] = None
        return {i: nodenames.get(i) for i in sorted(found)}

    async def _refresh_mapping(self) -> None:
        if not self.keys_by_name:
            return
        if len(self.instances) == len(self.keys_by_name):
            return
        if self._discovered_at and time.monotonic() - self._discovered_at < REDISCOVER_S:
            return
        self.instances = match_instances(await self.discover(), self.keys_by_name)

    async def _target_error(self, instance: str) -> str | None:
        if time.monotonic() - self._targets_at > TARGETS_REFRESH_S:
            self._targets_at = time.monotonic()
            try:
                status, _reason, body = await self.client.get(self.url + "/api/v1/targets?state=active")
                doc = json.loads(body) if status == 200 else {}
                errors = {}
                for t in (doc.get("data") or {}).get("activeTargets") or ():
                    inst = (t.get("labels") or {}).get("instance")
                    if inst and t.get("lastError"):
                        errors[inst] = f"{t.get('health', 'down')}: {t['lastError']}"
                self._target_errors = errors
            except (ScrapeFailure, ValueError, AttributeError):
                pass
        return self._target_errors.get(instance)

    async def poll(self, sink) -> None:
        """One round of queries; every node gets a sample or a state. Parsing the answers
        and mapping them onto samples run in a worker thread, not on the event loop."""
        started = time.monotonic()
        await self._refresh_mapping()
        mapped = sorted(self.instances)
        # batches also without hosts: each answer (~2.5 MB per 256 instances) is decoded in
        # one piece, and json.loads holds the GIL while it runs
        # Each batch's answer is mapped onto samples before the next is asked for: a poll holds
        # one answer at a time (a decoded answer takes ~18x its bytes), never all of them.
        batches = [mapped[i:i + BATCH_INSTANCES] for i in range(0, len(mapped), BATCH_INSTANCES)]
        now = time.monotonic()
        prefer = {i: job for i, (job, seen) in self._jobs.items() if now - seen <= JOB_STICKY_S}
        mapped_answer: dict = {}
        not_read: dict[str, str] = {}  # instance → why its batch's answer was not read
        settings = self.client.settings
        left = settings.max_poll_bytes  # what the rest of this poll's answers may hold
        for batch in batches:
            cap = answer_limit(len(batch), settings.max_answer_bytes)
            why = None
            if left <= 0:
                why = self._poll_cap_words(settings.max_poll_bytes)
            else:
                try:
                    vector = await self.query(fleet_query(batch, self.job), limit=min(cap, left))
                except BodyTooLarge:
                    why = (self._poll_cap_words(settings.max_poll_bytes) if left < cap else
                           f"Prometheus's answer for its batch of {len(batch)} instances is over {_size(cap)} "
                           f"(at most {_size(ANSWER_BASE_BYTES)} + {_size(ANSWER_BYTES_PER_INSTANCE)} per "
                           "instance): not read")
                    left -= cap  # read up to there (or refused by its length: counted all the same)
                self.queries += 1
            if why is not None:
                not_read.update(dict.fromkeys(batch, why))
                continue
            left -= self.answer_bytes
            wanted = {instance: self._last_scrape.get(instance) for instance in batch}
            mapped_answer.update(await asyncio.to_thread(map_answer, vector, wanted, prefer))
            del vector
        self.last_query_s = time.monotonic() - started
        now = time.monotonic()
        seen_names = set()
        for instance, name in self.instances.items():
            seen_names.add(name)
            if instance in not_read:
                sink.report(name, NodeState.PARSE_ERROR, not_read[instance])
                continue
            ts, sample, error, job = mapped_answer[instance]
            if job is not None:
                self._jobs[instance] = (job, now)
            if ts is None:
                why = await self._target_error(instance)
                sink.report(name, NodeState.DOWN, f"Prometheus has no current sample of {instance}"
                            + (f" ({why})" if why else ""))
                continue
            if sample is None and error is None:
                continue  # not scraped again since the last query
            self._last_scrape[instance] = ts
            if error is not None:
                sink.report(name, NodeState.PARSE_ERROR, error)
                continue
            boot_id = steady_boot_id(self._boot_ids.get(instance), sample.boot_id)
            self._boot_ids[instance] = boot_id
            if job:
                # the job is part of the counters' identity: when a node's series come from
                # another job (only that job had scraped it yet), its counters are another
                # exporter's, and no rate may span the switch
                boot_id = f"{boot_id or 'boot ?'} job={job}"
            if boot_id != sample.boot_id:
                sample = dataclasses.replace(sample, boot_id=boot_id)
            sink.observe(name, sample)
        for name in self.names:
            if name not in seen_names:
                sink.report(name, NodeState.DOWN, "no instance in Prometheus matches this node")

    @staticmethod
    def _poll_cap_words(poll_bytes: int) -> str:
        return (f"not read: Prometheus's answers reached {_size(poll_bytes)} in this poll (the most one poll "
                "reads) before its batch; ask for fewer nodes")

    async def run(self, sink) -> None:
        s = self.client.settings
        waits = backoff.Backoff(s.backoff_first_s, s.backoff_max_s, self.url)
        while True:
            raise_if_cancelled()  # a swallowed cancellation never keeps the loop going
            try:
                await self.poll(sink)
                waits.reset()
                await asyncio.sleep(sink.interval_s)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the server's failure is every node's state
                raise_if_cancelled()  # a cancellation that came back as a failure: stop
                failure = exc if isinstance(exc, ScrapeFailure) else ScrapeFailure(
                    NodeState.DOWN, f"{type(exc).__name__}: {exc}")
                delay = waits.next_s(at_least_s=sink.interval_s)
                for name in self.names:
                    sink.report(name, failure.state, f"Prometheus {self.url}: {failure.reason} "
                                                     f"(retrying in {delay:.0f} s)")
                await asyncio.sleep(delay)

    async def run_shared(self, sink) -> None:
        """The one polling loop, started by whichever node source runs first."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self.run(sink))
        await asyncio.shield(self._task)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None


class PrometheusNode(BaseSource):
    """One node of a PrometheusReader's fleet, as the monitor sees it (a push source): the
    reader's one loop keeps the pace (the sink's interval) and reports for every node."""

    push = True
    via = "node_exporter"  # Prometheus holds what the node's node_exporter serves
    no_commands = "read through Prometheus, which runs no commands"

    def __init__(self, name: str, reader: PrometheusReader) -> None:
        self.name = name
        self.reader = reader

    async def run(self, sink: Sink) -> None:
        await self.reader.run_shared(sink)

    async def close(self) -> None:
        await self.reader.close()
