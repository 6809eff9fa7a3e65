"""Benchmark: node CPU per sample of netui's remote sampler, against the floor.

Run: python -m tests.bench.bench_sampler
This host plays the node, with the node's python3 (the first on a plain system PATH) and
the sampler started exactly as a node starts it: ``sh -c <sampler_command(interval)>``.
Side by side in the same run, in ROUNDS rounds, so that what the host does meanwhile (a
shared VM swings by ±10 % from one minute to the next) weighs on both sides of a ratio:

- the sampler: its own CPU time (/proc/<pid>/schedstat, ns) from frame 20 to frame 220,
  per frame, every 0.05 s (the per-sample work, start-up excluded); once more sending its
  per-CPU tables (``--detail``, a node whose screen is open);
- the floor: one python3 process reading the same files once per pass, no forks: with
  open/read/close of the /proc files and of each interface's /sys/class/net attributes in
  a tight loop, right after the sampler in each round (the target's floor); with the files
  kept open and read with pread, as the sampler does, in a tight loop too; and both ways
  paced every 0.05 s like the sampler, at the same time as it (their caches as cold). It reads as the
  sampler does: 8 KB reads to the end of a /proc table (or about what it held last time),
  one short read of a sysfs attribute
  or a sysctl value (boot_id, hostname: the kernel allocates what a read asks for, and a
  256 KB read of boot_id costs it ~60 µs more). The class symlink and marker entries of each
  interface, which the sampler reads again only every 30 s or when the interface is made
  anew, are read once before the passes;
- the lab-notes reference: a shell loop ``cat``-ing the same files and ``sleep``-ing per
  sample (two forks), CPU per sample including its children.

- the sampler without its TCP peers (``--max-peers 0``), in each round: what reading them costs;
- the sampler with SOCKETS open TCP sockets on this host (SOCKETS / 2 loopback connections
  the bench makes in each round, right after the sampler without them, and closes at the
  round's end): as a node runs it (loopback peers are left out by the kernel's filter, but
  the kernel still walks every socket of the dump), and with ``--peer-loopback``, where
  every one of them is read, parsed and summed as a remote peer's would be.

- the probe mesh (``--mesh-only`` runs this part alone): in MESH_ROUNDS rounds, two samplers
  at the same time at the default 1 s interval for MESH_FRAMES frames, one with the mesh off
  and one with it on at the default rate (MESH_RATE probes a second, each peer at most once per
  MESH_PERIOD_S) given MESH_PEERS - 1 peers: UDP sockets this bench binds on 127.0.0.1, which
  answer its probes as a sampler would and probe it as 1,023 peers at the default rate do (each
  probes it once per ~102 s: MESH_RATE probes a second reach it in all), with the session's
  token. CPU per second of each sampler process, and the ratio on / off per round.

Prints µs per sample (medians over the rounds), the ratios sampler / floor (the median of
the rounds' ratios, and their range; target ≤ 1.5× the open/read/close floor), the frame
size and python3's start-up cost. Nothing leaves this host.
"""

from __future__ import annotations

import argparse
import os
import resource
import selectors
import shutil
import socket
import statistics
import subprocess
import threading
import time

from netui.collectors.frames import FrameDecoder, frame_length
from netui.collectors.protocol import MESH_ANSWER, MESH_PACKET, MESH_QUERY
from netui.model.mesh import DEFAULT_PERIOD_S as MESH_PERIOD_S, DEFAULT_RATE as MESH_RATE
from netui.collectors.ssh import SAMPLER_SOURCE, sampler_command
from netui.engine.mesh import peer_lines

NODE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # no pyenv shims
NODE_ENV = {"PATH": NODE_PATH, "LANG": "C.UTF-8"}
INTERVAL_S = 0.05
WARM_FRAMES = 20
FRAMES = 200
FLOOR_PASSES = 500
FRAME_ROUNDS = 3
ROUNDS = 5
SHELL_SAMPLES = 50
STARTUPS = 10
MESH_PEERS = 1024  # the fleet's size: the sampler is given the other 1,023
MESH_FRAMES = 20  # frames at 1 s measured per round, after MESH_WARM
MESH_WARM = 4
MESH_ROUNDS = 3
SOCKETS = 1000  # open TCP sockets for the sampler's peers reading: SOCKETS / 2 loopback connections

