"""Connecting to nodes over SSH: the shared settings, ssh_config applied as OpenSSH would,
host keys, ProxyJump chains shared by every node behind them, ProxyCommand, and at most
``fanout`` handshakes at once; a failure to connect as a node state with its reason
(``Failure``, ``classify``).
"""

from __future__ import annotations

import asyncio
import getpass
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
from asyncssh.config import SSHClientConfig
from asyncssh.misc import split_args

from netui.collectors import backoff
from netui.collectors.asyncssh_shims import apply_shims, lazy_keepalive
from netui.collectors.frames import FrameError
from netui.collectors.lookup import DirectConnection, HostLookup
from netui.collectors.proxycommand import ProxyCommand
from netui.collectors.ssh_config import ConfigIndex, SshConfigError
from netui.model.node import NodeState
from netui.model.text import safe_line


@dataclass
class SshSettings:
    """What every connection shares (read once, not per node)."""

    config_paths: list[str] = field(default_factory=list)  # -F; default ~/.ssh/config if present
    user: str | None = None  # -l
    identity: list[str] = field(default_factory=list)  # -i
    connect_timeout_s: float = 10.0
    keepalive_s: float = 3.0  # silence before a keepalive; down after 3 unanswered
    fanout: int = 64  # concurrent handshakes
    accept_new_host_keys: bool = False
    backoff_first_s: float = backoff.FIRST_S
    backoff_max_s: float = backoff.MAX_S

    def default_config_paths(self) -> list[str]:
        if self.config_paths:
            return self.config_paths
        default = Path("~/.ssh/config").expanduser()
        return [str(default)] if default.is_file() else []


@dataclass(frozen=True)
class ResolvedHost:
    host: str  # what to connect to (Hostname from the config, or as given)
    port: int
    user: str
    known_hosts: list[str]
    proxy_jump: str | None
    alias: str  # as the user named it
    proxy_command: tuple[str, ...] = ()  # ssh_config's ProxyCommand, split and expanded; () none


def resolve(settings: SshSettings, alias: str, user: str | None, port: int | None,
            paths: list[str] | None = None) -> ResolvedHost:
    """Apply ~/.ssh/config (or -F; or ``paths``, their reduced copies) to one target as
    OpenSSH would."""
    if paths is None:
        paths = settings.default_config_paths()
    config = SSHClientConfig.load(None, paths, False, False, False, getpass.getuser(),
                                  user or settings.user or (), alias, port or ())
    host = str(config.get("Hostname", alias))
    files = config.get("UserKnownHostsFile") or [str(Path("~/.ssh/known_hosts").expanduser())]
    known = [os.path.expanduser(str(f)) for f in files]
    jump = config.get("ProxyJump")
    command = config.get("ProxyCommand")
    return ResolvedHost(
        host=host,
        port=int(config.get("Port", 22)),
        user=str(config.get("User") or getpass.getuser()),
        known_hosts=known,
        proxy_jump=None if jump in (None, "none") else str(jump),
        alias=alias,
        proxy_command=() if not command or str(command).strip().lower() == "none" else tuple(split_args(str(command))),
    )


def host_is_known(resolved: ResolvedHost) -> bool:
    """Whether any known_hosts file has a key for this host (whatever the key)."""
    for path in resolved.known_hosts:
        try:
            known = asyncssh.read_known_hosts(path)
        except (OSError, ValueError, asyncssh.Error):
            continue
        for name in {resolved.host, resolved.alias}:
            if any(known.match(name, "", resolved.port)[:3]):
                return True
    return False


