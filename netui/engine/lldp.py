"""LLDP neighbours of every node, read once per connection and again when asked.

    reader = LldpReader(monitor)      # the monitor makes one: monitor.lldp
    reader.tick()                     # each tick: start a read for every node newly up
    reader.changed("node1")           # its source reported a state: look at it again
    reader.refresh(["node1"])         # read again (None: every node)
    await reader.settled(timeout_s)   # wait for the reads in flight (a snapshot)

A read is one guarded command (collectors/shell.py) over the node's live SSH connection — the
one its sampler streams on, no second handshake — or on this host for the local node:
``collectors.lldp.LLDP_COMMAND``, a constant. Its outcome goes to ``Node.set_lldp``: the
neighbours, and a state that says why there are none (no lldpctl, lldpd not running, …) —
never a node error. Replays and nodes read through node_exporter or Prometheus cannot run
commands: their state stays "not read".
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex

from netui.collectors.lldp import LLDP_COMMAND, STATE_READING, STATE_UNREAD, lldp_state
from netui.engine.sources import shells_for
from netui.model.node import NodeState

LLDP_TIMEOUT_S = 10.0
SNAPSHOT_WAIT_S = 3.0  # a snapshot waits this long for the reads once the samples are in
CONCURRENT_READS = 32  # channels opened at once over the fleet's connections
RETRY_AFTER_S = 60.0  # a read that could not start on a connection still up: tried again after this
SWEEP_TICKS = 30  # every node's connection is looked at this often, even a settled one's


class LldpReader:
    def __init__(self, monitor, *, timeout_s: float = LLDP_TIMEOUT_S) -> None:
        self.monitor = monitor
        self.timeout_s = timeout_s
        self._shells = None  # name → shell, made on the first tick
        self._read_on: dict[str, object] = {}  # name → the connection its last read used
        self._retry_at: dict[str, float] = {}  # name → when to try again a read that could not start
        self._tasks: dict[str, asyncio.Task] = {}
        self._gate: asyncio.Semaphore | None = None
        self._unsettled: set[str] = set()  # names to look at on the next tick (tick)
        self._ticks = 0

    def tick(self) -> None:
        """Start a read for each node that is up on a connection not read yet, once it has sent
        two samples (the first frame and the first rates come before any other command).

        Only nodes not settled are looked at: a node is settled once it was read on the
        connection it is on now with no retry due, until its source reports a state again
        (``changed``: every connection starts with one) or ``refresh``. At a thousand nodes
        a tick then asks no connection whether it is still the same; every ``SWEEP_TICKS``
        ticks all are looked at anyway."""
        nodes = self.monitor.fleet.nodes
        if self._shells is None:
            if not any(n.samples_seen >= 2 for n in nodes.values()):
                return
            self._shells = shells_for(self.monitor.sources)
            self._unsettled = set(self._shells)
        self._ticks += 1
        unsettled = self._unsettled
        names = list(self._shells) if self._ticks % SWEEP_TICKS == 0 else list(unsettled)
        if not names:
            return
        now = asyncio.get_running_loop().time()
        for name in names:
            shell = self._shells.get(name)
            if shell is None:
                unsettled.discard(name)
            elif self._look(name, nodes[name], shell, now):
                unsettled.discard(name)
            else:
                unsettled.add(name)

    def _look(self, name: str, node, shell, now: float) -> bool:
        """Start the node's read if it is due; True when the node is settled (read on the
        connection it is on, no retry due)."""
        if node.state is not NodeState.UP or node.samples_seen < 2 or name in self._tasks:
            return False
        connection = shell.session
        if connection is None:
            return False
        if self._read_on.get(name) is connection:
            retry = self._retry_at.get(name)
            if retry is None:
                return True
            if now < retry:
                return False
        self._retry_at.pop(name, None)
        self._read_on[name] = connection
        if node.lldp_state == STATE_UNREAD:
            self.monitor.fleet.set_lldp(name, node.lldp, STATE_READING)
        self._tasks[name] = asyncio.ensure_future(self._read(name, shell))
        return False

    def changed(self, name: str) -> None:
        """The node's source reported a state (connecting, down, up …): look at it again."""
        self._unsettled.add(name)

    def refresh(self, names=None) -> None:
        """Read ``names`` (None: every node) again at the next tick."""
        for name in list(self._read_on) if names is None else names:
            self._read_on.pop(name, None)
            self._retry_at.pop(name, None)
            self._unsettled.add(name)

    async def settled(self, timeout_s: float) -> bool:
        """Wait (at most ``timeout_s``) for the reads in flight; True when none is left."""
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)
        return not self._tasks

    def pending(self) -> list[str]:
        return sorted(self._tasks)

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks.clear()

    async def _read(self, name: str, shell) -> None:
        """One read; whatever happens ends as the node's LLDP state, never as an exception of
        the task (nobody awaits it but ``settled`` and ``close``)."""
        from netui.collectors.shell import CommandFailed, run_guarded  # with the first read, not the first frame

        if self._gate is None:
            self._gate = asyncio.Semaphore(CONCURRENT_READS)
        connection = self._read_on.get(name)
        try:
            async with self._gate:
                try:
                    result = await run_guarded(shell, "sh -c " + shlex.quote(LLDP_COMMAND), self.timeout_s)
                except CommandFailed as exc:
                    if shell.session is None or shell.session is not connection:
                        self._read_on.pop(name, None)  # the connection went: read on the next one
                    else:  # up, but no channel (sshd's MaxSessions, say): not again at every tick
                        self._retry_at[name] = asyncio.get_running_loop().time() + RETRY_AFTER_S
                    self.monitor.fleet.set_lldp(name, (), f"no LLDP: {exc}")
                    return
            if result.timed_out:
                neighbours, state = (), f"no LLDP: lldpctl timed out after {self.timeout_s:g} s"
            else:
                neighbours, state = lldp_state(result.exit_status, result.stdout, result.stderr)
            self.monitor.fleet.set_lldp(name, neighbours, state)
        except Exception as exc:  # noqa: BLE001 - a state, never a task that dies unseen
            self._retry_at[name] = asyncio.get_running_loop().time() + RETRY_AFTER_S
            with contextlib.suppress(Exception):
                self.monitor.fleet.set_lldp(name, (), f"no LLDP: netui could not read it ({type(exc).__name__}: "
                                                      f"{str(exc)[:200]})")
        finally:
            self._tasks.pop(name, None)