# What the sampler reads each interval, without its per-CPU tables (/proc/softirqs is read
# for its table only: the NET_RX/NET_TX sums come from /proc/stat's softirq line)
PROC = ("/proc/net/dev", "/proc/net/snmp", "/proc/net/netstat", "/proc/stat", "/proc/net/softnet_stat")
SYSCTL = ("/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/hostname")
ATTRS = ("mtu", "speed", "operstate", "carrier", "ifindex", "type")
MARKERS = ("bridge", "bonding", "device")

# Run by the node's python3: reads what the sampler reads, PASSES times, prints µs per pass.
FLOOR_SCRIPT = r"""
import os, sys, time
proc, sysctl, sysfs, links, markers = eval(sys.argv[1])
mode, passes, warm, pace_s = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
fds = {}
sizes = {}

def asked(p, got):
    # as the sampler: 8 KB reads, or about what the file held last time
    size = sizes.get(p, 8192)
    if got > size:
        sizes[p] = min(got + (got >> 2) + 4096, 1 << 22) & ~4095

def once():
    for p in proc:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        got = 0
        size = sizes.get(p, 8192)
        try:
            while True:
                chunk = os.read(fd, size)
                if not chunk:
                    break
                got += len(chunk)
        except OSError:
            pass
        os.close(fd)
        asked(p, got)
    for p in sysfs + sysctl:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.read(fd, 4096)  # a sysfs attribute or a sysctl value is one short read
        except OSError:
            pass
        os.close(fd)

def once_pread():
    for p in proc:
        fd = fds.get(p)
        if fd is None:
            fd = fds[p] = os.open(p, os.O_RDONLY)
        off = 0
        size = sizes.get(p, 8192)
        while True:
            chunk = os.pread(fd, size, off)
            if not chunk:
                break
            off += len(chunk)
        asked(p, off)
    for p in sysfs + sysctl:
        fd = fds.get(p)
        try:
            if fd is None:
                fd = fds[p] = os.open(p, os.O_RDONLY)
            os.pread(fd, 4096, 0)
        except OSError:
            pass

def extras():
    for p in links:
        try:
            os.readlink(p)
        except OSError:
            pass
    for p in markers:
        os.path.exists(p)

body = once if mode == "open" else once_pread
for _ in range(warm):
    body(); extras()
t0 = time.process_time()
for _ in range(passes):
    body()  # (extras: once per 30 s in the sampler, read in the warm-up only)
    if pace_s:
        time.sleep(pace_s)
print((time.process_time() - t0) / passes * 1e6)
"""


