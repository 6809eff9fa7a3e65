"""The sampler's "peers" field (its TCP sockets from sock_diag, summed by remote address)
→ a PeerSample. Pure: the bytes come from a frame, or from the sampler's own code run
in-process in local mode (``LocalPeers``). The format: docs/protocol.md#peers.
"""

from __future__ import annotations

import os
import socket
from typing import NamedTuple

from netui.collectors.procfs import ParseError
from netui.collectors.protocol import (PEER_ADDR, PEER_HEAD, PEER_ROW, PEERS_CAPPED, PEERS_OK, PEERS_UNAVAILABLE)
from netui.model.flows import PeerCounters, PeerSample
from netui.speedups import peer_like

_FAMILIES = {2: socket.AF_INET, 10: socket.AF_INET6}
_MAPPED = b"\0" * 10 + b"\xff\xff"
MAX_ROWS = 4096  # more rows than this is not the sampler's field
_ADDRESSES: dict[tuple[int, bytes], str] = {}  # (family, 16 bytes) → its text: a fleet's peers repeat
# a field's local addresses (its bytes) → their texts: a node's rarely change, and one tuple
# for them reading after reading lets a fleet see at a glance that they did not (address_book)
_LOCALS: dict[bytes, tuple[str, ...]] = {}
# at most so many sets of local addresses kept (a fleet of 8,192 nodes, one set each), each of at
# most so many bytes (64 addresses): at most ~10 MB, whatever the nodes send
LOCALS_KEPT = 8192
LOCALS_BYTES = 64 * PEER_ADDR.size
_counters = tuple.__new__  # a PeerCounters of its eight items, without PeerCounters(...)'s argument parsing


def address_text(family: int, raw: bytes) -> str | None:
    """An address as text (IPv4-mapped IPv6 as IPv4); None for an unknown family."""
    if family == 2:
        return socket.inet_ntop(socket.AF_INET, raw[:4])
    if family == 10:
        if raw[:12] == _MAPPED:
            return socket.inet_ntop(socket.AF_INET, raw[12:16])
        return socket.inet_ntop(socket.AF_INET6, raw[:16])
    return None


def parse_peers(value: bytes) -> PeerSample:
    """The PeerSample of one "peers" field; ParseError when it is not as the sampler packs it.
    Readings whose local addresses are the same bytes share one ``local_addresses`` tuple."""
    if len(value) < PEER_HEAD.size:
        raise ParseError(f"peers: {len(value)} bytes, shorter than its head")
    status, flags, code, sockets, seen, rows, addrs, mono = PEER_HEAD.unpack_from(value)
    if status == PEERS_UNAVAILABLE:
        why = os.strerror(code) if code else "no answer"
        return PeerSample(mono, available=False, error=f"sock_diag unavailable: {why}")
    if status != PEERS_OK:
        raise ParseError(f"peers: unknown status {status}")
    if rows > MAX_ROWS or addrs > MAX_ROWS:
        raise ParseError(f"peers: {rows} peers and {addrs} addresses, more than the sampler sends")
    head = PEER_HEAD.size
    at = head + rows * PEER_ROW.size
    if len(value) != at + addrs * PEER_ADDR.size or mono != mono:  # (NaN)
        raise ParseError(f"peers: {len(value)} bytes where its head says {at + addrs * PEER_ADDR.size}")
    peers: list[PeerCounters] = []
    append = peers.append
    known = _ADDRESSES.get
    for family, count, raw, sent, received, retrans, delivery, rtt, rtt_max in PEER_ROW.iter_unpack(value[head:at]):
        address = known((family, raw))
        if address is None:
            address = address_text(family, raw)
            if address is None:
                raise ParseError(f"peers: address family {family}")
            if len(_ADDRESSES) >= 65536:
                _ADDRESSES.clear()
            _ADDRESSES[(family, raw)] = address
        append(_counters(PeerCounters, (address, count, sent, received, retrans, delivery, rtt, rtt_max)))
    tail = bytes(value[at:])  # (a key: bytes, whatever buffer the field came in)
    local = _LOCALS.get(tail)
    if local is None:
        local = _local_addresses(tail)
        if len(_LOCALS) >= LOCALS_KEPT:  # (a node has one set, or a few: a fleet's worth, kept)
            _LOCALS.clear()
        if len(tail) <= LOCALS_BYTES:  # (a node listing thousands of addresses: read each time)
            _LOCALS[tail] = local
    return PeerSample(mono, True, None, bool(flags & PEERS_CAPPED), sockets, seen, tuple(peers), local)


