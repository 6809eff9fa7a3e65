"""TCP peers: the sampler's sock_diag parsing on a real kernel's dump (tests/data/sockdiag),
its sums by remote address, its caps, the "peers" field and the model's rates of it."""

from __future__ import annotations

import json
import struct

import pytest

from netui.collectors import sampler
from netui.collectors.frames import FrameDecoder, encode_fields
from netui.collectors.peers import parse_peers
from netui.collectors.procfs import ParseError
from netui.collectors.protocol import PEER_HEAD, PEERS_UNAVAILABLE
from netui.engine.recording.codec import sample_from_dict, sample_to_dict
from netui.model.flows import AddressBook, PeerSample, flow_rates, labelled, peer_flows
from tests.testdata import data_bytes, data_text

FLOWS = json.loads(data_text("sockdiag/flows.json"))["flows"]


def dumped(name: str, loopback: bool = True, limit: int = 1 << 20) -> list:
    out: list = []
    done, error = sampler.diag_sockets(data_bytes(f"sockdiag/{name}.bin"), out, limit, loopback)
    assert (done, error) == (True, 0)
    return out


def ports(key: bytes) -> tuple[int, int]:
    return int.from_bytes(key[:2], "big"), int.from_bytes(key[2:4], "big")


def with_counters(sock: tuple, acked: int, received: int, retrans: int) -> tuple:
    """A dumped socket with other tcp_info counters (the rest of its real bytes kept)."""
    info = bytearray(sock[4])
    struct.pack_into("=I", info, 100, retrans)
    struct.pack_into("=QQ", info, 120, acked, received)
    return sock[:4] + (bytes(info),)


def test_real_dump_gives_each_socket_its_ends_and_tcp_info():
    v4, v6 = dumped("inet"), dumped("inet6")
    by_ports = {ports(s[1]): s for s in v4 + v6}
    for flow in FLOWS:
        cport, sport = flow["client"][1], flow["server"][1]
        client, server = by_ports[(cport, sport)], by_ports[(sport, cport)]
        rtt, retrans, acked, received = sampler.TCPI_MAIN.unpack_from(client[4])
        assert acked == flow["client_sent"] + 1  # (the SYN is acked too)
        assert received == flow["server_sent"]
        assert sampler.TCPI_MAIN.unpack_from(server[4])[3] == flow["client_sent"]
        assert rtt > 0 and len(client[4]) >= 168
    assert {s[0] for s in v4} == {2} and {s[0] for s in v6} == {10}


def test_loopback_peers_are_skipped_on_real_bytes():
    assert dumped("inet") and dumped("inet6")
    assert dumped("inet", loopback=False) == [] and dumped("inet6", loopback=False) == []


def test_the_dump_stops_at_the_socket_cap():
    out: list = []
    done, _ = sampler.diag_sockets(data_bytes("sockdiag/inet6.bin"), out, 2, True)
    assert not done and len(out) == 2


def test_an_error_answer_is_its_errno():
    error = struct.pack("=IHHII", 36, 2, 0, 1, 0) + struct.pack("=i", -13) + b"\0" * 16
    assert sampler.diag_sockets(error, [], 10) == (True, 13)
    assert sampler.diag_sockets(struct.pack("=IHHII", 400, 20, 0, 1, 0), [], 10)[1] != 0  # longer than the buffer


def reading(peers: sampler.Peers, socks: list, mono: float, capped: bool = False) -> PeerSample:
    return parse_peers(peers.aggregate(socks, capped, mono))


def test_sums_by_remote_address_and_rates_from_two_readings():
    socks = dumped("inet6")
    p = sampler.Peers(loopback=True)
    first = reading(p, socks, 10.0)
    assert first.sockets == 4 and {x.address for x in first.peers} == {"::1", "127.0.0.1"}
    assert "127.0.0.1" in first.local_addresses  # the IPv4-mapped flow, as IPv4
    grown = [with_counters(s, *(lambda r: (r[2] + 2_000_000, r[3] + 500_000, r[1] + 4))(sampler.TCPI_MAIN.unpack_from(s[4])))
             for s in socks]
    second = reading(p, grown, 12.0)
    flows = flow_rates(first, second)
    one = flows.rates["::1"]
    assert one.sockets == 2
    assert one.tx_bytes_per_s == pytest.approx(2 * 2_000_000 / 2.0)
    assert one.rx_bytes_per_s == pytest.approx(2 * 500_000 / 2.0)
    assert one.retrans_per_s == pytest.approx(2 * 4 / 2.0)
    assert one.rtt_s is not None and 0 < one.rtt_s < 1


