"""Benchmark: the monitor's CPU and memory watching 64 to 2,048 nodes over SSH at 1 Hz.

Run: python -m tests.bench.bench_fleet [--nodes 64,256,1024] [--seconds 20] [--ui/--no-ui]
The fleet is a fake (tests/bench/fake_fleet.py): one asyncssh server in a separate process
on 127.0.0.1, one SSH connection per node, each named by its own ``Host nodeNNNN`` block
of a generated ssh_config; every session streams the sampler's frames of a 128-CPU,
16-interface node once per second. Each (fleet size, variant) runs in a fresh process so
CPU time and RSS are its own:

- floor:   netui's SshConnector and the same frame reads as SshSource, frames discarded
           (SSH transport only: no decode, no rates, no UI);
- engine:  the real SshSource + Monitor (SSH + parse + rates + health + history + ticks);
- engine+UI: the same under the Textual app, headless (``make_app(monitor).run_test``);
- floor-stream, engine-stream (``--stream``): the same with the reads SshSource did before
  SamplerSession (the process's stdout stream, readuntil + readexactly in the node's task).

Every run is on the event loop netui picks (netui/engine/eventloop.py: uvloop where it is
installed, or what NETUI_EVENT_LOOP says); the loop that ran is printed with its figures.
``--variants`` picks and orders them, each optionally with changes to try: ``+asyncio`` (the
stock asyncio loop instead, measured only), ``+eager-keepalive`` (asyncssh's own keepalive
timer), ``+chacha20`` (that cipher first), ``+asyncssh-stock`` (without netui's two asyncssh
shims: a key schedule per AES-GCM packet, each packet described for the log), ``+detail``
(every node sends its per-CPU tables, as while recording, not only their sums), ``+gcm-shared``
(one process-wide cache of AES-GCM key schedules instead of each connection's own), ``+mesh``
(the probe mesh on at the default rate: the fake nodes' frames carry its readings; its own
cost, the "mesh" field's decoding, the fleet's window and judgement and the peers' steering,
is printed on a line of its own, and the longest judgement and the pairs whose figures the
last verdict kept on another; ``floor+mesh``: the floor's sessions turn each fake node's mesh on
themselves with the fleet's other nodes as its peers, so it reads the same frames), ``+peers`` (every fake node's frames carry its TCP peers, the
"peers" field as the sampler packs it, of a data-parallel training job: 4 sockets to each of
its two ring all-reduce neighbours among the fleet, its SSH session, the job's store and its
storage, each node at its own address in 198.18.0.0/15, counters growing every frame
(tests/bench/fake_peers.py; the child connects node I of N as SSH user ``peers-I-N``, which
tells the fake node who it is); their own cost, the field's decoding, each node's flow rates
and the flows between watched nodes that a tick makes when it found someone slow, address
book included, is printed on a line of its own, and what the monitor made of them at the end
on another: nodes with flow rates, peer flows mapped to fleet nodes, the time to make the
fleet's flows once), e.g. ``--variants engine,engine+asyncio,engine``,
``--variants engine,engine+mesh`` or ``--variants floor,engine,floor+peers,engine+peers``.
The fake fleet sends one SSH packet per frame, as OpenSSH's sshd does (``--asyncssh-ignore``: with
asyncssh's IGNORE packet before each); ``--filler-bytes N`` sends frames of N filler bytes
(the floor's cost by frame size).

Prints, side by side: time from start until every node is up, node-samples/s in the
window, monitor CPU µs per node-sample (process time, all threads, all included), % of one
core, RSS, the event loop's lag (how late a 50 ms timer fires: p50/p99/max), the fake
fleet's own CPU (per node-sample and % of one core: when it nears a whole core, the fake, not
the monitor, is what runs late), and the share of the engine above the floor; under the UI,
the CPU of its own handlers (a tick's ``refresh_data`` and Textual's repaints), which the
process figures, noisy on a shared machine, cannot separate from the engine's, and the grid's
tick: the CPU of one tick's refresh plus the repaints until the next tick, mean and max
(target ≤ 50 ms).

Whether every node's sample is read within its interval (tests/bench/arrivals.py): each
fake node stamps a frame's ``wall`` field with its clock as it sends it; the monitor notes
when each whole frame arrives (before decoding it; the floor too). The engine then takes
what it read at its next tick (engine/monitor.py ``queue_frame``): the tick that shows it. The delay of a frame is
the monitor's wall clock at arrival minus that stamp (the same clock: one machine). Judged
are the node-samples sent in the window's first ``window − 1 interval`` (by the window's end
each has had its interval to arrive): on time when observed at most one interval after it was
sent; late when observed later, or never — each node's schedule (one send per interval,
placed by its first observation) says which were due, so a sender held back (TCP full, the
fake's own CPU) shows as samples never observed; a node never observed has all its samples
late. Late share = 1 − on time / due. Also printed: the delay (p50/p99/max), how many of the
sender's stamps were > 1.5 intervals apart (the fake's schedule slipped), and "lag growing:
yes" when the mean delay of the window's second half exceeds the first's by more than a
tenth of an interval (a backlog building; the loop lag's p99 per half is shown beside). After each fleet size, the ratios to the floor: engine / floor
(target ≤ 1.6×) and all included (ui) / floor (target ≤ 2.0×), the same for each variant run
with a feature on (``+mesh``, ``+peers``: against ``floor+mesh``, ``floor+peers`` where it ran), and the RSS
with 15 min of history (the rings not yet allocated added; target ≤ 600 MB at 2,048 nodes).
``--instructions`` runs each child
under callgrind, instrumented during the window only, and adds instructions per node-sample
(user space; steady when the machine is busy, but ~50× slower: use fleets of ~8 nodes).
Targets: at 1,024 nodes, engine ≤ 1.6× the floor and all included ≤ 2.0×; at
2,048 nodes, no growing lag and RSS ≤ 600 MB with 15 minutes of history.
Traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from tests.bench.arrivals import LATE_GAP, arrival_figures
from tests.bench.fake_fleet import node_name, raise_open_files_limit, write_client_files, write_keys
from tests.bench.fake_peers import peers_user
from tests.bench.fleet_probes import (
    PARTS,
    PEER_PARTS,
    ArrivalLog,
    JudgementLog,
    UiTimes,
    discard_source_class,
    logged,
    loop_lag,
    stream_source_class,
    peers_seen,
    time_mesh,
    time_parts,
    time_peers,
)

UP_TIMEOUT_S = 300.0
CLOSE_S = 30.0
SETTLE_S = 3.0  # after all are up: every node has rates and all its history rings
FANOUT = 64
HISTORY_S = 900.0
INTERVAL_S = 1.0
# issue 29's targets
ENGINE_RATIO_TARGET = 1.6  # CPU per node-sample, × the floor's
UI_RATIO_TARGET = 2.0
GRID_TICK_TARGET_MS = 50.0  # CPU of one tick's refresh and repaints under the UI
RSS_TARGET_MB = {1024: 300, 2048: 600}
NIFACE = 16
VARIANTS = ("floor-stream", "floor", "engine-stream", "engine", "ui-stream", "ui")
LABELS = {"floor": "floor (SSH, frames discarded)", "engine": "engine (SSH+parse+rates)",
          "ui": "engine + Textual UI", "floor-stream": "floor, stream reads (before)",
          "engine-stream": "engine, stream reads (before)", "ui-stream": "engine + UI, stream reads (before)"}
# a variant may name changes to try after a "+": floor+asyncio, engine+eager-keepalive+chacha20
MODIFIERS = {
    "eager-keepalive": "asyncssh's keepalive timer, restarted on every read (before lazy_keepalive)",
    "asyncio": "the stock asyncio event loop instead of netui's (uvloop where installed): measured only",
    "chacha20": "chacha20-poly1305 offered first (asyncssh's default order)",
    "asyncssh-stock": "asyncssh as shipped: a key schedule per AES-GCM packet, every packet described for "
                      "its log (no keep_gcm_keys, no quiet_packet_log)",
    "detail": "every node sends its per-CPU tables too (as while recording), not only their sums",
    "mesh": "the probe mesh on at the default rate (--mesh on): every node's frames carry what its probes of "
            "the others settled, as a real node's at 10 probes/s (tests/bench/fake_fleet.py FakeMesh)",
    "peers": "every node's frames carry its TCP peers as the sampler packs them (the \"peers\" field): a "
             "data-parallel job's ring all-reduce to its two neighbours among the fleet, its SSH session, the "
             "job's store and its storage, counters growing every frame (tests/bench/fake_peers.py); their own "
             "cost (decode, flow rates, the flows between nodes) is printed on a line of its own",
    "parts": "times the engine's parts (decode, rates, summary, health, the rest of observe, ticks) with "
             "perf_counter around each (adds ~1 µs per node-sample)",
    "gcm-shared": "one process-wide lru_cache of AESGCM per key, shared by all connections (the cache "
                  "before each connection's ciphers held their own)",
}


def _split_variant(variant: str) -> tuple[str, list[str]]:
    base, *mods = variant.split("+")
    if base not in VARIANTS or any(m not in MODIFIERS for m in mods):
        raise argparse.ArgumentTypeError(f"unknown variant {variant!r}: {', '.join(VARIANTS)} "
                                         f"with +{', +'.join(MODIFIERS)}")
    if base.endswith("-stream") and "mesh" in mods:  # (its floor would not turn the fake nodes' mesh on)
        raise argparse.ArgumentTypeError(f"{variant!r}: the stream variants run without the probe mesh")
    return base, mods


def _label(variant: str) -> str:
    base, mods = _split_variant(variant)
    return LABELS[base] + "".join(f" +{m}" for m in mods)


# the child: one fleet size, one variant ------------------------------------------------------
def _p99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def _child(args) -> None:
    from netui.collectors.ssh import SshSource
    from netui.collectors.ssh_connect import SshConnector, SshSettings
    from netui.engine.monitor import Monitor

    raise_open_files_limit()
    me = psutil.Process()
    server = psutil.Process(args.server_pid)
    rss_base = me.memory_info().rss
    names = [node_name(i) for i in range(args.nodes)]
    base, mods = _split_variant(args.variant)
    if "asyncssh-stock" in mods:  # (before the connector applies them)
        SshConnector.keep_gcm_keys = SshConnector.quiet_packet_log = False
    if "gcm-shared" in mods:
        from functools import lru_cache

        from asyncssh.crypto import cipher

        SshConnector.keep_gcm_keys = False
        cipher.AESGCM = lru_cache(maxsize=8192)(cipher.AESGCM)
    connector = SshConnector(SshSettings(config_paths=[args.config], fanout=FANOUT))
    arrivals = ArrivalLog()
    if base.endswith("-stream"):
        cls = stream_source_class(base.startswith("floor"), arrivals)
    else:
        cls = logged(discard_source_class(args.nodes - 1 if "mesh" in mods else 0) if base == "floor" else SshSource,
                     arrivals)
    if "eager-keepalive" in mods:
        connector.lazy_keepalive = False
    if "chacha20" in mods:
        from netui.collectors import ssh_connect as ssh
        ssh.PREFERRED_CIPHERS = ("chacha20-poly1305@openssh.com",
                                 *(c for c in ssh.PREFERRED_CIPHERS if not c.startswith("chacha20")))
    if "peers" in mods:  # the user name tells the fake node who it is: it sends its peers
        sources = [cls(n, n, connector, user=peers_user(i, args.nodes)) for i, n in enumerate(names)]
    else:
        sources = [cls(n, n, connector) for n in names]
    peers_s = time_peers() if "peers" in mods and not base.startswith("floor") else None
    judged = JudgementLog() if not base.startswith("floor") else None
    parts_s = time_parts() if "parts" in mods else None
    mesh_s = [0.0, 0.0, 0.0, 0.0]
    mesh = "mesh" in mods and not base.startswith("floor")  # (the floor's sources turn it on themselves)
    if mesh:
        from netui.engine.mesh import MeshSettings

        mesh_s = time_mesh()
    monitor = Monitor(sources, interval_s=INTERVAL_S, history_s=HISTORY_S, connector=connector,
                      mesh=MeshSettings() if mesh else None)
    if "detail" in mods:
        monitor.set_detail_all(True)
    fleet = monitor.fleet

    if args.variant.startswith("floor"):
        def samples() -> int:
            return sum(s.frames_total for s in sources)

        def up() -> int:
            return sum(1 for s in sources if s.frames_total)
    else:
        def samples() -> int:
            return sum(n.samples_seen for n in fleet)

        def up() -> int:  # came up: delivered a sample (a saturated monitor may show some stale later)
            return sum(1 for n in fleet if n.samples_seen)

    from netui.engine.eventloop import running

    result: dict = {"nodes": args.nodes, "variant": args.variant, "event_loop": running()}
    ui = UiTimes()

    async def measure(started: float) -> None:
        deadline = started + args.up_timeout
        while up() < args.nodes and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        result["up_s"] = time.monotonic() - started
        result["up"] = up()
        if result["up"] < args.nodes:  # measure anyway, flagged: the nodes up are the fleet
            result["error"] = f"only {result['up']} of {args.nodes} nodes up after {args.up_timeout:.0f} s"
            result["states"] = {s.value: c for s, c in fleet.count_by_state().items()}
            result["errors"] = sorted({n.error for n in fleet if n.error})[:5]
            if not result["up"]:
                return
        if not args.variant.startswith("floor"):
            # each node's one LLDP read per connection (engine/lldp.py) is set-up, like the
            # handshake: done before the window, not spread into it
            lldp_deadline = time.monotonic() + args.up_timeout
            while (any(n.lldp_state == "not read" for n in fleet) or monitor.lldp.pending()) \
                    and time.monotonic() < lldp_deadline:
                await asyncio.sleep(0.1)
        await asyncio.sleep(SETTLE_S)
        if mesh:  # the mesh's window full, as after a minute of a session
            from netui.model.mesh import WINDOW_S

            await asyncio.sleep(WINDOW_S)
        gc.collect()
        # the frames the collection held up are read before the window opens: counted in it,
        # their nodes' next frames too would make more node-samples than the window holds
        await asyncio.sleep(INTERVAL_S / 2)
        lags: list[float] = []
        stop = asyncio.Event()
        lag_task = asyncio.ensure_future(loop_lag(lags, stop))
        profiler = None
        if args.profile:
            import cProfile
            profiler = cProfile.Profile()
        gc_s = [0.0, 0.0, 0.0]
        gc_runs = [0, 0, 0]
        gc_started = [0.0]

        def gc_timer(phase: str, info: dict) -> None:
            if phase == "start":
                gc_started[0] = time.process_time()
            else:
                gc_s[info["generation"]] += time.process_time() - gc_started[0]
                gc_runs[info["generation"]] += 1

        tick_s: list[float] = []
        told = monitor.on_update  # the UI's, when there is one
        mesh_s[4:] = [0.0, 0.0]  # the longest judgement in the window
        ui0, ui_ticks0, mesh0 = list(ui.totals), len(ui.ticks), list(mesh_s)
        parts0 = list(parts_s) if parts_s is not None else None
        peers0 = list(peers_s) if peers_s is not None else None

        def on_update() -> None:
            tick_s.append(monitor.last_tick_s or 0.0)
            if told is not None:
                told()

        monitor.on_update = on_update
        if args.instructions:  # the window only: the loop runs while callgrind_control waits
            await asyncio.to_thread(_callgrind_instrument, "on")
        s0, srv0, ticks0 = samples(), server.cpu_times(), monitor.ticks
        w0, c0, t0 = time.monotonic(), time.process_time(), me.cpu_times()
        arrivals.on = True
        if judged is not None:
            judged.on = True
        gc.callbacks.append(gc_timer)
        if profiler:
            profiler.enable()
        await asyncio.sleep(args.seconds)
        if profiler:
            profiler.disable()
        gc.callbacks.remove(gc_timer)
        c1, w1, t1 = time.process_time(), time.monotonic(), me.cpu_times()
        arrivals.on = False
        if judged is not None:
            judged.on = False
            result.update(judged.figures())
        s1, srv1, ticks1 = samples(), server.cpu_times(), monitor.ticks
        if args.instructions:
            await asyncio.to_thread(_callgrind_instrument, "off")
        monitor.on_update = told
        if base.startswith("ui"):
            per_tick = [refresh + paint for refresh, paint in ui.ticks[ui_ticks0:len(ui.ticks) - 1]]  # the last: not all painted
            result.update(ui_tick_s=ui.totals[0] - ui0[0], ui_paint_s=ui.totals[1] - ui0[1],
                          ui_per_tick_ms_mean=sum(per_tick) / len(per_tick) * 1e3 if per_tick else None,
                          ui_per_tick_ms_max=max(per_tick) * 1e3 if per_tick else None, ui_ticks=len(per_tick))
        if parts_s is not None:
            result["parts_s"] = [b - a for a, b in zip(parts0, parts_s)]
        if peers_s is not None:
            result["peers_s"] = [b - a for a, b in zip(peers0, peers_s)]
            result.update(peers_seen(fleet))
        if mesh:
            window = fleet.mesh
            result.update(mesh_s=[b - a for a, b in zip(mesh0[:4], mesh_s[:4])],
                          mesh_judge_max_ms=[x * 1e3 for x in mesh_s[4:]],
                          mesh_pairs=window.pair_count if window is not None else 0,
                          mesh_kept=len(fleet.mesh_verdict.pairs) if fleet.mesh_verdict is not None else 0,
                          mesh_suspects=[x.name for x in fleet.mesh_suspects])
        stop.set()
        await lag_task
        halves = (sorted(lags[:len(lags) // 2]), sorted(lags[len(lags) // 2:]))
        lags.sort()
        seen = arrival_figures(arrivals.by_node, args.nodes, w0, w1, INTERVAL_S)
        result["arrivals"] = dataclasses.asdict(seen) | {"late_share": seen.late_share,
                                                          "growing": seen.growing(INTERVAL_S)}
        result["lag_p99_halves_ms"] = [_p99(h) * 1e3 if h else None for h in halves]
        rings = sum(len(n.history) + 2 * len(n.iface_history) for n in fleet)
        capacity = next(iter(fleet)).history["rx_bytes_per_s"].capacity
        result.update(
            window_s=w1 - w0, cpu_s=c1 - c0, sys_s=t1.system - t0.system, node_samples=s1 - s0, ticks=ticks1 - ticks0,
            server_cpu_s=(srv1.user + srv1.system) - (srv0.user + srv0.system),
            rss=me.memory_info().rss, rss_base=rss_base,
            # and a float64 time per row of the node's two tables
            ring_bytes=(rings * 4 + len(fleet) * 2 * 8) * capacity,
            ring_bytes_full=args.nodes * ((len(next(iter(fleet)).history) + 2 * NIFACE) * 4 + 2 * 8) * capacity,
            up_end=up(), lag_p50_ms=lags[len(lags) // 2] * 1e3 if lags else None,
            lag_p99_ms=_p99(lags) * 1e3 if lags else None,
            lag_max_ms=lags[-1] * 1e3 if lags else None, loadavg=os.getloadavg()[0],
            threads=me.num_threads(), gc_s=gc_s, gc_runs=gc_runs,
            tick_ms_mean=sum(tick_s) / len(tick_s) * 1e3 if tick_s else None,
            tick_ms_max=max(tick_s) * 1e3 if tick_s else None,
        )
        if not args.variant.startswith("floor"):
            result["states_end"] = {s.value: c for s, c in fleet.count_by_state().items()}
        if profiler:
            import io
            import pstats
            text = io.StringIO()
            stats = pstats.Stats(profiler, stream=text)
            stats.sort_stats("tottime").print_stats(args.profile)
            stats.sort_stats("cumulative").print_stats(args.profile)
            result["profile"] = text.getvalue()

    if base.startswith("ui"):
        from netui.ui.app import make_app

        ui.install()
        app = make_app(monitor)  # autostart: the app runs monitor.run() in its worker

        async def session() -> None:
            async with app.run_test(size=(160, 50)):
                await measure(started)
                _report(result)
            # unmounting the app closed the monitor

        started = time.monotonic()
        ending = asyncio.ensure_future(session())
        limit = args.up_timeout + SETTLE_S + args.seconds + CLOSE_S + 60  # a saturated loop runs late
        await asyncio.wait({ending}, timeout=limit)
        if not ending.done():
            _close_hung(monitor, "the app did not exit (its unmount closes the monitor)")
        ending.result()
    else:
        started = time.monotonic()
        task = asyncio.ensure_future(monitor.run())
        try:
            await measure(started)
        finally:
            _report(result)
            # asyncio.wait, not wait_for: a task that ignores cancel() would hang wait_for too
            closing = asyncio.ensure_future(monitor.close())
            await asyncio.wait({closing}, timeout=CLOSE_S)
            if not closing.done():
                _close_hung(monitor, f"monitor.close() did not finish in {CLOSE_S:.0f} s")
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _callgrind_instrument(state: str) -> None:
    """Switch callgrind's instrumentation of this process on or off (--instructions)."""
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120, check=True)


