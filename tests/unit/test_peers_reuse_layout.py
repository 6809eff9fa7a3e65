"""A node's successive "peers" fields read as the previous one's layout with new counters
(collectors/peers.py ``parse_like``, as FrameDecoder does) and its flow rates made when first
read (model/flows.py ``flow_rates``, NodeFlows) give what reading every field whole and
rating it at once gave: the same PeerSample, the same rates in the same order, on random
sequences of fields and readings that keep, move, reorder, repeat, corrupt and swap their
peers and addresses."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.collectors.frames import FrameDecoder
from netui.collectors.procfs import ParseError
from netui.collectors.protocol import PEER_ADDR, PEER_HEAD, PEER_ROW
from netui.collectors.peers import parse_peers
from netui.model.flows import (_MAX_RTT_US, MAX_BYTES_PER_S, NodeFlows, PeerCounters, PeerRates, PeerSample,
                               _rates, flow_rates)
from tests.bench.fake_peers import FakePeers

# (family, 16 address bytes): repeats, an IPv4 address with bytes after its four (the same
# text, other bytes), IPv6, IPv4-mapped IPv6, a family the parser does not know
ADDRESSES = [(2, bytes([198, 18, 0, i]) + bytes(12)) for i in (1, 2, 3)] + [
    (2, bytes([198, 18, 0, 1]) + b"\x01" + bytes(11)), (10, bytes(15) + b"\x02"),
    (10, bytes(10) + b"\xff\xff" + bytes([198, 18, 0, 2])), (7, bytes(16))]
U64 = st.one_of(st.integers(0, 1 << 20), st.integers(0, (1 << 64) - 1))
U32 = st.one_of(st.integers(0, 700_000_000), st.sampled_from([0, 1, (1 << 32) - 1]))
ROW = st.tuples(st.sampled_from(ADDRESSES[:6] * 8 + ADDRESSES[6:]), U32, U64, U64, U64, U64, U32, U32)
LOCAL = st.lists(st.sampled_from(ADDRESSES), max_size=3)


def pack(rows, local, mono, sockets=12, seen=5, status=0, flags=0, head_rows=None, head_addrs=None) -> bytes:
    head = PEER_HEAD.pack(status, flags, 0, sockets, seen, len(rows) if head_rows is None else head_rows,
                          len(local) if head_addrs is None else head_addrs, mono)
    return (head + b"".join(PEER_ROW.pack(fam, count, raw, *rest) for (fam, raw), count, *rest in rows)
            + b"".join(PEER_ADDR.pack(*a) for a in local))


@st.composite
def fields(draw):
    """A node's successive "peers" fields: mostly the one before with new counters."""
    rows, local, mono = draw(st.lists(ROW, max_size=6)), draw(LOCAL), 100.0
    out = []
    for _ in range(draw(st.integers(1, 8))):
        change = draw(st.sampled_from(["counters"] * 6 + ["repeat", "rows", "order", "address", "local", "head",
                                                          "corrupt", "unavailable"]))
        mono += draw(st.sampled_from([1.0, 1.0, 0.5, 0.0, -1.0, 1e-300]))
        head = {"sockets": draw(st.integers(0, 20)), "seen": draw(st.integers(0, 20)), "flags": draw(st.integers(0, 3))}
        if change == "repeat" and out:
            out.append(out[-1])
            continue
        if change == "counters":
            rows = [(a, *draw(st.tuples(U32, U64, U64, U64, U64, U32, U32))) for a, *_ in rows]
        elif change == "rows":
            rows = draw(st.lists(ROW, max_size=6))
        elif change == "order":
            rows = draw(st.permutations(rows))
        elif change == "address" and rows:
            i = draw(st.integers(0, len(rows) - 1))
            rows = [*rows[:i], (draw(st.sampled_from(ADDRESSES)), *rows[i][1:]), *rows[i + 1:]]
        elif change == "local":
            local = draw(LOCAL)
        if change == "head":  # the head's counts not the field's: not a field
            value = pack(rows, local, mono, head_rows=abs(len(rows) + draw(st.sampled_from([-1, 1]))), **head)
            value = draw(st.sampled_from([value, pack(rows, local, mono, head_addrs=len(local) + 1, **head)]))
        elif change == "corrupt":
            value = draw(st.sampled_from([pack(rows, local, math.nan, **head), pack(rows, local, mono, status=5),
                                          pack(rows, local, mono, **head) + b"\0"]))
        elif change == "unavailable":
            value = pack(rows, local, mono, status=1)
        else:
            value = pack(rows, local, mono, **head)
        out.append(value)
    return out


