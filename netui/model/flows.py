"""Peer flows: who a node's TCP traffic goes to, at what RTT and with what retransmits.

The remote sampler (and local mode, through the same code) reads the node's TCP sockets
from the kernel's sock_diag interface and sums them by remote address (collectors/peers.py
decodes its field). A ``PeerSample`` holds those raw running sums, never rates; ``flow_rates``
makes rates of two readings, as ``model/rates.py`` does of the other counters. ``AddressBook``
maps remote addresses to watched nodes by the local addresses each node's sockets show, and
``peer_flows`` gives the fleet's flows between watched nodes:
``{node: {peer node: PeerRates}}``.

What this cannot see: RDMA (RoCE, InfiniBand) traffic has no TCP socket; UDP is not read;
a socket that opened and closed between two readings is never seen, and one that closed
takes the bytes of its last interval with it; beyond the socket cap (``capped``) the rest
of the node's sockets are not read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from netui.speedups import peer_names, peer_rates, py_peer_rates

# the most bytes/s one peer's flows are believed at (8 Tbit/s): more is a counter gone wrong
MAX_BYTES_PER_S = 1e12
MAX_RTT_S = 600.0


class PeerCounters(NamedTuple):
    """One remote address as one reading saw it: its sockets' running sums since the sampler
    started (u64; a socket's bytes count from when the sampler first saw it) and gauges."""

    address: str  # "198.18.0.2", "fd00::2" (an IPv4-mapped IPv6 address as IPv4)
    sockets: int
    sent_bytes: int  # bytes acked by the peer
    received_bytes: int
    retrans_segs: int
    delivery_bytes_per_s: int  # the kernel's delivery rate, summed over the sockets that sent
    rtt_us: int  # smoothed RTT weighted by the bytes each socket moved (none moved: the largest)
    rtt_max_us: int


@dataclass(slots=True)
class PeerSample:
    """A node's TCP peers at one reading (``mono_s``, the node's CLOCK_MONOTONIC). Never
    changed once made (not frozen, as ``NodeSample``: a frozen dataclass's ``__init__`` costs
    an ``object.__setattr__`` a field, and a fleet makes one a node a reading).

    ``available`` False: the node's kernel did not answer sock_diag (``error`` says why);
    the node is otherwise fine. ``capped``: the reading stopped at the socket cap.
    ``peers`` are the top ones by bytes moved since the reading before (``peers_seen``
    before that cut). ``local_addresses``: the node's own addresses its sockets use.
    """

    mono_s: float
    available: bool = True
    error: str | None = None
    capped: bool = False
    sockets: int = 0
    peers_seen: int = 0
    peers: tuple[PeerCounters, ...] = ()
    local_addresses: tuple[str, ...] = ()


class PeerRates(NamedTuple):
    """A peer's flows over one interval. None: unknown (the first reading of it, a counter
    that went back, a rate past belief)."""

    tx_bytes_per_s: float | None
    rx_bytes_per_s: float | None
    rtt_s: float | None
    retrans_per_s: float | None
    sockets: int
    delivery_bytes_per_s: float | None = None

    @property
    def bytes_per_s(self) -> float:
        """Both ways together (unknown counts as 0): what peers are ordered by."""
        return (self.tx_bytes_per_s or 0.0) + (self.rx_bytes_per_s or 0.0)


class NodeFlows:
    """A node's peer rates at its last reading: ``rates`` by remote address, busiest first.
    Never changed once made (as a dataclass of ``mono_s``, ``rates``, ``sample`` and
    ``distinct``: compared by them, never a key).

    ``distinct``: each of ``sample``'s peers is at an address of its own (so the next
    reading's peers may be matched to them by position); False when not known.

    ``flow_rates`` makes the rates when they are first read, of the two readings it was
    given (never changed either): a node's flows are read by a tick that found someone slow,
    a screen that shows them, a document, not at each of the node's readings."""

    __slots__ = ("mono_s", "sample", "_rates", "_distinct", "_inputs")
    __hash__ = None  # type: ignore[assignment]  # (compared by value, as the dataclass it was)

    def __init__(self, mono_s: float, rates: dict[str, PeerRates], sample: PeerSample, distinct: bool = False) -> None:
        self.mono_s = mono_s
        self.sample = sample
        self._rates = rates
        self._distinct = distinct
        # what ``rates`` are made of when first read: the peers before, the peers rated, the
        # seconds between, whether the peers before are known distinct, whether to say
        # ``distinct`` (else False); None: made
        self._inputs: tuple[tuple[PeerCounters, ...], tuple[PeerCounters, ...], float, bool, bool] | None = None

    @property
    def rates(self) -> dict[str, PeerRates]:
        if self._inputs is not None:
            self._rate()
        return self._rates

    @property
    def distinct(self) -> bool:
        if self._inputs is not None:
            self._rate()
        return self._distinct

    def _rate(self) -> None:
        assert self._inputs is not None
        before, peers, dt, positional, tell = self._inputs
        self._rates, distinct = _rated(before, peers, dt, positional)
        self._distinct = distinct and tell
        self._inputs = None

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, NodeFlows)
        return (self.mono_s, self.rates, self.sample, self.distinct) == (other.mono_s, other.rates, other.sample,
                                                                          other.distinct)

    def __repr__(self) -> str:
        return (f"NodeFlows(mono_s={self.mono_s!r}, rates={self.rates!r}, sample={self.sample!r}, "
                f"distinct={self.distinct!r})")