def _report(result: dict) -> None:
    """The figures, printed before closing: a close that hangs does not lose them."""
    print("RESULT " + json.dumps(result), flush=True)


def _close_hung(monitor, what: str) -> None:
    """Say which node tasks ignored cancel(), then leave without waiting for them."""
    running = [t for t in monitor._tasks if not t.done()]
    states: dict[str, int] = {}
    for node in monitor.fleet:
        states[node.state.value] = states.get(node.state.value, 0) + 1
    where = ""
    if running:
        frames = running[0].get_stack(limit=3)
        where = "; one waits in " + " < ".join(f"{f.f_code.co_name}:{f.f_lineno}" for f in frames)
    print(f"CLOSE_HUNG {what}; {len(running)} node tasks still running after cancel(); states {states}; "
          f"monitor stopped: {monitor._stopped}{where}", flush=True)
    os._exit(0)  # the loop's run (asyncio.run, uvloop.run) would wait for those tasks forever


# the parent: the fake fleet, one child per run, the table -----------------------------------
class FleetServer:
    """The fake fleet's process: started, asked its port, always killed."""

    def __init__(self, directory: Path, asyncssh_ignore: bool = False, filler_bytes: int = 0) -> None:
        self.directory = directory
        self.filler_bytes = filler_bytes
        self.asyncssh_ignore = asyncssh_ignore
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def __enter__(self) -> FleetServer:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.fake_fleet", str(self.directory), "--max-seconds", "7200"]
            + (["--asyncssh-ignore"] if self.asyncssh_ignore else [])
            + (["--filler-bytes", str(self.filler_bytes)] if self.filler_bytes else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline()  # the server prints PORT once it listens
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake fleet did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def __exit__(self, *exc) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(timeout=10)


def _run_child(args, server: FleetServer, config: Path, nodes: int, variant: str) -> dict:
    cmd = [sys.executable, "-m", "tests.bench.bench_fleet", "--child", "--server-pid", str(server.proc.pid),
           "--config", str(config), "--nodes", str(nodes), "--variant", variant,
           "--seconds", str(args.seconds), "--up-timeout", str(args.up_timeout)]
    if args.profile and (args.profile_variant == variant):
        cmd += ["--profile", str(args.profile)]
    if args.instructions:
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
               *cmd, "--instructions"]
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}  # the generated key only
    limit = args.up_timeout + SETTLE_S + args.seconds + CLOSE_S + 180  # handshakes, window, close
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=10)
        return {"nodes": nodes, "variant": variant, "error": f"did not finish in {limit:.0f} s (killed)"}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    found: dict = {}
    for line in out.splitlines():
        if line.startswith("RESULT ") and not found:
            found = json.loads(line[len("RESULT "):])
        elif line.startswith("CLOSE_HUNG "):
            found.setdefault("error", "no figures: the run did not reach its window")
            found.update(nodes=nodes, variant=variant, close_hung=line[len("CLOSE_HUNG "):])
    if found and args.instructions:
        collected = [line for line in err.splitlines() if "Collected :" in line]
        if collected:
            found["instructions"] = int(collected[-1].rsplit(":", 1)[1].strip())
    if found:
        return found
    return {"nodes": nodes, "variant": variant, "error": f"exit {proc.returncode}: {err.strip()[-600:]}"}


