"""The probe mesh's readings (docs/protocol.md#mesh): what one node's probes of its peers
settled in one frame. Pure: no I/O; collectors/mesh.py builds them from a frame's "mesh" field.

RTTs are measured on the prober's own monotonic clock (the answer echoes the time the probe
left): no two nodes' clocks are ever compared.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MeshPeerReading:
    """One peer's probes that settled in a frame: ``answered`` (their RTTs in µs, at most the
    sampler's cap of them listed) and ``lost`` (no answer within the sampler's timeout)."""

    address: str
    port: int
    answered: int
    lost: int
    rtts_us: tuple[int, ...] = ()


@dataclass(frozen=True)
class MeshSample:
    """A node's part of the mesh at one frame (``mono_s``: its CLOCK_MONOTONIC).

    ``available`` False: the node could not open its UDP socket (``error`` says why). ``port``:
    the UDP port it answers probes on; ``peers``: how many peers it has been given; ``answers``
    and ``refused``: probes it answered, and packets it dropped (no token, not from a listed
    peer, not a probe), counted since its sampler started; ``readings``: what settled since
    the frame before; ``address``: the address the node was reached at, which its peers probe.
    """

    mono_s: float
    available: bool = True
    error: str | None = None
    port: int = 0
    peers: int = 0
    answers: int = 0
    refused: int = 0
    readings: tuple[MeshPeerReading, ...] = ()
    address: str | None = None  # where its peers reach it (its SSH session's address); None: unknown
