"""What the peers' decoding and the fleet's address book keep from one reading to the next
(so a thousand nodes' readings cost little) never hides a change: an address that moves is
seen, a node named by its address is found, peers that change places keep their own rates."""

from __future__ import annotations

import struct
from dataclasses import replace

from netui.collectors import sampler
from netui.collectors.peers import parse_peers
from netui.model.fleet import Fleet
from netui.model.flows import PeerCounters, PeerRates, PeerSample, flow_rates
from tests.synth import node_sample

TCP_INFO = struct.Struct("=68xI28xI16xQQ24xQ")  # rtt, total_retrans, bytes_acked, bytes_received, delivery_rate


def field(local: str, mono: float, sent: int, remote: str = "198.18.0.9") -> bytes:
    """A "peers" field as the sampler packs it: one socket from ``local`` to ``remote`` (a
    new sampler each time: its bytes count from 0)."""
    raw = bytes(map(int, local.split("."))) + bytes(12)
    far = bytes(map(int, remote.split("."))) + bytes(12)
    key = struct.pack(">HH4s4sQ", 40000, 22, raw[:4], far[:4], 1)
    sock = (2, key, raw, far, TCP_INFO.pack(200, 0, sent, sent // 2, 1000))
    return sampler.Peers().aggregate([sock], False, mono, True)


def test_readings_from_the_same_local_addresses_share_them_and_a_new_address_is_read():
    first, second = parse_peers(field("198.18.0.1", 1.0, 1000)), parse_peers(field("198.18.0.1", 2.0, 5000))
    assert first.local_addresses == ("198.18.0.1",)
    assert second.local_addresses is first.local_addresses  # (what the address book compares)
    moved = parse_peers(field("198.18.0.7", 3.0, 9000))
    assert moved.local_addresses == ("198.18.0.7",)
    assert [p.address for p in (first.peers + second.peers + moved.peers)] == ["198.18.0.9"] * 3


def test_the_kept_local_addresses_are_bounded_whatever_the_nodes_send(monkeypatch):
    from netui.collectors import peers

    monkeypatch.setattr(peers, "_LOCALS", {})
    monkeypatch.setattr(peers, "LOCALS_KEPT", 4)
    for k in range(10):  # ten nodes, each its own address: at most LOCALS_KEPT kept, each read right
        assert parse_peers(field(f"198.18.1.{k + 1}", 1.0, 1000)).local_addresses == (f"198.18.1.{k + 1}",)
        assert len(peers._LOCALS) <= 4
    head = field("198.18.0.1", 1.0, 1000)  # one address; a node listing more than LOCALS_BYTES: read, not kept
    many = b"".join(peers.PEER_ADDR.pack(2, bytes([198, 18, 2, j % 250]) + bytes(12)) for j in range(100))
    tail_at = len(head) - peers.PEER_ADDR.size
    value = bytearray(head[:tail_at] + many)
    head_fields = list(peers.PEER_HEAD.unpack_from(head))
    head_fields[6] = 100
    peers.PEER_HEAD.pack_into(value, 0, *head_fields)
    sample = parse_peers(bytes(value))
    assert len(sample.local_addresses) == 100 and bytes(value[tail_at:]) not in peers._LOCALS


def test_the_fleet_sees_a_node_whose_address_changed_between_readings():
    fleet = Fleet(["a", "b"], history_s=10)

    def observe(t: int, address_of_b: str) -> None:
        fleet["a"].observe(replace(node_sample(t), peers=parse_peers(field("198.18.0.1", t, 1000 * t))))
        fleet["b"].observe(replace(node_sample(t), peers=parse_peers(field(address_of_b, t, 1000 * t))))

    observe(1, "198.18.0.2")
    assert fleet.address_book().node("198.18.0.2") == "b"
    observe(2, "198.18.0.2")
    assert fleet.address_book().node("198.18.0.2") == "b"
    observe(3, "198.18.0.3")  # b's address moved (a new lease, a bond's other port)
    book = fleet.address_book()
    assert book.node("198.18.0.3") == "b" and book.node("198.18.0.2") is None
    assert book.node("198.18.0.1") == "a"
    # the same addresses in new tuples (a recording replayed) are the same book
    fleet["b"].sample = replace(fleet["b"].sample,
                                peers=replace(fleet["b"].sample.peers, local_addresses=("198.18.0.3",)))
    assert fleet.address_book() is book


def test_a_node_named_by_its_address_is_found_at_every_reading():
    fleet = Fleet(["root@198.18.0.5:22", "[fd00::5]:2222", "node0001"], history_s=10)
    for t in (1, 2, 3):
        for name in fleet.nodes:  # readings whose sockets show no local address of the node's own
            fleet[name].observe(replace(node_sample(t), peers=PeerSample(float(t))))
        book = fleet.address_book()
        assert book.node("198.18.0.5") == "root@198.18.0.5:22"
        assert book.node("fd00::5") == "[fd00::5]:2222"
        assert not book.knows("node0001")


def counters(address: str, t: int, rate: int) -> PeerCounters:
    return PeerCounters(address, 1, rate * t, 0, 0, 0, 100, 100)


def test_peers_that_change_places_between_readings_keep_their_own_rates():
    first = PeerSample(1.0, peers=(counters("10.0.0.1", 1, 500), counters("10.0.0.2", 1, 100)))
    flows = flow_rates(None, first)
    swapped = PeerSample(2.0, peers=(counters("10.0.0.2", 2, 100)._replace(sent_bytes=10_000),
                                     counters("10.0.0.1", 2, 500)))
    flows = flow_rates(first, swapped, flows)
    assert flows is not None
    assert flows.rates["10.0.0.2"].tx_bytes_per_s == 10_000 - 100
    assert flows.rates["10.0.0.1"].tx_bytes_per_s == 500
    assert list(flows.rates) == ["10.0.0.2", "10.0.0.1"]  # busiest first
    third = PeerSample(3.0, peers=(counters("10.0.0.3", 3, 7), counters("10.0.0.2", 3, 5000)))
    later = flow_rates(swapped, third, flows)
    assert later is not None
    assert later.rates["10.0.0.2"] == PeerRates(15_000 - 10_000, 0.0, 0.0001, 0.0, 1, None)
    assert later.rates["10.0.0.3"].tx_bytes_per_s is None  # new: unknown, as ever
    assert list(later.rates) == ["10.0.0.2", "10.0.0.3"]


def test_an_address_twice_in_the_reading_before_is_rated_against_its_last_row():
    prev = PeerSample(1.0, peers=(counters("10.0.0.1", 1, 100), counters("10.0.0.1", 1, 300)))
    cur = PeerSample(2.0, peers=(counters("10.0.0.1", 2, 100), counters("10.0.0.2", 2, 1)))
    flows = flow_rates(prev, cur, flow_rates(None, prev))
    assert flows is not None
    assert flows.rates["10.0.0.1"].tx_bytes_per_s is None  # 200 after 300: as a counter gone back