def read_whole(values: list[bytes]) -> list[PeerSample]:
    """What FrameDecoder made of each field before: every new field parsed whole."""
    out: list[PeerSample] = []
    raw, last = None, None
    for v in values:
        if v != raw:
            try:
                last = parse_peers(v)
            except ParseError as exc:
                last = PeerSample(last.mono_s if last else 0.0, available=False, error=str(exc))
            raw = v
        out.append(last)
    return out


def same_sample(a: PeerSample, b: PeerSample) -> bool:
    return a == b and all(type(p) is PeerCounters for p in a.peers)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(fields())
def test_a_field_read_as_the_one_before_with_new_counters_is_the_field_read_whole(values):
    decoder = FrameDecoder()
    got = [decoder._peers_of(v) for v in values]
    want = read_whole(values)
    assert all(same_sample(g, w) for g, w in zip(got, want)), (got, want)


def test_the_fake_fleet_s_fields_read_as_the_one_before_are_the_fields_read_whole():
    fakes = [FakePeers(i, 4) for i in range(4)]
    for fake in fakes:
        values = [fake.field(100.0 + t) for t in range(6)]
        decoder = FrameDecoder()
        got = [decoder._peers_of(v) for v in values]
        assert decoder._peers_layout is not None  # (read as the one before: its layout kept)
        assert all(same_sample(g, w) for g, w in zip(got, read_whole(values)))


# the flow rates' reference: model/flows.py's before its rates were made when first read
def reference_flow_rates(prev: PeerSample | None, cur: PeerSample | None,
                         last: NodeFlows | None = None) -> NodeFlows | None:
    """model/flows.py flow_rates before its rates were made when first read (at once, every time)."""
    if cur is None or not cur.available:
        return None
    if last is not None and last.sample.mono_s == cur.mono_s:
        return last if last.sample is cur else NodeFlows(last.mono_s, last.rates, cur)
    before: tuple[PeerCounters, ...] = ()
    dt = 0.0
    if prev is not None and prev.available:
        dt = cur.mono_s - prev.mono_s
        if dt > 0 and math.isfinite(dt):
            before = prev.peers
    known = len(before)
    # (this runs for every node at every new reading, so the rates are made inline; the
    # previous reading's peers are matched by position — the sampler sends a node's peers in
    # much the same order every reading — where their addresses are known to be distinct,
    # else by address, the last row of an address as a dict keeps it)
    by_address = None if last is not None and last.sample is prev and last.distinct else {p[0]: p for p in before}
    rates: dict[str, PeerRates] = {}
    ordered = True  # busiest first already (the sampler's order, mostly)
    top = math.inf
    rows = 0
    for address, sockets, sent, received, retrans, delivery, rtt, _ in cur.peers:
        if by_address is None:
            b = before[rows] if rows < known else None
            if b is None or b[0] != address:
                by_address = {p[0]: p for p in before}
                b = by_address.get(address)
        else:
            b = by_address.get(address)
        rows += 1
        if b is None:
            tx = rx = retrans_per_s = None
            total = 0.0
        else:
            d = sent - b[2]
            tx = d / dt if d >= 0 else None
            if tx is not None and tx > MAX_BYTES_PER_S:
                tx = None
            d = received - b[3]
            rx = d / dt if d >= 0 else None
            if rx is not None and rx > MAX_BYTES_PER_S:
                rx = None
            d = retrans - b[4]
            retrans_per_s = d / dt if d >= 0 else None
            if retrans_per_s is not None and retrans_per_s > MAX_BYTES_PER_S:
                retrans_per_s = None
            total = (tx or 0.0) + (rx or 0.0)  # (PeerRates.bytes_per_s)
        rates[address] = _rates(PeerRates, (tx, rx, rtt / 1e6 if 0 < rtt <= _MAX_RTT_US else None, retrans_per_s,
                                            sockets, float(delivery) if 0 < delivery <= MAX_BYTES_PER_S else None))
        if total > top:
            ordered = False
        top = total
    distinct = len(rates) == rows
    if not ordered or not distinct:  # (an address twice: its place is its first row's, its rates its last's)
        rates = dict(sorted(rates.items(), key=lambda kv: -kv[1].bytes_per_s))
    return NodeFlows(cur.mono_s, rates, cur, distinct)



