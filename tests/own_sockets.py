"""A test's own loopback sockets, and a sampler that dumps only those.

The sampler's dump is cut at ``max_sockets`` (protocol.MAX_SOCKETS), and everything on
127.0.0.1 is one peer: on a host where another process holds thousands of loopback TCP
sockets, a test's few would be cut from the dump, or counted together with the others'.
So a test's sockets live on an address of their own in 127.0.0.0/8 (all of it is loopback
on Linux: nothing to set up), and the dump is filtered in the kernel to that address, with
the same kind of inet_diag bytecode the sampler builds to leave loopback out
(``sampler.diag_bytecode``). The sampler's code runs unchanged: the dump, the reads one by
one between dumps, the sums by peer and the field.
"""

from __future__ import annotations

import random
import socket
import struct

INET_DIAG_BC_S_COND = 7  # the socket's local address and port (linux/inet_diag.h)


def own_address() -> str:
    """A loopback address that nothing else on the host uses, most likely: 127.x.y.z, away
    from 127.0.0.0/16 (127.0.0.1, 127.0.0.53: what daemons bind)."""
    return f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def connected(listener: socket.socket, timeout_s: float = 5) -> tuple[socket.socket, socket.socket]:
    """A connection to ``listener`` from its own address: (client, the accepted server end),
    both ends on that address."""
    address = listener.getsockname()
    client = socket.create_connection(address, timeout=timeout_s, source_address=(address[0], 0))
    server, _ = listener.accept()
    return client, server


def listening(address: str, backlog: int = 4) -> socket.socket:
    lsn = socket.socket()
    lsn.bind((address, 0))
    lsn.listen(backlog)
    return lsn


def only_from(address: str) -> bytes:
    """inet_diag bytecode that accepts the IPv4 sockets whose local address is ``address``
    and rejects every other: (S_COND address/32, any port ? accept : jump past the end)."""
    cond = struct.pack("=BBxxi4s", socket.AF_INET, 32, -1, socket.inet_aton(address))
    size = 4 + len(cond)
    return struct.pack("=BBH", INET_DIAG_BC_S_COND, size, size + 4) + cond


def dump_only_from(peers, address: str):
    """``peers`` (a ``sampler.Peers``) dumping only the sockets on ``address``; returned."""
    peers.bytecode = only_from(address)
    return peers
