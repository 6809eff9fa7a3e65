"""The link when it is a link: a leaf's uplink named live, its end nodes not named for it.

The straggler rules compare nodes. A slow uplink makes the nodes whose flows cross it slow
too, each in the direction that crosses it, and none of them is at fault. With a topology
(``model.topology``) and the nodes' per-peer flows (``blame.Flows``), two rules name the
uplink instead, as datacenter fault-localization systems do along a flow's path:

- **Full.** A leaf's uplink certainly carries ``FULL_SHARE`` (80 %) of its capacity one way
  (the low bound of ``model.leafload`` from host counters, or the flows between watched nodes
  that cross it, payload only: no switch is read), and the flows
  that cross it that way are slow next to the flows that do not cross it (their median
  under ``slow_fraction`` of the others'): the uplink is what holds them. An uplink that is
  full while its flows keep the pace of the others is busy, not at fault, and is not named;
  with no other flow to compare with nothing is said. Without flows (a source that reads no
  sockets), the leaf's nodes found slow the way the uplink is full stand for its flows.
- **Votes.** Each slow flow (a flow carrying data at under ``slow_fraction`` of the median
  flow) votes for the links on its path, node↔leaf↔…↔leaf↔node; so does each flow that
  retransmits (``min_retrans_ratio`` of its segments), in a tally of its own, with its ratio.
  An uplink is named when at least two flows vote for it and its votes are ``VOTE_MARGIN``
  times those of every other link on their paths, node links included: one flow, or a tie
  (two leaves: every cross-leaf flow crosses both uplinks), says nothing of which link it
  is, and a leaf with one node cannot tell its node from its uplink (the node is named, by
  the straggler rules).

A suspect's flows (and, without flows, its nodes) are explained by it: their end nodes are its
victims, ``slowed by leaf2 uplink`` (``model.blame``). Suspects are held as stragglers are
(``HeldSuspects``). RDMA traffic has no socket: for it, the leaves are compared by their
nodes' pause frames, CNPs and transmit waits (``paused_leaves``), as nodes are compared with
nodes.

Pure: no I/O; the cost grows with the flows of the fleet's busy leaves, read only when a
node is slow or an uplink full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from statistics import median

from netui.model import units
from netui.model.blame import SEGMENT_BYTES, VOTE_MARGIN, Flows, carries
from netui.model.leafload import LeafLoad
from netui.model.straggler import MAD_TO_SIGMA, Straggler, StragglerRules

# "near capacity": what the uplink certainly carries, as a share of it. A flow's rate is its
# payload (a 200 Mbit/s link carries ~190 Mbit/s of it) read over another interval than the
# interface counters: the bar leaves room for both, the slow flows being the evidence
FULL_SHARE = 0.8
LEAVING, ENTERING = "leaving", "entering"  # an uplink's two ways, seen from its leaf


@dataclass(frozen=True)
class FabricSuspect:
    """A leaf's uplink named as the short plank (``kind`` "uplink"; the RDMA rule names a
    leaf, ``kind`` "leaf"). ``ways``: the ways it holds traffic back ("leaving", "entering");
    ``flows``: the flows it explains (sender, receiver); ``nodes``: the nodes it slows (the
    end nodes of those flows, or without flows the leaf's slow nodes); ``share``: the part
    of its capacity it certainly carries the fullest way, when the "full" rule named it."""

    switch: str
    kind: str
    ways: tuple[str, ...]
    flows: tuple[tuple[str, str], ...]
    nodes: tuple[str, ...]
    reason: str
    headline: str
    share: float | None = None
    rule: str = "full"  # "full", "slow flows", "retransmits", "pause"

    @property
    def short(self) -> str:
        """A few words for a narrow column: "full uplink ↑97 %", "slow uplink"."""
        if self.kind != "uplink":
            return self.headline.split(": ", 1)[-1].split(",")[0]
        if self.rule == "full":
            return f"full uplink {self.headline.split(': ', 1)[-1].split(' of ')[0]}"
        return "slow uplink" if self.rule == "slow flows" else "lossy uplink"

    @property
    def name(self) -> str:
        """"leaf2 uplink", or "leaf2" for a leaf (the RDMA rule)."""
        return f"{self.switch} uplink" if self.kind == "uplink" else self.switch

    def explains(self, sender: str, receiver: str, crossing: Callable[[str, str], tuple]) -> bool:
        """Whether the flow sender → receiver goes through this suspect uplink (``crossing``:
        a flow → its (uplink, way) pairs), either way: a slow flow across a suspect link is
        its flow, as the one link that explains every slow flow is the answer (a flow the
        other way through a full uplink collapses under its losses as often as not)."""
        if self.kind != "uplink":
            return False
        return any(s == self.switch for s, _ in crossing(sender, receiver))


@dataclass(frozen=True)
class _Flow:
    sender: str
    receiver: str
    rate: float  # bytes/s of data
    retrans_ratio: float | None  # retransmitted segments / segments sent; None: not known


class Paths:
    """The uplinks a flow crosses, each with its way, from a topology: ``leaf_of(node)`` (a
    watched node's leaf, None when not placed) and ``parent_of(switch)`` (the switch its
    uplink goes to, None for a root). Cached per pair of leaves."""

    def __init__(self, leaf_of: Callable[[str], str | None], parent_of: Callable[[str], str | None]) -> None:
        self.leaf_of = leaf_of
        self.parent_of = parent_of
        self._cache: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
        self._leaf: dict[str, str | None] = {}

    def leaf(self, node: str) -> str | None:
        if node not in self._leaf:
            self._leaf[node] = self.leaf_of(node)
        return self._leaf[node]

    def _up(self, leaf: str) -> list[str]:
        chain, seen = [leaf], {leaf}
        while (parent := self.parent_of(chain[-1])) is not None and parent not in seen:
            chain.append(parent)
            seen.add(parent)
        return chain

    def crossing(self, sender: str, receiver: str) -> tuple[tuple[str, str], ...]:
        """(switch, way) for each uplink the flow crosses: the sender's side leaving, the
        receiver's side entering; () within a leaf or when either end is not placed."""
        la, lb = self.leaf(sender), self.leaf(receiver)
        if la is None or lb is None or la == lb:
            return ()
        key = (la, lb)
        hit = self._cache.get(key)
        if hit is None:
            up_a, up_b = self._up(la), self._up(lb)
            on_b = set(up_b)
            top = next((s for s in up_a if s in on_b), None)
            a_side = up_a if top is None else up_a[:up_a.index(top)]
            b_side = up_b if top is None else up_b[:up_b.index(top)]
            hit = tuple((s, LEAVING) for s in a_side) + tuple((s, ENTERING) for s in b_side)
            self._cache[key] = hit
        return hit


def data_flows(peers: Flows, rules: StragglerRules) -> list[_Flow]:
    """Every flow between watched nodes that carries data, seen at its sender (where its
    retransmits are counted), or at its receiver when the sender's reading is missing."""
    out: dict[tuple[str, str], _Flow] = {}
    for a, fl in peers.items():
        for b, f in fl.items():
            if carries(f, 0, rules):
                retrans = f[3] if len(f) > 3 else None
                ratio = None if retrans is None else retrans / (f[0] / SEGMENT_BYTES)
                out[a, b] = _Flow(a, b, f[0], ratio)
    for b, fl in peers.items():  # b receives from a
        for a, f in fl.items():
            if (a, b) not in out and a not in peers and carries(f, 1, rules):
                out[a, b] = _Flow(a, b, f[1], None)
    return list(out.values())


def _words_share(share: float) -> str:
    return f"{min(share, 9.99) * 100:.0f} %"


def _flows_words(flows: Sequence[tuple[str, str]]) -> str:
    shown = ", ".join(f"{a}→{b}" for a, b in flows[:3]) + (" …" if len(flows) > 3 else "")
    return f"{len(flows)} flow{'s' if len(flows) != 1 else ''} {shown}"


def _full_uplinks(loads: Iterable[LeafLoad], flows: list[_Flow], paths: Paths, found: Sequence[Straggler],
                  rules: StragglerRules) -> dict[str, FabricSuspect]:
    out: dict[str, FabricSuspect] = {}
    crossing = {(f.sender, f.receiver): paths.crossing(f.sender, f.receiver) for f in flows}
    for load in loads:
        capacity = load.capacity_bytes_per_s
        if not load.leaf or not capacity:
            continue
        # per way it is full and at fault: (way, share, flows, nodes, pace of its flows or None)
        held: list[tuple[str, float, list[tuple[str, str]], list[str], float | None]] = []
        ref = 0.0
        for way, bound in ((LEAVING, load.leaving), (ENTERING, load.entering)):
            across = [f for f in flows if (load.leaf, way) in crossing[f.sender, f.receiver]]
            # what it certainly carries: the counters' low bound, or the flows between watched
            # nodes that cross it (a ring keeps a leaf's TX and RX equal: the bound says 0 there)
            low = max(bound.share(capacity)[0] if bound is not None else 0.0,
                      sum(f.rate for f in across) / capacity)
            if low < FULL_SHARE:
                continue
            if across:
                others = [f.rate for f in flows if (load.leaf, way) not in crossing[f.sender, f.receiver]]
                if not others:
                    continue  # every flow crosses it: nothing to compare with
                mid, ref = median(f.rate for f in across), median(others)
                if mid >= rules.slow_fraction * ref:
                    continue  # full, and its flows keep the pace of the others: busy, not at fault
                named = sorted((f.sender, f.receiver) for f in across)
                held.append((way, low, named, sorted({n for pair in named for n in pair}), mid / ref))
            else:
                # no flow known across it: the leaf's nodes found slow that way stand for them
                if flows and any(load.leaf in (paths.leaf(f.sender), paths.leaf(f.receiver)) for f in flows):
                    continue  # (flows of the leaf are known, and none crosses it that way)
                metric = "tx" if way == LEAVING else "rx"
                slow = sorted(s.node for s in found if metric in s.slow and paths.leaf(s.node) == load.leaf)
                if slow:
                    held.append((way, low, [], slow, None))
        if not held:
            continue
        gbps = units.bits_per_s(capacity)
        shares = " ".join(f"{'↑' if way == LEAVING else '↓'}{_words_share(low)}" for way, low, *_ in held)
        ways = tuple(way for way, *_ in held)
        named = sorted({pair for *_, pairs, _, _ in held for pair in pairs})
        nodes = sorted({n for *_, ns, _ in held for n in ns})
        paces = [pace for *_, pace in held if pace is not None]
        if named:
            pace = max(paces)
            evidence = (f"its {_flows_words(named)} at {_words_share(pace)} of the median flow "
                        f"{units.bits_per_s(ref)} that does not cross it")
            short = f"flows across at {_words_share(pace)}"
        else:
            evidence = f"its nodes {', '.join(nodes[:3])}{' …' if len(nodes) > 3 else ''} slow that way"
            short = f"slow {', '.join(nodes[:2])}"
        way_words = "both ways" if len(ways) == 2 else f"{ways[0]} the leaf"
        out[load.leaf] = FabricSuspect(
            load.leaf, "uplink", ways, tuple(named), tuple(nodes),
            f"{load.leaf}'s uplink is full {way_words}: {shares} of its {gbps} at least; {evidence}",
            f"{load.leaf} uplink: {shares} of {gbps}, {short}", max(low for _, low, *_ in held))
    return out


def _voted(flows: list[tuple[_Flow, float]], paths: Paths, rule: str) -> dict[str, FabricSuspect]:
    """The uplinks ``flows`` (each with its weight) have in common (the module's vote)."""
    if len(flows) < 2:
        return {}
    votes: dict[tuple, float] = {}
    count: dict[tuple, int] = {}
    links_of = []
    for f, weight in flows:
        links = [("node", f.sender), ("node", f.receiver)]
        links += [("up", s) for s, _ in paths.crossing(f.sender, f.receiver)]
        links_of.append((f, links))
        for link in links:
            votes[link] = votes.get(link, 0.0) + weight
            count[link] = count.get(link, 0) + 1
    out: dict[str, FabricSuspect] = {}
    for link, n in count.items():
        if link[0] != "up" or n < 2:
            continue
        through = [(f, links) for f, links in links_of if link in links]
        beside = {other for _, links in through for other in links if other != link}
        if not all(votes[link] >= VOTE_MARGIN * votes[other] for other in beside):
            continue
        switch = link[1]
        named = sorted((f.sender, f.receiver) for f, _ in through)
        ways = sorted({w for f, _ in through for s, w in paths.crossing(f.sender, f.receiver) if s == switch})
        nodes = sorted({x for pair in named for x in pair})
        what = "slow" if rule == "slow flows" else "retransmitting"
        out[switch] = FabricSuspect(
            switch, "uplink", tuple(ways), tuple(named), tuple(nodes),
            f"{switch}'s uplink is what the {what} {_flows_words(named)} have in common "
            f"(no node link or other uplink is on as many of them)",
            f"{switch} uplink: common to {len(named)} {what} flows", None, rule)
    return out


def fabric_suspects(loads: Iterable[LeafLoad], peers: Flows | None, paths: Paths,
                    found: Sequence[Straggler] = (), rules: StragglerRules | None = None) -> list[FabricSuspect]:
    """This interval's suspect uplinks (the module's rules), by switch name; the "full"
    rule's first, then the votes' (an uplink both name is said once, by the first)."""
    rules = rules or StragglerRules()
    loads = list(loads)
    flows = data_flows(peers, rules) if peers else []
    out = _full_uplinks(loads, flows, paths, found, rules)
    if len(flows) >= 3:
        ref = median(f.rate for f in flows)
        slow = [(f, 1.0) for f in flows if f.rate < rules.slow_fraction * ref]
        lossy = [(f, f.retrans_ratio) for f in flows
                 if f.retrans_ratio is not None and f.retrans_ratio >= rules.min_retrans_ratio]
        for rule, voters in (("slow flows", slow), ("retransmits", lossy)):
            for switch, s in _voted(voters, paths, rule).items():
                out.setdefault(switch, s)
    return list(out.values())


# --- RDMA: leaves compared by their nodes' pause frames, CNPs and transmit waits --------------

@dataclass(frozen=True)
class LeafPressure:
    """A leaf's RDMA back-pressure over one interval: its nodes' sums (per second)."""

    leaf: str
    nodes: tuple[str, ...]
    pause_per_s: float
    cnp_per_s: float
    xmit_wait_per_s: float


def paused_leaves(pressure: Sequence[LeafPressure], rules: StragglerRules | None = None) -> list[FabricSuspect]:
    """The leaves whose nodes are paused (or congestion-notified, or waiting to transmit) far
    more than the other leaves' — as nodes are compared with nodes: above the leaves' median
    by ``robust_z`` robust standard deviations, and bad in itself (``min_pause_per_s`` a node,
    ``min_cnp_per_s`` a node). With fewer than three leaves nothing is compared."""
    rules = rules or StragglerRules()
    if len(pressure) < 3:
        return []
    out: dict[str, FabricSuspect] = {}
    for attr, floor, words in (("pause_per_s", rules.min_pause_per_s, "pause frames"),
                               ("cnp_per_s", rules.min_cnp_per_s, "CNPs"),
                               ("xmit_wait_per_s", None, "transmit waits")):
        values = [getattr(p, attr) for p in pressure]
        mid = median(values)
        spread = max(median(abs(v - mid) for v in values) * MAD_TO_SIGMA, abs(mid) * 0.05, 1e-12)
        for p, v in zip(pressure, values):
            per_node = v / max(1, len(p.nodes))
            if floor is not None and per_node < floor:
                continue
            if floor is None and (v <= 0 or mid > 0 and v < 10 * mid):
                continue  # a wait has no bad-in-itself unit: ten times the median leaf at least
            if (v - mid) / spread < rules.robust_z or p.leaf in out:
                continue
            rate = f"{v:,.0f}/s"
            out[p.leaf] = FabricSuspect(
                p.leaf, "leaf", (ENTERING,), (), p.nodes,
                f"{p.leaf}: its {len(p.nodes)} nodes see {rate} {words}, the leaves' median {mid:,.0f}/s "
                f"(RDMA back-pressure from the fabric, not from one node)",
                f"{p.leaf}: {words} {rate}, leaves' median {mid:,.0f}/s", None, "pause")
    return list(out.values())


# --- the hold -----------------------------------------------------------------------------------

@dataclass
class _Track:
    seen: list[bool] = field(default_factory=list)
    clean: int = 0
    held: bool = False
    onset: int = 0
    last: FabricSuspect | None = None
    # when each way, flow and node was last named: a suspect explains what it named within
    # the window (a flow whose reading was missing one interval is still its flow)
    ways: dict[str, int] = field(default_factory=dict)
    flows: dict[tuple[str, str], int] = field(default_factory=dict)
    nodes: dict[str, int] = field(default_factory=dict)

    def standing(self, now: int, window: int) -> FabricSuspect | None:
        if self.last is None:
            return None
        for seen in (self.ways, self.flows, self.nodes):
            for key in [k for k, at in seen.items() if now - at >= window]:
                del seen[key]
        return replace(self.last, ways=tuple(sorted(self.ways)), flows=tuple(sorted(self.flows)),
                       nodes=tuple(sorted(self.nodes)))


class HeldSuspects:
    """Suspects held as stragglers are (``StragglerRules``: named once one in
    ``flag_intervals`` of the last ``window_intervals`` intervals, cleared after
    ``clear_intervals`` intervals in a row without), first named first."""

    def __init__(self, rules: StragglerRules | None = None) -> None:
        self.rules = rules or StragglerRules()
        self._tracks: dict[str, _Track] = {}
        self._ticks = 0
        self.suspects: list[FabricSuspect] = []
        self._standing: dict[str, FabricSuspect | None] = {}

    def update(self, found: Iterable[FabricSuspect]) -> list[FabricSuspect]:
        rules = self.rules
        n = max(1, rules.window_intervals)
        k = min(max(1, rules.flag_intervals), n)
        m = max(1, rules.clear_intervals)
        self._ticks += 1
        now = {s.switch: s for s in found}
        for name in now:
            self._tracks.setdefault(name, _Track())
        for name, t in list(self._tracks.items()):
            s = now.get(name)
            t.seen.append(s is not None)
            if len(t.seen) > n:
                del t.seen[0]
            if s is not None:
                # a rule that names it one interval and another the next: the same suspect
                t.last, t.clean = s, 0
                for seen, keys in ((t.ways, s.ways), (t.flows, s.flows), (t.nodes, s.nodes)):
                    seen.update(dict.fromkeys(keys, self._ticks))
            else:
                t.clean += 1
            if not t.held and sum(t.seen) >= k:
                t.held, t.onset = True, self._ticks
            elif t.held and t.clean >= m:
                t.held = False
            if not t.held and not any(t.seen):
                del self._tracks[name]
        self._standing = {name: t.standing(self._ticks, n) for name, t in self._tracks.items()}
        held = sorted((t for t in self._tracks.values() if t.held and t.last is not None), key=lambda t: t.onset)
        self.suspects = [t.last for t in held]
        return self.suspects

    def standing(self) -> list[FabricSuspect]:
        """The suspects held or seen within the window, each with every way, flow and node it
        named in the window: what may explain a node's slow flows this interval (a suspect
        that missed one reading, or one of its flows, still slows them)."""
        return [s for s in self._standing.values() if s is not None]


__all__ = ["ENTERING", "FabricSuspect", "HeldSuspects", "LEAVING", "LeafPressure", "Paths", "VOTE_MARGIN",
           "FULL_SHARE", "data_flows", "fabric_suspects", "paused_leaves"]