def interfaces() -> list[str]:
    """Interface names as the sampler takes them from /proc/net/dev."""
    names = []
    with open("/proc/net/dev", "rb") as f:
        for line in f.read().splitlines()[2:]:
            name = line.partition(b":")[0].strip().decode("ascii", "replace")
            if name and "/" not in name and name not in (".", ".."):
                names.append(name)
    return names


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def process_cpu_s(pid: int) -> float:
    """CPU time of one single-threaded process: schedstat (ns), else stat (clock ticks)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def startup_ms(python: str, env: dict | None = NODE_ENV) -> float:
    """Median CPU (ms, user + system, the process and its children) of ``python -c pass``."""
    costs = []
    for _ in range(STARTUPS):
        before = children_cpu_s()
        subprocess.run([python, "-c", "pass"], check=True, timeout=30, env=env)
        costs.append((children_cpu_s() - before) * 1e3)
    return statistics.median(costs)


def open_sockets(count: int) -> list:
    """``count`` open TCP sockets: count / 2 loopback connections to one listener (127.0.0.1),
    each carrying a few bytes. The caller closes them (``close_sockets``)."""
    import socket

    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(count)
    socks = [lsn]
    try:
        for _ in range(count // 2):
            cli = socket.create_connection(lsn.getsockname(), timeout=5)
            srv, _ = lsn.accept()
            socks += [cli, srv]
            cli.sendall(b"netui")
            srv.recv(16)
    except BaseException:
        close_sockets(socks)
        raise
    return socks


def close_sockets(socks: list) -> None:
    for s in socks:
        s.close()


def run_sampler(detail: bool = False, extra: str = "") -> dict:
    """The real sampler, as a node runs it; its CPU per frame between WARM_FRAMES and +FRAMES
    (``detail``: sending its per-CPU tables, as for a node whose screen is open; ``extra``:
    more arguments)."""
    proc = subprocess.Popen(["sh", "-c", sampler_command(INTERVAL_S, detail=detail) + extra], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=NODE_ENV)
    watchdog = threading.Timer(60 + (WARM_FRAMES + FRAMES) * INTERVAL_S * 3, proc.kill)
    watchdog.start()
    try:
        out = proc.stdout
        sizes = []
        first_cpu = cpu0 = cpu1 = t0 = t1 = 0.0
        payload = b""
        readings = set()  # the peers readings seen (frames between two repeat the last)
        decode = FrameDecoder().decode  # the frames of one stream, in order
        for i in range(WARM_FRAMES + FRAMES + 1):
            header = out.readline()
            if not header:
                raise RuntimeError(f"sampler ended: {proc.stderr.read().decode(errors='replace')[-400:]}")
            payload = out.read(frame_length(header))
            sizes.append(len(header) + len(payload))
            sample = decode(payload)  # every frame is well formed
            if i >= WARM_FRAMES and sample.peers is not None:
                readings.add(sample.peers.mono_s)
            if i == 0:
                first_cpu = process_cpu_s(proc.pid)
            elif i == WARM_FRAMES:
                cpu0, t0 = process_cpu_s(proc.pid), time.monotonic()
            elif i == WARM_FRAMES + FRAMES:
                cpu1, t1 = process_cpu_s(proc.pid), time.monotonic()
        return {"us": (cpu1 - cpu0) / FRAMES * 1e6, "first_ms": first_cpu * 1e3,
                "period_s": (t1 - t0) / FRAMES, "bytes": statistics.median(sizes),
                "ifaces": len(sample.interfaces), "readings": len(readings),
                "sockets": sample.peers.sockets if sample.peers is not None else 0,
                "cpus": len(sample.cpu.cpus) if sample.cpu else sample.cpu_sums.ncpus if sample.cpu_sums else 0}
    finally:
        watchdog.cancel()
        proc.stdin.close()  # end of file: the sampler ends at once
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


# Run by the node's python3: the sampler's own frame() in a tight loop (no pacing, no writes).
FRAME_SCRIPT = r"""
import sys, time
ns = {"__name__": "netui_sampler"}
exec(sys.argv[1], ns)
passes = int(sys.argv[2])
frame = ns["Sampler"]().frame
for _ in range(20):
    frame()
t0 = time.process_time()
for _ in range(passes):
    frame()
print((time.process_time() - t0) / passes * 1e6)
"""


def run_frame_loop(python: str) -> float:
    """Median µs per call of the sampler's frame() in a tight loop (hot caches, no sleep)."""
    rounds = []
    for _ in range(FRAME_ROUNDS):
        done = subprocess.run([python, "-c", FRAME_SCRIPT, SAMPLER_SOURCE, str(FLOOR_PASSES)],
                              capture_output=True, text=True, check=True, timeout=120, env=NODE_ENV)
        rounds.append(float(done.stdout))
    return statistics.median(rounds)


def floor_spec(names: list[str]) -> str:
    sysfs = [f"/sys/class/net/{n}/{a}" for n in names for a in ATTRS]
    links = [f"/sys/class/net/{n}" for n in names]
    markers = [f"/sys/class/net/{n}/{m}" for n in names for m in MARKERS]
    return repr((list(PROC), list(SYSCTL), sysfs, links, markers))


def floor_argv(python: str, mode: str, names: list[str], pace_s: float = 0.0) -> list[str]:
    """One floor process: FLOOR_PASSES passes in a tight loop, or FRAMES paced ones."""
    passes = FRAMES if pace_s else FLOOR_PASSES
    return [python, "-c", FLOOR_SCRIPT, floor_spec(names), mode, str(passes), "20", str(pace_s)]


