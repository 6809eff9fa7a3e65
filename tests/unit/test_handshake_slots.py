"""The SSH handshake slots (collectors/ssh_connect.py ``Slots``): ``--fanout`` holders at once, first
come first served, and a waiter that gives up leaves its turn to the next, whatever the
moment it gives up. (asyncio.Semaphore's waiters searched the whole queue to leave it:
closing a snapshot of 18,000 nodes spent 3 s doing that.)"""

from __future__ import annotations

import asyncio

from netui.collectors.ssh_connect import Slots


async def _hold(slots: Slots, name: str, order: list[str], release: asyncio.Event) -> None:
    async with slots:
        order.append(name)
        await release.wait()


async def test_slots_are_taken_in_turn_and_a_waiter_that_gives_up_is_skipped():
    slots = Slots(2)
    order: list[str] = []
    release = {n: asyncio.Event() for n in "abcdef"}
    tasks = {n: asyncio.ensure_future(_hold(slots, n, order, release[n])) for n in "abcdef"}
    await asyncio.sleep(0)
    assert order == ["a", "b"]
    tasks["c"].cancel()  # waiting: gives up its turn
    tasks["d"].cancel()
    await asyncio.sleep(0)
    release["a"].set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert order == ["a", "b", "e"]
    assert tasks["c"].cancelled() and tasks["d"].cancelled()
    for n in "bef":
        release[n].set()
    await asyncio.gather(*(tasks[n] for n in "abef"))
    assert order == ["a", "b", "e", "f"]
    # every slot is free again: two holders at once, at once
    again: list[str] = []
    gate = asyncio.Event()
    more = [asyncio.ensure_future(_hold(slots, n, again, gate)) for n in "xyz"]
    await asyncio.sleep(0)
    assert again == ["x", "y"]
    gate.set()
    await asyncio.gather(*more)


async def test_a_waiter_cancelled_as_its_turn_comes_passes_the_slot_on():
    slots = Slots(1)
    order: list[str] = []
    release = {n: asyncio.Event() for n in "abc"}
    tasks = {n: asyncio.ensure_future(_hold(slots, n, order, release[n])) for n in "abc"}
    await asyncio.sleep(0)
    release["a"].set()
    await asyncio.sleep(0)  # a leaves: b is handed the slot, but has not run yet
    tasks["b"].cancel()  # ... and is cancelled before it does
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert tasks["b"].cancelled()
    assert order == ["a", "c"]  # the slot went on to c, not lost with b
    release["c"].set()
    await tasks["c"]


async def test_thousands_of_waiters_that_give_up_leave_the_slots_whole():
    slots = Slots(4)
    order: list[str] = []
    hold = asyncio.Event()
    tasks = [asyncio.ensure_future(_hold(slots, str(k), order, hold)) for k in range(5000)]
    await asyncio.sleep(0)
    assert len(order) == 4
    for t in tasks[4:]:
        t.cancel()
    await asyncio.sleep(0)
    hold.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert order == ["0", "1", "2", "3"]
    late: list[str] = []
    gate = asyncio.Event()
    gate.set()
    await asyncio.gather(*(_hold(slots, n, late, gate) for n in "pqrst"))
    assert late == list("pqrst")
    assert slots._free == 4 and not slots._waiters