def _later(mono_s: float, sample: PeerSample,
           inputs: tuple[tuple[PeerCounters, ...], tuple[PeerCounters, ...], float, bool, bool]) -> NodeFlows:
    """NodeFlows whose rates are made of ``inputs`` when first read (NodeFlows._inputs)."""
    flows = _new(NodeFlows)
    flows.mono_s = mono_s
    flows.sample = sample
    flows._rates = _NONE
    flows._distinct = False
    flows._inputs = inputs
    return flows


_new = object.__new__
_NONE: dict[str, PeerRates] = {}  # (a lazy NodeFlows' rates until made: never handed out)
_MAX_RTT_US = MAX_RTT_S * 1e6  # an RTT past this (or 0: none measured) is unknown
_rates = tuple.__new__  # a PeerRates of its six items: what ``PeerRates(...)`` makes, without its keyword parsing


def flow_rates(prev: PeerSample | None, cur: PeerSample | None, last: NodeFlows | None = None) -> NodeFlows | None:
    """The peer rates of ``cur`` against the reading before (``prev``). A frame that
    repeats the last reading (same ``mono_s``) keeps ``last``'s rates; no reading, or
    sock_diag unavailable: None. A peer not in ``prev`` has unknown byte rates (its RTT and
    sockets are known). The rates are made when first read (NodeFlows)."""
    if cur is None or not cur.available:
        return None
    if last is not None and last.sample.mono_s == cur.mono_s:
        if last.sample is cur:
            return last
        inputs = last._inputs
        if inputs is None:
            return NodeFlows(last.mono_s, last._rates, cur)
        return _later(last.mono_s, cur, (*inputs[:4], False))  # (``distinct`` not known, as before)
    before: tuple[PeerCounters, ...] = ()
    dt = 0.0
    if prev is not None and prev.available:
        dt = cur.mono_s - prev.mono_s
        if dt > 0 and math.isfinite(dt):
            before = prev.peers
    # (the peers before are matched by position when known distinct, which only a made
    # NodeFlows knows; else by address, which gives the same rates)
    positional = last is not None and last.sample is prev and last._inputs is None and last._distinct
    return _later(cur.mono_s, cur, (before, cur.peers, dt, positional, True))


def _rated(before: tuple[PeerCounters, ...], peers: tuple[PeerCounters, ...], dt: float,
           positional: bool) -> tuple[dict[str, PeerRates], bool]:
    """The rates of ``peers`` against ``before`` (() when unknown), ``dt`` seconds before,
    busiest first, and whether each of ``peers`` is at an address of its own. ``positional``:
    ``before``'s addresses are known distinct (speedups.peer_rates: the rows in one call)."""
    got = peer_rates(before, peers, dt, positional, PeerCounters, PeerRates)
    if got is None:  # (rows not as the decoder makes them: read in Python)
        got = py_peer_rates(before, peers, dt, positional, PeerCounters, PeerRates)
    rates, ordered, distinct = got
    if not ordered or not distinct:  # (an address twice: its place is its first row's, its rates its last's)
        rates = dict(sorted(rates.items(), key=lambda kv: -kv[1].bytes_per_s))
    return rates, distinct