def record_host_key(resolved: ResolvedHost, key: asyncssh.SSHKey) -> None:
    """Append a newly accepted host key to the first known_hosts file (accept-new)."""
    path = Path(resolved.known_hosts[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    name = resolved.host if resolved.port == 22 else f"[{resolved.host}]:{resolved.port}"
    line = f"{name} {key.export_public_key().decode().strip()}\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)


class Failure(Exception):
    """A node-level failure with the state to show."""

    def __init__(self, state: NodeState, reason: str, retry: bool = True, *, backoff_reset: bool = True) -> None:
        reason = safe_line(reason)  # often the node's own words: its stderr, an SSH error text
        super().__init__(reason)
        self.state = state
        self.reason = reason
        self.retry = retry
        # False: the samples before it do not make the next try a first one (a node over a
        # cap backs off as one that never connects, whatever it sent before)
        self.backoff_reset = backoff_reset


def classify(exc: BaseException, resolved: ResolvedHost | None) -> Failure:
    """The node state an exception means, with the reason in words."""
    if isinstance(exc, Failure):
        return exc
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        if resolved is not None and host_is_known(resolved):
            return Failure(NodeState.HOST_KEY_CHANGED, "host key changed: refusing to connect (check known_hosts)")
        return Failure(NodeState.HOST_KEY_UNKNOWN,
                       "host key unknown: add it to known_hosts or use --accept-new-host-keys")
    if isinstance(exc, asyncssh.PermissionDenied):
        return Failure(NodeState.AUTH_FAILED, f"authentication failed: {exc.reason or 'permission denied'}")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Failure(NodeState.DOWN, "connection timed out")
    if isinstance(exc, ConnectionRefusedError):
        return Failure(NodeState.DOWN, "connection refused")
    if isinstance(exc, OSError):
        return Failure(NodeState.DOWN, exc.strerror or str(exc) or type(exc).__name__)
    if isinstance(exc, asyncssh.ConnectionLost):
        return Failure(NodeState.DOWN, f"connection lost: {exc.reason}" if exc.reason else "connection lost")
    if isinstance(exc, asyncssh.Error):
        return Failure(NodeState.DOWN, exc.reason or type(exc).__name__)
    if isinstance(exc, (FrameError, asyncio.IncompleteReadError)):
        # what the node sends is wrong: the next try backs off further, whatever came before
        return Failure(NodeState.PARSE_ERROR, f"bad data from the node: {exc}", backoff_reset=False)
    return Failure(NodeState.DOWN, f"{type(exc).__name__}: {exc}")


MAX_JUMP_HOPS = 8  # hosts between netui and a node, at most


def hop_parts(hop: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` of one ProxyJump hop (``ssh://`` and ``[v6]:port`` allowed)."""
    if hop.startswith("ssh://"):
        hop = hop[len("ssh://"):]
    user, _, rest = hop.rpartition("@")
    port: int | None = None
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        if tail.startswith(":") and tail[1:].isdigit():
            port = int(tail[1:])
    elif rest.count(":") == 1:
        host, _, tail = rest.partition(":")
        port = int(tail) if tail.isdigit() else None
    else:
        host = rest
    return user or None, host, port


def jump_hops(spec: str) -> list[str]:
    """The hops of a ProxyJump value, in order (``a,b``: a first); ValueError when one is empty."""
    hops = [h.strip() for h in spec.split(",")]
    if any(not h or not hop_parts(h)[1] for h in hops):
        raise ValueError("an empty hop")
    return hops


PREFERRED_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
                     "aes256-ctr", "aes192-ctr", "aes128-ctr")


class Slots:
    """At most ``n`` holders at once (``async with``), first come first served.

    As asyncio.Semaphore, but a waiter that gives up costs nothing: the Semaphore's removes
    itself from its queue, a search of the whole queue, and closing a snapshot of 18,000
    nodes waiting for 64 handshakes took 3 s of CPU for it. Here it is skipped when its turn
    comes.
    """

    def __init__(self, n: int) -> None:
        self._free = n
        self._waiters: deque[asyncio.Future] = deque()

    async def __aenter__(self) -> None:
        if self._free > 0:  # (a free slot means no one is waiting: a release hands it on first)
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed the slot as it was cancelled: the next one has it
            raise

    async def __aexit__(self, *exc_info) -> None:
        self._release()

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # one that gave up is skipped
                waiter.set_result(None)
                return
        self._free += 1


class SshConnector:
    """Opens connections: the shared options, the handshake limit, one jump per ProxyJump."""

    lazy_keepalive = True  # see lazy_keepalive(); False: asyncssh's timer (bench_fleet compares)
    keep_gcm_keys = True  # see keep_gcm_keys(); False: a key schedule per packet (bench_fleet compares)
    quiet_packet_log = True  # see quiet_packet_log(); False: every packet described (bench_fleet compares)

    def __init__(self, settings: SshSettings) -> None:
        self.settings = settings
        apply_shims(gcm=self.keep_gcm_keys, packet_log=self.quiet_packet_log)  # once per process
        self.handshakes = Slots(max(1, settings.fanout))
        self.tried: set[str] = set()  # the hosts whose first handshake has begun (SshSource.tried)
        self._jumps: dict[str, asyncio.Task] = {}
        # hosts resolved here first: a ProxyJump to share, a ProxyCommand to run and watch
        self._may_jump = self._config_mentions(("proxyjump", "proxycommand", "include"))
        self._own_ciphers = self._config_mentions(("ciphers",))
        # names looked up in netui's own threads, which never hold up its end (collectors/lookup.py);
        # asyncssh's own connection where ssh_config chooses the address family or source address
        self.lookup = HostLookup(workers=min(max(1, settings.fanout), 16))
        self._own_addressing = self._config_mentions(("addressfamily", "bindaddress", "bindinterface"))
        self._configs: ConfigIndex | None = None
        self._config_error: str | None = None  # an ssh_config no node can use (an Include loop)
        self._indexing: asyncio.Future | None = None

    async def _index_configs(self) -> None:
        """Read the ssh_config files into a ConfigIndex once, in a thread: a generated config
        of hundreds of thousands of blocks takes seconds to read, never the event loop's."""
        if self._indexing is None:
            self._indexing = asyncio.ensure_future(asyncio.to_thread(self._build_index))
        await asyncio.shield(self._indexing)

    def _build_index(self) -> None:
        paths = self.settings.default_config_paths()
        if not paths:
            return
        try:
            self._configs = ConfigIndex(paths)
        except SshConfigError as exc:
            self._config_error = str(exc)
        except OSError:
            self._configs = None  # asyncssh reads them itself and says what is wrong

    def _config_failure(self, exc: BaseException) -> Failure:
        """An ssh_config error as a node state: permanent (retrying cannot mend a file), and
        said of the user's own file and line, never of a reduced copy."""
        if isinstance(exc, RecursionError):
            reason = "ssh_config: Include or ProxyJump nested without end"
        else:
            reason = str(exc)
            if self._configs is not None:
                reason = self._configs.describe(reason)
        return Failure(NodeState.CONFIG_ERROR, reason, retry=False)

    def _config_mentions(self, words: tuple[str, ...]) -> bool:
        """Whether the ssh_config files use any of these keywords (read once).

        Resolving a host against ssh_config costs a full parse of the file, per host; a
        fleet pays it only where it is needed (a ProxyJump to share, a key to record).
        """
        for path in self.settings.default_config_paths():
            try:
                text = Path(path).read_text(encoding="utf-8", errors="replace").lower()
            except OSError:
                continue
            if any(w in text for w in words):
                return True
        return False

    def config_paths(self, alias: str) -> list[str]:
        """The ssh_config files for one host: reduced copies with only its lines (read once
        for the fleet, see collectors.ssh_config), or the files themselves."""
        if self._configs is not None:
            try:
                return self._configs.paths_for(alias)
            except OSError:
                pass
        return self.settings.default_config_paths()

    def _kwargs(self, user: str | None, port: int | None, alias: str | None = None) -> dict:
        s = self.settings
        kwargs: dict = {
            "connect_timeout": s.connect_timeout_s,
            "login_timeout": s.connect_timeout_s,
            "keepalive_interval": s.keepalive_s,
            "keepalive_count_max": 3,
        }
        if alias is not None and self._configs is not None:
            kwargs["config"] = self.config_paths(alias)
        elif s.config_paths:
            kwargs["config"] = s.config_paths
        if user or s.user:
            kwargs["username"] = user or s.user
        if port:
            kwargs["port"] = port
        if s.identity:
            kwargs["client_keys"] = s.identity
        # Never compressed, whatever ssh_config says (Compression yes): a frame is ~15 KB
        # a second, and zlib would cost CPU on the node and here for every one of them.
        kwargs["compression_algs"] = ("none",)
        if not self._own_ciphers:
            # AES-GCM first (hardware AES on every server CPU): ~30 % less CPU per frame than
            # asyncssh's default chacha20-poly1305, measured by bench_fleet. A site's own
            # Ciphers in ssh_config wins.
            kwargs["encryption_algs"] = PREFERRED_CIPHERS
        return kwargs

    async def _through(self, alias: str, spec: str, seen: tuple[str, ...]) -> asyncssh.SSHClientConnection:
        """The connection to the last hop of ``alias``'s ProxyJump ``spec`` (``a,b``: to a,
        then to b through a), every hop shared by all nodes that use it. ``seen``: the hosts
        this chain already passed; a hop among them (or ``alias`` itself) is a loop, a
        permanent failure naming the ProxyJump line."""
        chain = (*seen, alias)
        try:
            hops = jump_hops(spec)
        except ValueError as exc:
            raise Failure(NodeState.CONFIG_ERROR, f"{self._where(alias)}ProxyJump {spec}: {exc}", retry=False) from None
        if len(chain) + len(hops) > MAX_JUMP_HOPS:
            raise Failure(NodeState.CONFIG_ERROR, f"{self._where(alias)}ProxyJump through more than "
                                                  f"{MAX_JUMP_HOPS} hosts ({' → '.join(chain)} → {spec})", retry=False)
        names = [h.lower() for h in chain]
        for hop in hops:
            host = hop_parts(hop)[1].lower()
            if host in names:
                loop = [*chain[names.index(host):], *hops[:hops.index(hop) + 1]]
                raise Failure(NodeState.CONFIG_ERROR,
                              f"{self._where(alias)}ProxyJump loop: {' → '.join(loop)}", retry=False)
            names.append(host)
        return await self._jump(tuple(hops), chain)

    def _where(self, alias: str) -> str:
        """``file line N: `` of the ProxyJump line that applies to ``alias``, when known."""
        where = self._configs.where(alias, "proxyjump") if self._configs is not None else None
        return f"{where}: " if where else ""

    async def _jump(self, hops: tuple[str, ...], seen: tuple[str, ...]) -> asyncssh.SSHClientConnection:
        """The one connection to the last of ``hops`` through the ones before it, opened on
        first use and shared by all nodes."""
        key = ",".join(hops)
        task = self._jumps.get(key)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None
                                             or task.result().is_closed())):
            task = asyncio.ensure_future(self._open_jump(hops, seen))
            self._jumps[key] = task
        try:
            return await asyncio.shield(task)
        except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
            raise Failure(NodeState.DOWN, f"jump host {hops[-1]}: {classify(exc, None).reason}") from None

    async def _open_jump(self, hops: tuple[str, ...], seen: tuple[str, ...]) -> asyncssh.SSHClientConnection:
        user, host, port = hop_parts(hops[-1])
        kwargs = await asyncio.to_thread(self._kwargs, user, port, host)
        if len(hops) > 1:
            tunnel = await self._jump(hops[:-1], seen)
        else:  # the first hop's own ProxyJump applies (as with ssh -J a,b)
            try:
                resolved = await asyncio.to_thread(resolve, self.settings, host, user, port, kwargs.get("config"))
            except (asyncssh.ConfigParseError, RecursionError) as exc:
                raise self._config_failure(exc) from None
            tunnel = await self._through(host, resolved.proxy_jump, seen) if resolved.proxy_jump else None
        # no tunnel but a direct connection, whatever ssh_config says (resolved here)
        kwargs["tunnel"] = tunnel if tunnel is not None else self._direct()
        try:
            return await asyncssh.connect(host, **kwargs)
        except (asyncssh.ConfigParseError, RecursionError) as exc:
            raise self._config_failure(exc) from None

    def _direct(self) -> DirectConnection | None:
        """The tunnel of a connection without one: TCP, the name looked up by ``lookup``."""
        return None if self._own_addressing else DirectConnection(self.lookup)

    async def connect(self, alias: str, user: str | None, port: int | None) -> asyncssh.SSHClientConnection:
        await self._index_configs()
        if self._config_error is not None:
            raise Failure(NodeState.CONFIG_ERROR, self._config_error, retry=False)
        async with self.handshakes:
            self.tried.add(alias)
            try:
                # the index's reduced copy for this host, and parsing ssh_config: file work,
                # off the event loop, one slot at a time
                kwargs = await asyncio.to_thread(self._kwargs, user, port, alias)
                paths = kwargs.get("config")
                resolved = None
                if self._may_jump or self.settings.accept_new_host_keys:
                    resolved = await asyncio.to_thread(resolve, self.settings, alias, user, port, paths)
            except (asyncssh.ConfigParseError, RecursionError) as exc:
                raise self._config_failure(exc) from None
            accept_new = resolved is not None and self.settings.accept_new_host_keys and not host_is_known(resolved)
            if accept_new:
                kwargs["known_hosts"] = None  # an unknown host only: a known one is always verified
            proxy = None
            if resolved is not None:
                # resolved here, loops caught: asyncssh never follows ProxyJump on its own
                kwargs["tunnel"] = await self._through(alias, resolved.proxy_jump, ()) if resolved.proxy_jump else None
                if kwargs["tunnel"] is None and resolved.proxy_command:
                    kwargs["tunnel"] = proxy = ProxyCommand(resolved.proxy_command)  # its failure said
            direct = None
            if kwargs.get("tunnel") is None:
                kwargs["tunnel"] = direct = self._direct()
            try:
                conn = await asyncssh.connect(alias, **kwargs)
            except asyncio.CancelledError:
                raise  # closing the monitor: never a node failure to retry
            except (asyncssh.ConfigParseError, RecursionError) as exc:
                raise self._config_failure(exc) from None
            except Exception as exc:
                why = await proxy.why_failed() if proxy is not None else None
                if why is not None:
                    raise Failure(NodeState.DOWN, why) from exc
                if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and direct is not None \
                        and direct.stuck_looking_up:
                    raise Failure(NodeState.DOWN, f"name lookup of {direct.host} did not answer in "
                                                  f"{self.settings.connect_timeout_s:g} s") from exc
                if isinstance(exc, asyncssh.HostKeyNotVerifiable) and resolved is None:
                    resolved = await asyncio.to_thread(resolve, self.settings, alias, user, port, paths)
                raise classify(exc, resolved) from exc
        if accept_new:
            key = conn.get_server_host_key()
            if key is not None:
                record_host_key(resolved, key)
        if self.lazy_keepalive:
            lazy_keepalive(conn)
        return conn

    async def close(self) -> None:
        if self._configs is not None:
            self._configs.close()
            self._configs = None  # a late reconnect reads the files themselves
        for task in self._jumps.values():
            if task.done() and not task.cancelled() and task.exception() is None:
                task.result().close()
            else:
                task.cancel()