def test_a_closed_socket_takes_its_bytes_and_the_sums_never_go_back():
    socks = dumped("inet")
    p = sampler.Peers(loopback=True)
    first = reading(p, socks, 1.0)
    second = reading(p, socks[1:], 2.0)  # one socket closed
    before = {x.address: x for x in first.peers}
    for x in second.peers:
        assert x.sent_bytes >= before[x.address].sent_bytes
    assert second.peers[0].sockets == len(socks) - 1
    assert flow_rates(first, second).rates["127.0.0.1"].tx_bytes_per_s == 0.0


def test_a_new_socket_counts_all_its_bytes_but_not_at_the_first_reading_or_after_a_cut_one():
    socks = dumped("inet")
    p = sampler.Peers(loopback=True)
    assert reading(p, socks[:1], 1.0).peers[0].sent_bytes == 0  # a baseline
    acked = sampler.TCPI_MAIN.unpack_from(socks[1][4])[2]
    assert reading(p, socks[:2], 2.0).peers[0].sent_bytes == acked  # born since: all its bytes
    q = sampler.Peers(loopback=True)
    reading(q, socks[:1], 1.0)
    assert reading(q, socks[:1], 2.0, capped=True).capped
    assert reading(q, socks[:2], 3.0).peers[0].sent_bytes == 0  # maybe not new: unseen beyond the cap


def test_at_most_max_peers_the_busiest_and_how_many_there_were():
    v4 = dumped("inet")
    fake = [(10, s[1], s[2], b"\xfd" + bytes(14) + bytes([i]), s[4]) for i, s in enumerate(v4)]
    p = sampler.Peers(max_peers=2, loopback=True)
    reading(p, fake, 1.0)
    grown = [with_counters(s, sampler.TCPI_MAIN.unpack_from(s[4])[2] + 10 ** (i + 3), 0, 0) for i, s in enumerate(fake)]
    r = reading(p, grown, 2.0)
    assert r.peers_seen == len(fake) and len(r.peers) == 2
    assert [x.address for x in r.peers] == ["fd00::3", "fd00::2"]


def test_older_kernels_short_tcp_info_reads_only_what_is_there():
    socks = dumped("inet")
    short = [s[:4] + (s[4][:104],) for s in socks]  # before bytes_acked (kernels before 4.1)
    p = sampler.Peers(loopback=True)
    reading(p, short, 1.0)
    r = reading(p, short, 2.0)
    assert r.peers[0].sockets == len(socks) and r.peers[0].sent_bytes == 0
    none = [s[:4] + (None,) for s in socks]
    assert reading(sampler.Peers(loopback=True), none, 1.0).peers[0].sockets == len(socks)


def test_the_field_is_checked():
    good = sampler.Peers(loopback=True).aggregate(dumped("inet"), False, 5.0)
    assert parse_peers(good).mono_s == 5.0
    for bad in (good[:10], good[:-1], good + b"\0", b"\x07" + good[1:]):
        with pytest.raises(ParseError):
            parse_peers(bad)
    off = parse_peers(PEER_HEAD.pack(PEERS_UNAVAILABLE, 0, 97, 0, 0, 0, 0, 1.0))
    assert not off.available and "not supported" in off.error
    assert flow_rates(None, off) is None


def test_frames_carry_peers_and_a_repeated_reading_is_one_sample():
    field = sampler.Peers(loopback=True).aggregate(dumped("inet"), False, 5.0)
    pairs = [("wall", b"1.0"), ("mono", b"5.0"), ("peers", field)]
    d = FrameDecoder()
    a = d.decode(encode_fields(pairs))
    b = d.decode(encode_fields([("wall", b"2.0"), ("mono", b"6.0"), ("peers", field)]))
    assert a.peers is b.peers and a.peers.peers[0].address == "127.0.0.1"
    broken = d.decode(encode_fields([("wall", b"3.0"), ("mono", b"7.0"), ("peers", b"\0")]))
    assert not broken.peers.available and not any("peers" in p for p in broken.problems)  # never the node's error


