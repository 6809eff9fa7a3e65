"""Nodes read through their node_exporter: ``GET http://HOST:9100/metrics`` once per interval.

One shared aiohttp session serves the whole fleet: keep-alive connections (one per node,
reused every interval), at most ``concurrency`` requests in flight, a timeout per scrape.
Each node runs its own loop (a push source, like SshSource): scrape, map the series onto a
NodeSample (collectors/exposition.py, in a worker thread: parsing is the costly part), hand
it to the sink, sleep until the next due time. A failure is that node's state — refused or
timed out: down, with backoff; an HTTP error: down with the code; a body over
``max_body_bytes`` (16 MiB; the Content-Length is checked first, a stream is cut there): down;
a body that is not the text format: parse error — and the rest of the fleet carries on.

The request asks only for the collectors netui maps (``?collect[]=netdev&…``); an exporter
that lacks one of them answers 400 "missing collector: X", and the node is asked again
without X (the softirqs collector is off by default and absent before node_exporter 1.6).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from netui.collectors import backoff
from netui.collectors.cancel import raise_if_cancelled
from netui.collectors.exposition import (
    COLLECTORS,
    ExpositionError,
    node_time_s,
    parse_exposition,
    sample_from_series,
    steady_boot_id,
)
from netui.collectors.source import BaseSource, Sink
from netui.model.node import NodeState
from netui.model.samples import NodeSample
from netui.model.text import safe_line

DEFAULT_PORT = 9100


class ScrapeFailure(Exception):
    """A node-level failure with the state to show."""

    def __init__(self, state: NodeState, reason: str) -> None:
        reason = safe_line(reason)  # often the server's own words (an error body's first line)
        super().__init__(reason)
        self.state = state
        self.reason = reason


class BodyTooLarge(ScrapeFailure):
    """A body over the limit it was read with (read no further)."""


@dataclass
class HttpSettings:
    timeout_s: float = 5.0  # whole request: connect, headers and body
    concurrency: int = 64  # requests in flight across the fleet
    backoff_first_s: float = backoff.FIRST_S
    backoff_max_s: float = backoff.MAX_S
    max_body_bytes: int = 16 << 20  # a node_exporter scrape is ~60 KB; more is not an exporter
    # Prometheus: one answer at most (less for fewer instances: collectors/prometheus.py
    # answer_limit), and all the answers of one poll together; a batch of 256 instances is ~2.5 MB
    max_answer_bytes: int = 256 << 20
    max_poll_bytes: int = 512 << 20


class HttpClient:
    """The fleet's one aiohttp session (created on first use, inside the running loop).

    aiohttp rather than httpx: its C HTTP parser and connection pool cost less CPU per
    request, which is what a monitor of a thousand nodes a second pays.
    """

    def __init__(self, settings: HttpSettings | None = None) -> None:
        self.settings = settings or HttpSettings()
        self._session = None
        self._lookup = None

    def session(self):
        import aiohttp

        if self._session is None or self._session.closed:
            from netui.collectors.lookup import HostLookup, aiohttp_resolver

            # names looked up in netui's own threads: a slow resolver never holds up netui's end
            if self._lookup is None:
                self._lookup = HostLookup(workers=min(max(1, self.settings.concurrency), 16))
            connector = aiohttp.TCPConnector(limit=max(1, self.settings.concurrency), keepalive_timeout=75,
                                             ttl_dns_cache=300, resolver=aiohttp_resolver(self._lookup))
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.settings.timeout_s),
                # plain text: gzip would save bytes on the wire but cost the monitor CPU per scrape
                headers={"Accept-Encoding": "identity", "User-Agent": "netui"},
            )
        return self._session

    async def get(self, url: str) -> tuple[int, str, bytes]:
        """(status, reason, body) of a GET; raises ScrapeFailure for transport errors."""
        try:
            async with self.session().get(url, allow_redirects=False) as resp:
                body = await read_limited(resp, self.settings.max_body_bytes)
                return resp.status, resp.reason or "", body
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every transport failure is a node state
            raise classify(exc, self.settings.timeout_s) from exc

    async def post(self, url: str, form: dict[str, str], *, limit: int | None = None) -> tuple[int, str, bytes]:
        """(status, reason, body) of a POST, the body at most ``limit`` bytes (default
        ``max_answer_bytes``; BodyTooLarge past it); ScrapeFailure for transport errors."""
        try:
            async with self.session().post(url, data=form, allow_redirects=False) as resp:
                body = await read_limited(resp, self.settings.max_answer_bytes if limit is None else limit)
                return resp.status, resp.reason or "", body
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise classify(exc, self.settings.timeout_s) from exc

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


async def read_limited(resp, limit: int) -> bytes:
    """The response's body, or BodyTooLarge (down) once it is over ``limit`` bytes: a
    Content-Length over it is refused unread, a longer stream is cut at limit + 1 bytes."""
    if resp.content_length is not None and resp.content_length > limit:
        raise BodyTooLarge(NodeState.DOWN, f"body over {_mib(limit)} (Content-Length {resp.content_length})")
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await resp.content.read(min(1 << 20, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(NodeState.DOWN, f"body over {_mib(limit)}")


def classify(exc: BaseException, timeout_s: float) -> ScrapeFailure:
    """The node state a transport exception means, in words."""
    import aiohttp

    if isinstance(exc, ScrapeFailure):
        return exc
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return ScrapeFailure(NodeState.DOWN, f"no answer within {timeout_s:g} s")
    cause = getattr(exc, "os_error", None) or exc
    if isinstance(cause, ConnectionRefusedError):
        return ScrapeFailure(NodeState.DOWN, "connection refused")
    if isinstance(cause, OSError) and cause.strerror:
        return ScrapeFailure(NodeState.DOWN, cause.strerror.lower())
    if isinstance(exc, aiohttp.ClientError):
        return ScrapeFailure(NodeState.DOWN, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    return ScrapeFailure(NodeState.DOWN, f"{type(exc).__name__}: {exc}")


def http_failure(status: int, reason: str, body: bytes) -> ScrapeFailure:
    first = body[:200].decode("utf-8", "replace").strip().splitlines()
    return ScrapeFailure(NodeState.DOWN, f"HTTP {status} {reason}".strip() + (f": {first[0]}" if first else ""))


def host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class NodeClock:
    """The timeline of one node's samples: ``mono_s`` for rates.

    The exporter's ``node_time_seconds`` is the node's clock when the collectors ran, so
    the time a request waited in a queue, on the wire or in the monitor's event loop does
    not bend a rate (the scrape time would: at a thousand scrapes in flight, arrival jitter
    of tens of ms is a few % of a 1 s rate). It is a wall clock, though, and can step (NTP,
    an operator): when its advance differs from the scrape time's advance by more than
    ``max(1 s, half the interval)`` the step is not believed and the scrape time's advance
    is used for that one interval. Without node_time_seconds (time collector off), the
    scrape time (the middle of the request) is the clock.
    """

    def __init__(self) -> None:
        self._last: tuple[float | None, float, float] | None = None  # (node_t, local_t, mono)

    def advance(self, node_t: float | None, local_t: float) -> float:
        if self._last is None:
            mono = node_t if node_t is not None else local_t
        else:
            last_node, last_local, last_mono = self._last
            d_local = local_t - last_local
            d = d_local
            if node_t is not None and last_node is not None:
                d_node = node_t - last_node
                if abs(d_node - d_local) <= max(1.0, 0.5 * d_local):
                    d = d_node
            mono = last_mono + d
        self._last = (node_t, local_t, mono)
        return mono


_MISSING_COLLECTOR = re.compile(r"missing collector: ([A-Za-z0-9_]+)")


def scrape_to_sample(body: bytes, local_t: float, wall_t: float, clock: NodeClock) -> NodeSample:
    """Parse a scrape's body and map it (run in a worker thread; the clock is per node and
    each node has at most one scrape in flight)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScrapeFailure(NodeState.PARSE_ERROR, f"body is not UTF-8: {exc}") from None
    try:
        series = parse_exposition(text)
    except ExpositionError as exc:
        raise ScrapeFailure(NodeState.PARSE_ERROR, str(exc)) from None
    if not series:
        first = text.strip().splitlines()[:1]
        raise ScrapeFailure(NodeState.PARSE_ERROR, "no node_exporter series in the body"
                            + (f" (it starts {first[0][:60]!r})" if first else " (empty)"))
    node_t = node_time_s(series)
    mono = clock.advance(node_t, local_t)
    return sample_from_series(series, wall_s=node_t if node_t is not None else wall_t, mono_s=mono)


