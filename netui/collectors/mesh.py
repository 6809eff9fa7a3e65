"""The sampler's "mesh" field (what its probes of its peers settled since the last frame)
→ a MeshSample. Pure: the bytes come from a frame. The format: docs/protocol.md#mesh.
"""

from __future__ import annotations

import os
import struct

from netui.collectors.peers import address_text
from netui.collectors.procfs import ParseError
from netui.collectors.protocol import MESH_HEAD, MESH_MAX_PEERS, MESH_MAX_RTTS, MESH_ON, MESH_ROW, MESH_UNAVAILABLE
from netui.model.mesh import MeshPeerReading, MeshSample


def parse_mesh(value: bytes) -> MeshSample:
    """The MeshSample of one "mesh" field; ParseError when it is not as the sampler packs it."""
    if len(value) < MESH_HEAD.size:
        raise ParseError(f"mesh: {len(value)} bytes, shorter than its head")
    status, code, port, peers, answers, refused, rows, mono, family, home = MESH_HEAD.unpack_from(value)
    if mono != mono:  # (NaN)
        raise ParseError("mesh: its time is not a number")
    if status == MESH_UNAVAILABLE:
        why = os.strerror(code) if code else "no socket"
        return MeshSample(mono, available=False, error=f"mesh unavailable: {why}")
    if status != MESH_ON:
        raise ParseError(f"mesh: unknown status {status}")
    if rows > MESH_MAX_PEERS:
        raise ParseError(f"mesh: {rows} peers, more than the sampler takes")
    readings = []
    at = MESH_HEAD.size
    for _ in range(rows):
        if at + MESH_ROW.size > len(value):
            raise ParseError("mesh: cut inside a peer's row")
        family, raw, peer_port, answered, lost, listed = MESH_ROW.unpack_from(value, at)
        at += MESH_ROW.size
        if listed > min(answered, MESH_MAX_RTTS) or at + 4 * listed > len(value):
            raise ParseError(f"mesh: {listed} RTTs listed for {answered} answers")
        rtts = struct.unpack_from(f"<{listed}I", value, at)
        at += 4 * listed
        address = address_text(family, raw)
        if address is None:
            raise ParseError(f"mesh: address family {family}")
        readings.append(MeshPeerReading(address, peer_port, answered, lost, rtts))
    if at != len(value):
        raise ParseError(f"mesh: {len(value) - at} bytes after its last row")
    address = address_text(family, home) if family else None
    if family and address is None:
        raise ParseError(f"mesh: address family {family}")
    return MeshSample(mono, port=port, peers=peers, answers=answers, refused=refused, readings=tuple(readings),
                      address=address)
