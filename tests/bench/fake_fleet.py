"""A fake fleet for the benchmarks: one asyncssh server on 127.0.0.1 that plays N nodes.

Every SSH session is one node: whatever command it is asked to run (but the LLDP read), it streams frames in the
remote sampler's exact format (collectors/sampler.py) once per interval until the channel
closes, and honours ``i SECONDS`` lines on stdin (and the probe mesh's lines: ``FakeMesh``).
The frames are those of a 128-CPU, 16-interface node (tests/bench/node128.py) reduced by the
sampler's own ``frame()`` — its source is executed with file reads served from node128's
texts — so the client parses exactly what a real node would send. A session whose SSH user
is ``peers-I-N`` sends node I of N's TCP peers too (tests/bench/fake_peers.py). Counters
advance one step per frame of a session.

Run as a separate process (the benchmark does this):
    python -m tests.bench.fake_fleet DIR
DIR holds ``host_key`` and ``client_key.pub`` (see ``write_keys``). The server prints
``PORT <n>`` once it listens, and ``CPU <seconds>`` whenever a line arrives on its stdin; it
exits when its stdin closes (the benchmark ended or died) or after ``--max-seconds``.

Traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import struct
import sys
import time
import types
from pathlib import Path

import netui  # noqa: F401 - before asyncssh: netui filters asyncssh's DSA warning at import (and only it)

import asyncssh  # noqa: E402

from netui.collectors import protocol
from netui.collectors.frames import encode_fields
from netui.collectors.ssh import SAMPLER_SOURCE
from netui.model.mesh import DEFAULT_PERIOD_S, DEFAULT_RATE
from tests.bench.fake_peers import FakePeers, node_of_user
from tests.bench.node128 import iface_attrs, proc_texts

MAX_STEPS = 1800  # frames per session; a session ends after this (counters never wrap)
EAGER_STEPS = 120  # payloads built before listening; later ones on first use, then kept
KEX = "curve25519-sha256"


# frames -------------------------------------------------------------------------------------
def _sampler_namespace() -> dict:
    """The sampler's functions, with its reads served from node128's texts.

    ``frame()`` keeps its own reduction (Tcp lines of snmp, TcpExt lines of netstat, the cpu
    block of stat, header and NET rows of softirqs) and its interface loop; only the files,
    the symlinks and the clocks are fake.
    """
    ns: dict = {"__name__": "netui_fake_sampler"}
    exec(compile(SAMPLER_SOURCE, "sampler.py", "exec"), ns)  # noqa: S102 - our own source
    ns["sampler"] = ns["Sampler"]()  # its state: open files, caches, running sums
    attrs = iface_attrs()
    state = {"texts": {}}

    def read(path: str, one: bool = False):
        for key, real in ns["PROC"].items():
            if path == real:
                text = state["texts"].get(key)
                return None if text is None else text.encode()
        if path.startswith("/sys/class/net/"):
            name, _, attr = path[len("/sys/class/net/"):].partition("/")
            value = attrs.get(name, {}).get(attr)
            return None if value is None else value.encode()
        return None

    def readlink(path: str) -> str:
        name = path.rstrip("/").rsplit("/", 1)[-1]
        link = attrs.get(name, {}).get("link")
        if link is None:
            raise OSError(2, "no such link")
        return link

    def exists(path: str) -> bool:
        name, _, marker = path[len("/sys/class/net/"):].partition("/")
        return attrs.get(name, {}).get(marker) is not None

    ns["sampler"].read = read
    def listdir(path: str) -> list[str]:
        raise OSError(2, "no such directory")  # no /sys/class/infiniband: an Ethernet node

    ns["os"] = types.SimpleNamespace(readlink=readlink, listdir=listdir, path=types.SimpleNamespace(exists=exists))
    ns["time"] = types.SimpleNamespace(time=lambda: 0.0, monotonic=lambda: 0.0)
    ns["_state"] = state
    return ns


_PREFIX = encode_fields([("wall", b"0.0"), ("mono", b"0.0")])


class NodeFrames:
    """The frames of one simulated node, step by step: payload minus the clocks, memoised.

    As the sampler, it sends the sums of the per-CPU tables, and the tables too when asked
    (``detail``: a node screen is open). The sums' "hottest CPU since" clock is the frame
    before's ``mono``, put in at send as the clocks are (``since_s``).
    """

    def __init__(self, filler_bytes: int = 0) -> None:
        self.filler = b"x" * filler_bytes  # frames of filler (transport only: they do not decode)
        self._ns = {False: _sampler_namespace(), True: _sampler_namespace()}
        self._ns[True]["sampler"].detail = True
        self._bodies: dict[bool, list[tuple[bytes, int]]] = {False: [], True: []}

    def body(self, step: int, detail: bool = False) -> tuple[bytes, int]:
        """The payload of ``step`` after the ``wall``/``mono`` pairs (the clocks go in at
        send), and where in it the sums' "since" clock is (-1: none)."""
        bodies, ns = self._bodies[detail], self._ns[detail]
        while len(bodies) <= step:
            ns["_state"]["texts"] = proc_texts(len(bodies), wobble=True)
            whole = ns["sampler"].frame()
            payload = whole[whole.index(b"\n") + 1:]
            assert payload.startswith(_PREFIX), payload[:40]
            body = payload[len(_PREFIX):]
            at = body.find(b"cpusum\0")
            since = -1
            if at >= 0 and struct.unpack_from("<10Q", body, at + 11)[0] & 8:  # a hottest CPU
                since = at + 11 + 80
            bodies.append((body, since))
        return bodies[step]

    def frame(self, step: int, wall_s: float, mono_s: float, since_s: float | None = None,
              detail: bool = False, mesh: bytes | None = None, peers: bytes | None = None) -> bytes:
        """One frame, exactly as the sampler writes it: header line, then the payload
        (``peers``: its "peers" field, ``FakePeers.field``; ``mesh``: its "mesh" field,
        ``FakeMesh.field``; in the sampler's order)."""
        if self.filler:
            return b"NETUI2 %d\n" % len(self.filler) + self.filler
        body, at = self.body(step, detail)
        if at >= 0 and since_s is not None:
            body = body[:at] + struct.pack("<d", since_s) + body[at + 8:]
        payload = encode_fields([("wall", repr(wall_s).encode()), ("mono", repr(mono_s).encode())]) + body
        if peers is not None:
            payload += encode_fields([("peers", peers)])
        if mesh is not None:
            payload += encode_fields([("mesh", mesh)])
        return b"NETUI2 %d\n" % len(payload) + payload


