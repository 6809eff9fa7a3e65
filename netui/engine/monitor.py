"""The engine: owns time, feeds the fleet from every source, tells the UI once per tick.

Every source keeps one contract (collectors/source.py ``Source``), called directly: the
monitor never asks a source's class. Two kinds of source: *pull* sources (this host, a
replay) are asked for a sample each tick; *push* sources (SSH nodes, node_exporter,
Prometheus) stream samples on their own and report their state to the monitor, their
``Sink``. Which is which is read once, when the monitor is built. Each tick
polls the pull sources, marks push nodes that went quiet as stale, and calls ``on_update``
once — the UI repaints in one batch however many frames arrived. The next tick is scheduled
when the current one ends, so ticks never overlap. Works headless.

What a monitor offers the UI beyond that is its ``mode`` (live, or a recording played back),
declared by its class.

A pull source has at most one read in flight. A tick waits for the reads it starts the
interval at most (``PULL_WAIT_MAX_S``); a read still running then is not waited for again:
its node is stale ("read not answering") until it ends, its result is taken by the tick
after it ended, and no other read of that source starts meanwhile. A hung read never stops
the ticks.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from netui.collectors.source import Source
from netui.engine.lldp import LldpReader
from netui.engine.mesh import MeshCoordinator, MeshSettings, taking_part
from netui.engine.sources import SourceError
from netui.model.fleet import Fleet
from netui.model.node import NodeState, without_countdown
from netui.model.samples import NodeSample
from netui.model.text import safe_line

INTERVALS_S = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
STALE_INTERVALS = 3  # a node with no sample for this many intervals is stale
PULL_WAIT_MAX_S = 3.0  # a tick waits for a pull source's read the interval, at most this
CLOSE_WAIT_S = 5.0  # close() waits this long for the node tasks to end, then as long for the sources
CANCEL_AGAIN_S = 0.5  # meanwhile, a task still running is cancelled again this often

# CPython's cyclic GC runs a young collection every 700 net container allocations; a
# node-sample makes hundreds of short-lived tuples and dicts, nearly all freed by reference
# counting, and what lives on (nodes, rings) holds no cycles. At 1,024 nodes the default
# spent ~175 µs per node-sample in collections and froze the loop ~1 s at each full one
# (bench_fleet); with these thresholds, none ran in the measuring window. Cycles are still
# collected, just later.
GC_THRESHOLDS = (50_000, 20, 100)

# The SSH nodes' frames are queued as they arrive and taken (decoded, judged) in batches: at
# each tick, when this many wait, or an interval after the first of them when no tick comes
# (a monitor that is not running). Taken one by one, between the SSH packets of a thousand
# connections, each frame found netui's code and data cold: bench_fleet at 1,024 nodes
# measured ~60 µs of netui's own CPU per node-sample so, ~40 µs in batches. A frame waits
# for the tick at most, which shows it no later than before (the screen repaints at ticks).
FRAME_BATCH_MAX = 512


@dataclass(frozen=True, slots=True)
class Mode:
    """What feeds a monitor, and so what it offers: the UI reads this, never the monitor's class."""

    replay: bool = False  # a recording played back (engine/replay.py): a timeline, playback, recorded tests
    can_record: bool = True  # w records what it shows


LIVE = Mode()


def tune_gc() -> None:
    """Raise the cyclic GC's thresholds to GC_THRESHOLDS (never lower them)."""
    current = gc.get_threshold()
    gc.set_threshold(*(max(c, t) for c, t in zip(current, GC_THRESHOLDS)))


def report_state(node, state: NodeState, reason: str | None, at_s: float | None = None) -> None:
    """A transport's word on a node: a state it is in, or a failure with its reason (``at_s``:
    when, wall clock; None in a replay, which has no such clock)."""
    if not state.failed:
        node.set_state(state, reason)
    elif state is node.state and node.error is not None and reason is not None \
            and safe_line(reason) == without_countdown(node.error):
        # tried again (collectors/ssh.py): the same failure, its countdown gone while the retry
        # runs; when it failed stays when it failed
        node.error = without_countdown(node.error)
    else:
        node.fail(state, reason or state.value, at_s)


