"""The LLDP reader's bookkeeping: a read that cannot start on a connection still up is tried
again after a while (not at every tick), a lost connection is read on the next one, and
whatever goes wrong in a read ends as the node's LLDP state, never as a task's exception.
The shells here stand in for a node's connection (what sshd's MaxSessions refusal looks
like to netui: CommandFailed while the connection stays up). <1 s."""

from __future__ import annotations

import asyncio

from netui.collectors.shell import CommandFailed, CommandResult
from netui.engine import lldp as lldp_engine
from netui.engine.lldp import LldpReader
from netui.model.fleet import Fleet
from netui.model.node import NodeState


class Refusing:
    """A connection that is up but refuses every channel (or raises ``error``)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.session = object()
        self.starts = 0
        self.error = error

    async def start(self, command: str):
        self.starts += 1
        raise self.error or CommandFailed("open failed: administratively prohibited")


class Answering:
    def __init__(self, stdout: str) -> None:
        self.session = object()
        self.stdout = stdout

    async def start(self, command: str):
        shell = self

        class Done:
            async def result(self, timeout_s):
                return CommandResult(0, shell.stdout, "")

            async def stop(self):
                pass

        return Done()


class FakeMonitor:
    def __init__(self, shells: dict) -> None:
        self.fleet = Fleet(list(shells))
        for node in self.fleet:
            node.state, node.samples_seen = NodeState.UP, 2
        self.sources = []


def reader_for(shells: dict) -> tuple[LldpReader, FakeMonitor]:
    monitor = FakeMonitor(shells)
    reader = LldpReader(monitor)
    reader._shells = shells  # noqa: SLF001 - the shells shells_for would find ...
    reader._unsettled = set(shells)  # noqa: SLF001 - ... and none read yet, as the first tick makes them
    return reader, monitor


async def ticks(reader: LldpReader, n: int) -> None:
    for _ in range(n):
        reader.tick()
        await reader.settled(1.0)


async def test_a_refused_channel_on_a_live_connection_is_not_retried_every_tick(monkeypatch):
    monkeypatch.setattr(lldp_engine, "RETRY_AFTER_S", 0.3)
    shell = Refusing()
    reader, monitor = reader_for({"n1": shell})
    await ticks(reader, 10)
    assert shell.starts == 1
    assert monitor.fleet["n1"].lldp_state.startswith("no LLDP: open failed")
    await asyncio.sleep(0.35)
    await ticks(reader, 5)
    assert shell.starts == 2  # once more after the back-off, not five times
    shell.session = object()  # a new connection, which its source announces: read on it at once
    reader.changed("n1")
    await ticks(reader, 3)
    assert shell.starts == 3


async def test_a_connection_lost_during_the_read_is_read_on_the_next_one():
    class Dropping(Refusing):
        async def start(self, command):
            self.session = None
            return await super().start(command)

    shell = Dropping()
    reader, _ = reader_for({"n1": shell})
    await ticks(reader, 2)
    assert shell.starts == 1
    shell.session = object()
    reader.changed("n1")
    await ticks(reader, 2)
    assert shell.starts == 2


async def test_settled_nodes_are_not_asked_for_their_connection_until_their_source_reports():
    class Counting(Answering):
        def __init__(self) -> None:
            super().__init__("{}")
            self.asked = 0
            self._session = object()

        @property
        def session(self):
            self.asked += 1
            return self._session

        @session.setter
        def session(self, value):
            self._session = value

    shells = {f"n{i}": Counting() for i in range(4)}
    reader, monitor = reader_for(shells)
    await ticks(reader, 3)
    assert all(monitor.fleet[n].lldp_state == "ok" or monitor.fleet[n].lldp_state.startswith("no LLDP")
               for n in shells)
    asked = {n: s.asked for n, s in shells.items()}
    await ticks(reader, 5)  # all read on the connection they are on: nobody is asked again
    assert {n: s.asked for n, s in shells.items()} == asked
    shells["n2"].session = object()  # n2 reconnects, and its source says so
    reader.changed("n2")
    await ticks(reader, 2)
    assert shells["n2"].asked > asked["n2"]
    assert {n: s.asked for n, s in shells.items() if n != "n2"} == {n: a for n, a in asked.items() if n != "n2"}


async def test_a_new_connection_nobody_announced_is_still_read_within_a_sweep(monkeypatch):
    monkeypatch.setattr(lldp_engine, "SWEEP_TICKS", 4)
    shell = Answering("{}")
    reader, _ = reader_for({"n1": shell})
    starts = []
    start = shell.start

    async def counted(command):
        starts.append(command)
        return await start(command)

    shell.start = counted
    await ticks(reader, 2)
    assert len(starts) == 1
    shell.session = object()  # not announced
    await ticks(reader, 4)
    assert len(starts) == 2


async def test_anything_unexpected_in_a_read_is_a_state_not_a_dead_task():
    loop = asyncio.get_running_loop()
    unhandled = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    reader, monitor = reader_for({"n1": Refusing(RuntimeError("boom")), "n2": Answering("[" * 100_000)})
    reader.tick()
    tasks = list(reader._tasks.values())  # noqa: SLF001
    assert await reader.settled(2.0)
    assert all(t.done() and t.exception() is None for t in tasks)
    assert monitor.fleet["n1"].lldp_state == "no LLDP: netui could not read it (RuntimeError: boom)"
    assert monitor.fleet["n2"].lldp_state.startswith("no LLDP: lldpctl output is not JSON")
    assert not unhandled
