"""The sampler's TCP peers, run here as a node runs it: a bounded loopback flow is seen
(with the loopback skip turned off for the test), and skipped by default.

The in-process readers dump only the test's own sockets, on a loopback address of their own
(tests/own_sockets.py): a host where another process holds thousands of loopback sockets
cannot cut them from the dump (it is capped) nor add to their counts."""

from __future__ import annotations

import socket
import subprocess
import threading
import time

import pytest

from netui.collectors.frames import FrameDecoder
from netui.collectors.peers import LocalPeers
from netui.collectors.ssh import sampler_command
from netui.model.node import Node
from tests.integration.test_sampler import read_frames
from tests.own_sockets import connected, dump_only_from, listening, own_address

FLOW_BYTES = 4 << 20  # one bounded loopback flow


def flow(address: str = "127.0.0.1") -> tuple[list[socket.socket], int]:
    """A loopback connection on ``address`` (both its ends) that carried FLOW_BYTES, kept
    open (closed by the caller)."""
    lsn = listening(address, 1)
    cli, srv = connected(lsn, 10)
    srv.settimeout(10)
    got = [0]

    def drain():
        while got[0] < FLOW_BYTES:
            chunk = srv.recv(1 << 20)
            if not chunk:
                break
            got[0] += len(chunk)

    t = threading.Thread(target=drain)
    t.start()
    cli.sendall(b"\0" * FLOW_BYTES)
    t.join(10)
    return [lsn, cli, srv], got[0]


def peer(sample, address):
    """The peer at ``address`` in a NodeSample or a PeerSample, or None."""
    peers = getattr(sample.peers, "peers", sample.peers)
    return next((p for p in peers if p.address == address), None)


@pytest.mark.slow
def test_the_sampler_sees_a_loopback_flow_when_asked_to_and_skips_it_by_default():
    both = [subprocess.Popen(["sh", "-c", sampler_command(0.1) + extra], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for extra in (" --peer-loopback --peer-discover 0 --peer-share 1", "")]
    socks: list = []
    try:
        decoders = [FrameDecoder(), FrameDecoder()]
        before = [d.decode(read_frames(p.stdout, 1)[0]) for d, p in zip(decoders, both)]
        socks, moved = flow()
        assert moved == FLOW_BYTES
        node = Node("here")
        node.observe(before[0])
        seen = None
        for _ in range(50):  # bounded: 5 s of frames at most
            s = decoders[0].decode(read_frames(both[0].stdout, 1)[0])
            node.observe(s)
            p = peer(s, "127.0.0.1")
            if (p is not None and s.peers.mono_s > before[0].peers.mono_s and p.received_bytes >= FLOW_BYTES
                    and p.sent_bytes >= FLOW_BYTES):  # (the last ACK may come a moment later)
                seen = s
                break
        plain = [decoders[1].decode(f) for f in read_frames(both[1].stdout, 3)]
    finally:
        for p in both:
            p.kill()
            p.wait()
        for s in socks:
            s.close()
    assert seen is not None, "the loopback flow never showed in the sampler's peers"
    assert seen.peers.available and seen.peers.sockets >= 2
    p = peer(seen, "127.0.0.1")
    assert p.sent_bytes >= FLOW_BYTES and p.sockets >= 2  # both ends are this host
    assert "127.0.0.1" in seen.peers.local_addresses
    assert node.flows is not None and "127.0.0.1" in node.flows.rates
    for s in plain:  # the default: loopback peers left out, the reading still there
        assert s.peers is not None and s.peers.available
        assert peer(s, "127.0.0.1") is None and peer(s, "::1") is None


def own_reader(address: str, discover_s: float) -> LocalPeers:
    """A local-mode reader of loopback peers whose dumps hold the sockets on ``address`` only."""
    reader = LocalPeers(loopback=True, discover_s=discover_s, share=1.0)
    dump_only_from(reader._peers, address)  # (its sampler.Peers: the code a node runs)
    return reader


def test_local_mode_reads_peers_through_the_samplers_code():
    address = own_address()
    reader = own_reader(address, 0.0)  # (a dump each reading: the new flow is found)
    socks: list = []
    try:
        first = reader.read(1.0)
        socks, _ = flow(address)
        second = reader.read(1e9)  # (due at once)
    finally:
        reader.close()
        for s in socks:
            s.close()
    assert first.available and second.available
    assert peer(first, address) is None
    grown = peer(second, address)
    assert grown is not None and grown.sockets == 2 and grown.received_bytes >= FLOW_BYTES


def test_local_mode_samples_carry_peers_from_the_second_on():
    from netui.collectors.local import LiveReader

    reader = LiveReader()
    try:
        first, second = reader.sample(), reader.sample()
    finally:
        reader.close()
    assert first.peers is None  # (the first frame imports nothing more)
    assert second.peers is not None and second.peers.available


def test_a_connection_opened_brings_the_next_dump_forward():
    """Dumps are minutes apart here (discover_s): a flow opened after the first is found in
    the next reading once the node's TCP opens grew, not while they stay (the known sockets
    only); and no more than EARLY_DUMPS times per discover_s, however often they grow."""
    from netui.collectors.sampler import EARLY_DUMPS

    socks: list = []
    address = own_address()
    readers = [own_reader(address, 1e6) for _ in range(2)]
    try:
        for r in readers:
            r.read(time.monotonic(), 100)
        found = []
        for k in range(EARLY_DUMPS + 1):
            more, _ = flow(address)
            socks += more
            if k == 0:
                same = readers[0].read(time.monotonic(), 100)
            found.append(peer(readers[1].read(time.monotonic(), 103 + 3 * k), address))
    finally:
        for r in readers:
            r.close()
        for s in socks:
            s.close()
    assert peer(same, address) is None  # no dump: the new sockets are unknown
    # each flow is two sockets here (both its ends); its bytes count from the next reading
    assert [p.sockets if p else 0 for p in found] == [2 * (k + 1) for k in range(EARLY_DUMPS)] + [2 * EARLY_DUMPS]


def test_tcp_opens_reads_both_counters_of_proc_net_snmp():
    from netui.collectors.peers import tcp_opens

    text = ("Ip: Forwarding DefaultTTL\nIp: 1 64\n"
            "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails\n"
            "Tcp: 1 200 120000 -1 7 5 0\n")
    assert tcp_opens(text) == 12 and tcp_opens(text.encode()) == 12
    assert tcp_opens(None) is None and tcp_opens("Tcp: ActiveOpens\nTcp: x\n") is None
    assert tcp_opens("Ip: 1\n") is None
    with open("/proc/net/snmp") as f:  # this host's, as the kernel writes it
        assert isinstance(tcp_opens(f.read()), int)
