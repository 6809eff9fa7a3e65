"""What bench_fleet's child measures besides its process figures: the sources it runs (the
floor's, the stream reads of before), every frame's arrival, the event loop's lag, and the CPU
of the UI's handlers, of the engine's parts, of the probe mesh and of the nodes' TCP peers.
"""

from __future__ import annotations

import asyncio
import time

WALL = b"wall\0"  # a frame's payload starts with its sender's wall clock (frames.encode_fields)


class ArrivalLog:
    """Every node's frames while ``on``: ``(arrived_s, sent_s, delay_s)`` each, the monitor's
    monotonic clock at arrival, the frame's ``wall`` stamp (the fake node's clock as it sent
    it) and the monitor's wall clock minus that stamp (tests/bench/arrivals.py)."""

    def __init__(self) -> None:
        self.on = False
        self.by_node: dict[str, list[tuple[float, float, float]]] = {}

    def note(self, name: str, payload: bytes) -> None:
        """One frame of ``name`` arrived (before it is decoded). Frames without a clock (the
        filler frames of ``--filler-bytes``) are not logged."""
        if not payload.startswith(WALL):
            return
        n = int.from_bytes(payload[5:9], "little")
        sent = float(payload[9:9 + n])
        now = time.time()
        self.by_node.setdefault(name, []).append((time.monotonic(), sent, now - sent))


def logged(source_class, log: ArrivalLog):
    """``source_class`` whose sessions note each whole frame in ``log`` before handling it."""
    base = source_class.session_class

    class LoggedSession(base):
        def frame(self, payload: bytes) -> None:
            if log.on:
                log.note(self._name, payload)
            base.frame(self, payload)

    return type(source_class.__name__, (source_class,), {"session_class": LoggedSession})


def discard_source_class(mesh_peers: int = 0):
    """SshSource with its frames read and thrown away (bench_fleet's floor). ``mesh_peers``:
    also turn each node's probe mesh on at the default rate with that many peers, as the
    monitor steers it (engine/mesh.py), from its first frame on, so the floor carries the
    mesh's frames too (``floor+mesh``); 0: the mesh off."""
    from netui.collectors.ssh import SshSource
    from netui.collectors.ssh_stream import SamplerSession
    from netui.engine.mesh import MeshCoordinator, MeshSettings, peer_lines

    steer: list[str] = []
    if mesh_peers:  # (the ports are numbers only: the fake nodes' probes are never sent)
        steer = [MeshCoordinator([], MeshSettings()).on_line(), "mp-",
                 *peer_lines(("127.0.0.1", 20000 + i) for i in range(mesh_peers))]

    class DiscardSession(SamplerSession):
        steered = False  # this session's sampler told to turn its mesh on (a reconnect's anew)

        def frame(self, payload: bytes) -> None:  # (not queued with the monitor: transport only)
            source = self._source
            if steer and not self.steered and source._channel is not None:  # (not before the channel is the source's)
                self.steered = True
                source.send_mesh(steer)
            source.frames_total += 1

    class DiscardSource(SshSource):
        """SshSource's connection, channel and frame splitting, with the frames dropped undecoded."""

        frames_total = 0
        session_class = DiscardSession

    return DiscardSource


def stream_source_class(discard: bool, log: ArrivalLog):
    """SshSource as it read frames before SamplerSession (kept to compare, side by side):
    the process's stdout stream, ``readuntil`` the header then ``readexactly`` the payload,
    in the node's task."""
    from netui.collectors.frames import FrameDecoder, frame_length
    from netui.collectors.ssh import SshSource, sampler_command

    class StreamSource(SshSource):
        frames_total = 0

        async def _stream(self, sink) -> None:
            self._conn = await self.connector.connect(self.host, self.user, self.port)
            proc = await self._conn.create_process(sampler_command(sink.interval_s), encoding=None)
            self._channel = proc.channel
            reader = proc.stdout
            decode = FrameDecoder().decode
            while True:
                header = await reader.readuntil(b"\n")
                payload = await reader.readexactly(frame_length(header))
                if log.on:
                    log.note(self.name, payload)
                if not discard:
                    sink.observe(self.name, decode(payload))
                self.frames += 1
                self.frames_total += 1

    return StreamSource


LAG_PERIOD_S = 0.05  # ~400 readings in a 20 s window: a p99 that is not just the max


async def loop_lag(out: list[float], stop: asyncio.Event) -> None:
    """How late a 50 ms timer fires: the event loop's responsiveness during the window."""
    loop = asyncio.get_running_loop()
    for _ in range(1_000_000):
        if stop.is_set():
            return
        due = loop.time() + LAG_PERIOD_S
        await asyncio.sleep(LAG_PERIOD_S)
        out.append(loop.time() - due)


