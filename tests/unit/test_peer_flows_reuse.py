"""What the peers' decoding keeps from one reading to the next (so a thousand nodes'
readings cost little) never hides a change: an address that moves is seen."""

from __future__ import annotations

import struct

from netui.collectors import sampler
from netui.collectors.peers import parse_peers

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