def run_floor(python: str, mode: str, names: list[str]) -> float:
    """µs per pass of one floor process in a tight loop."""
    done = subprocess.run(floor_argv(python, mode, names), capture_output=True, text=True, check=True,
                          timeout=120, env=NODE_ENV)
    return float(done.stdout)


def run_round(python: str, names: list[str]) -> dict:
    """One round, everything in it measured under the same conditions: the sampler, and at
    the same time two floor processes paced as it is (pread, open/read/close; each wakes
    every INTERVAL_S for ~1 ms: they hardly meet on the CPUs); then the tight-loop floors,
    right after."""
    paced = {mode: subprocess.Popen(floor_argv(python, mode, names, INTERVAL_S), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=NODE_ENV) for mode in ("pread", "open")}
    figures = {}
    try:
        sampler = run_sampler()
        for mode, proc in paced.items():
            out, err = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise RuntimeError(f"the paced floor ({mode}) failed: {err[-400:]}")
            figures[mode] = float(out)
    finally:
        for proc in paced.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
    out = dict(sampler, paced=figures["pread"], paced_open=figures["open"], open=run_floor(python, "open", names),
               pread=run_floor(python, "pread", names))
    out["no_peers"] = run_sampler(extra=" --max-peers 0")
    socks = open_sockets(SOCKETS)
    try:
        out["sockets_run"] = run_sampler()
        out["sockets_read"] = run_sampler(extra=" --peer-loopback")
    finally:
        close_sockets(socks)
    return out


def run_shell_loop(names: list[str]) -> dict:
    """``cat`` of the same files + ``sleep`` per sample; CPU with children, per sample.

    Two loops of 10 and 10 + SHELL_SAMPLES samples; the difference removes the shell's start.
    """
    files = " ".join(list(PROC + SYSCTL) + [f"/sys/class/net/{n}/{a}" for n in names for a in ATTRS])
    runs = {}
    for count in (10, 10 + SHELL_SAMPLES):
        script = (f"i=0; while [ $i -lt {count} ]; do cat {files} 2>/dev/null; "
                  f"sleep {INTERVAL_S}; i=$((i+1)); done")
        before = children_cpu_s()
        done = subprocess.run(["sh", "-c", script], capture_output=True, check=False, timeout=120, env=NODE_ENV)
        runs[count] = (children_cpu_s() - before, len(done.stdout))
    cpu = runs[10 + SHELL_SAMPLES][0] - runs[10][0]
    size = runs[10 + SHELL_SAMPLES][1] - runs[10][1]
    return {"us": cpu / SHELL_SAMPLES * 1e6, "bytes": size / SHELL_SAMPLES}