class NodeExporterSource(BaseSource):
    """One node's node_exporter, scraped once per interval by its own loop."""

    push = True
    via = "node_exporter"  # what the counters come through: the UI says what it cannot show
    no_commands = "read through node_exporter, which runs no commands"

    def __init__(self, name: str, host: str, client: HttpClient, *, port: int = DEFAULT_PORT,
                 seed: int | None = None) -> None:
        self.name = name
        self.host = host
        self.port = port
        self.client = client
        self.base_url = f"http://{host_for_url(host)}:{port}/metrics"
        self.collectors: list[str] | None = list(COLLECTORS)  # None: ask for everything
        self.clock = NodeClock()
        self.scrapes = 0
        self.last_scrape_s: float | None = None
        self._seed = seed if seed is not None else name  # the backoff's jitter
        self._interval_s: float | None = None
        self._wake = asyncio.Event()
        self._boot_id: str | None = None
        self.retry_at: float | None = None  # time.monotonic() of the next try while waiting to retry

    @property
    def url(self) -> str:
        if not self.collectors:
            return self.base_url
        return self.base_url + "?" + urlencode([("collect[]", c) for c in self.collectors])

    async def scrape(self) -> NodeSample:
        """One scrape → one sample; raises ScrapeFailure with the node's state."""
        while True:
            sent = time.monotonic()
            status, reason, body = await self.client.get(self.url)
            if status == 400 and self.collectors:
                missing = _MISSING_COLLECTOR.search(body[:500].decode("utf-8", "replace"))
                if missing and missing.group(1) in self.collectors:
                    self.collectors.remove(missing.group(1))
                else:
                    self.collectors = None  # filtering not understood: plain /metrics
                continue
            if status != 200:
                raise http_failure(status, reason, body)
            done = time.monotonic()
            self.last_scrape_s = done - sent
            local_t = (sent + done) / 2
            wall_t = time.time() - (done - local_t)
            sample = await asyncio.to_thread(scrape_to_sample, body, local_t, wall_t, self.clock)
            boot_id = steady_boot_id(self._boot_id, sample.boot_id)
            if boot_id != sample.boot_id:
                sample = dataclasses.replace(sample, boot_id=boot_id)
            self._boot_id = boot_id
            self.scrapes += 1
            return sample

    async def run(self, sink: Sink) -> None:
        """Until cancelled: scrape every interval; on failure report it and back off."""
        s = self.client.settings
        waits = backoff.Backoff(s.backoff_first_s, s.backoff_max_s, self._seed)
        due = time.monotonic()
        while True:
            raise_if_cancelled()  # a swallowed cancellation never keeps the loop going
            interval = self._interval_s or sink.interval_s
            try:
                sample = await self.scrape()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is a node state
                raise_if_cancelled()  # a cancellation that came back as a failure: stop
                failure = exc if isinstance(exc, ScrapeFailure) else ScrapeFailure(
                    NodeState.PARSE_ERROR, f"{type(exc).__name__}: {exc}")
                delay = waits.next_s(at_least_s=interval)
                sink.report(self.name, failure.state, f"{failure.reason} (retrying in {delay:.0f} s)")
                self.retry_at = time.monotonic() + delay
                try:
                    await self._sleep(delay)  # retry_now cuts it short
                finally:
                    self.retry_at = None
                due = time.monotonic()
                continue
            waits.reset()
            sink.observe(self.name, sample)
            due += interval
            now = time.monotonic()
            if due < now:  # a slow scrape: start again now, never in a burst
                due = now
            await self._sleep(due - now)

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass

    def set_interval(self, interval_s: float) -> None:
        self._interval_s = interval_s
        self._wake.set()

    def retry_now(self) -> bool:
        """Cut the wait before the next try short; False when the source is not waiting."""
        if self.retry_at is None:
            return False
        self._wake.set()
        return True

    async def close(self) -> None:
        pass  # the shared client is closed once, by the monitor (its ``connector``)
