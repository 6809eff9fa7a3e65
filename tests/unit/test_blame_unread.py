"""A retransmit straggler is not named while the flows that could make it a victim are not read
yet (model/blame.py, ``waiting_for_flows``): frames of a lossy ring, each node's sockets as its
sampler reports them, through the live tick's own code (``take_sample``, ``judge_tick``).

A ring of 6, each node sending 1 Gbit/s to the next; node3's link loses 2 % each way, so node2
(which sends into it) and node3 (which sends out of it) both retransmit. Once every flow is
read, node3's link is what the two retransmitting flows have in common and node2 is its
victim. Before that, nothing says which of the two is the culprit.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from netui.engine.monitor import judge_tick, take_sample
from netui.model.fleet import Fleet
from netui.model.flows import PeerCounters, PeerSample
from netui.model.node import NodeState
from tests.synth import node_sample

NAMES = [f"node{i}" for i in range(1, 7)]
ADDRESS = {n: f"198.18.0.{i}" for i, n in enumerate(NAMES, 1)}
FLOW = 125e6  # bytes/s each node sends to the next
LOSS = 0.02
SEGMENTS_PER_S = 80_000  # node_sample's OutSegs rate
LOSSY = {("node2", "node3"), ("node3", "node4")}  # the flows through node3's link


def frame(name: str, step: int, sums_from: int = 0, opened: int = 1, lossy_flows=LOSSY):
    """Node ``name``'s frame at ``step`` seconds: the ring's traffic, its retransmits, and its
    sockets as its sampler read them: none before ``opened`` (a job starting: the ring's
    connections open after the first frame), their sums counted from ``sums_from`` (a new
    socket counts from its opening; a sampler's first reading is a baseline). ``lossy_flows``:
    the flows that lose (by default those through node3's link)."""
    i = NAMES.index(name)
    after, before = NAMES[(i + 1) % len(NAMES)], NAMES[i - 1]
    lossy = (name, after) in lossy_flows
    t = step - sums_from
    rows = () if step < opened else (
        PeerCounters(ADDRESS[after], 1, int(FLOW * t), int(FLOW * 0.02 * t),
                     int(LOSS * FLOW / 1448 * t) if lossy else 0, int(FLOW), 200, 200),
        PeerCounters(ADDRESS[before], 1, int(FLOW * 0.02 * t), int(FLOW * t), 0, 0, 200, 200))
    peers = PeerSample(1000.0 + step, sockets=len(rows), peers_seen=len(rows), peers=rows,
                       local_addresses=(ADDRESS[name],))
    sample = node_sample(step, rx_bps=8 * FLOW, tx_bps=8 * FLOW,
                         retrans_per_s=int(LOSS * SEGMENTS_PER_S) if lossy else 0)
    return replace(sample, peers=peers)


def job_start(name: str, step: int, first: int):
    """The ring's connections open after the first frame: new sockets, whole counters."""
    return frame(name, step)


def job_running(name: str, step: int, first: int):
    """netui connects to a job already running: its sampler's first reading (at ``first``)
    is the baseline of the sums."""
    return frame(name, step, sums_from=first, opened=0)


class Ring:
    """The fleet fed tick by tick: each node's frames of the tick, then the tick's judgement."""

    def __init__(self, frame_of=job_start) -> None:
        self.frame_of = frame_of  # (name, step, its first step) → the node's frame
        self.fleet = Fleet(NAMES, history_s=60)
        self.step = -1
        self.first: dict[str, int] = {}  # node → the step of its first frame
        self.held_back: dict[str, list[int]] = {}  # node → the steps of its frames not yet taken
        self.named: list[list[str]] = []  # each tick's stragglers
        self.slowed: list[dict[str, tuple[str, ...]]] = []  # each tick's victims

    def tick(self, late: tuple[str, ...] = (), connecting: tuple[str, ...] = ()) -> list[str]:
        """One tick: every node's frame of it, except ``late`` ones (taken with the next tick
        of theirs) and ``connecting`` ones (no session yet); the stragglers named."""
        self.step += 1
        for name in NAMES:
            if name in connecting:
                continue
            first = self.first.setdefault(name, self.step)
            steps = self.held_back.pop(name, []) + [self.step]
            if name in late:
                self.held_back[name] = steps
                continue
            for step in steps:
                assert take_sample(self.fleet, name, self.frame_of(name, step, first))
        judge_tick(self.fleet)
        self.named.append([s.node for s in self.fleet.stragglers])
        self.slowed.append({v.node: v.slowed_by for v in self.fleet.victims})
        return self.named[-1]

    def story(self) -> str:
        return "\n".join(f"{i}: {n} victims {v}" for i, (n, v) in enumerate(zip(self.named, self.slowed)))


def test_a_sender_into_a_lossy_link_is_not_named_while_a_late_frame_leaves_the_flows_unread():
    """The ring's connections open after the first frame; node4's frame of the next tick comes
    a tick late (a loaded host), so its flows are first read (rates unknown) a tick after the
    others'. node2 is never named; node3 is named at the first tick whose flows are all read,
    with the flows in its reason, and node2 is its victim."""
    ring = Ring()
    ring.tick()  # step 0: no rates yet, no sockets of the ring
    ring.tick()  # step 1: the flows seen for the first time, their rates unknown
    ring.tick(late=("node4",))  # step 2: node4's flows still those of its first reading
    assert ring.tick() == ["node3"], ring.story()  # step 3: node4's two frames: every flow read
    assert "retransmitting flows node2→node3, node3→node4" in ring.fleet.stragglers[0].reason
    for _ in range(4):
        ring.tick()
    assert all(n == ["node3"] for n in ring.named[3:]), ring.story()
    assert all(v == {"node2": ("node3",)} for v in ring.slowed[4:]), ring.story()


def test_a_node_connecting_late_to_a_running_job_leaves_its_flows_unread_and_nobody_is_named_for_it():
    """netui starts while the job runs; node4's session comes up a tick after the others' and
    its second frame is late: its flows' rates are unknown for two ticks while the others'
    are read. node2 is never named, node3 is once node4's flows are read."""
    ring = Ring(job_running)
    ring.tick(connecting=("node4",))  # first frames: no rates yet
    ring.tick()  # node4's first frame: its flows' rates unknown
    ring.tick(late=("node4",))
    assert ring.tick() == ["node3"], ring.story()
    for _ in range(3):
        ring.tick()
    assert not any("node2" in n for n in ring.named), ring.story()
    assert all(n == ["node3"] for n in ring.named[3:]), ring.story()
    assert ring.slowed[-1] == {"node2": ("node3",)}, ring.story()


def test_a_reading_older_than_the_flows_it_misses_leaves_them_unread():
    """node3's frames come on time, but its sampler repeats its reading of before the ring
    opened for two frames (readings are paced by their cost): node2's flow into node3 shows
    at node2's end only, so nothing says yet whose link loses. node2 is never named; node3 is
    once its own reading shows the ring's flows with their rates."""
    def node3_reads_late(name, step, first):
        sample = frame(name, step)
        return replace(sample, peers=frame(name, 0).peers) if name == "node3" and step in (1, 2) else sample

    ring = Ring(node3_reads_late)
    for _ in range(4):  # steps 0-3: node3's reading at step 3 sees the flows (rates unknown)
        assert ring.tick() == [], ring.story()
    assert ring.tick() == ["node3"], ring.story()
    ring.tick()
    assert ring.slowed[-1] == {"node2": ("node3",)}, ring.story()


@pytest.mark.parametrize("late", [(), ("node2",)], ids=["all-on-time", "node2-late"])
def test_the_culprit_is_named_as_soon_as_without_the_wait(late):
    """node3 is named at the second tick with rates, as without the wait: its retransmits go
    to node4, whose flows are read by then; node2's frame coming late (its flows unread, the
    flows node3 only receives) does not delay it. node2 is never named."""
    ring = Ring()
    ring.tick()
    ring.tick()
    assert ring.tick(late=late) == ["node3"], ring.story()
    for _ in range(3):
        assert ring.tick() == ["node3"], ring.story()
    assert ring.slowed[-1] == {"node2": ("node3",)}, ring.story()


def test_a_wait_for_flows_never_read_ends_after_unread_intervals():
    """node4's frames keep repeating its first reading of the ring's sockets (a big node's
    next reading is due later): node3's link cannot be judged. node3, whose retransmits go to
    node4 (neither flagged nor late: nothing there to wait for), is named as soon as without
    the wait; node2, whose retransmits go to node3, waits ``unread_intervals`` intervals, then
    is named as any retransmit straggler is."""
    first = frame("node4", 1).peers

    def stuck(name, step, first_step):
        sample = frame(name, step)
        return replace(sample, peers=first) if name == "node4" and step >= 1 else sample

    ring = Ring(stuck)
    wait = ring.fleet.straggler_rules.unread_intervals
    ring.tick()
    named = [ring.tick() for _ in range(wait + 1)]  # steps 1 .. wait + 1
    assert named[0] == [] and all(n == ["node3"] for n in named[1:wait]), ring.story()
    assert named[wait] == ["node3", "node2"], ring.story()


def test_the_wait_is_bounded_over_a_straggler_flagged_on_and_off():
    """As above, node4's reading stuck, but node2's retransmits dip under the floor every third
    interval (its ratio hovering at it): flagged two intervals of three, it is named after
    ``unread_intervals`` intervals of waiting in all, not waiting afresh after each dip."""
    first = frame("node4", 1).peers

    def stuck_and_dipping(name, step, first_step):
        sample = frame(name, step)
        if name == "node4" and step >= 1:
            sample = replace(sample, peers=first)
        if name == "node2":  # no retransmit in the intervals ending at a multiple of 3
            dips = step // 3
            counters = dict(sample.tcp.tcp, RetransSegs=int(LOSS * SEGMENTS_PER_S) * (step - dips))
            sample = replace(sample, tcp=replace(sample.tcp, tcp=counters))
        return sample

    ring = Ring(stuck_and_dipping)
    wait = ring.fleet.straggler_rules.unread_intervals
    for _ in range(3 * wait):
        ring.tick()
    first = next((i for i, n in enumerate(ring.named) if "node2" in n), None)
    # its flagged intervals: two of every three from step 1; the wait over after ``wait`` of them
    assert first is not None and first <= 1 + (3 * wait + 1) // 2 + 1, ring.story()


# --- a peer whose findings of the interval are still to come (Fleet.update_stragglers ``_late``)

INTO_NODE3 = {("node2", "node3")}  # node2's flow into node3 alone loses: node2 alone retransmits


def _named_at_ticks(frame_of, late_at: int | None = None, connecting_until: int = 0) -> list[list[str]]:
    """The stragglers named at each of 5 ticks of a ring where node2 alone retransmits, into
    node3; node3's frame of tick ``late_at`` comes with its next, and node3 connects at tick
    ``connecting_until``."""
    ring = Ring(frame_of)
    for step in range(5):
        ring.tick(late=("node3",) if step == late_at else (),
                  connecting=("node3",) if step < connecting_until else ())
    return ring.named


def test_a_straggler_waits_a_tick_for_the_peer_it_retransmits_to_whose_frame_is_late():
    """The job runs when netui starts, so every flow is read from the second tick. node2 is
    named at the third tick, its second flagged; but when node3's frame of that tick comes a
    tick late, node3 could still turn out to be the culprit (its flows of the tick unread):
    node2 waits for it and is named when it comes."""
    def running(name, step, first):
        return frame(name, step, sums_from=first, opened=0, lossy_flows=INTO_NODE3)

    assert _named_at_ticks(running)[2:] == [["node2"]] * 3
    assert _named_at_ticks(running, late_at=2)[2:] == [[], ["node2"], ["node2"]]


def test_a_straggler_waits_a_tick_for_the_peer_it_retransmits_to_that_just_connected():
    """node3 connects at the third tick, the one at which node2 would be named, and its first
    frame's sockets were read before the ring opened (readings are paced by their cost): its
    reading shows no flow to wait for, but with no rates yet its findings are still to come.
    node2 waits a tick for them."""
    def node3_reads_before_the_ring(name, step, first):
        sample = frame(name, step, lossy_flows=INTO_NODE3)
        return replace(sample, peers=frame(name, 0).peers) if name == "node3" and step == first else sample

    assert _named_at_ticks(node3_reads_before_the_ring)[2:] == [["node2"]] * 3
    assert _named_at_ticks(node3_reads_before_the_ring, connecting_until=2)[2:] == [[], ["node2"], ["node2"]]