class FakeMesh:
    """One simulated node's part of the probe mesh, as the monitor turns it on (``m TOKEN RATE
    PERIOD``, ``mp+``/``mp-`` lines): no socket (a port of its own is only a number here), but
    each frame's "mesh" field as a real node's at that rate: its peers in turn, RATE × the
    interval of them per frame (each at most once per PERIOD), each probe answered with one RTT.
    It answers as many probes as it sends (every node probes at the same rate)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.rate = self.period_s = 0.0
        self.on = False
        self.peers: list[tuple[str, int]] = []
        self.next = 0
        self.owed = 0.0  # probes due, not yet sent
        self.answers = 0

    def command(self, line: bytes) -> None:
        words = line.split()
        if words[0] == b"m":
            self.on = len(words) >= 2 and len(words[1]) == 32
            self.rate = float(words[2]) if len(words) > 2 else DEFAULT_RATE
            self.period_s = float(words[3]) if len(words) > 3 else DEFAULT_PERIOD_S
            self.peers, self.next, self.owed = [], 0, 0.0
        elif words[0] == b"mp+":
            self.peers += [(words[i].decode(), int(words[i + 1])) for i in range(1, len(words) - 1, 2)]
        elif words[0] == b"mp-":
            gone = {(words[i].decode(), int(words[i + 1])) for i in range(1, len(words) - 1, 2)}
            self.peers = [p for p in self.peers if p not in gone] if gone else []

    def field(self, mono_s: float, interval_s: float) -> bytes | None:
        """This frame's "mesh" field (None while the mesh is off)."""
        if not self.on:
            return None
        rows = []
        if self.peers:
            self.owed += min(self.rate, len(self.peers) / self.period_s) * interval_s
            for _ in range(int(self.owed)):
                address, port = self.peers[self.next % len(self.peers)]
                self.next += 1
                rows.append(protocol.MESH_ROW.pack(2, socket.inet_aton(address) + bytes(12), port, 1, 0, 1)
                            + struct.pack("<I", 150 + self.next % 50))
            self.owed -= int(self.owed)
            self.answers += len(rows)
        head = protocol.MESH_HEAD.pack(protocol.MESH_ON, 0, self.port, len(self.peers), self.answers, 0,
                                       len(rows), mono_s, 2, socket.inet_aton("127.0.0.1") + bytes(12))
        return head + b"".join(rows)