class PeerLayout(NamedTuple):
    """What a node's successive "peers" fields share while its peers and addresses stay put:
    the same bytes but for the head's counts and clock, each row's counters and the rows'
    order (``parse_like``)."""

    keys: bytes  # each row's family and 16 address bytes, 17 bytes a row, in the field's order
    tail: bytes  # the local addresses, packed
    addresses: tuple[str, ...]  # each row's address as text
    local_addresses: tuple[str, ...]


LAYOUT_ROWS = 64  # a field of more rows is read row by row every time (the sampler sends at most 32)


def layout_of(value: bytes, sample: PeerSample) -> PeerLayout | None:
    """The layout of a field that ``parse_peers`` read as ``sample``; None when there is none
    worth keeping (sock_diag unavailable, more than LAYOUT_ROWS rows)."""
    rows = len(sample.peers)
    if not sample.available or rows > LAYOUT_ROWS:
        return None
    head, size = PEER_HEAD.size, PEER_ROW.size
    keys = b"".join(value[at:at + 1] + value[at + 8:at + 24] for at in range(head, head + rows * size, size))
    return PeerLayout(bytes(keys), bytes(value[head + rows * size:]), tuple(p[0] for p in sample.peers),
                      sample.local_addresses)


def parse_like(value: bytes, layout: PeerLayout) -> PeerSample | None:
    """``parse_peers(value)`` when ``value`` has ``layout`` (its rows' families and addresses,
    in any order, and its local addresses the same bytes; the addresses' texts and the local
    addresses' tuple those of the layout, the rows read in one call: speedups.peer_like);
    None when it has not (then ``parse_peers`` it)."""
    got = peer_like(value, layout.keys, layout.tail, layout.addresses, PeerCounters)
    if got is None:
        return None
    flags, sockets, seen, mono, peers = got
    return PeerSample(mono, True, None, bool(flags & PEERS_CAPPED), sockets, seen, peers, layout.local_addresses)


def _local_addresses(packed: bytes) -> tuple[str, ...]:
    """The texts of a field's local addresses, each once, in their order (an unknown family left out)."""
    local: list[str] = []
    for family, raw in PEER_ADDR.iter_unpack(packed):
        address = address_text(family, raw)
        if address is not None and address not in local:
            local.append(address)
    return tuple(local)


def tcp_opens(snmp: str | bytes | None) -> int | None:
    """ActiveOpens + PassiveOpens from /proc/net/snmp's Tcp lines (None: not there)."""
    if snmp is None:
        return None
    text = snmp.decode("ascii", "replace") if isinstance(snmp, bytes) else snmp
    rows = [line.split()[1:] for line in text.splitlines() if line.startswith("Tcp:")]
    if len(rows) != 2 or len(rows[0]) != len(rows[1]):
        return None
    values = dict(zip(rows[0], rows[1]))
    try:
        return int(values["ActiveOpens"]) + int(values["PassiveOpens"])
    except (KeyError, ValueError):
        return None


class LocalPeers:
    """This host's peers in local mode, read by the remote sampler's own code (``Peers``),
    in-process: the same dump, the same sums, the same field, the same parser."""

    def __init__(self, max_peers: int | None = None, max_sockets: int | None = None, loopback: bool = False,
                 discover_s: float | None = None, share: float | None = None) -> None:
        from netui.collectors import sampler

        self._peers = sampler.Peers(max_peers or sampler.MAX_PEERS, max_sockets or sampler.MAX_SOCKETS, loopback,
                                    sampler.PEER_DISCOVER_S if discover_s is None else discover_s,
                                    share or sampler.PEER_SHARE)

    def read(self, mono_s: float, opens: int | None = None) -> PeerSample | None:
        """A reading at ``mono_s``; ``opens``: the host's TCP opens (``tcp_opens``), which
        bring the next dump forward when they grew."""
        try:
            return parse_peers(self._peers.field(mono_s, opens))
        except (ParseError, OSError) as exc:  # never the node's error
            return PeerSample(mono_s, available=False, error=f"sock_diag: {exc}")

    def close(self) -> None:
        self._peers.close()