def test_recordings_keep_peers():
    sample = FrameDecoder().decode(encode_fields([
        ("wall", b"1.0"), ("mono", b"5.0"),
        ("peers", sampler.Peers(loopback=True).aggregate(dumped("inet6"), False, 5.0))]))
    back = sample_from_dict(json.loads(json.dumps(sample_to_dict(sample))))
    assert back.peers == sample.peers
    assert "peers" not in sample_to_dict(FrameDecoder().decode(encode_fields([("wall", b"1.0"), ("mono", b"5.0")])))


def test_addresses_map_to_watched_nodes_and_flows_between_them():
    a = PeerSample(1.0, local_addresses=("198.18.0.1",))
    b = PeerSample(1.0, local_addresses=("198.18.0.2", "fd00::2"))
    c = PeerSample(1.0, local_addresses=("10.0.0.1",))
    d = PeerSample(1.0, local_addresses=("10.0.0.1",))  # the same private address: neither
    book = AddressBook([("a", a), ("b", b), ("c", c), ("d", d)])
    assert book.node("198.18.0.2") == "b" and book.node("fd00::2") == "b"
    assert book.node("10.0.0.1") is None and book.label("10.0.0.1") == "10.0.0.1"
    from netui.model.flows import NodeFlows, PeerRates

    rates = {"198.18.0.2": PeerRates(100.0, 5.0, 0.001, 0.0, 1), "fd00::2": PeerRates(50.0, None, 0.003, 1.0, 2),
             "192.0.2.9": PeerRates(1e6, 0.0, None, None, 1), "198.18.0.1": PeerRates(1.0, 1.0, None, None, 1)}
    flows = {"a": NodeFlows(1.0, rates, a)}
    shown = labelled(flows["a"], book, "a")
    assert list(shown) == ["192.0.2.9", "b"]  # busiest first, its own address left out
    assert shown["b"] == PeerRates(150.0, 5.0, 0.003, 1.0, 3, None)
    assert peer_flows(flows, book) == {"a": {"b": shown["b"]}}


def test_the_json_document_has_each_nodes_peers_and_the_flows_between_nodes():
    from netui.engine.document import fleet_document
    from netui.model.fleet import Fleet
    from netui.model.flows import PeerCounters
    from tests.synth import node_sample
    from dataclasses import replace

    fleet = Fleet(["a", "b"])
    for t in (1, 2):
        fleet["a"].observe(replace(node_sample(t), peers=PeerSample(
            100.0 + t, sockets=2, peers_seen=2, local_addresses=("198.18.0.1",),
            peers=(PeerCounters("198.18.0.2", 1, 1000 * t, 10 * t, 0, 0, 250, 250),
                   PeerCounters("192.0.2.9", 1, 5 * t, 0, 0, 0, 100, 100)))))
        fleet["b"].observe(replace(node_sample(t), peers=PeerSample(
            100.0 + t, sockets=1, peers_seen=1, local_addresses=("198.18.0.2",),
            peers=(PeerCounters("198.18.0.1", 1, 10 * t, 1000 * t, 0, 0, 300, 300),))))
    doc = json.loads(json.dumps(fleet_document(fleet)))
    a = doc["nodes"][0]["peers"]
    assert a["sockets"] == 2 and a["local_addresses"] == ["198.18.0.1"]
    assert [(p["peer"], p["node"]) for p in a["peers"]] == [("b", "b"), ("192.0.2.9", None)]
    assert a["peers"][0]["tx_bits_per_s"] == 8000.0 and a["peers"][0]["rtt_s"] == 0.00025
    assert doc["peer_flows"] == [
        {"from": "a", "to": "b", "bits_per_s": 8000.0, "rtt_s": 0.00025, "retrans_per_s": 0.0, "sockets": 1},
        {"from": "b", "to": "a", "bits_per_s": 80.0, "rtt_s": 0.0003, "retrans_per_s": 0.0, "sockets": 1}]