def main() -> None:
    python = shutil.which("python3", path=NODE_PATH)
    if python is None:
        raise SystemExit("no python3 on the node's PATH")
    names = interfaces()
    version = subprocess.run([python, "-V"], capture_output=True, text=True, timeout=30).stdout.strip()
    print(f"node: this host, {os.cpu_count()} CPUs, {len(names)} interfaces ({', '.join(names)}); "
          f"python3 = {python} ({version}); load {os.getloadavg()[0]:.2f} at start")

    shim = shutil.which("python3")
    print(f"python3 start-up (python3 -c pass):  {startup_ms(python):7.1f} ms CPU (median of {STARTUPS})")
    if shim and os.path.realpath(shim) != os.path.realpath(python):
        print(f"  the same via {shim}:  {startup_ms(shim, None):7.1f} ms CPU (this PATH; not what a node runs)")

    rounds = [run_round(python, names) for _ in range(ROUNDS)]
    detailed = run_sampler(detail=True)
    frame_loop = run_frame_loop(python)
    shell = run_shell_loop(names)

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rounds)

    def ratios(key: str) -> str:
        each = sorted(r["us"] / r[key] for r in rounds)
        return f"{statistics.median(each):5.2f}×  ({each[0]:.2f}–{each[-1]:.2f} in {len(each)} rounds)"

    first = rounds[0]
    print(f"sampler start-up to its first frame: {first['first_ms']:7.1f} ms CPU (sh + python3 + the script)")
    print(f"frame: {first['bytes']:.0f} bytes ({first['cpus']} CPUs, {first['ifaces']} interfaces), "
          f"one every {first['period_s'] * 1e3:.1f} ms")
    print(f"{ROUNDS} rounds, each: the sampler and a paced floor at the same time, then the tight floors "
          f"(medians; a round's figures swing by ±10 % here, its ratios less)")
    print(f"netui sampler (python3 -c, no forks):    {med('us'):7.0f} µs CPU per sample "
          f"(frames {WARM_FRAMES}→{WARM_FRAMES + FRAMES}: {', '.join('%.0f' % r['us'] for r in rounds)})")
    print(f"  with its per-CPU tables (--detail):    {detailed['us']:7.0f} µs CPU per sample, "
          f"{detailed['bytes']:.0f} bytes per frame (one run)")
    print(f"floor: open/read/close, tight loop:      {med('open'):7.0f} µs CPU per pass ({FLOOR_PASSES} a round)")
    print(f"floor: pread of files kept open:         {med('pread'):7.0f} µs CPU per pass")
    print(f"floor: pread, paced every {INTERVAL_S * 1e3:.0f} ms:          {med('paced'):7.0f} µs CPU per pass "
          f"(beside the sampler: wake-up, cold caches)")
    print(f"floor: open/read/close, paced the same:  {med('paced_open'):7.0f} µs CPU per pass (beside the sampler too)")
    print(f"the sampler's frame() in a tight loop:   {frame_loop:7.0f} µs CPU per call (its Python work, hot caches)")
    print(f"shell loop: cat + sleep (2 forks):       {shell['us']:7.0f} µs CPU per sample incl. children, "
          f"{shell['bytes']:.0f} bytes per sample")
    print(f"ratio sampler / floor (open/read/close): {ratios('open')}  target ≤ 1.5×")
    print(f"ratio sampler / floor (pread):           {ratios('pread')}")
    print(f"ratio sampler / floor (pread, paced):    {ratios('paced')}")
    print(f"ratio sampler / floor (open/read/close, paced): {ratios('paced_open')}")
    print(f"ratio shell loop / sampler:              {shell['us'] / med('us'):7.2f}×")
    no_peers = [r["no_peers"] for r in rounds]
    print(f"  without its TCP peers (--max-peers 0): {statistics.median(x['us'] for x in no_peers):7.0f} µs CPU per sample "
          f"({', '.join('%.0f' % x['us'] for x in no_peers)}); the sampler above read its peers "
          f"{statistics.median(r['readings'] for r in rounds):.0f} times in {FRAMES} frames, "
          f"{statistics.median(r['sockets'] for r in rounds):.0f} sockets")
    with_socks = [r["sockets_run"] for r in rounds]
    read_socks = [r["sockets_read"] for r in rounds]
    print(f"with {SOCKETS} open TCP sockets (loopback), right after the sampler without them in each round:")
    print(f"  as a node runs it (the kernel drops loopback peers): {statistics.median(x['us'] for x in with_socks):7.0f} µs "
          f"CPU per sample ({', '.join('%.0f' % x['us'] for x in with_socks)}); "
          f"{statistics.median(x['readings'] for x in with_socks):.0f} peer readings in {FRAMES} frames")
    print(f"  every socket read as a peer (--peer-loopback):      {statistics.median(x['us'] for x in read_socks):7.0f} µs "
          f"CPU per sample ({', '.join('%.0f' % x['us'] for x in read_socks)}); "
          f"{statistics.median(x['readings'] for x in read_socks):.0f} peer readings in {FRAMES} frames, "
          f"{statistics.median(x['sockets'] for x in read_socks):.0f} sockets each")

    def side(key: str, base: str = "us", invert: bool = False) -> str:
        each = sorted((r[base] / r[key]["us"]) if invert else (r[key]["us"] / r[base]) for r in rounds)
        return f"{statistics.median(each):5.2f}×  ({each[0]:.2f}–{each[-1]:.2f} in {len(each)} rounds)"

    print(f"ratio sampler / the same without peers (same round): {side('no_peers', 'us', invert=True)}")
    print(f"ratio with {SOCKETS} sockets / without (same round):    {side('sockets_run')}")
    print(f"ratio with {SOCKETS} sockets read / without:            {side('sockets_read')}")
    print(f"ratio with {SOCKETS} sockets / floor (open/read/close): {side('sockets_run', 'open')}  target ≤ 1.5×")
    print(f"ratio with {SOCKETS} sockets read / floor (open/read/close): {side('sockets_read', 'open')}")
    print(f"load {os.getloadavg()[0]:.2f} at the end")