# keys and client files ----------------------------------------------------------------------
def write_keys(directory: Path) -> None:
    """An ed25519 host key and client key pair, written to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "client_key"):
        key = asyncssh.generate_private_key("ssh-ed25519")
        key.write_private_key(str(directory / name))
        key.write_public_key(str(directory / f"{name}.pub"))
        os.chmod(directory / name, 0o600)


def node_name(i: int) -> str:
    return f"node{i:04d}"


def write_client_files(directory: Path, nodes: int, port: int, *, per_host: bool = True,
                       ciphers: str | None = None) -> Path:
    """ssh_config and known_hosts; the config's path.

    ``per_host``: one ``Host nodeNNNN`` block per node, as generated cluster configs are;
    otherwise a single ``Host node*`` block (every alias still its own connection).
    """
    host_pub = (directory / "host_key.pub").read_text().split()
    known = directory / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    lines = []
    for i in range(nodes if per_host else 0):
        lines += [f"Host {node_name(i)}", "  HostName 127.0.0.1", f"  Port {port}", ""]
    if not per_host:
        lines += ["Host node*", "  HostName 127.0.0.1", f"  Port {port}", ""]
    lines += [
        "Host *",
        f"  IdentityFile {directory / 'client_key'}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {known}",
        f"  KexAlgorithms {KEX}",
    ]
    if ciphers:
        lines.append(f"  Ciphers {ciphers}")  # default: asyncssh's (chacha20-poly1305 first)
    lines.append("")
    config = directory / f"ssh_config.{nodes}"
    config.write_text("\n".join(lines))
    return config


def raise_open_files_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# the server ---------------------------------------------------------------------------------
async def _drained(writer, timeout_s: float) -> None:
    """``writer.drain()`` within ``timeout_s`` (asyncio.TimeoutError past it): under
    asyncio.timeout where there is one (3.11+), without the task asyncio.wait_for makes."""
    if hasattr(asyncio, "timeout"):
        async with asyncio.timeout(timeout_s):
            await writer.drain()
    else:
        await asyncio.wait_for(writer.drain(), timeout=timeout_s)


class FleetServer:
    def __init__(self, frames: NodeFrames, max_steps: int) -> None:
        self.frames = frames
        self.max_steps = max_steps
        self.sessions = 0
        self.frames_sent = 0
        self.mesh_ports = 0  # each session's mesh its own port

    async def session(self, process: asyncssh.SSHServerProcess) -> None:
        """One node: a frame every interval until the channel closes (or MAX_STEPS). The one
        other command netui runs on every node, its LLDP read (engine/lldp.py), is answered as
        a node without lldpctl answers it."""
        if "lldpctl" in (process.command or ""):
            process.stderr.write(b"netui: lldpctl not found\n")
            process.exit(127)
            return
        self.sessions += 1
        self.mesh_ports += 1
        mesh = FakeMesh(20000 + self.mesh_ports % 40000)
        node = node_of_user(process.get_extra_info("username"))  # (bench_fleet +peers)
        peers = FakePeers(*node) if node is not None else None
        interval = 1.0
        detail = (process.command or "").endswith(" --detail")  # the sampler's arguments end the command
        since = None
        # the wait for the next frame: one future and one timer (asyncio.wait_for made a task
        # of each wait and each drain, ~half the fake's CPU per frame), cut short by control()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future | None = None
        closed = False

        def wake() -> None:
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

        async def control() -> None:
            nonlocal interval, closed, detail
            try:
                for _ in range(100_000):  # bounded: a few lines per session at most
                    line = await process.stdin.readline()
                    if not line:
                        break
                    if line.startswith(b"d "):
                        detail = line[2:].strip() == b"1"
                    if line.startswith((b"m ", b"mp+ ", b"mp-")):
                        mesh.command(line)
                    if line.startswith(b"i "):
                        try:
                            new = float(line[2:])
                        except ValueError:
                            continue
                        if 0.05 <= new <= 3600:
                            interval = new
                            wake()
            except (asyncssh.Error, OSError):
                pass
            closed = True
            wake()

        reader = asyncio.ensure_future(control())
        try:
            due = time.monotonic()
            for step in range(self.max_steps):
                if closed or process.is_closing():
                    break
                mono = time.monotonic()
                process.stdout.write(self.frames.frame(step, time.time(), mono, since, detail,
                                                       mesh.field(mono, interval),
                                                       peers.field(mono) if peers is not None else None))
                since = mono
                await _drained(process.stdout, 30.0)
                self.frames_sent += 1
                due += interval
                while not closed:
                    wait = due - time.monotonic()
                    if wait <= 0:
                        break
                    waiter = loop.create_future()
                    timer = loop.call_later(wait, wake)
                    try:
                        await waiter
                    finally:
                        timer.cancel()
                if time.monotonic() - due > interval:
                    due = time.monotonic()
        except (asyncssh.Error, OSError, asyncio.TimeoutError):
            pass
        finally:
            reader.cancel()
            self.sessions -= 1
            if not process.is_closing():
                process.exit(0)


def like_openssh() -> None:
    """Send one SSH packet per frame, as OpenSSH's sshd does.

    asyncssh's server sends an empty SSH_MSG_IGNORE before every packet it sends once keys
    are set: two packets to receive, decrypt and dispatch per frame where a real node's sshd
    sends one (checked with the lab's sshd: one channel-data packet and one socket read per
    frame). Those IGNORE packets are dropped here; ``--asyncssh-ignore`` keeps them.
    """
    from asyncssh.connection import SSHServerConnection
    from asyncssh.constants import MSG_IGNORE

    send = SSHServerConnection.send_packet
    empty = b"\0\0\0\0"  # String(b"")

    def send_packet(self, pkttype: int, *args: bytes, handler=None) -> None:
        if pkttype == MSG_IGNORE and args == (empty,):
            return
        send(self, pkttype, *args, handler=handler)

    SSHServerConnection.send_packet = send_packet


async def serve(directory: Path, max_steps: int, max_seconds: float, filler_bytes: int = 0) -> None:
    raise_open_files_limit()
    frames = NodeFrames(filler_bytes)
    for step in range(min(EAGER_STEPS, max_steps)):
        frames.body(step)
    server = FleetServer(frames, max_steps)
    acceptor = await asyncssh.listen(
        "127.0.0.1", 0,
        server_host_keys=[str(directory / "host_key")],
        authorized_client_keys=str(directory / "client_key.pub"),
        process_factory=server.session,
        encoding=None,
        kex_algs=[KEX],
        allow_scp=False,
        backlog=1024,
    )
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    print(f"PORT {acceptor.get_port()}", flush=True)
    deadline = time.monotonic() + max_seconds
    try:
        while time.monotonic() < deadline:
            try:
                line = await asyncio.wait_for(stdin.readline(), timeout=max(0.1, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
            if not line:
                break  # the benchmark closed our stdin, or died
            t = os.times()
            print(f"CPU {t.user + t.system:.6f} SESSIONS {server.sessions} SENT {server.frames_sent}", flush=True)
    finally:
        acceptor.close()
        await acceptor.wait_closed()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", type=Path)
    p.add_argument("--max-steps", type=int, default=MAX_STEPS)
    p.add_argument("--max-seconds", type=float, default=3600.0)
    p.add_argument("--asyncssh-ignore", action="store_true",
                   help="keep asyncssh's SSH_MSG_IGNORE before every packet (OpenSSH sends none)")
    p.add_argument("--filler-bytes", type=int, default=0,
                   help="send frames of N filler bytes instead of the node's (they do not decode: floor only)")
    args = p.parse_args()
    if not args.asyncssh_ignore:
        like_openssh()
    # the fleet stands in for remote nodes: on this machine it shares the CPUs with the
    # monitor being measured, so it runs as light as netui itself (its loop, its shims)
    from netui.collectors.asyncssh_shims import apply_shims
    from netui.engine import eventloop

    apply_shims()
    eventloop.run(serve(args.dir, args.max_steps, args.max_seconds, args.filler_bytes))


if __name__ == "__main__":
    main()