SAMPLE_ROW = st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.integers(0, 8),
                       *[st.one_of(st.integers(0, 1 << 40), st.sampled_from([0, (1 << 64) - 1]))] * 3,
                       st.one_of(st.integers(0, 1 << 40), st.sampled_from([0, int(MAX_BYTES_PER_S) + 1])),
                       st.one_of(st.integers(0, 1 << 20), st.sampled_from([0, int(_MAX_RTT_US), int(_MAX_RTT_US) + 1])),
                       st.integers(0, 1 << 20))
# mostly each address once (what the sampler sends, and what rates by position need)
SAMPLE_ROWS = st.one_of(st.lists(SAMPLE_ROW, max_size=6, unique_by=lambda r: r[0]), st.lists(SAMPLE_ROW, max_size=6))


@st.composite
def readings(draw):
    """A node's successive PeerSamples: mostly the same peers in the same order, counters grown."""
    peers = [PeerCounters(*r) for r in draw(SAMPLE_ROWS)]
    mono, out = 100.0, []
    for _ in range(draw(st.integers(1, 8))):
        change = draw(st.sampled_from(["grow"] * 6 + ["repeat", "new", "order", "drop", "unavailable", "none", "back"]))
        mono += draw(st.sampled_from([1.0, 1.0, 0.25, 0.0, -1.0, 1e-300, math.inf]))
        if change == "repeat" and out and out[-1] is not None:
            out.append(out[-1])
            continue
        if change == "none":
            out.append(None)
            continue
        if change == "unavailable":
            out.append(PeerSample(mono, available=False, error="x"))
            continue
        if change in ("grow", "back"):
            step = st.integers(-3 if change == "back" else 0, 1 << 34)
            peers = [p._replace(sent_bytes=p.sent_bytes + draw(step), received_bytes=p.received_bytes + draw(step),
                                retrans_segs=p.retrans_segs + draw(st.integers(0, 5)),
                                delivery_bytes_per_s=draw(SAMPLE_ROW)[5], rtt_us=draw(SAMPLE_ROW)[6])
                     for p in peers]
            peers = [p._replace(sent_bytes=max(0, p.sent_bytes)) for p in peers]
        elif change == "drop":  # (the last peers fell out of the top ones, the others grew)
            peers = [p._replace(sent_bytes=p.sent_bytes + 1000) for p in peers[:draw(st.integers(0, len(peers)))]]
        elif change == "new":
            peers = [PeerCounters(*r) for r in draw(SAMPLE_ROWS)]
        else:
            peers = draw(st.permutations(peers))
        out.append(PeerSample(mono, peers=tuple(peers), peers_seen=len(peers)))
    return out


def same_flows(a: NodeFlows | None, b: NodeFlows | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.mono_s == b.mono_s and a.sample is b.sample and a.distinct == b.distinct
            and list(a.rates.items()) == list(b.rates.items()) and all(type(r) is PeerRates for r in a.rates.values()))


@pytest.mark.slow
@settings(max_examples=800, deadline=None)
@given(readings(), st.lists(st.booleans(), min_size=8, max_size=8))
def test_flow_rates_made_when_read_are_the_rates_made_at_each_reading_in_the_same_order(samples, read_now):
    prev, got, want = None, None, None
    made = []
    for cur, now in zip(samples, read_now):
        got, want = flow_rates(prev, cur, got), reference_flow_rates(prev, cur, want)
        if now:  # (read at once, or some readings later: the rates are the same)
            assert same_flows(got, want), (prev, cur, got, want)
        made.append((got, want))
        prev = cur
    assert all(same_flows(g, w) for g, w in made)


def test_the_fake_fleet_s_flow_rates_are_the_rates_row_by_row():
    fake = FakePeers(2, 8)
    prev, got, want = None, None, None
    for t in range(6):
        cur = parse_peers(fake.field(100.0 + t))
        got, want = flow_rates(prev, cur, got), reference_flow_rates(prev, cur, want)
        assert same_flows(got, want)
        prev = cur
    assert got is not None and got.distinct and len(got.rates) == 5
