"""Who to blame, held over time: the culprit among the slow nodes, and one stable name.

``find_stragglers`` judges one interval. On a busy lab that judgement scatters from one
second to the next, and a slow link makes its neighbours slow too. Two rules turn it into an
answer one can act on:

- **Victims.** A node slow both ways (or on its own link, or named by a pair test) slows the
  nodes that exchange data with it, each in the direction that faces it: in a ring the node
  before it sends slowly and the node after it receives slowly. A node slow sending only
  starves its receiver: a node slow receiving only, at the rate the sender sends (within
  20 %), is the sender's victim. While such a *culprit* exists, a node slow in one
  direction only is its victim, ``slowed by acc3`` (``slowed by
  acc3 or acc7`` with several), not a straggler. With the nodes' per-peer flows (``Flows``)
  the rule is exact: a node is a victim when every one of its slow flows is with a culprit,
  whatever the pattern of the traffic; a slow flow with any other node keeps it a straggler.
  Without that match, one-way traffic (iperf3 pairs) says nothing of direction: its slow
  nodes stay stragglers, the sender first.
- **The hold.** A node becomes a straggler once it has been one in ``flag_intervals`` of the
  last ``window_intervals`` intervals and stops after ``clear_intervals`` clean intervals in
  a row (an interval as a victim is clean; ``flag_intervals`` in a row as a victim end it
  sooner: what slows it is known). The count is the node's, not its rule's: TX one
  second and RX the next are two intervals of the same straggler. Victims are held alike.
  Stragglers keep the order in which they became one, so the first one stays first while its
  cause lasts.
- **The wait for flows.** A node flagged for retransmits alone is a victim only once the
  flows say so, and flows arrive with each node's frames, not in the same tick for every
  node. While a node its retransmits may go to could still turn out to be its culprit once
  some flow is read (``waiting_for_flows``), its intervals count but it does not become a
  straggler: it does at the first interval whose flows are read (a victim by then, never),
  or after ``unread_intervals`` such intervals in a row.

Pure: ``HeldStragglers.update`` is fed once per interval; its cost grows with the nodes
found slow, not with the fleet.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import median
from typing import TYPE_CHECKING

from netui.model.straggler import Straggler, StragglerRules

if TYPE_CHECKING:
    from netui.model.fabric_suspects import FabricSuspect

# a flow (sender, receiver) → the uplinks it crosses, each with its way (fabric_suspects.Paths)
Crossing = Callable[[str, str], tuple]

# node → peer node → (tx_bytes_per_s to that peer, rx_bytes_per_s from it, …), over one
# interval; None: unknown (a tuple whose first two items are these, as model.flows.PeerRates)
Flows = Mapping[str, Mapping[str, tuple]]

_DIRECTION = {"tx": 0, "rx": 1}  # a host-plane slow metric → its index in a flow


def victims_of(found: Iterable[Straggler], culprits: Iterable[str] = (), rules: StragglerRules | None = None,
               peers: Flows | None = None, links: Sequence[FabricSuspect] = (),
               crossing: Crossing | None = None) -> dict[str, tuple[str, ...]]:
    """The victims among one interval's stragglers ``found``: node → the culprits it is
    slowed by (sorted by name). ``culprits``: nodes known to be at fault besides those found
    slow both ways this interval (slow links, pair-test suspects, stragglers held). ``peers``:
    per-peer flows in bytes/s (``Flows``); a node whose slow flows they show is judged by
    them, a node they do not cover (or whose flows show nothing slow yet) by direction.
    ``links``: the fabric's suspects (``model.fabric_suspects``), with ``crossing`` the
    uplinks a flow crosses: a slow flow through a suspect is explained by it ("slowed by
    leaf2's uplink"), and so is a node the suspect names without flows."""
    rules = rules or StragglerRules()
    found = list(found)
    if not rules.victims or not found:
        return {}
    links = list(links) if crossing is not None else [l for l in links if not l.flows]

    def through(sender: str, receiver: str) -> list[str]:
        return [l.name for l in links if l.explains(sender, receiver, crossing)] if crossing is not None else []

    known = set(culprits)
    lossy = lossy_links(peers, {s.node for s in found}, rules) if peers else {}
    if links and lossy:  # a lossy uplink, not the node: every flow that named it crosses a suspect
        lossy = {n: th for n, th in lossy.items() if not all(through(a, b) for a, b in th)}
    known |= lossy.keys()  # a link that loses is a culprit as a slow link is
    blamed = known | {s.node for s in found if s.both_ways}
    out: dict[str, tuple[str, ...]] = {}
    reference = _flow_medians(peers, rules) if peers else None
    by_flows: dict[str, set[tuple[str, str]]] = {}  # each slow node's slow flows (sender, receiver), where known
    for s in found:
        flows = peers.get(s.node) if peers else None
        if flows is not None and reference is not None and s.slow:
            by = _slow_flows_with(s, flows, reference, rules)
            if by:
                by_flows[s.node] = by
    for s in found:
        if s.node in known or not s.slow:
            continue
        pairs = by_flows.get(s.node)
        if pairs is not None:
            causes: set[str] = set()
            for a, b in pairs:
                other = b if a == s.node else a
                named = through(a, b)
                if not named and other not in blamed - {s.node}:
                    break  # a slow flow nothing explains: it stays a straggler
                causes.update(named or (other,))
            else:
                out[s.node] = tuple(sorted(causes))
        elif (fabric := [l.name for l in links if s.node in l.nodes]) and not s.both_ways:
            out[s.node] = tuple(sorted(fabric))
        elif blamed and s.two_way and not s.both_ways and s.node not in blamed:
            out[s.node] = tuple(sorted(blamed))
    # no culprit for it: a receiver starved by a slow sender, slow in RX only from a node slow
    # in TX only; the sender is the cause, as its own link is what a tbf or a bad port slows
    # first. With flows, every slow flow it receives comes from such a sender; without, the
    # rates match (within 20 %: one flow seen at its two ends)
    senders = {s.node: s for s in found if s.slow in (("tx",), ("rdma_tx",)) and s.node not in out}
    for s in found if senders else ():
        if s.node in out or s.node in known or s.slow not in (("rx",), ("rdma_rx",)):
            continue
        pairs = by_flows.get(s.node)
        flows_by = None if pairs is None else {a if b == s.node else b for a, b in pairs}
        if flows_by is not None:
            if all(p in senders and senders[p].slow[0] == "tx" for p in flows_by) and s.slow[0] == "rx":
                out[s.node] = tuple(sorted(flows_by))
            continue
        if peers and s.node in peers and s.slow[0] == "rx":
            continue  # the flows said nothing slow: not matched by rate either
        by = {t.node for t in senders.values() if t.slow[0][:-2] == s.slow[0][:-2] and t.node != s.node
              and _same_flow(t.value, s.value)}
        if by:
            out[s.node] = tuple(sorted(by))
    # retransmits only (no slow direction): a sender into a culprit's congested link
    # retransmits; with flows, a node whose retransmits are all on flows with culprits is
    # their victim. Without flows nothing says where they go: it stays a straggler
    causes = blamed | {c for by in out.values() for c in by}
    for s in found if peers and (causes or links) else ():
        if not retransmits_only(s) or s.node in out or s.node in known:
            continue
        flows = peers.get(s.node)
        by = _retransmitting_with(flows) if flows is not None else set()
        named: set[str] = set()
        for p in by:  # its retransmits are on the data it sends to p
            cause = through(s.node, p) or ([p] if p in causes - {s.node} else [])
            if not cause:
                break
            named.update(cause)
        else:
            if by:
                out[s.node] = tuple(sorted(named))
    for s in found if links else ():  # an excess only: the suspects that name it
        if s.node in out or s.node in known or s.slow:
            continue
        # retransmits without flows (else they were judged above); pause frames and CNPs on
        # the nodes of a leaf paused as a whole (the RDMA rule)
        fabric = [l.name for l in links if s.node in l.nodes and (
            s.metric == "retrans" and not (peers and s.node in peers)
            or l.kind == "leaf" and s.metric in ("pause", "cnp"))]
        if fabric:
            out[s.node] = tuple(sorted(fabric))
    return out


SEGMENT_BYTES = 1448  # a TCP segment's payload on a 1500-byte MTU: a flow's bytes/s → segments/s

VOTE_MARGIN = 1.25  # a link named by votes has this many times those of each link beside it


def lossy_links(peers: Flows, flagged: Iterable[str], rules: StragglerRules | None = None
                ) -> dict[str, tuple[tuple[str, str], ...]]:
    """The nodes whose own link the retransmitting flows have in common: node → those flows
    (sender, receiver), sorted. A flow between watched nodes retransmits when its sender's
    retransmits reach ``min_retrans_ratio`` of the segments it sends; each such flow votes
    for the links at its two ends with that ratio (as fault-localization systems vote along a
    flow's path, the flows that lose most weigh most). A node among ``flagged`` (found this
    interval) is named when at least two flows vote for its link and its votes are
    ``VOTE_MARGIN`` times those of every node it shares one with: one flow, or a near tie,
    says nothing of which link loses, and neither do flows whose rates are not known yet
    (the first reading of a new flow): the node or a partner with one is not named."""
    rules = rules or StragglerRules()
    flows: dict[tuple[str, str], float] = {}
    unknown = set()  # nodes with a flow whose rates are not known yet (new, or a counter reset)
    for a, fl in peers.items():
        for b, f in fl.items():
            if _unknown(f):
                unknown.add(a)
            elif len(f) > 3 and f[3] > 0 and f[0]:
                ratio = f[3] / (f[0] / SEGMENT_BYTES)
                if ratio >= rules.min_retrans_ratio:
                    flows[a, b] = ratio
    if len(flows) < 2:
        return {}
    votes: dict[str, float] = {}
    count: dict[str, int] = {}
    for (a, b), ratio in flows.items():
        for end in (a, b):
            votes[end] = votes.get(end, 0.0) + ratio
            count[end] = count.get(end, 0) + 1
    out = {}
    for node in set(flagged):
        if count.get(node, 0) < 2 or node in unknown:
            continue
        through = [f for f in flows if node in f]
        partners = {b if a == node else a for a, b in through}
        if partners & unknown:
            continue  # a flow beside it not read yet may be what decides (a job just started)
        if all(votes[node] >= VOTE_MARGIN * votes[p] for p in partners):
            out[node] = tuple(sorted(through))
    return out


def lossy_reason(through: tuple[tuple[str, str], ...]) -> str:
    """What a lossy link's straggler adds to its reason: the flows that name it."""
    shown = ", ".join(f"{a}→{b}" for a, b in through[:4]) + (" …" if len(through) > 4 else "")
    return f"; its link is what the {len(through)} retransmitting flows {shown} have in common"


def _same_flow(a: float, b: float) -> bool:
    """Two rates (bytes/s) that one flow can be, seen at its two ends: within 20 %."""
    return a > 0 and b > 0 and max(a, b) <= 1.25 * min(a, b)


def carries(flow: tuple, i: int, rules: StragglerRules) -> bool:
    """Whether a flow carries data in direction ``i`` (0 TX, 1 RX): some, and at least
    ``symmetric_ratio`` of the other way (else it is only the ACKs of the other way's data)."""
    v, other = flow[i], flow[1 - i]
    return v is not None and v > 0 and (other is None or v >= rules.symmetric_ratio * other)


def _flow_medians(peers: Flows, rules: StragglerRules) -> tuple[float, float]:
    """The median flow that carries data, TX and RX (bytes/s), over every node's peers."""
    tx = [f[0] for flows in peers.values() for f in flows.values() if carries(f, 0, rules)]
    rx = [f[1] for flows in peers.values() for f in flows.values() if carries(f, 1, rules)]
    return (median(tx) if tx else 0.0, median(rx) if rx else 0.0)


def _slow_flows_with(s: Straggler, flows: Mapping[str, tuple], reference: tuple[float, float],
                     rules: StragglerRules) -> set[tuple[str, str]]:
    """Node ``s.node``'s slow flows (sender, receiver) in a direction it is slow in: a flow
    carrying data that way at under ``slow_fraction`` of the median flow that way. A
    host-plane judgement (RDMA has no socket)."""
    out: set[tuple[str, str]] = set()
    for metric in s.slow:
        i = _DIRECTION.get(metric)
        if i is None or reference[i] <= 0:
            continue
        bar = rules.slow_fraction * reference[i]
        for peer, flow in flows.items():
            if carries(flow, i, rules) and flow[i] < bar:
                out.add((s.node, peer) if i == 0 else (peer, s.node))
    return out


def _unknown(flow: tuple) -> bool:
    """A flow whose rates are not known yet: the first reading of it (a connection just
    opened, its node just connected), or a counter that went back (a sampler started again)."""
    return flow[0] is None or (len(flow) > 3 and flow[3] is None)


def retransmits_only(s: Straggler) -> bool:
    """Flagged for TCP retransmits alone, no direction slow: a victim only by its flows."""
    return s.metric == "retrans" and not s.slow


def waiting_for_flows(found: Iterable[Straggler], peers: Flows, late: Collection[str] = (),
                      readers: Collection[str] | None = None) -> set[str]:
    """The nodes among ``found`` flagged for retransmits alone whose verdict waits for flows
    not read yet: their retransmits may go to an *undecided* node, one that could still turn
    out to be their culprit (``lossy_links``) once those flows are read.

    A flow is *unread* while its rates are unknown at one end (``_unknown``), or while one
    end's reading shows it and the other end's does not, that end being among ``readers``
    (nodes whose reading lists every peer it saw; None: the nodes of ``peers``): that reading
    is older than the flow. The ``late`` nodes, whose findings of this interval are still to
    come (no frame since the last interval, or no rates yet), count as unread. A node among
    ``found`` or ``late`` is undecided when it, or a node it exchanges flows with (either
    end's reading shows one), has an unread flow: ``lossy_links`` judges a node's link only
    when every flow beside it is read. A node's retransmits may go to a peer when its own
    reading of their flow retransmitted or has unknown rates, or does not show a flow that
    the peer's reading does (as ``victims_of`` reads them)."""
    retransmitting = [s.node for s in found if retransmits_only(s)]
    if not retransmitting:
        return set()
    if readers is None:
        readers = peers.keys()
    talks: dict[str, set[str]] = {}
    unread = set(late)
    for a, flows in peers.items():
        for b, f in flows.items():
            talks.setdefault(a, set()).add(b)
            talks.setdefault(b, set()).add(a)
            if _unknown(f) or (b in readers and a not in peers.get(b, ())):
                unread.update((a, b))
    if not unread:
        return set()
    nobody: set[str] = set()
    undecided = {n for n in {s.node for s in found}.union(late)
                 if n in unread or not talks.get(n, nobody).isdisjoint(unread)}
    out = set()
    for x in retransmitting:
        mine = peers.get(x, {})
        to = {p for p, f in mine.items() if _unknown(f) or (len(f) > 3 and f[3] > 0)}
        to.update(p for p in talks.get(x, nobody) if p not in mine)  # (read at the peer's end only)
        if any(p != x and p in undecided for p in to):
            out.add(x)
    return out


def _retransmitting_with(flows: Mapping[str, tuple]) -> set[str]:
    """The peers of a node's flows that retransmitted this interval (retransmits/s, the
    fourth item of a ``PeerRates``)."""
    return {peer for peer, flow in flows.items() if len(flow) > 3 and flow[3] is not None and flow[3] > 0}


@dataclass(slots=True)
class _Track:
    """One node's recent intervals: as a straggler, as a victim. A window is the last
    window_intervals intervals as the bits of an int, the newest lowest (``_push``)."""

    flagged: int = 0  # a straggler in each interval of the window
    victim: int = 0
    clean: int = 0  # intervals in a row not a straggler
    unslowed: int = 0  # intervals in a row not a victim
    held: bool = False
    held_victim: bool = False
    onset: tuple[int, int] = (0, 0)  # when it became a straggler (the order of the stragglers)
    culprit_window: int = 0  # a culprit (below), the same intervals
    culprit: int = 0  # intervals of the window in which it was slow both ways or slowed another
    blamed: bool = False  # held, and a culprit in an interval of the window
    last: Straggler | None = None  # its latest finding as a straggler
    last_victim: Straggler | None = None  # its latest finding as a victim (with slowed_by)
    slowed_run: int = 0  # intervals in a row as a victim
    lossy: tuple = ()  # the retransmitting flows that named its link (lossy_links), ...
    lossy_at: int = -1_000_000  # ... at this interval: said while within the window
    waited: int = 0  # intervals a straggler waited for flows (waiting_for_flows) since it was last named or clean

    def idle(self) -> bool:
        return not (self.held or self.held_victim or self.flagged or self.victim)


def _push(window: int, value: bool, mask: int) -> int:
    """The window (bits, the newest lowest) with ``value`` the newest interval, the oldest
    beyond ``mask`` (the window's length of ones) let go; ``.bit_count()`` its count."""
    return ((window << 1) | value) & mask


class HeldStragglers:
    """Stragglers and victims held over intervals (the module's rules)."""

    def __init__(self, rules: StragglerRules | None = None) -> None:
        self.rules = rules or StragglerRules()
        self._tracks: dict[str, _Track] = {}
        self._ticks = 0  # intervals fed
        self.stragglers: list[Straggler] = []  # held, in the order they became stragglers
        self.victims: list[Straggler] = []  # held, each with its ``slowed_by``

    def update(self, found: list[Straggler], culprits: Iterable[str] = (), peers: Flows | None = None,
               links: Sequence[FabricSuspect] = (), crossing: Crossing | None = None,
               late: Collection[str] = (), readers: Collection[str] | None = None
               ) -> tuple[list[Straggler], list[Straggler]]:
        """One more interval whose stragglers are ``found`` (``find_stragglers``): the held
        stragglers and the held victims. ``culprits``, ``peers``, ``links`` and ``crossing``
        as for ``victims_of``; the stragglers held that were slow both ways in the window are
        culprits too. ``late`` and ``readers`` as for ``waiting_for_flows``: a node that
        waits for flows this interval does not become a straggler in it (the module's rules)."""
        rules = self.rules
        n = max(1, rules.window_intervals)
        mask = (1 << n) - 1  # a window of n intervals (_push)
        k = min(max(1, rules.flag_intervals), n)
        m = max(1, rules.clear_intervals)
        tracks = self._tracks
        known = set(culprits) | {name for name, t in tracks.items() if t.blamed}
        slowed = victims_of(found, known, rules, peers, links, crossing)
        causes = {c for by in slowed.values() for c in by}
        lossy = lossy_links(peers, {s.node for s in found}, rules) if peers and rules.victims else {}
        waiting = waiting_for_flows(found, peers, late, readers) if peers and rules.victims else set()
        if lossy and links and crossing is not None:  # (as victims_of: a lossy uplink, not the node)
            lossy = {name: th for name, th in lossy.items()
                     if not all(any(l.explains(a, b, crossing) for l in links) for a, b in th)}
        now = {s.node: s for s in found}
        rank = {name: i for i, name in enumerate(now)}  # this interval's worst first
        for name in now:
            if name not in tracks:
                tracks[name] = _Track()
        self._ticks += 1
        for name, through in lossy.items():
            tracks[name].lossy, tracks[name].lossy_at = through, self._ticks
        for name, s in now.items():  # a lossy link says so while within the window (a reading
            t = tracks[name]  # whose flows fell under the bar, or missed it, changes nothing)
            if t.lossy and self._ticks - t.lossy_at < n:
                now[name] = replace(s, reason=s.reason + lossy_reason(t.lossy),
                                    headline=s.headline.replace(": ", "'s link: ", 1))
        for name, t in list(tracks.items()):
            s = now.get(name)
            by = slowed.get(name)
            straggler = s is not None and by is None
            t.flagged = _push(t.flagged, straggler, mask)
            flagged = t.flagged.bit_count()
            t.victim = _push(t.victim, by is not None, mask)
            # a culprit this interval: slow both ways, or the cause of another's slowness
            culprit = s is not None and (s.both_ways or name in causes or name in lossy)
            t.culprit_window = _push(t.culprit_window, culprit, mask)
            t.culprit = t.culprit_window.bit_count()
            if straggler:
                t.last, t.clean = s, 0
            else:
                t.clean += 1
            # (its intervals count meanwhile: named at the first one whose flows are read). The
            # intervals waited add up while it is a straggler, not held: one flagged on and off
            # does not wait afresh after each interval under the floor
            waiting_now = straggler and name in waiting
            if waiting_now:
                t.waited += 1
            waits = waiting_now and t.waited <= rules.unread_intervals
            if by is not None:
                t.last_victim, t.unslowed = replace(s, slowed_by=by), 0
                t.slowed_run += 1
            else:
                t.unslowed += 1
                t.slowed_run = 0
            if not t.held and flagged >= k and straggler and not waits:
                t.held = True
                # in the order they became stragglers; at one interval, that interval's order
                t.onset = (self._ticks, rank.get(name, len(rank)))
            elif t.held and (t.clean >= m or t.slowed_run >= k):
                # clean long enough, or a victim k intervals in a row: what slows it is known
                # (as when its flows are first read, a few intervals after they opened)
                t.held = t.blamed = False
            if t.held or t.clean >= m:  # named, or clean long enough: a later wait starts afresh
                t.waited = 0
            # a culprit while held and a culprit in the window: a name the flows moved to
            # another node (a job's flows read one by one as they open) is not kept
            t.blamed = t.held and t.culprit > 0
            victim_count = t.victim.bit_count()
            if not t.held_victim and victim_count >= k:
                t.held_victim = True
            elif t.held_victim and t.unslowed >= m:
                t.held_victim = False
            if t.idle():
                del tracks[name]
        held = sorted((t for t in tracks.values() if t.held), key=lambda t: t.onset)
        self.stragglers = [t.last for t in held if t.last is not None]
        self.victims = [t.last_victim for t in tracks.values()
                        if t.held_victim and not t.held and t.last_victim is not None]
        self.victims.sort(key=lambda s: s.node)
        return self.stragglers, self.victims