def test_between_dumps_the_known_sockets_are_read_one_by_one_and_new_ones_wait_for_the_next_dump():
    from tests.own_sockets import connected, dump_only_from, listening, own_address

    # the test's sockets on an address of their own, the dump filtered to it: another
    # process's thousands of loopback sockets neither cut them from the dump nor mix in
    address = own_address()
    lsn = listening(address)
    opened = []

    def connect():
        cli, srv = connected(lsn)
        opened.extend((cli, srv))
        return cli, srv

    def mine(peers_: sampler.Peers, cli) -> list:
        port = cli.getsockname()[1]
        return [k for _, k in peers_.known if port in ports(k)]

    try:
        one = connect()
        p = dump_only_from(sampler.Peers(loopback=True, discover_s=3600.0, share=1.0), address)
        p.field(1.0)  # a dump
        assert len(mine(p, one[0])) == 2 and len(p.known) == 2  # (its two ends: nothing else is dumped)
        before = p.socks[mine(p, one[0])[0]]
        one[0].sendall(b"x" * 10000)
        got = 0
        while got < 10000:
            got += len(one[1].recv(65536))
        two = connect()
        p.due = 0.0
        p.field(2.0)  # the known sockets, one by one
        assert mine(p, two[0]) == []  # not found before the next dump
        after = {k: p.socks[k] for k in mine(p, one[0])}
        assert max(v[0] for v in after.values()) >= before[0] + 10000 or max(v[1] for v in after.values()) >= 10000
        p.due, p.discover_due = 0.0, 0.0
        p.field(3.0)  # the next dump
        assert len(mine(p, two[0])) == 2
    finally:
        for s_ in opened + [lsn]:
            s_.close()


def test_a_node_whose_kernel_refuses_netlink_has_peers_unavailable_not_an_error(monkeypatch):
    import socket as so

    def refused(*args, **kw):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(so, "socket", refused)
    p = sampler.Peers()
    field = p.field(5.0)
    got = parse_peers(field)
    assert not got.available and "Operation not permitted" in got.error
    assert p.field(6.0) is field  # tried again only after a while
    sample = FrameDecoder().decode(encode_fields([("wall", b"1.0"), ("mono", b"5.0"), ("peers", field)]))
    assert not sample.peers.available and not any("peers" in x or "sock_diag" in x for x in sample.problems)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 40))
def test_any_bytes_as_a_peers_field_parse_or_say_why(noise, rows):
    head = PEER_HEAD.pack(0, 0, 0, 1, rows, rows, 1, 1.0)
    for value in (noise, head + noise):
        try:
            got = parse_peers(value)
        except ParseError:
            continue
        assert all(isinstance(p.address, str) for p in got.peers)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_as_a_netlink_answer_never_raise(buf):
    out: list = []
    done, error = sampler.diag_sockets(buf, out, 100, True)
    assert isinstance(done, bool) and isinstance(error, int) and len(out) <= 100


def test_a_recording_replays_the_same_peers(tmp_path):
    from dataclasses import replace

    from netui.engine.recorder import Recorder
    from netui.engine.recording.playback import load
    from netui.model.fleet import Fleet
    from tests.synth import node_sample

    p = sampler.Peers(loopback=True)
    socks = dumped("inet6")
    fields = [p.aggregate(socks, False, 10.0)]
    fields.append(p.aggregate([with_counters(s, *(lambda r: (r[2] + 10 ** 6, r[3] + 10 ** 5, r[1] + 3))(
        sampler.TCPI_MAIN.unpack_from(s[4]))) for s in socks], False, 11.0))
    live = [replace(node_sample(t), peers=parse_peers(f)) for t, f in enumerate(fields, 1)]
    rec = Recorder(tmp_path / "r.ndjson.gz", hosts=["a"], interval_s=1.0)
    fleet = Fleet(["a"])
    for s in live:
        rec.sample("a", s)
        fleet["a"].observe(s)
        rec.tick(fleet)
    rec.close()
    again = Fleet(["a"])
    for s in load(str(tmp_path / "r.ndjson.gz")).samples_by_node()["a"]:
        again["a"].observe(s)
    assert again["a"].flows.rates == fleet["a"].flows.rates
    assert again["a"].flows.rates["::1"].tx_bytes_per_s == pytest.approx(2 * 10 ** 6)