def take_test(fleet: Fleet, kind: object, document) -> bool:
    """A finished test of ``kind``, as its JSON document: when its check makes stragglers of
    its suspects (a pair test, checks/pairs/__init__.py), those of its verdict (judged again,
    as the test's screen shows it) become the fleet's, and the nodes it tested lose an earlier
    test's suspicion. A test of another check, a cancelled or refused one, or a document that
    cannot be read changes nothing (False). Live and replay call this alike."""
    from netui import checks

    check = checks.by_kind(kind)
    if check is None or check.stragglers is None:
        return False
    try:
        report = check.documents().load_report(document)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    if report.cancelled or report.refused or report.verdict is None:
        return False
    fleet.take_suspects(report.verdict.tested, checks.load(check.stragglers)(report.verdict))
    return True


def take_sample(fleet: Fleet, name: str, sample: NodeSample) -> bool:
    """Node ``name``'s sample into the fleet: its node takes it (False: refused, its state says
    why) and then the fleet's mesh its probes' readings. Live and replay call this alike."""
    taken = fleet.nodes[name].observe(sample)
    if taken and sample.mesh is not None:
        fleet.observe_mesh(name, sample.mesh)
    return taken


def judge_tick(fleet: Fleet) -> None:
    """What a tick judges once its samples are in: the stragglers, then the mesh's window.
    Live and replay call this alike."""
    fleet.update_stragglers()
    fleet.update_mesh()