def _print_result(r: dict, floor: dict | None) -> None:
    label = _label(r["variant"])
    if "error" in r and "cpu_s" not in r:
        print(f"  {label:32s} FAILED: {r['error']}")
        for key in ("states", "errors", "close_hung"):
            if key in r:
                print(f"      {key}: {r[key]}")
        return
    per_s = r["node_samples"] / r["window_s"]
    us = r["cpu_s"] / max(1, r["node_samples"]) * 1e6
    core = r["cpu_s"] / r["window_s"] * 100
    srv_us = r["server_cpu_s"] / max(1, r["node_samples"]) * 1e6
    print(f"  {label:32s} all up in {r['up_s']:6.1f} s | {per_s:7.1f} node-samples/s | "
          f"{us:6.0f} µs CPU per node-sample | {core:5.1f} % of a core | RSS {r['rss'] / 2**20:6.1f} MB "
          f"| loop lag p50/p99/max {r['lag_p50_ms']:.0f}/{r.get('lag_p99_ms', 0):.0f}/{r['lag_max_ms']:.0f} ms "
          f"| server {srv_us:.0f} µs/ns, {r['server_cpu_s'] / r['window_s'] * 100:.0f} % of a core "
          f"| on {r.get('event_loop', '?')}")
    _print_arrivals(r)
    if r.get("instructions") is not None:
        print(f"  {'':32s} {r['instructions'] / max(1, r['node_samples']):,.0f} instructions per node-sample "
              f"(callgrind, the window only)")
    if "judged_ticks" in r:
        named = ", ".join(r["named"]) + (" …" if r["named_count"] > len(r["named"]) else "")
        print(f"  {'':32s} the straggler pass: someone found at {r['found_ticks']} of {r['judged_ticks']} ticks "
              f"({r['found'] / max(1, r['judged_ticks']):.0f} findings a tick, before the hold); named: "
              f"{named or 'nobody'}")
    if "sys_s" in r:
        ticks = ""
        if r.get("tick_ms_mean") is not None and r.get("ticks"):
            per_ns = r["tick_ms_mean"] * 1e3 * r["ticks"] / max(1, r["node_samples"])
            ticks = (f"; engine ticks {r['tick_ms_mean']:.1f} ms mean, {r['tick_ms_max']:.1f} max "
                     f"(= {per_ns:.0f} µs per node-sample, wall)")
        print(f"  {'':32s} of which in the kernel {r['sys_s'] / max(1, r['node_samples']) * 1e6:.0f} µs per node-sample{ticks}")
    if "ui_tick_s" in r:
        tick_us, paint_us = (r[k] / max(1, r["node_samples"]) * 1e6 for k in ("ui_tick_s", "ui_paint_s"))
        print(f"  {'':32s} of which the UI's handlers {tick_us + paint_us:.1f} µs per node-sample "
              f"(a tick's refresh_data {tick_us:.1f}, repaints {paint_us:.1f})")
        if r.get("ui_per_tick_ms_mean") is not None:
            print(f"  {'':32s} the grid's tick (refresh + the repaints until the next tick, CPU): "
                  f"{r['ui_per_tick_ms_mean']:.1f} ms mean, {r['ui_per_tick_ms_max']:.1f} ms max over "
                  f"{r['ui_ticks']} ticks (target ≤ {GRID_TICK_TARGET_MS:.0f} ms)")
    if "mesh_s" in r:
        parts = [x / max(1, r["node_samples"]) * 1e6 for x in r["mesh_s"]]
        print(f"  {'':32s} of which the probe mesh {sum(parts):.1f} µs per node-sample, "
              f"{sum(r['mesh_s']) / r['window_s'] * 100:.2f} % of a core (timed inside: wall, the judgement CPU; "
              f"decode {parts[0]:.1f}, window {parts[1]:.1f}, "
              f"judgement {parts[2]:.1f}, steering {parts[3]:.1f}); {r['mesh_pairs']:,} pairs in the window at the "
              f"end, named: {', '.join(r['mesh_suspects']) or 'nobody'}")
        if "mesh_judge_max_ms" in r:
            cpu, wall = r["mesh_judge_max_ms"]
            print(f"  {'':32s} the longest judgement {cpu:.0f} ms CPU ({wall:.0f} ms wall); the last verdict "
                  f"kept {r['mesh_kept']:,} pairs' own figures")
    if "peers_s" in r:
        *parts, made = r["peers_s"]
        parts = [x / max(1, r["node_samples"]) * 1e6 for x in parts]
        print(f"  {'':32s} of which the peer flows {sum(parts[:3]):.1f} µs per node-sample, "
              f"{sum(r['peers_s'][:3]) / r['window_s'] * 100:.2f} % of a core (wall, timed inside: "
              + ", ".join(f"{name} {x:.1f}" for name, x in zip(PEER_PARTS, parts))
              + f"; the flows made {made:.0f} times)")
        print(f"  {'':32s} at the end: {r['peers_nodes_with_flows']:,} of {r['nodes']:,} nodes with flow rates, "
              f"{r['peers_nodes_mapped']:,} with flows to watched nodes, {r['peers_pairs']:,} peer flows mapped to "
              f"fleet nodes ({r['peers_pairs_rated']:,} with a rate; a ring: 2 a node); the fleet's flows made in "
              f"{r['peers_flows_ms']:.1f} ms (made at every tick, as while someone is slow: "
              f"{r['peers_flows_ms'] * 1e3 / r['nodes']:.1f} µs per node-sample more)")
    if "parts_s" in r:
        parts = [x / max(1, r["node_samples"]) * 1e6 for x in r["parts_s"]]
        print(f"  {'':32s} of which " + ", ".join(f"{name} {x:.1f}" for name, x in zip(PARTS, parts))
              + f" µs per node-sample (wall, timed inside: {sum(parts):.1f}; the rest is the transport and the loop)")
    if r.get("gc_s"):
        gc_us = sum(r["gc_s"]) / max(1, r["node_samples"]) * 1e6
        print(f"  {'':32s} of which cyclic GC {gc_us:.0f} µs per node-sample "
              f"(collections gen0/1/2: {'/'.join(map(str, r['gc_runs']))}, "
              f"{'/'.join(f'{x * 1e3:.0f}' for x in r['gc_s'])} ms)")
    if floor is not None and "cpu_s" in floor and floor["node_samples"]:
        f_us = floor["cpu_s"] / floor["node_samples"] * 1e6
        print(f"  {'':32s} = {floor['variant']} {f_us:.0f} + netui {us - f_us:.0f} µs per node-sample "
              f"({us / f_us:.2f}× the floor)")
    if r.get("up_end", r["nodes"]) < r["nodes"] or r.get("error"):
        print(f"  {'':32s} WARNING: {r.get('up_end')} of {r['nodes']} up at the end; {r.get('states_end')} {r.get('error', '')}")
    if r.get("close_hung"):
        print(f"  {'':32s} CLOSE HUNG: {r['close_hung']}")
    if r.get("profile"):
        print(r["profile"])


