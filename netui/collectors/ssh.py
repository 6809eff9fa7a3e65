"""Nodes over SSH, agentless: one asyncssh connection and one sampler process per node.

The sampler (collectors/sampler.py) is sent as the command line of the SSH session — nothing
is written on the node — and streams frames until the channel closes. Each node's session
runs in its own task: it connects (at most ``fanout`` handshakes at once), starts the sampler,
decodes frames and hands samples to the sink; on failure it reports the state with its reason
and retries with capped exponential backoff and jitter.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import random
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
from asyncssh.config import SSHClientConfig

from netui.collectors.frames import FrameError, decode_frame, frame_length
from netui.collectors.ssh_config import ConfigIndex
from netui.model.node import NodeState

SAMPLER_SOURCE = (Path(__file__).parent / "sampler.py").read_text(encoding="utf-8")


def sampler_command(interval_s: float, *, sysfs: str | None = None, ethtool_every_s: float | None = None) -> str:
    """The remote command line: the sampler's source, quoted, run by the node's python3.

    ``exec`` so that the sampler is the session's process (no shell left waiting), and a
    clear message when python3 is missing. ``sysfs``: read /sys from there (a test points it
    at a copied tree); ``ethtool_every_s``: the cadence of ``ethtool -S`` (default 5 s).
    """
    script = shlex.quote(SAMPLER_SOURCE)
    extra = ""
    if sysfs is not None:
        extra += f" --sysfs {shlex.quote(sysfs)}"
    if ethtool_every_s is not None:
        extra += f" --ethtool-every {float(ethtool_every_s)!r}"
    return (
        "command -v python3 >/dev/null 2>&1 || { echo 'netui: no python3 on this node' >&2; exit 127; }; "
        f"exec python3 -c {script} {float(interval_s)!r}{extra}"
    )


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
    backoff_first_s: float = 1.0
    backoff_max_s: float = 60.0

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
    known = [os.path.expanduser(str(f)) for f in files]  # type: ignore[union-attr]
    jump = config.get("ProxyJump")
    return ResolvedHost(
        host=host,
        port=int(config.get("Port", 22)),  # type: ignore[arg-type]
        user=str(config.get("User") or getpass.getuser()),
        known_hosts=known,
        proxy_jump=None if jump in (None, "none") else str(jump),
        alias=alias,
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

    def __init__(self, state: NodeState, reason: str, retry: bool = True) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason
        self.retry = retry


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
        return Failure(NodeState.PARSE_ERROR, f"bad data from the node: {exc}")
    return Failure(NodeState.DOWN, f"{type(exc).__name__}: {exc}")


def backoff_s(attempt: int, first_s: float, max_s: float, rng: random.Random) -> float:
    """Capped exponential backoff with jitter: uniform in [d/2, d], d = first·2^attempt."""
    d = min(max_s, first_s * (2 ** min(attempt, 30)))
    return rng.uniform(d / 2, d)


PREFERRED_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
                     "aes256-ctr", "aes192-ctr", "aes128-ctr")


class SshConnector:
    """Opens connections: the shared options, the handshake limit, one jump per ProxyJump."""

    def __init__(self, settings: SshSettings) -> None:
        self.settings = settings
        self.handshakes = asyncio.Semaphore(max(1, settings.fanout))
        self._jumps: dict[str, asyncio.Task] = {}
        self._may_jump = self._config_mentions(("proxyjump", "include"))
        self._own_ciphers = self._config_mentions(("ciphers",))
        self._configs: ConfigIndex | None = None
        paths = settings.default_config_paths()
        if paths:
            try:
                self._configs = ConfigIndex(paths)
            except OSError:
                self._configs = None  # asyncssh reads them itself and says what is wrong

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
        if not self._own_ciphers:
            # AES-GCM first (hardware AES on every server CPU): ~30 % less CPU per frame than
            # asyncssh's default chacha20-poly1305, measured by bench_fleet. A site's own
            # Ciphers in ssh_config wins.
            kwargs["encryption_algs"] = PREFERRED_CIPHERS
        return kwargs

    async def _jump(self, spec: str) -> asyncssh.SSHClientConnection:
        """The one connection to a jump host, opened on first use and shared by all nodes."""
        task = self._jumps.get(spec)
        if task is None or (task.done() and (task.exception() is not None or task.result().is_closed())):
            user, _, rest = spec.rpartition("@")
            host, _, port = rest.partition(":")
            task = asyncio.ensure_future(
                asyncssh.connect(host, **self._kwargs(user or None, int(port) if port.isdigit() else None, host))
            )
            self._jumps[spec] = task
        try:
            return await asyncio.shield(task)
        except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
            raise Failure(NodeState.DOWN, f"jump host {spec}: {classify(exc, None).reason}") from None

    async def connect(self, alias: str, user: str | None, port: int | None) -> asyncssh.SSHClientConnection:
        kwargs = self._kwargs(user, port, alias)
        paths = kwargs.get("config")
        async with self.handshakes:
            resolved = None
            if self._may_jump or self.settings.accept_new_host_keys:
                # parsing ssh_config is file work: off the event loop, one slot at a time
                resolved = await asyncio.to_thread(resolve, self.settings, alias, user, port, paths)
            accept_new = resolved is not None and self.settings.accept_new_host_keys and not host_is_known(resolved)
            if accept_new:
                kwargs["known_hosts"] = None  # an unknown host only: a known one is always verified
            if resolved is not None and resolved.proxy_jump:
                kwargs["tunnel"] = await self._jump(resolved.proxy_jump)
            try:
                conn = await asyncssh.connect(alias, **kwargs)
            except asyncio.CancelledError:
                raise  # closing the monitor: never a node failure to retry
            except Exception as exc:
                if isinstance(exc, asyncssh.HostKeyNotVerifiable) and resolved is None:
                    resolved = await asyncio.to_thread(resolve, self.settings, alias, user, port, paths)
                raise classify(exc, resolved) from exc
        if accept_new:
            key = conn.get_server_host_key()
            if key is not None:
                record_host_key(resolved, key)
        return conn

    async def close(self) -> None:
        if self._configs is not None:
            self._configs.close()
            self._configs = None  # a late reconnect reads the files themselves
        for task in self._jumps.values():
            if task.done() and task.exception() is None:
                task.result().close()
            else:
                task.cancel()


class SshSource:
    """One node over SSH: connects, runs the sampler, streams samples into the sink."""

    push = True

    def __init__(self, name: str, host: str, connector: SshConnector, *, user: str | None = None,
                 port: int | None = None, seed: int | None = None) -> None:
        self.name = name
        self.host = host
        self.user = user
        self.port = port
        self.connector = connector
        self._rng = random.Random(seed if seed is not None else hash(name))
        self._process: asyncssh.SSHClientProcess | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self.frames = 0

    async def run(self, sink) -> None:
        """Until cancelled: stream, and on any failure report it and retry with backoff."""
        attempt = 0
        while True:
            try:
                sink.report(self.name, NodeState.CONNECTING, None)
                await self._stream(sink)
                failure = Failure(NodeState.DOWN, "the sampler stopped")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is a node state
                failure = classify(exc, None)
            finally:
                self._close()
            if self.frames:
                attempt = 0
                self.frames = 0
            s = self.connector.settings
            delay = backoff_s(attempt, s.backoff_first_s, s.backoff_max_s, self._rng)
            sink.report(self.name, failure.state, f"{failure.reason} (retrying in {delay:.0f} s)")
            attempt += 1
            await asyncio.sleep(delay)

    async def _stream(self, sink) -> None:
        self._conn = await self.connector.connect(self.host, self.user, self.port)
        proc = await self._conn.create_process(sampler_command(sink.interval_s), encoding=None)
        self._process = proc
        reader = proc.stdout
        while True:
            try:
                header = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    raise FrameError("stream ended inside a frame header") from None
                raise await self._ended(proc) from None
            except asyncssh.Error:
                raise
            payload = await reader.readexactly(frame_length(header))
            sink.observe(self.name, decode_frame(payload))
            self.frames += 1

    async def _ended(self, proc) -> Failure:
        """Why the sampler's output ended: its exit status and its own words."""
        try:
            await asyncio.wait_for(proc.wait_closed(), timeout=2)
        except (asyncio.TimeoutError, asyncssh.Error, OSError):
            pass
        err = b""
        try:
            err = await asyncio.wait_for(proc.stderr.read(4096), timeout=1)
        except (asyncio.TimeoutError, asyncssh.Error, OSError):
            pass
        text = err.decode("utf-8", "replace").strip().splitlines()
        words = text[-1] if text else ""
        status = proc.exit_status
        if status == 127 or "no python3" in words:
            return Failure(NodeState.UNSUPPORTED, words or "no python3 on this node")
        if status == 3:
            return Failure(NodeState.UNSUPPORTED, words or "no /proc/net/dev on this node")
        return Failure(NodeState.DOWN, f"sampler exited (status {status})" + (f": {words}" if words else ""))

    @property
    def connection(self) -> asyncssh.SSHClientConnection | None:
        """The node's live connection while it streams (None while down or connecting).

        Other commands (pair tests, engine/shell.py) open their own channels on it: no
        second handshake, and they end when it does.
        """
        conn = self._conn
        return conn if conn is not None and self._process is not None and not conn.is_closed() else None

    def set_interval(self, interval_s: float) -> None:
        proc = self._process
        if proc is not None and not proc.stdin.is_closing():
            try:
                proc.stdin.write(f"i {interval_s}\n".encode())
            except (OSError, asyncssh.Error):
                pass

    def _close(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def close(self) -> None:
        conn = self._conn
        self._close()
        if conn is not None:
            try:
                await asyncio.wait_for(conn.wait_closed(), timeout=2)
            except (asyncio.TimeoutError, OSError, asyncssh.Error):
                pass