class Monitor:
    mode: ClassVar[Mode] = LIVE

    def __init__(self, sources: list[Source], *, interval_s: float = 1.0, history_s: float = 900.0,
                 thresholds=None, rules=None, connector=None, mesh: MeshSettings | None = None) -> None:
        """``thresholds`` and ``rules`` (model.health.HealthRules): how nodes are judged
        (the configuration file's, or the defaults). ``connector``: what the sources share
        to reach their nodes (an SSH connector, an HTTP client; anything with an async
        ``close()``), closed with the monitor after them. ``mesh``: the probe mesh on, among
        the nodes whose sources steer a sampler (engine/mesh.py), or None."""
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        self.sources = sources
        self.connector = connector
        self.fleet = Fleet([s.name for s in sources], history_s=history_s, interval_s=interval_s,
                           thresholds=thresholds, **({"rules": rules} if rules is not None else {}))
        tune_gc()
        self.on_update: Callable[[], None] | None = None
        self.on_sample: Callable[[str, NodeSample], None] | None = None
        self.recorder = None  # an engine.recorder.Recorder while recording
        self.ticks = 0
        self.last_tick_s: float | None = None  # how long the last tick took
        self._pull = [s for s in sources if not s.push]
        self._push = [s for s in sources if s.push]
        self._push_names = {s.name for s in self._push}
        self._via = {s.name: s.via for s in sources if s.via is not None}
        self._arrival: dict[str, float] = {}  # node → when its last sample came (monotonic), the oldest first
        self._reads: dict[str, tuple[asyncio.Future, float]] = {}  # pull reads in flight, started at
        self._tasks: list[asyncio.Task] = []
        self.abandoned: list[str] = []  # nodes whose task had not ended when close() gave up
        self._wake = asyncio.Event()
        self._stopped = False
        self._frames: list[tuple] = []  # (session, payload) queued (``queue_frame``), oldest first
        self._frames_due: asyncio.TimerHandle | None = None  # the drain when no tick comes first
        # who wants a node's per-CPU tables (a node screen, a pair test): node → count
        self._detail: Counter[str] = Counter()
        self._detail_all = False  # every node's (a recording, a snapshot)
        self.lldp = LldpReader(self)  # each node's LLDP neighbours, once per connection
        self.mesh: MeshCoordinator | None = None
        probers = taking_part(sources)
        self.mesh_probers = len(probers)  # the nodes that could probe: fewer than 2 make no mesh
        if mesh is not None and len(probers) >= 2:
            self.mesh = MeshCoordinator(probers, mesh)

    @property
    def mesh_on(self) -> bool:
        """Whether the probe mesh is on: asked of the nodes (a replay: in the recording), its
        readings there or still to come."""
        return self.mesh is not None

    def via(self, name: str) -> str | None:
        """What node ``name``'s counters come through when that limits what can be shown
        ("node_exporter"), or None."""
        return self._via.get(name)

    @property
    def interval_s(self) -> float:
        """How often nodes are sampled (seconds). Changed only by ``set_interval``, which
        tells everything that depends on it; kept by the fleet, whose histories are sized by it."""
        return self.fleet.interval_s

    # the sink that push sources report to ---------------------------------------------------
    def observe(self, name: str, sample: NodeSample) -> None:
        """A sample of node ``name``, from any source. The one error boundary of the model: an
        exception while judging it is netui's own bug, shown as that node's ``internal error``
        state (each source alike: the push sources' reading goes on, a pull source is read
        again next tick), never the end of the app or a node reported down."""
        node = self.fleet.nodes[name]  # (not fleet[name]: one call less a sample)
        try:
            taken = take_sample(self.fleet, name, sample)
        except Exception as exc:  # noqa: BLE001 — the boundary: what fails is this node's judgement
            node.fail(NodeState.INTERNAL_ERROR, f"netui could not judge its sample: {type(exc).__name__}: {exc} "
                                                "(a bug of netui: please report it)", time.time())
            return
        arrival = self._arrival
        arrival.pop(name, None)  # (re-inserted: the dict stays in order of arrival, the oldest first)
        arrival[name] = time.monotonic()
        if not taken:  # impossible numbers: the node's state says so; nothing of it is recorded
            return
        if self.mesh is not None:
            self.mesh.observe(name, sample.mesh)
        if self.on_sample is not None:
            self.on_sample(name, sample)
        if self.recorder is not None:
            refused = self.recorder.sample(name, sample)
            if refused is not None:  # a sample the recording could not read back: that node's alone
                node.fail(NodeState.IMPOSSIBLE, refused)

    def queue_frame(self, session, payload: bytes) -> None:
        """A frame of an SSH node (collectors/ssh_stream.py), taken with the others at the next
        drain (``take_frames``): the tick's, FRAME_BATCH_MAX frames', or an interval's."""
        if self._stopped:
            return
        frames = self._frames
        frames.append((session, payload))
        if len(frames) >= FRAME_BATCH_MAX:
            self.take_frames()
        elif self._frames_due is None:
            self._frames_due = asyncio.get_running_loop().call_later(self.interval_s, self.take_frames)

    def take_frames(self) -> None:
        """Every queued frame decoded and observed, in the order they came (``SamplerSession.take``:
        a session that ended meanwhile drops its own)."""
        if self._frames_due is not None:
            self._frames_due.cancel()
            self._frames_due = None
        frames, self._frames = self._frames, []
        for session, payload in frames:
            session.take(payload)

    def report(self, name: str, state: NodeState, reason: str | None) -> None:
        report_state(self.fleet[name], state, reason, time.time())
        if self.mesh is not None and not state.healthy:
            self.mesh.left(name)  # a dead sampler answers nothing: off the others' lists
        self.lldp.changed(name)  # a connection starts with a report: LLDP is read on each one

    # ticks ------------------------------------------------------------------------------------
    async def tick(self) -> None:
        """Poll the pull sources, check the push nodes for silence, tell the UI."""
        started = time.monotonic()
        self._start_push()
        if self._frames:
            self.take_frames()
        if self._pull:
            await self._poll_pull()
        quiet_s = STALE_INTERVALS * self.interval_s
        now = time.monotonic()
        nodes, up, push = self.fleet.nodes, NodeState.UP, self._push_names
        for name, last in self._arrival.items():  # the oldest first: only the quiet ones are looked at
            if now - last <= quiet_s:
                break
            if name in push:
                node = nodes[name]
                if node.state is up:
                    node.set_state(NodeState.STALE, f"no sample for {now - last:.0f} s")
        judge_tick(self.fleet)
        self.lldp.tick()
        if self.recorder is not None:
            self.recorder.tick(self.fleet)
        self.ticks += 1
        self.last_tick_s = time.monotonic() - started
        if self.on_update is not None:
            self.on_update()

    def test_done(self, kind: str, document: dict) -> None:
        """A test of ``kind`` ended here: its suspects are stragglers from now on when its
        check says so (``take_test``)."""
        if take_test(self.fleet, kind, document):
            self.fleet.update_stragglers(advance=False)

    def clear_pair_suspects(self) -> list[str]:
        """The user's word: the pair tests' suspects are stragglers no more; the nodes that were."""
        cleared = self.fleet.clear_pair_suspects()
        self.fleet.update_stragglers(advance=False)
        return cleared

    # kept for callers that think in polls
    poll_once = tick

    @property
    def pull_wait_s(self) -> float:
        """How long a tick waits for the reads it starts."""
        return min(self.interval_s, PULL_WAIT_MAX_S)

    async def _poll_pull(self) -> None:
        started = []
        for source in self._pull:
            if source.name not in self._reads:
                read = asyncio.ensure_future(source.sample())
                self._reads[source.name] = (read, time.monotonic())
                started.append(read)
        waiting = [read for read in started if not read.done()]
        if waiting:
            await asyncio.wait(waiting, timeout=self.pull_wait_s)
        now = time.monotonic()
        for source in self._pull:
            if source.name not in self._reads:
                continue  # closed while the reads were awaited (close() drops them)
            read, since = self._reads[source.name]
            if not read.done():
                node = self.fleet[source.name]
                # a node that failed keeps its failure; one that shows up (or is about to) goes stale
                if now - since >= self.pull_wait_s and not node.state.failed:
                    node.set_state(NodeState.STALE, f"read not answering for {now - since:.1f} s")
                continue
            del self._reads[source.name]
            if read.cancelled():
                continue
            exc = read.exception()
            if isinstance(exc, SourceError):
                self.report(source.name, exc.state, exc.reason)
            elif exc is not None:
                self.report(source.name, NodeState.PARSE_ERROR, f"{type(exc).__name__}: {exc}")
            else:
                result = read.result()
                if result is not None:  # None: nothing new (a replay that has ended)
                    self.observe(source.name, result)

    def _start_push(self) -> None:
        if self._tasks or not self._push or self._stopped:
            return
        self._tasks = [asyncio.ensure_future(s.run(self)) for s in self._push]

    async def run(self, *, polls: int | None = None) -> None:
        """Tick until stopped (or ``polls`` times); sleep ``interval_s`` after each tick ends."""
        count = 0
        while not self._stopped:
            await self.tick()
            count += 1
            if polls is not None and count >= polls:
                break
            await self._sleep(self.interval_s)

    async def run_until(self, done: Callable[[], bool], *, timeout_s: float) -> bool:
        """Tick until ``done()`` or the timeout; True when done."""
        deadline = time.monotonic() + timeout_s
        while not self._stopped:
            await self.tick()
            if done():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            await self._sleep(min(self.interval_s, left))
        return done()

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)

    def set_interval(self, interval_s: float) -> None:
        """Change the interval: the histories keep covering their seconds (``Fleet.set_interval``),
        a recording records the change, the sleep in progress is cut short, samplers are told."""
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        if interval_s != self.interval_s:
            self.fleet.set_interval(interval_s)
            if self.recorder is not None:
                self.recorder.interval(interval_s)
        for s in self._push:
            s.set_interval(interval_s)
        self._wake.set()

    # retries ----------------------------------------------------------------------------------
    def retry_in_s(self) -> dict[str, float]:
        """Node → seconds until its source tries again, for the nodes whose source is waiting
        to retry after a failure (SSH, node_exporter)."""
        now = time.monotonic()
        out = {}
        for s in self._push:
            at = s.retry_at
            if at is not None:
                out[s.name] = max(0.0, at - now)
        return out

    def retry_now(self, names) -> list[str]:
        """Try the sources of ``names`` again now, those that wait to retry; the names tried."""
        wanted = set(names)
        return [s.name for s in self._push if s.name in wanted and s.retry_now()]

    # per-CPU detail ----------------------------------------------------------------------------
    def want_detail(self, names, on: bool) -> None:
        """Ask the remote samplers of ``names`` for their per-CPU tables (``on``), or say
        they are no longer needed. Counted: a node keeps them while anyone wants them. A
        sampler sends only their sums otherwise, which is what the grid shows."""
        changed = []
        for name in names:
            before = self._detail[name] > 0
            if on:
                self._detail[name] += 1
            elif self._detail[name] > 0:
                self._detail[name] -= 1
                if not self._detail[name]:
                    del self._detail[name]
            if (self._detail[name] > 0) != before:
                changed.append(name)
        if changed and not self._detail_all:
            self._tell_detail(set(changed))

    def set_detail_all(self, on: bool) -> None:
        """Every node's per-CPU tables (a recording, a snapshot), or back to those wanted."""
        if on != self._detail_all:
            self._detail_all = on
            self._tell_detail(None)

    def detail_wanted(self, name: str) -> bool:
        return self._detail_all or self._detail[name] > 0

    def _tell_detail(self, names: set[str] | None) -> None:
        for s in self._push:
            if names is None or s.name in names:
                s.set_detail(self.detail_wanted(s.name))

    def step_interval(self, direction: int) -> float:
        """Next shorter (-1) or longer (+1) interval of INTERVALS_S."""
        current = min(range(len(INTERVALS_S)), key=lambda i: abs(INTERVALS_S[i] - self.interval_s))
        index = max(0, min(len(INTERVALS_S) - 1, current + direction))
        self.set_interval(INTERVALS_S[index])
        return self.interval_s

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    def start_recording(self, path, *, max_size_bytes: int | None = None, keep: int = 5, clock=None):
        """Record from now on into ``path`` (engine/recorder.py); the Recorder. ``clock``:
        the wall time of each record (default ``time.time``)."""
        from netui.engine.recorder import Recorder

        self.stop_recording()
        self.recorder = Recorder(path, hosts=list(self.fleet.nodes), interval_s=self.interval_s,
                                 max_size_bytes=max_size_bytes, keep=keep, clock=clock or time.time, fleet=self.fleet)
        self.set_detail_all(True)  # a replay shows every panel
        return self.recorder

    def stop_recording(self):
        """Finish the recording, if any; the Recorder that was recording (or None)."""
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            recorder.close()
            self.set_detail_all(False)
        return recorder

    async def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Stop, end every stream (the samplers end with their channels) and close sources.

        Bounded: the node tasks are cancelled (again and again, should one let a
        cancellation pass) for ``wait_s`` at most, and the sources closed within as long
        again; a node whose task has still not ended then is left behind, named in
        ``abandoned`` so that the caller can say so.
        """
        self.stop()
        self.stop_recording()
        if self._frames_due is not None:
            self._frames_due.cancel()
            self._frames_due = None
        self._frames.clear()
        names = {task: source.name for task, source in zip(self._tasks, self._push)}
        stuck = await cancel_and_wait(self._tasks, wait_s)
        self.abandoned = [names[task] for task in self._tasks if task in stuck]
        self._tasks = []
        await self.lldp.close()
        for read, _ in self._reads.values():  # a hung read's thread is a daemon: let it be
            read.cancel()
        self._reads.clear()
        closing = [asyncio.ensure_future(s.close()) for s in self.sources]
        if closing:
            _, late = await asyncio.wait(closing, timeout=wait_s)
            for task in late:
                task.cancel()
        if self.connector is not None:
            await self.connector.close()


async def cancel_and_wait(tasks: list[asyncio.Task], wait_s: float) -> set[asyncio.Task]:
    """Cancel ``tasks`` and wait for them to end, ``wait_s`` at most; the tasks still running.

    A task that lets a cancellation pass (a library that turns it into a result or an
    error) is cancelled again each round, so one lost cancellation never keeps it alive.
    """
    pending = {t for t in tasks if not t.done()}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while pending:
        for task in pending:
            task.cancel()
        left = deadline - loop.time()
        if left <= 0:
            break
        _, pending = await asyncio.wait(pending, timeout=min(left, CANCEL_AGAIN_S))
    for task in tasks:  # their outcome is known now: never "exception was never retrieved"
        if task.done() and not task.cancelled():
            task.exception()
    return pending