def _print_arrivals(r: dict) -> None:
    a = r.get("arrivals")
    if not a or not a["observed"]:
        return
    ms = {k: a[k] * 1e3 for k in ("delay_p50_s", "delay_p99_s", "delay_max_s")}
    first, second = (x * 1e3 if x is not None else float("nan") for x in a["delay_mean_halves_s"])
    lag1, lag2 = (x if x is not None else float("nan") for x in r["lag_p99_halves_ms"])
    print(f"  {'':32s} late: {a['late_share'] * 100:.2f} % of {a['due']:,} node-samples sent in the window's "
          f"first {r['window_s'] - INTERVAL_S:.0f} s (read > 1 interval after sent {a['late_by_delay']:,}, "
          f"never {a['never']:,}; sender's stamps > {LATE_GAP} intervals apart {a['sent_late']:,}) "
          f"| delay sent→read p50/p99/max "
          f"{ms['delay_p50_s']:.0f}/{ms['delay_p99_s']:.0f}/{ms['delay_max_s']:.0f} ms")
    print(f"  {'':32s} lag growing: {'yes' if a['growing'] else 'no'} (mean delay {first:.0f} → {second:.0f} ms, "
          f"loop lag p99 {lag1:.0f} → {lag2:.0f} ms, first → second half of the window)")


