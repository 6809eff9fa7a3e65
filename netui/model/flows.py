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


@dataclass(frozen=True)
class NodeFlows:
    """A node's peer rates at its last reading: ``rates`` by remote address, busiest first."""

    mono_s: float
    rates: dict[str, PeerRates]
    sample: PeerSample


def _rate(prev: int, cur: int, dt: float) -> float | None:
    d = cur - prev
    if d < 0:
        return None
    v = d / dt
    return v if v <= MAX_BYTES_PER_S else None


def _gauge_s(us: int) -> float | None:
    return us / 1e6 if 0 < us <= MAX_RTT_S * 1e6 else None


def flow_rates(prev: PeerSample | None, cur: PeerSample | None, last: NodeFlows | None = None) -> NodeFlows | None:
    """The peer rates of ``cur`` against the reading before (``prev``). A frame that
    repeats the last reading (same ``mono_s``) keeps ``last``; no reading, or sock_diag
    unavailable: None. A peer not in ``prev`` has unknown byte rates (its RTT and sockets
    are known)."""
    if cur is None or not cur.available:
        return None
    if last is not None and last.sample.mono_s == cur.mono_s:
        return last if last.sample is cur else NodeFlows(last.mono_s, last.rates, cur)
    before = {}
    dt = 0.0
    if prev is not None and prev.available:
        dt = cur.mono_s - prev.mono_s
        if dt > 0 and math.isfinite(dt):
            before = {p.address: p for p in prev.peers}
    rates: dict[str, PeerRates] = {}
    for p in cur.peers:
        b = before.get(p.address)
        if b is None:
            tx = rx = retrans = None
        else:
            tx = _rate(b.sent_bytes, p.sent_bytes, dt)
            rx = _rate(b.received_bytes, p.received_bytes, dt)
            retrans = _rate(b.retrans_segs, p.retrans_segs, dt)
        delivery = float(p.delivery_bytes_per_s) if 0 < p.delivery_bytes_per_s <= MAX_BYTES_PER_S else None
        rates[p.address] = PeerRates(tx, rx, _gauge_s(p.rtt_us), retrans, p.sockets, delivery)
    ordered = dict(sorted(rates.items(), key=lambda kv: -kv[1].bytes_per_s))
    return NodeFlows(cur.mono_s, ordered, cur)


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


def labelled(flows: NodeFlows, book: AddressBook, self_name: str | None = None) -> dict[str, PeerRates]:
    """A node's peers by the name of the watched node they are (else their address),
    busiest first; its own addresses (a node talking to itself) left out."""
    groups: dict[str, list[PeerRates]] = {}
    for address, r in flows.rates.items():
        name = book.label(address)
        if self_name is not None and name == self_name:
            continue
        groups.setdefault(name, []).append(r)
    out = {name: merge(rs) for name, rs in groups.items()}
    return dict(sorted(out.items(), key=lambda kv: -kv[1].bytes_per_s))


def peer_flows(flows: Mapping[str, NodeFlows | None], book: AddressBook) -> dict[str, dict[str, PeerRates]]:
    """The flows between watched nodes: ``{node: {peer node: PeerRates}}`` (a node without
    a reading, or whose peers are not watched nodes, is absent)."""
    out: dict[str, dict[str, PeerRates]] = {}
    for name, f in flows.items():
        if f is None:
            continue
        peers = {peer: r for peer, r in labelled(f, book, name).items() if book.knows(peer)}
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
