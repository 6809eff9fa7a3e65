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


_RTTS = [struct.Struct(f"<{n}I") for n in range(MESH_MAX_RTTS + 1)]  # n RTTs listed after a row
_TEXTS: dict[tuple[int, bytes], str] = {}  # (family, 16 bytes) → the address as text: a fleet's peers repeat
_MAX_TEXTS = 65_536
_reading = MeshPeerReading._make


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
    append, unpack_row, size, row_size = readings.append, MESH_ROW.unpack_from, len(value), MESH_ROW.size
    texts = _TEXTS
    at = MESH_HEAD.size
    for _ in range(rows):
        if at + row_size > size:
            raise ParseError("mesh: cut inside a peer's row")
        peer_family, raw, peer_port, answered, lost, listed = unpack_row(value, at)
        at += row_size
        if listed:
            if listed > answered or listed > MESH_MAX_RTTS or at + 4 * listed > size:
                raise ParseError(f"mesh: {listed} RTTs listed for {answered} answers")
            rtts = _RTTS[listed].unpack_from(value, at)
            at += 4 * listed
        else:
            rtts = ()
        address = texts.get((peer_family, raw))
        if address is None:
            address = address_text(peer_family, raw)
            if address is None:
                raise ParseError(f"mesh: address family {peer_family}")
            if len(texts) < _MAX_TEXTS:
                texts[(peer_family, raw)] = address
        append(_reading((address, peer_port, answered, lost, rtts)))
    if at != len(value):
        raise ParseError(f"mesh: {len(value) - at} bytes after its last row")
    address = address_text(family, home) if family else None
    if family and address is None:
        raise ParseError(f"mesh: address family {family}")
    return MeshSample(mono, port=port, peers=peers, answers=answers, refused=refused, readings=tuple(readings),
                      address=address)
