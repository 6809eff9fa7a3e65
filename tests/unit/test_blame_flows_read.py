"""Drops found alone, and the flows a tick reads for them: a busy fleet has one-interval bursts
of drops on a few nodes at most ticks, none ever named; a node whose drops last, on a link its
retransmitting flows have in common, is named with that link from the first interval the hold
lets it be named in, whatever the hold's length (the lossy link is a verdict of the flows of
each interval it was found in: they are read at every tick that finds someone).

A ring of 6 through the live tick's own code (``take_sample``, ``judge_tick``): each node
sends 1 Gbit/s to the next, its sockets as its sampler reports them (test_blame_unread.py's
frames); drops are put on eth0 by the tick.
"""

from __future__ import annotations

from dataclasses import replace

from netui.engine.monitor import judge_tick, take_sample
from netui.model.fleet import Fleet
from netui.model.straggler import find_stragglers
from tests.synth import counters
from tests.unit.test_blame_unread import LOSSY, NAMES, frame

TICKS = 12


class DroppingRing:
    """The ring, its nodes' drops as ``drops(name, step)`` says (drops in that second), and
    how many of its ticks read the fleet's flows."""

    def __init__(self, drops, lossy_flows=frozenset(), retransmits: bool = True) -> None:
        self.drops = drops
        self.lossy_flows = lossy_flows
        self.retransmits = retransmits
        self.fleet = Fleet(NAMES, history_s=60)
        self.dropped = dict.fromkeys(NAMES, 0)
        self.reads = 0
        self.named: list[list[str]] = []
        self.found: list[list[str]] = []  # each interval's findings, before the hold
        self.reasons: dict[str, str] = {}
        read = self.fleet.peer_flows

        def counted():
            self.reads += 1
            return read()

        self.fleet.peer_flows = counted  # type: ignore[method-assign]  # (counts, then reads them as ever)

    def tick(self, step: int) -> list[str]:
        for name in NAMES:
            sample = frame(name, step, lossy_flows=self.lossy_flows)
            if not self.retransmits:  # the node's own TCP counters show no excess
                sample = replace(sample, tcp=frame(name, step, lossy_flows=()).tcp)
            if step:
                self.dropped[name] += self.drops(name, step)
            eth0 = sample.interfaces["eth0"]
            c = eth0.counters
            eth0 = eth0._replace(counters=counters(rx_bytes=c.rx_bytes, tx_bytes=c.tx_bytes, rx_packets=c.rx_packets,
                                                   tx_packets=c.tx_packets, rx_dropped=self.dropped[name]))
            assert take_sample(self.fleet, name, replace(sample, interfaces={**sample.interfaces, "eth0": eth0}))
        judge_tick(self.fleet)
        self.found.append([s.node for s in find_stragglers(self.fleet.nodes.values(), self.fleet.straggler_rules)])
        self.named.append([s.node for s in self.fleet.stragglers])
        for s in self.fleet.stragglers:  # its reason when first named
            self.reasons.setdefault(s.node, s.reason)
        return self.named[-1]


def test_one_interval_bursts_of_drops_on_a_node_at_a_time_name_no_one():
    """A burst of 40 drops in one second, on a different node every second (as a busy fleet's
    nodes have them): each tick finds that node; none is named."""
    ring = DroppingRing(lambda name, step: 40 if NAMES[step % len(NAMES)] == name else 0)
    for step in range(TICKS):
        ring.tick(step)
    assert not any(ring.named), ring.named
    assert ring.found[1:] == [[NAMES[step % len(NAMES)]] for step in range(1, TICKS)]  # each burst found
    assert ring.reads >= TICKS - 1  # (their flows read, as at any tick that finds someone)


def test_drops_found_again_within_the_window_read_the_flows_and_name_the_node_with_its_lossy_link():
    """node3 drops at every second and its link loses (the flows into and out of it
    retransmit; no node's TCP totals stand out, so only its drops find it): from its second
    interval the flows are read, and it is named with what the retransmitting flows have in
    common from the interval it is named in, as when they were read at every tick that found
    someone."""
    ring = DroppingRing(lambda name, step: 40 if name == "node3" else 0, lossy_flows=LOSSY, retransmits=False)
    for step in range(TICKS):
        ring.tick(step)
    assert ring.named[-1] == ["node3"], ring.named
    assert all(n in ([], ["node3"]) for n in ring.named), ring.named
    first = next(i for i, n in enumerate(ring.named) if n)
    assert first <= 3, ring.named  # found at step 1 (the first rates), named at its second interval
    assert "its link is what the 2 retransmitting flows node2→node3, node3→node4 have in common" in ring.reasons["node3"]
    assert ring.reads >= TICKS - first - 1


def test_a_hold_of_one_interval_names_a_dropping_node_with_its_lossy_link_at_once():
    """With ``flag_intervals`` 1 a node is named at the first interval it is found in: its
    link's verdict comes from that interval's flows (its drops start once every flow's
    rates are known)."""
    ring = DroppingRing(lambda name, step: 40 if name == "node3" and step >= 3 else 0, lossy_flows=LOSSY,
                        retransmits=False)
    ring.fleet.straggler_rules = replace(ring.fleet.straggler_rules, flag_intervals=1)
    for step in range(5):
        ring.tick(step)
    assert ring.named[:3] == [[], [], []] and ring.named[3] == ["node3"], ring.named
    assert "its link is what the 2 retransmitting flows" in ring.reasons["node3"]
