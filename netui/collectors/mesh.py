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
_new = tuple.__new__


def _reading(fields: tuple) -> MeshPeerReading:  # (for the one-by-one rows)
    return _new(MeshPeerReading, fields)
_ONE_RTT = struct.Struct(MESH_ROW.format + "I")  # a row and the one RTT it lists


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
    readings = _one_rtt_rows(value, rows)
    if readings is None:
        readings = _rows(value, rows)
    address = (_TEXTS.get((family, home)) or _text(family, home)) if family else None
    return MeshSample(mono, port=port, peers=peers, answers=answers, refused=refused, readings=tuple(readings),
                      address=address)


def _text(family: int, raw: bytes) -> str:
    """A peer's address as text (cached); ParseError for an unknown family."""
    address = address_text(family, raw)
    if address is None:
        raise ParseError(f"mesh: address family {family}")
    if len(_TEXTS) < _MAX_TEXTS:
        _TEXTS[(family, raw)] = address
    return address


def _one_rtt_rows(value: bytes, rows: int) -> list[MeshPeerReading] | None:
    """The rows when each lists one RTT (at the default rate a peer is probed at most every
    2 s: a frame's rows are mostly one answered probe each), in one C pass; None otherwise."""
    if len(value) - MESH_HEAD.size != rows * _ONE_RTT.size:
        return None
    texts, reading = _TEXTS, MeshPeerReading
    out: list[MeshPeerReading] = []
    append = out.append
    for family, raw, port, answered, lost, listed, rtt in _ONE_RTT.iter_unpack(memoryview(value)[MESH_HEAD.size:]):
        if listed != 1 or not answered:
            return None  # (rows of 0 and 2 RTTs that happen to add up): row by row
        address = texts.get((family, raw)) or _text(family, raw)
        append(_new(reading, (address, port, answered, lost, (rtt,))))  # (a NamedTuple without its __new__'s call)
    return out


def _rows(value: bytes, rows: int) -> list[MeshPeerReading]:
    """The rows, one by one (ParseError: cut short, or bytes after them)."""
    readings: list[MeshPeerReading] = []
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
        address = texts.get((peer_family, raw)) or _text(peer_family, raw)
        append(_reading((address, peer_port, answered, lost, rtts)))
    if at != len(value):
        raise ParseError(f"mesh: {len(value) - at} bytes after its last row")
    return readings