def _print_ratios(nodes: int, rounds: list[dict[str, list[dict]]]) -> None:
    """The fleet size's summary: CPU per node-sample as a ratio to the floor's of the same
    round (the median of the rounds, each round's beside it), and RSS. A variant run more
    than once in a round (``--variants floor,engine,ui,floor``: the floor before and after
    the others, as the machine's pace drifts within a round) counts as the mean of its runs."""
    def us(runs: list[dict] | None) -> float | None:
        each = [r["cpu_s"] / r["node_samples"] * 1e6 for r in runs or () if r.get("node_samples")]
        return statistics.fmean(each) if each else None

    def ratio(variant: str, target: float, label: str) -> str | None:
        floor = _floor_of(variant, rounds[0] if rounds else {})
        found = [x / f for runs in rounds if (f := us(runs.get(floor))) and (x := us(runs.get(variant)))]
        if not found:
            return None
        each = f" (rounds {', '.join(f'{x:.2f}×' for x in found)})" if len(found) > 1 else ""
        return f"{label} / {floor} = {statistics.median(found):.2f}×{each} (target ≤ {target}×)"

    # the two of issue 29, then the same with the features it names switched on (its ratios to hold)
    featured = [v for v in (rounds[0] if rounds else {}) if _split_variant(v)[0] in ("engine", "ui")
                and _split_variant(v)[1] and set(_split_variant(v)[1]) <= FEATURES]
    parts = [p for p in (ratio("engine", ENGINE_RATIO_TARGET, "engine"),
                         ratio("ui", UI_RATIO_TARGET, "all included (ui)"),
                         *(ratio(v, ENGINE_RATIO_TARGET if v.startswith("engine") else UI_RATIO_TARGET, v)
                           for v in featured)) if p]
    last = rounds[-1] if rounds else {}
    biggest = (last.get("ui") or last.get("engine") or [None])[0]
    if biggest is not None and "rss" in biggest:
        # the rings are preallocated as each node's tables appear: add what is not yet
        full = biggest["rss"] + max(0, biggest["ring_bytes_full"] - biggest["ring_bytes"])
        target = f"; target ≤ {RSS_TARGET_MB[nodes]} MB" if nodes in RSS_TARGET_MB else ""
        parts.append(f"RSS {full / 2**20:.0f} MB with 15 min of history ({biggest['variant']}{target})")
    if parts:
        print(f"  {nodes} nodes: " + ", ".join(parts))


