"""Host names looked up in netui's own threads, and a plain TCP connection made with them.

The event loop looks names up in threads it waits for when it closes: uvloop in libuv's
thread pool (4 threads, a request never cancelled), the stock loop in its default executor
(joined on exit). When a resolver is slow — a DNS server that drops a burst of queries
answers each of them only after its timeout, 5 s or more — every connection attempt of a
large fleet leaves one lookup behind, and closing netui waited for all of them in turn: an
18,000-node snapshot that should end after ~10 s ended after ~2 minutes.

Here a lookup runs in one of ``workers`` daemon threads of netui's own. A caller that gives
up (the connect timeout, netui closing) leaves it behind: a lookup still queued is never
started, one under way finishes on its own, and neither keeps netui from ending.
``DirectConnection`` is a tunnel for ``asyncssh.connect(tunnel=...)`` that connects to
the addresses found so, one after another, as the event loop would; ``aiohttp_resolver``
serves node_exporter and Prometheus requests the same way.
"""

from __future__ import annotations

import asyncio
import queue
import socket
import threading
from dataclasses import dataclass

IDLE_EXIT_S = 30.0  # a lookup thread with nothing to do for this long ends
AddressInfo = tuple  # one getaddrinfo() entry: (family, type, proto, canonname, sockaddr)


@dataclass(eq=False)
class _Request:
    host: str
    port: int
    family: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    abandoned: bool = False  # the caller gave up: never started if still queued


def _settle(request: _Request, result: list[AddressInfo] | None, error: BaseException | None) -> None:
    future = request.future
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class HostLookup:
    """getaddrinfo() in at most ``workers`` daemon threads, started as they are needed."""

    def __init__(self, workers: int = 16) -> None:
        self.workers = max(1, workers)
        self.started = 0  # lookups begun in a thread (an abandoned one still queued never is)
        self._queue: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self._threads = 0  # running now
        self._idle = 0
        self._lock = threading.Lock()

    async def addresses(self, host: str, port: int, family: int = socket.AF_UNSPEC) -> list[AddressInfo]:
        """The TCP addresses of ``host`` (a numeric address at once, without a thread);
        OSError (socket.gaierror) as getaddrinfo raises it. Cancelling the caller leaves
        the lookup behind, never waits for it."""
        try:  # a numeric address needs no resolver
            return socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
        except (socket.gaierror, UnicodeError):
            pass
        loop = asyncio.get_running_loop()
        request = _Request(host, port, family, loop, loop.create_future())
        self._queue.put(request)
        self._add_worker()
        try:
            return await request.future
        finally:
            request.abandoned = True
            if not request.future.done():
                request.future.cancel()

    def _add_worker(self) -> None:
        with self._lock:
            if self._queue.qsize() <= self._idle or self._threads >= self.workers:
                return
            self._threads += 1
            self._idle += 1
        threading.Thread(target=self._work, name="netui-lookup", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                request = self._queue.get(timeout=IDLE_EXIT_S)
            except queue.Empty:
                with self._lock:  # (a request put before this check is seen here: never stranded)
                    if self._queue.qsize() == 0:
                        self._threads -= 1
                        self._idle -= 1
                        return
                continue
            if request.abandoned:
                continue
            with self._lock:
                self._idle -= 1
                self.started += 1
            result = error = None
            try:
                result = socket.getaddrinfo(request.host, request.port, request.family, socket.SOCK_STREAM)
            except (OSError, UnicodeError) as exc:
                error = exc if isinstance(exc, OSError) else socket.gaierror(socket.EAI_NONAME, str(exc))
            with self._lock:
                self._idle += 1
            try:
                request.loop.call_soon_threadsafe(_settle, request, result, error)
            except RuntimeError:
                pass  # the loop has closed: nobody is waiting any more


def aiohttp_resolver(lookup: HostLookup):
    """An aiohttp resolver (``TCPConnector(resolver=...)``) that looks names up with ``lookup``."""
    from aiohttp.abc import AbstractResolver

    class Resolver(AbstractResolver):
        async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[dict]:
            found = []
            for fam, _kind, proto, _name, address in await lookup.addresses(host, port, family):
                ip = address[0]
                if fam == socket.AF_INET6 and len(address) > 3 and address[3]:
                    ip = f"{ip}%{address[3]}"  # a link-local address keeps its scope
                found.append({"hostname": host, "host": ip, "port": address[1], "family": fam, "proto": proto,
                              "flags": socket.AI_NUMERICHOST | socket.AI_NUMERICSERV})
            return found

        async def close(self) -> None:
            pass

    return Resolver()


class DirectConnection:
    """A tunnel for ``asyncssh.connect(tunnel=...)``: a plain TCP connection to the host and
    port asyncssh settled on (ssh_config's Hostname and Port applied), its name looked up by
    a HostLookup. ``host`` is the name it was asked for (None: not asked yet) and
    ``looked_up`` whether its addresses came, so that a connect timeout can be said as what
    it was."""

    def __init__(self, lookup: HostLookup) -> None:
        self.lookup = lookup
        self.host: str | None = None
        self.looked_up = False

    @property
    def stuck_looking_up(self) -> bool:
        """Asked for a name whose lookup has not answered (yet)."""
        return self.host is not None and not self.looked_up

    async def create_connection(self, session_factory, host: str, port: int):
        """(transport, session) of the first of ``host``'s addresses that accepts."""
        self.host = host
        infos = await self.lookup.addresses(host, port)
        self.looked_up = True
        loop = asyncio.get_running_loop()
        last: OSError | None = None
        for family, kind, proto, _name, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                await loop.sock_connect(sock, address)  # the whole address: an IPv6 scope too
            except OSError as exc:
                sock.close()
                last = exc
                continue
            except BaseException:
                sock.close()
                raise
            return await loop.create_connection(session_factory, sock=sock)
        raise last if last is not None else OSError(f"no address for {host}")