class AddressBook:
    """Remote address → watched node, from the local addresses each node's sockets show
    (and any given ``extra``, e.g. the address netui connected to). An address two nodes
    both claim (a private address reused behind NAT) names neither."""

    def __init__(self, nodes: Iterable[tuple[str, PeerSample | None]], extra: Mapping[str, str] | None = None) -> None:
        owner: dict[str, str | None] = {}

        def claim(address: str, name: str) -> None:
            had = owner.get(address, name)
            owner[address] = name if had == name else None

        for name, sample in nodes:
            if sample is not None:
                for address in sample.local_addresses:
                    claim(address, name)
        for address, name in (extra or {}).items():
            claim(address, name)
        self._owner = {a: n for a, n in owner.items() if n is not None}
        self._names = frozenset(self._owner.values())

    def node(self, address: str) -> str | None:
        """The watched node at ``address``, or None."""
        return self._owner.get(address)

    def knows(self, name: str) -> bool:
        """Whether ``name`` is a watched node that some address maps to."""
        return name in self._names

    def label(self, address: str) -> str:
        """The node's name, or the address itself."""
        return self._owner.get(address, address)


def merge(rates: Iterable[PeerRates]) -> PeerRates:
    """Several addresses of one peer as one: rates and sockets summed, the largest RTT."""
    rs = list(rates)
    if len(rs) == 1:
        return rs[0]

    def total(values):
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    rtts = [r.rtt_s for r in rs if r.rtt_s is not None]
    return PeerRates(total(r.tx_bytes_per_s for r in rs), total(r.rx_bytes_per_s for r in rs),
                     max(rtts) if rtts else None, total(r.retrans_per_s for r in rs), sum(r.sockets for r in rs),
                     total(r.delivery_bytes_per_s for r in rs))


def _by_name(rates: dict[str, PeerRates], owner: Mapping[str, str], self_name: str | None,
             names: frozenset[str] | None) -> dict[str, PeerRates]:
    """``rates`` by the name ``owner`` gives their address (else the address itself), merged
    and busiest first; ``self_name`` left out, and with ``names`` only those."""
    got = peer_names(rates, owner, self_name, names)  # (each name one address: in one call)
    if got is not None:
        named, busiest_first = got
        return named if busiest_first else dict(sorted(named.items(), key=lambda kv: -kv[1].bytes_per_s))
    label = owner.get
    out: dict[str, PeerRates] = {}
    groups: dict[str, list[PeerRates]] | None = None
    ordered = True
    top = math.inf
    for address, r in rates.items():
        name = label(address, address)
        if name == self_name or (names is not None and name not in names):
            continue
        if name in out:  # (rare: one peer at several addresses)
            if groups is None:
                groups = {}
            groups.setdefault(name, [out[name]]).append(r)
            continue
        out[name] = r
        total = (r[0] or 0.0) + (r[1] or 0.0)  # (bytes_per_s)
        if total > top:
            ordered = False
        top = total
    if groups is not None:
        for name, rs in groups.items():
            out[name] = merge(rs)
    elif ordered:  # each name one address, busiest first already (as flow_rates orders them)
        return out
    return dict(sorted(out.items(), key=lambda kv: -kv[1].bytes_per_s))


def labelled(flows: NodeFlows, book: AddressBook, self_name: str | None = None) -> dict[str, PeerRates]:
    """A node's peers by the name of the watched node they are (else their address),
    busiest first; its own addresses (a node talking to itself) left out."""
    return _by_name(flows.rates, book._owner, self_name, None)


def peer_flows(flows: Mapping[str, NodeFlows | None], book: AddressBook) -> dict[str, dict[str, PeerRates]]:
    """The flows between watched nodes: ``{node: {peer node: PeerRates}}`` (a node without
    a reading, or whose peers are not watched nodes, is absent)."""
    out: dict[str, dict[str, PeerRates]] = {}
    owner, names = book._owner, book._names
    for name, f in flows.items():
        if f is None:
            continue
        peers = _by_name(f.rates, owner, name, names)
        if peers:
            out[name] = peers
    return out