FEATURES = {"peers", "mesh"}  # modifiers that switch a feature on, not try a change
FLOOR_DATA = {"peers", "mesh"}  # modifiers that change what the fleet sends the floor too


def _floor_of(variant: str, floors) -> str:
    """The floor ``variant`` is measured against, of those run (``floors``): the one that read
    the same frames (``floor+peers`` for ``engine+peers``) where it ran, else the plain one."""
    base, mods = _split_variant(variant)
    plain = "floor-stream" if base.endswith("-stream") else "floor"
    same = "+".join([plain, *(m for m in mods if m in FLOOR_DATA)])
    return same if same in floors else plain


def _parent(args) -> None:
    raise_open_files_limit()
    sizes = [int(n) for n in args.nodes.split(",") if n]
    wanted = {"floor": args.floor, "engine": args.engine, "ui": args.ui,
              "floor-stream": args.floor and args.stream, "engine-stream": args.engine and args.stream,
              "ui-stream": args.ui and args.stream}
    variants = args.variants.split(",") if args.variants else [v for v in VARIANTS if wanted[v]]
    for v in variants:
        _split_variant(v)
    print(f"fake fleet: 128-CPU, 16-interface nodes, 1 frame/s each; ssh_config {args.config_style}"
          f"{', Ciphers ' + args.ciphers if args.ciphers else ''}; "
          f"server {'asyncssh (IGNORE before every packet)' if args.asyncssh_ignore else 'one packet per frame'}; "
          f"fanout {FANOUT}; window {args.seconds:.0f} s; "
          f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f} at start")
    from netui.engine.eventloop import describe

    print(f"netui's event loop: {describe()} (+asyncio: the stock loop)")
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="netui-fleet-") as tmp:
        directory = Path(tmp)
        write_keys(directory)
        with FleetServer(directory, args.asyncssh_ignore, args.filler_bytes) as server:
            for nodes in sizes:
                config = write_client_files(directory, nodes, server.port, per_host=args.config_style == "per-host",
                                            ciphers=args.ciphers)
                print(f"\n{nodes} nodes:")
                rounds: list[dict[str, list[dict]]] = []  # per round, each variant's runs
                for _ in range(args.rounds):
                    floors: dict[str, dict] = {}
                    runs: dict[str, list[dict]] = {}
                    for variant in variants:
                        r = _run_child(args, server, config, nodes, variant)
                        results.append(r)
                        _print_result(r, None if variant.startswith("floor")
                                      else floors.get(_floor_of(variant, floors)))
                        if variant.startswith("floor") and set(_split_variant(variant)[1]) <= FLOOR_DATA:
                            floors[variant] = r
                        runs.setdefault(variant, []).append(r)
                        sys.stdout.flush()
                        time.sleep(2)  # the server's sessions of this run end
                    rounds.append(runs)
                _print_ratios(nodes, rounds)
    print(f"\nload {os.getloadavg()[0]:.2f} at the end")
    _print_memory(results)