class UiTimes:
    """The CPU time (the loop's thread) of the UI's two handlers: the app's answer to a tick
    (``on_fleet_updated``: refresh the screen's data) and the screen's repaint timer
    (Textual's layout and compositor, the widgets' render_line). ``totals``: running sums in
    seconds, [tick, repaint]; ``ticks``: per tick, [its refresh, the repaints that followed it
    until the next tick]."""

    def __init__(self) -> None:
        self.totals = [0.0, 0.0]
        self.ticks: list[list[float]] = []

    def install(self) -> UiTimes:
        from textual.screen import Screen

        from netui.ui.app import NetuiApp

        refresh, repaint = NetuiApp.on_fleet_updated, Screen._on_timer_update

        def on_fleet_updated(*args, **kwargs):
            t0 = time.thread_time()
            try:
                return refresh(*args, **kwargs)
            finally:
                spent = time.thread_time() - t0
                self.totals[0] += spent
                self.ticks.append([spent, 0.0])

        def on_timer_update(*args, **kwargs):
            t0 = time.thread_time()
            try:
                return repaint(*args, **kwargs)
            finally:
                spent = time.thread_time() - t0
                self.totals[1] += spent
                if self.ticks:
                    self.ticks[-1][1] += spent

        NetuiApp.on_fleet_updated = on_fleet_updated  # dispatched by name, from the class
        Screen._on_timer_update = on_timer_update  # bound when a screen starts its timer
        return self


def _timer(totals: list[float], clock=time.perf_counter, spent_on=None):
    """``timed(function, slot)``: ``function`` wrapped to add the ``clock`` time of each call to
    ``totals[slot]`` (``spent_on(slot, spent, t0_wall)``, when given, told of each call too)."""
    def timed(function, slot: int):
        def run(*args, **kwargs):
            t0, w0 = clock(), (time.perf_counter() if spent_on is not None else 0.0)
            try:
                return function(*args, **kwargs)
            finally:
                spent = clock() - t0
                totals[slot] += spent
                if spent_on is not None:
                    spent_on(slot, spent, w0)
        return run
    return timed


def time_mesh() -> list[float]:
    """Count the time of the probe mesh's own work in the monitor: the "mesh" field's
    decoding, the fleet's window (``observe_mesh``), its judgement (``update_mesh``) and the
    peers' steering (``MeshCoordinator.observe``). Running totals in seconds, in that order;
    then the longest judgement's CPU and wall time. The three parts called for every frame are
    timed with perf_counter (a vDSO read, ~50 ns, where thread_time is a system call of ~0.6 µs:
    six a frame would add some 4 µs a node-sample to the variant's own figure), the judgement,
    once a tick, in this thread's CPU."""
    from netui.collectors import frames
    from netui.engine.mesh import MeshCoordinator
    from netui.model.fleet import Fleet

    totals = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # and the longest judgement: CPU, wall

    def longest(slot: int, spent: float, w0: float) -> None:
        if slot == 2:
            totals[4], totals[5] = max(totals[4], spent), max(totals[5], time.perf_counter() - w0)

    timed = _timer(totals)

    frames.parse_mesh = timed(frames.parse_mesh, 0)
    Fleet.observe_mesh = timed(Fleet.observe_mesh, 1)
    Fleet.update_mesh = _timer(totals, time.thread_time, longest)(Fleet.update_mesh, 2)
    MeshCoordinator.observe = timed(MeshCoordinator.observe, 3)
    return totals


PEER_PARTS = ("decode", "flow rates", "the tick's peer flows", "of which the address book")


def time_peers() -> list[float]:
    """Time the monitor's own work on the nodes' TCP peers (perf_counter, as ``time_parts``:
    two calls a frame, where thread_time's system call would weigh): the "peers" field's
    decoding (``FrameDecoder._peers_of``: the repeat check and ``parse_peers``), each
    node's flow rates (``flow_rates``, in Node.observe), the flows between watched nodes
    (``Fleet.peer_flows``: the straggler pass reads them at a tick that found someone slow, the
    peer matrix at each of its refreshes) and, of those, the address book (``Fleet.address_book``).
    Running totals in seconds, in PEER_PARTS's order, then how many times the flows were
    made."""
    from netui.collectors.frames import FrameDecoder
    from netui.model import node as node_module
    from netui.model.fleet import Fleet

    totals = [0.0] * (len(PEER_PARTS) + 1)

    def count(slot: int, spent: float, w0: float) -> None:
        if slot == 2:
            totals[-1] += 1

    timed = _timer(totals, spent_on=count)

    FrameDecoder._peers_of = timed(FrameDecoder._peers_of, 0)
    node_module.flow_rates = timed(node_module.flow_rates, 1)  # (looked up in the module by Node.observe)
    Fleet.peer_flows = timed(Fleet.peer_flows, 2)
    Fleet.address_book = timed(Fleet.address_book, 3)
    return totals


