"""The "peers" field read as the layout of the one before and its flow rates, in C
(netui._speedups peer_like, peer_rates) against their pure-Python twins (netui.speedups) and
against the rules they replaced: a field whose peers only changed places is still read as its
layout, and gives what parse_peers gives; the rates of the rows the decoder makes are made in
C, and are the twin's."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui import speedups
from netui.collectors import peers as peers_module
from netui.collectors.frames import FrameDecoder
from netui.collectors.peers import layout_of, parse_like, parse_peers
from netui.collectors.procfs import ParseError
from netui.model.flows import PeerCounters, PeerRates, PeerSample
from tests.bench.fake_peers import FakePeers
from tests.unit.test_peers_reuse_layout import ADDRESSES, fields, pack, read_whole, readings, same_sample

try:
    from netui import _speedups as compiled
except ImportError:  # pragma: no cover - CI builds it
    compiled = None

needs_c = pytest.mark.skipif(compiled is None and os.geteuid() != 0, reason="netui._speedups was not built")
TWINS = [speedups.py_peer_like] + ([compiled.peer_like] if compiled is not None else [])


def layout_args(value: bytes):
    """peer_like's arguments but the field: the layout of ``value`` read whole (None: none)."""
    try:
        layout = layout_of(value, parse_peers(value))
    except ParseError:
        return None
    return None if layout is None else (layout.keys, layout.tail, layout.addresses, PeerCounters)


@needs_c
@settings(max_examples=200, deadline=None)
@given(fields(), st.data())
def test_peer_like_is_its_twin_on_fields_that_keep_move_and_corrupt_their_peers(values, data):
    args = layout_args(values[0])
    if args is None:
        return
    for v in values:
        c, py = compiled.peer_like(v, *args), speedups.py_peer_like(v, *args)
        assert c == py and (c is None or all(type(p) is PeerCounters for p in c[4])), (v, args)
        # (a field read whole: any field read as a layout is what parse_peers reads)
        if c is not None:
            flags, sockets, seen, mono, rows = c
            whole = parse_peers(v)
            assert (whole.peers, whole.sockets, whole.peers_seen, whole.mono_s) == (rows, sockets, seen, mono)


@pytest.mark.parametrize("peer_like", TWINS)
def test_peers_that_only_changed_places_are_read_as_the_layout_with_their_own_addresses(peer_like, monkeypatch):
    rows = [(a, 4, 1000 * k, 2000 * k, k, 5, 90 + k, 100 + k) for k, a in enumerate(ADDRESSES[:3] + ADDRESSES[4:6])]
    first = pack(rows, [ADDRESSES[0]], 100.0)
    layout = layout_of(first, parse_peers(first))
    swapped = pack([rows[3], rows[0], rows[4], rows[2], rows[1]], [ADDRESSES[0]], 101.0)
    monkeypatch.setattr(peers_module, "peer_like", peer_like)
    got = parse_like(swapped, layout)
    assert got is not None and same_sample(got, parse_peers(swapped))
    assert [p.sent_bytes for p in got.peers] == [3000, 0, 4000, 2000, 1000]  # (the rows' own counters)
    # a row at an address the layout does not have is not the layout's
    moved = pack([rows[0], (ADDRESSES[6 - 3], *rows[1][1:]), *rows[2:]], [ADDRESSES[0]], 102.0)
    assert parse_like(moved, layout) is None


def test_a_decoder_reads_a_reordered_field_as_its_layout_not_whole(monkeypatch):
    rows = [(a, 1, 10, 20, 0, 5, 90, 90) for a in ADDRESSES[:3]]
    values = [pack(rows, [], 1.0), pack(rows[::-1], [], 2.0), pack(rows, [], 3.0), pack(rows[1:] + rows[:1], [], 4.0)]
    want = read_whole(values)
    whole = []
    monkeypatch.setattr("netui.collectors.frames.parse_peers", lambda v: whole.append(v) or parse_peers(v))
    decoder = FrameDecoder()
    got = [decoder._peers_of(v) for v in values]
    assert all(same_sample(g, w) for g, w in zip(got, want))
    assert whole == values[:1]  # (the first alone read whole)


def test_peer_like_refuses_keys_that_are_not_17_bytes_an_address():
    for peer_like in TWINS:
        with pytest.raises(ValueError):
            peer_like(b"", b"\0" * 16, b"", ("a",), PeerCounters)
        with pytest.raises(TypeError):
            peer_like(b"", b"\0" * 17, b"", ("a",), dict)