class MeshPeers:
    """``count`` UDP sockets on 127.0.0.1 playing the other nodes of a fleet for one sampler:
    each answers the sampler's probes as a sampler does (the same packet, ``NUa1``), and they
    probe it in turn, ``rate`` probes a second in all (what it receives when every node probes
    at ``rate``), with ``token``. A thread of this process; ``close`` ends it and the sockets."""

    def __init__(self, count: int, token: bytes, rate: float = MESH_RATE) -> None:
        self.token, self.rate = token, rate
        self.socks: list[socket.socket] = []
        self.target: tuple[str, int] | None = None  # the sampler's port, once its frame says it
        self.answered = self.probed = self.received = 0
        self.done = threading.Event()
        self.selector = selectors.DefaultSelector()
        try:
            for _ in range(count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self.socks.append(sock)
                sock.bind(("127.0.0.1", 0))
                sock.setblocking(False)
                self.selector.register(sock, selectors.EVENT_READ)
        except BaseException:
            self.close()
            raise
        self.thread = threading.Thread(target=self._run, daemon=True)

    def lines(self) -> list[str]:
        """The ``mp+`` lines that give the sampler these peers."""
        return peer_lines(("127.0.0.1", s.getsockname()[1]) for s in self.socks)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        due, turn = time.monotonic(), 0
        deadline = time.monotonic() + 600  # bounded, whatever happens to the caller
        while not self.done.is_set() and time.monotonic() < deadline:
            for key, _ in self.selector.select(timeout=max(0.0, min(0.05, due - time.monotonic()))):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                for _ in range(64):
                    try:
                        data, source = sock.recvfrom(64)
                    except OSError:
                        break
                    self.received += 1
                    if len(data) == MESH_PACKET.size and data[:4] == MESH_QUERY:
                        _, token, seq, sent_ns = MESH_PACKET.unpack(data)
                        sock.sendto(MESH_PACKET.pack(MESH_ANSWER, token, seq, sent_ns), source)
                        self.answered += 1
            now = time.monotonic()
            if self.target is not None and now >= due:
                sock = self.socks[turn % len(self.socks)]
                turn += 1
                try:
                    sock.sendto(MESH_PACKET.pack(MESH_QUERY, self.token, turn, time.monotonic_ns()), self.target)
                    self.probed += 1
                except OSError:
                    pass
                due = max(due + 1.0 / self.rate, now - 1.0)

    def close(self) -> None:
        self.done.set()
        if self.thread.ident is not None:
            self.thread.join(timeout=5)
        self.selector.close()
        for sock in self.socks:
            sock.close()


def run_mesh_sampler(peers: MeshPeers | None, results: dict, key: str) -> None:
    """A sampler at the default 1 s interval, mesh off (``peers`` None) or on with ``peers``:
    its CPU per second over MESH_FRAMES frames after MESH_WARM (into ``results[key]``)."""
    proc = subprocess.Popen(["sh", "-c", sampler_command(1.0)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=NODE_ENV)
    watchdog = threading.Timer(60 + (MESH_WARM + MESH_FRAMES) * 3, proc.kill)
    watchdog.start()
    try:
        if peers is not None:
            lines = [f"m {peers.token.hex()} {MESH_RATE:g} {MESH_PERIOD_S:g}"] + peers.lines()
            proc.stdin.write(("\n".join(lines) + "\n").encode())
            proc.stdin.flush()
        decode = FrameDecoder().decode
        cpu0 = t0 = 0.0
        answered = lost = 0
        answers0 = 0
        for i in range(MESH_WARM + MESH_FRAMES + 1):
            header = proc.stdout.readline()
            if not header:
                raise RuntimeError(f"sampler ended: {proc.stderr.read().decode(errors='replace')[-400:]}")
            sample = decode(proc.stdout.read(frame_length(header)))
            mesh = sample.mesh
            if peers is not None and mesh is not None and mesh.port and peers.target is None:
                peers.target = ("127.0.0.1", mesh.port)
                peers.start()
            if i == MESH_WARM:
                cpu0, t0 = process_cpu_s(proc.pid), time.monotonic()
                answers0 = mesh.answers if mesh is not None else 0
            elif i > MESH_WARM and mesh is not None:
                answered += sum(r.answered for r in mesh.readings)
                lost += sum(r.lost for r in mesh.readings)
        cpu1, t1 = process_cpu_s(proc.pid), time.monotonic()
        results[key] = {"cpu_per_s": (cpu1 - cpu0) / (t1 - t0), "seconds": t1 - t0, "answered": answered,
                        "lost": lost, "answers": (mesh.answers - answers0) if mesh is not None else 0,
                        "peers": mesh.peers if mesh is not None else 0,
                        "refused": mesh.refused if mesh is not None else 0}
    except BaseException as exc:  # noqa: BLE001 — reported by the caller, after both samplers end
        results[key] = exc
    finally:
        watchdog.cancel()
        proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def run_mesh_round() -> dict:
    """The sampler with the mesh off and with it on (MESH_PEERS - 1 peers), at the same time."""
    peers = MeshPeers(MESH_PEERS - 1, os.urandom(16))
    results: dict = {}
    try:
        threads = [threading.Thread(target=run_mesh_sampler, args=(None, results, "off")),
                   threading.Thread(target=run_mesh_sampler, args=(peers, results, "on"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=(MESH_WARM + MESH_FRAMES) * 3 + 120)
    finally:
        peers.close()
    for key in ("off", "on"):
        if isinstance(results.get(key), BaseException) or key not in results:
            raise RuntimeError(f"the sampler with the mesh {key} failed: {results.get(key)!r}")
    results["bench_answered"], results["bench_probed"] = peers.answered, peers.probed
    return results


def mesh_main() -> None:
    print(f"probe mesh: {MESH_ROUNDS} rounds of {MESH_FRAMES} s, each: a sampler with the mesh off and one with it on "
          f"({MESH_RATE:g} probes/s, each peer at most every {MESH_PERIOD_S:g} s), given {MESH_PEERS - 1} peers "
          f"(UDP sockets on 127.0.0.1 that answer and probe it as a {MESH_PEERS}-node fleet does), at the same time; "
          f"load {os.getloadavg()[0]:.2f}")
    rounds = [run_mesh_round() for _ in range(MESH_ROUNDS)]
    for r in rounds:
        on, off = r["on"], r["off"]
        print(f"  round: off {off['cpu_per_s'] * 1e3:6.2f} ms CPU/s, on {on['cpu_per_s'] * 1e3:6.2f} ms CPU/s "
              f"({on['cpu_per_s'] / off['cpu_per_s']:.2f}×); on: {on['peers']} peers, its probes "
              f"{on['answered']} answered / {on['lost']} lost, {on['answers']} probes answered, "
              f"{on['refused']} refused, in {on['seconds']:.0f} s")
    each = sorted(r["on"]["cpu_per_s"] / r["off"]["cpu_per_s"] for r in rounds)
    extra = sorted((r["on"]["cpu_per_s"] - r["off"]["cpu_per_s"]) * 1e3 for r in rounds)
    print(f"mesh off:  {statistics.median(r['off']['cpu_per_s'] for r in rounds) * 1e3:6.2f} ms CPU per second "
          f"(median of {MESH_ROUNDS} rounds)")
    print(f"mesh on:   {statistics.median(r['on']['cpu_per_s'] for r in rounds) * 1e3:6.2f} ms CPU per second")
    print(f"ratio on / off (same round): {statistics.median(each):5.2f}×  ({each[0]:.2f}–{each[-1]:.2f}); "
          f"the mesh's own: {statistics.median(extra):+.2f} ms CPU per second ({extra[0]:+.2f} to {extra[-1]:+.2f}), "
          f"{statistics.median(extra) / 10:.3f} % of one CPU; load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--mesh-only", action="store_true", help="only the probe mesh's cost, on beside off")
    if parser.parse_args().mesh_only:
        mesh_main()
    else:
        main()
        mesh_main()