def peers_seen(fleet) -> dict:
    """What the monitor made of the fleet's peers at the end (after the window: not in its
    figures): how many nodes have flow rates, the flows between watched nodes (one
    ``Fleet.peer_flows``, as a tick that found someone slow makes them, and its time) and
    how many nodes and node pairs they name."""
    have = sum(1 for n in fleet if n.flows is not None and n.flows.rates)
    t0 = time.perf_counter()
    flows = fleet.peer_flows()
    spent = time.perf_counter() - t0
    pairs = sum(len(peers) for peers in flows.values())
    rated = sum(1 for peers in flows.values() for r in peers.values() if r.tx_bytes_per_s is not None)
    return {"peers_nodes_with_flows": have, "peers_nodes_mapped": len(flows), "peers_pairs": pairs,
            "peers_pairs_rated": rated, "peers_flows_ms": spent * 1e3}


PARTS = ("decode", "rates", "summary", "health", "the rest of observe", "ticks")


def time_parts() -> list[float]:
    """Time the engine's parts (perf_counter: a vDSO read, ~40 ns, where thread_time is a
    system call; the loop's thread does all of it): a frame's decoding, its node's rates
    (``node_rates``), the grid row and findings (``summarize``), their health (``rate``,
    ``health_of``, the hold), the rest of the monitor's sink (Node.observe's history and
    state, Monitor.observe), a tick. Running totals in seconds, in PARTS's order."""
    from netui.collectors.ssh_stream import SamplerSession
    from netui.engine.monitor import Monitor
    from netui.model import node as node_module
    from netui.model.health import HeldHealth

    totals = [0.0] * len(PARTS)
    clock = time.perf_counter
    timed = _timer(totals)

    inner = [0.0]  # the parts timed inside the sink, taken off "the rest"

    def take(self, payload: bytes) -> None:  # (a frame's errors end its session: none in a bench)
        if self._broken:
            return
        t0 = clock()
        sample = self._decode(payload)
        t1 = clock()
        before = totals[1] + totals[2] + totals[3]
        self._observe(self._name, sample)
        t2 = clock()
        totals[0] += t1 - t0
        totals[4] += (t2 - t1) - (totals[1] + totals[2] + totals[3] - before)

    node_module.node_rates = timed(node_module.node_rates, 1)  # (looked up in the module by Node.observe)
    node_module.summarize = timed(node_module.summarize, 2)
    node_module.rate = timed(node_module.rate, 3)
    node_module.health_of = timed(node_module.health_of, 3)
    HeldHealth.feed = timed(HeldHealth.feed, 3)
    tick = Monitor.tick

    async def timed_tick(self, *args, **kwargs):  # (less the frames it takes: counted as theirs)
        t0, frames = clock(), sum(totals[:5])
        try:
            return await tick(self, *args, **kwargs)
        finally:
            totals[5] += clock() - t0 - (sum(totals[:5]) - frames)

    SamplerSession.take = take
    Monitor.tick = timed_tick
    return totals


class JudgementLog:
    """What the straggler pass made of the fake fleet while ``on`` (a fleet of equals: no one
    should be named): the ticks, those whose interval found someone (``find_stragglers``,
    before the hold: the ticks that pay for findings), the findings, and every node named
    (held) at a tick. One counter call a tick."""

    def __init__(self) -> None:
        from netui.model import fleet as fleet_module

        self.on = False
        self.ticks = self.found_ticks = self.found = 0
        self.named: set[str] = set()
        find, update = fleet_module.find_stragglers, fleet_module.Fleet.update_stragglers
        log = self

        def counted_find(nodes, rules=None):
            out = find(nodes, rules)
            if log.on:
                log.ticks += 1
                log.found_ticks += bool(out)
                log.found += len(out)
            return out

        def counted_update(fleet, *args, **kwargs):
            out = update(fleet, *args, **kwargs)
            if log.on:
                log.named.update(s.node for s in out)
            return out

        fleet_module.find_stragglers = counted_find  # (looked up in the module by update_stragglers)
        fleet_module.Fleet.update_stragglers = counted_update  # type: ignore[method-assign]

    def figures(self) -> dict:
        return {"judged_ticks": self.ticks, "found_ticks": self.found_ticks, "found": self.found,
                "named": sorted(self.named)[:5], "named_count": len(self.named)}
