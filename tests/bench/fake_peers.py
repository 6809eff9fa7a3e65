"""A fake node's TCP peers for the benchmarks (bench_fleet ``+peers``): the "peers" field
of one rank of a data-parallel training job, packed by the sampler's own code.

Node ``i`` of a fleet of ``n`` has its own address in 198.18.0.0/15 (``node_address``) and
the sockets such a node has (``JOB``): the ring all-reduce's, RING_SOCKETS to its right
neighbour (what it sends) and as many from its left one (what it receives), as NCCL's
socket transport opens them; its SSH session from the monitor (the frames it sends); one to
the job's rendezvous store on the launcher, and two to the dataset's storage (what its data
loader reads). The launcher, the storage and the monitor are not nodes of the fleet: only the
two ring neighbours map to watched nodes. Every reading, each socket's tcp_info counters
(bytes acked and received, retransmits, delivery rate, RTT) have grown at that socket's rate
times the time since the reading before, give or take a fifth from second to second (a
training step's compute and communication do not line up with the 1 s frames), so the
monitor computes flow rates from every frame. These are only numbers in frames: no traffic
is sent and no socket is opened.

The field is made by ``sampler.Peers.aggregate``, the sampler's own sums by remote address,
top-N cut and packing, fed these sockets as its sock_diag dump would give them
(``sampler.diag_sockets``: family, 4-tuple and cookie, source and remote address, tcp_info),
a new reading every frame as the sampler takes one for a few dozen sockets.

A node learns who it is from its SSH user name (``peers_user``): the bench's child connects
each node as ``peers-I-N`` when it runs a ``+peers`` variant; any other name sends no field.
"""

from __future__ import annotations

import ipaddress
import struct

FLEET_BASE = ipaddress.IPv4Address("198.18.0.0")  # RFC 2544's benchmarking range, /15
MONITOR = "198.19.255.254"  # the monitor's end of every node's SSH session
LAUNCHER = "198.19.0.2"  # the job's rendezvous store (torch.distributed's TCPStore)
STORAGE = "198.19.0.10"  # the dataset's storage
RING_SOCKETS = 4  # NCCL_SOCKET_NTHREADS × NCCL_NSOCKS_PERTHREAD, each way
# per socket: (whose, sockets, bytes sent/s, bytes received/s, retransmits/s, RTT µs), whose
# being "right" / "left" (the ring's neighbours) or a fixed address; rates per socket
JOB = (
    ("right", RING_SOCKETS, 600e6, 20e3, 0.3, 90),  # the all-reduce's chunks, to the next rank
    ("left", RING_SOCKETS, 20e3, 600e6, 0.0, 110),  # the previous rank's, received
    (MONITOR, 1, 3.6e3, 60.0, 0.0, 250),  # the SSH session: the sampler's frames (~3.4 KB/s)
    (LAUNCHER, 1, 200.0, 200.0, 0.0, 180),  # the rendezvous store's heartbeats
    (STORAGE, 2, 2e3, 75e6, 0.05, 400),  # the data loader's reads
)
TCP_INFO = struct.Struct("=68xI28xI16xQQ24xQ")  # rtt, total_retrans, bytes_acked, bytes_received, delivery_rate
USER_PREFIX = "peers-"


def node_address(index: int) -> str:
    """Node ``index``'s own address (198.18.0.1 for node 0): what its sockets' local end shows."""
    return str(FLEET_BASE + 1 + index)


def peers_user(index: int, nodes: int) -> str:
    """The SSH user name that asks the fake fleet for node ``index`` of ``nodes``'s peers field."""
    return f"{USER_PREFIX}{index}-{nodes}"


def node_of_user(user: str | None) -> tuple[int, int] | None:
    """``(index, nodes)`` of a ``peers_user`` name; None for any other."""
    if not user or not user.startswith(USER_PREFIX):
        return None
    index, _, nodes = user[len(USER_PREFIX):].partition("-")
    try:
        i, n = int(index), int(nodes)
    except ValueError:
        return None
    return (i, n) if 0 <= i < n <= 131_070 else None


def _raw(address: str) -> bytes:
    return ipaddress.IPv4Address(address).packed + bytes(12)  # as sock_diag gives it: 16 bytes


class FakePeers:
    """The "peers" field of node ``index`` of ``nodes``, reading by reading (``field``)."""

    def __init__(self, index: int, nodes: int) -> None:
        from netui.collectors import sampler

        self.index = index
        self.peers = sampler.Peers()  # its sums and packing only: no socket is opened
        local = _raw(node_address(index))
        neighbours = {"right": node_address((index + 1) % nodes), "left": node_address((index - 1) % nodes)}
        # per socket: its dump identity, its rates, and its counters (running, as the kernel's)
        self.sockets: list[tuple[bytes, bytes, tuple[float, float, float], int, list]] = []
        for whose, count, sent, received, retrans, rtt in JOB:
            if whose in neighbours and nodes < 2:
                continue  # a fleet of one has no ring
            remote = _raw(neighbours.get(whose, whose))
            for k in range(count):
                key = struct.pack(">HH4s4sQ", 40000 + len(self.sockets), 29500 + k, local[:4], remote[:4],
                                  index << 16 | len(self.sockets))
                # connections older than the sampler: counters that do not start at zero
                counters = [int(sent * 3600), int(received * 3600), retrans * 3600]
                self.sockets.append((key, remote, (sent, received, retrans), rtt, counters))
        self.local = local
        self.mono_s: float | None = None
        self.readings = 0

    def field(self, mono_s: float) -> bytes:
        """The field of a reading at ``mono_s`` (the node's CLOCK_MONOTONIC): every socket's
        counters grown at its rate since the reading before."""
        dt = 0.0 if self.mono_s is None else max(0.0, mono_s - self.mono_s)
        self.mono_s = mono_s
        self.readings += 1
        # give or take a fifth, differently for each node and second
        swing = 0.8 + 0.4 * ((self.readings * 7 + self.index * 3) % 11) / 10
        socks = []
        for key, remote, (sent, received, retrans), rtt, c in self.sockets:
            c[0] += int(sent * swing * dt)
            c[1] += int(received * swing * dt)
            c[2] += retrans * dt  # (a running fraction: one now and then)
            info = TCP_INFO.pack(rtt + self.readings % 13, int(c[2]), c[0], c[1], int(sent * 1.1))
            socks.append((2, key, self.local, remote, info))
        return self.peers.aggregate(socks, False, mono_s, True)