def rated(peer_rates, before, peers, dt, positional):
    got = peer_rates(before, peers, dt, positional, PeerCounters, PeerRates)
    if got is not None:
        assert all(type(r) is PeerRates for r in got[0].values())
        return list(got[0].items()), got[1], got[2]
    return None


@needs_c
@settings(max_examples=300, deadline=None)
@given(readings(), st.booleans(), st.sampled_from([1.0, 0.25, 1e-300, 0.0, math.inf, -1.0, math.nan]))
def test_peer_rates_is_its_twin_where_it_reads_the_rows(samples, positional, dt):
    samples = [s for s in samples if s is not None and s.available]
    for prev, cur in zip([PeerSample(0.0), *samples], samples):
        c = rated(compiled.peer_rates, prev.peers, cur.peers, dt, positional)
        try:
            py = rated(speedups.py_peer_rates, prev.peers, cur.peers, dt, positional)
        except ZeroDivisionError:
            assert c is None  # (left to the twin, which raises as the rule did)
            continue
        # NaN rates are equal as the same object only: compare their text
        assert c is None or repr(c) == repr(py), (prev, cur)
        if dt == 1.0 and all(0 <= v < 1 << 64 for p in prev.peers + cur.peers for v in p[2:7]):
            assert c is not None  # (what the decoder makes, a float interval: read in C)


@needs_c
def test_the_rows_the_decoder_makes_are_rated_in_c_and_others_left_to_the_twin():
    fake = FakePeers(1, 4)
    before, cur = parse_peers(fake.field(100.0)), parse_peers(fake.field(101.0))
    got = rated(compiled.peer_rates, before.peers, cur.peers, 1.0, True)
    assert got == rated(speedups.py_peer_rates, before.peers, cur.peers, 1.0, True)
    assert got is not None and got[1] and got[2] and len(got[0]) == 5 and got[0][0][1].tx_bytes_per_s > 1e9
    big = PeerCounters("10.0.0.1", 1, 1 << 64, 0, 0, 0, 0, 0)  # (not a u64: the twin's)
    small = PeerCounters("10.0.0.1", 1, -1, 0, 0, 0, 0, 0)
    assert compiled.peer_rates((), (big,), 1.0, False, PeerCounters, PeerRates) is None
    assert compiled.peer_rates((), (small,), 1.0, False, PeerCounters, PeerRates) is None
    assert compiled.peer_rates((), (cur.peers[0],), 1, False, PeerCounters, PeerRates) is None  # (an int interval)
    assert compiled.peer_rates([], (), 1.0, False, PeerCounters, PeerRates) is None


RATE = st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.5e9, math.inf, math.nan]), st.floats(0, 1e12))
RATES = st.dictionaries(st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "fd00::1"]),
                        st.builds(lambda tx, rx, s: PeerRates(tx, rx, None, None, s, None), RATE, RATE,
                                  st.integers(0, 4)), max_size=5)
OWNER = st.dictionaries(st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3", "fd00::1"]),
                        st.sampled_from(["a", "b", "c"]), max_size=4)


@settings(max_examples=300, deadline=None)
@given(RATES, OWNER, st.sampled_from([None, "a", "b", "10.0.0.4"]),
       st.sampled_from([None, frozenset(), frozenset({"a", "b"}), frozenset({"a", "b", "c", "10.0.0.4"})]))
def test_a_node_s_peers_by_name_are_what_the_rule_in_python_gives(rates, owner, self_name, names):
    from netui.model import flows

    got = flows._by_name(rates, owner, self_name, names)
    kept, flows.peer_names = flows.peer_names, lambda *args: None  # (the rule as it was: all in Python)
    try:
        want = flows._by_name(rates, owner, self_name, names)
    finally:
        flows.peer_names = kept
    assert repr(list(got.items())) == repr(list(want.items()))
    if compiled is not None:
        assert repr(compiled.peer_names(rates, owner, self_name, names)) == repr(
            speedups.py_peer_names(rates, owner, self_name, names))
    if len(set(owner.get(a, a) for a in rates)) == len(rates):  # (each name one address: made in one call)
        assert speedups.peer_names(rates, owner, self_name, names) is not None