def peers_to_dict(s: PeerSample | None) -> dict | None:
    """A PeerSample as JSON-ready data (recordings: raw sums, never rates)."""
    if s is None:
        return None
    return {"mono_s": s.mono_s, "available": s.available, "error": s.error, "capped": s.capped,
            "sockets": s.sockets, "peers_seen": s.peers_seen, "peers": [list(p) for p in s.peers],
            "local_addresses": list(s.local_addresses)}


def peers_from_dict(d: dict | None) -> PeerSample | None:
    """``peers_to_dict`` back; TypeError/ValueError/KeyError on a malformed record."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise TypeError("peers is not an object")
    peers = []
    for row in d.get("peers", ()):
        if not isinstance(row, list) or len(row) != len(PeerCounters._fields) or not isinstance(row[0], str):
            raise ValueError(f"bad peer row {str(row)[:80]}")
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64 for v in row[1:]):
            raise ValueError(f"bad peer counters {str(row)[:80]}")
        peers.append(PeerCounters(*row))
    mono = float(d["mono_s"])
    if not math.isfinite(mono):
        raise ValueError("peers: mono_s not finite")
    error = d.get("error")
    return PeerSample(mono, bool(d.get("available", True)), None if error is None else str(error),
                      bool(d.get("capped", False)), int(d.get("sockets", 0)), int(d.get("peers_seen", 0)),
                      tuple(peers), tuple(str(a) for a in d.get("local_addresses", ())))


class PairFlow(NamedTuple):
    """The TCP flows from one watched node to another over the last interval."""

    bytes_per_s: float | None  # sent: the sender's bytes acked, else the receiver's bytes received
    rtt_s: float | None  # the sender's, else the receiver's
    retrans_per_s: float | None  # the sender's segments retransmitted
    sockets: int


# what the peer matrix shows, and how its worst pairs are ordered
MATRIX_METRICS = ("throughput", "rtt", "retrans")


def pair_matrix(flows: Mapping[str, Mapping[str, PeerRates]]) -> dict[tuple[str, str], PairFlow]:
    """``{(sender, receiver): PairFlow}`` of ``peer_flows``: each pair from the sender's
    reading, completed by the receiver's (a pair only one end reads is still shown)."""
    out: dict[tuple[str, str], PairFlow] = {}
    pairs = {(src, dst) for src, peers in flows.items() for dst in peers if dst != src}
    pairs |= {(dst, src) for src, dst in pairs}  # (a pair read at its receiver only)
    for src, dst in pairs:
        a = flows.get(src, {}).get(dst)
        b = flows.get(dst, {}).get(src)
        sent = a.tx_bytes_per_s if a is not None else None
        if sent is None and b is not None:
            sent = b.rx_bytes_per_s
        rtt = a.rtt_s if a is not None and a.rtt_s is not None else (b.rtt_s if b is not None else None)
        counted = a if a is not None else b
        assert counted is not None  # each pair above comes from one end's reading at least
        out[(src, dst)] = PairFlow(sent, rtt, a.retrans_per_s if a is not None else None, counted.sockets)
    return out


def pair_value(flow: PairFlow, metric: str) -> float | None:
    """The figure of ``metric`` (MATRIX_METRICS) of a pair."""
    if metric == "rtt":
        return flow.rtt_s
    if metric == "retrans":
        return flow.retrans_per_s
    return flow.bytes_per_s


def worst_pairs(pairs: Mapping[tuple[str, str], PairFlow], metric: str) -> list[tuple[tuple[str, str], PairFlow]]:
    """The pairs worst first for ``metric``: the slowest flows that move bytes (throughput),
    the longest RTT, the most retransmits; pairs without the figure last."""
    known = [(value, k, f) for k, f in pairs.items() if (value := pair_value(f, metric)) is not None]
    if metric == "throughput":
        known = [(value, k, f) for value, k, f in known if value > 0]
        known.sort(key=lambda vkf: (vkf[0], vkf[1]))
    else:
        known.sort(key=lambda vkf: (-vkf[0], vkf[1]))
    return [(k, f) for _, k, f in known]