def _print_memory(results: list[dict]) -> None:
    engine = [r for r in results if r["variant"] == "engine" and "rss" in r]
    if not engine:
        return
    r = max(engine, key=lambda r: r["nodes"])
    allocated, full = r["ring_bytes"], r["ring_bytes_full"]
    print(f"history rings ({HISTORY_S:.0f} s at 1 Hz) are preallocated when created: "
          f"{allocated / 2**20:.1f} of {full / 2**20:.1f} MB already allocated at {r['nodes']} nodes")
    per_node = (r["rss"] - r["rss_base"] + max(0, full - allocated)) / r["nodes"]
    at_1024 = r["rss_base"] + per_node * 1024
    how = "measured" if r["nodes"] == 1024 else f"extrapolated from {r['nodes']} nodes"
    print(f"RSS with 15 min of history at 1,024 nodes: {at_1024 / 2**20:.0f} MB ({how}: "
          f"{r['rss_base'] / 2**20:.0f} MB after imports + {per_node / 1024:.0f} KB per node; target ≤ 300 MB)")


def main() -> None:
    import textwrap

    modifiers = "\n".join(textwrap.fill(f"+{name}: {what}", 100, initial_indent="  ", subsequent_indent="      ")
                          for name, what in MODIFIERS.items())
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=f"a variant's modifiers (--variants floor,engine,engine+peers):\n{modifiers}")
    p.add_argument("--nodes", default="64,256,1024", help="fleet sizes, comma-separated")
    p.add_argument("--seconds", type=float, default=20.0, help="measurement window per run")
    p.add_argument("--rounds", type=int, default=1,
                   help="run the variants this many times in turn (each round against its own floor; a variant "
                        "named twice, as floor,engine,ui,floor, counts as the mean of its runs); the "
                        "summary gives the median ratio and each round's")
    p.add_argument("--ui", action=argparse.BooleanOptionalAction, default=True, help="also run under the Textual UI")
    p.add_argument("--floor", action=argparse.BooleanOptionalAction, default=True, help="also run the SSH-only floor")
    p.add_argument("--engine", action=argparse.BooleanOptionalAction, default=True, help="run the engine alone")
    p.add_argument("--stream", action=argparse.BooleanOptionalAction, default=False,
                   help="also run floor and engine with the stream reads SshSource used before SamplerSession")
    p.add_argument("--config-style", choices=("per-host", "wildcard"), default="per-host",
                   help="ssh_config with a Host block per node (default) or one 'Host node*' block")
    p.add_argument("--ciphers", default=None, help="a Ciphers line for the ssh_config (default: asyncssh's order)")
    p.add_argument("--asyncssh-ignore", action="store_true",
                   help="the fake fleet sends asyncssh's SSH_MSG_IGNORE before every packet (default: "
                        "one packet per frame, as OpenSSH's sshd)")
    p.add_argument("--filler-bytes", type=int, default=0, metavar="N",
                   help="the fleet sends frames of N filler bytes (the floor's cost by frame size; "
                        "the engine variants cannot decode them)")
    p.add_argument("--up-timeout", type=float, default=UP_TIMEOUT_S, help="give up when not all up by then")
    p.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile the window, print the top N")
    p.add_argument("--profile-variant", default="engine")
    p.add_argument("--instructions", action="store_true",
                   help="run each child under callgrind, instrumented in the window only, and print "
                        "instructions per node-sample (steady on a busy machine; ~50× slower: small fleets)")
    p.add_argument("--variants", default=None, metavar="LIST",
                   help="run these, in this order (instead of --floor/--engine/--ui/--stream): "
                        f"{', '.join(VARIANTS)}, each optionally with +{', +'.join(MODIFIERS)}")
    # internal: one run in a child process
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    p.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    for v in (args.variants or "").split(","):
        if v:
            try:
                _split_variant(v)
            except argparse.ArgumentTypeError as exc:
                p.error(str(exc))  # (a usage line and exit 2, not a traceback)
    if args.child:
        args.nodes = int(args.nodes)
        if "asyncio" in _split_variant(args.variant)[1]:
            asyncio.run(_child(args))  # the stock loop, whatever netui would pick
        else:
            from netui.engine import eventloop

            eventloop.run(_child(args))  # netui's loop, as `netui` runs
    else:
        _parent(args)


if __name__ == "__main__":
    main()
