"""The sampler's "mesh" field (what its probes of its peers settled since the last frame)
→ a MeshSample. Pure: the bytes come from a frame. The format: docs/protocol.md#mesh.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from functools import partial

from netui.collectors.peers import address_text
from netui.collectors.procfs import ParseError
from netui.collectors.protocol import MESH_HEAD, MESH_MAX_PEERS, MESH_MAX_RTTS, MESH_ON, MESH_ROW, MESH_UNAVAILABLE
from netui.model.mesh import MeshPeerReading, MeshRows, MeshSample
from netui.speedups import mesh_check, mesh_rows


_RTTS = [struct.Struct(f"<{n}I") for n in range(MESH_MAX_RTTS + 1)]  # n RTTs listed after a row
# (family byte + the 16 address bytes) → the address as text: a fleet's peers repeat
_TEXTS: dict[bytes, str] = {}
_MAX_TEXTS = 65_536
_new = tuple.__new__
_new_object = object.__new__
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(MeshSample) if f.name != "mono_s"}


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
    try:  # (the rows checked in one C pass, taken as they are: MeshRows)
        mesh_check(value, MESH_HEAD.size, rows, MESH_MAX_RTTS)
    except ValueError as exc:
        raise ParseError(str(exc)) from None
    readings = MeshRows(value, MESH_HEAD.size, rows, partial(_readings, value, rows))
    address = (_TEXTS.get(bytes((family,)) + home) or _text(family, home)) if family else None
    # MeshSample(mono, port=port, …) without its __init__: a frozen dataclass's sets each field
    # through object.__setattr__, three times what the rest of a 20-row frame's decoding costs
    sample = _new_object(MeshSample)
    fields = sample.__dict__
    fields.update(_DEFAULTS)
    fields["mono_s"], fields["port"], fields["peers"], fields["answers"] = mono, port, peers, answers
    fields["refused"], fields["readings"], fields["address"] = refused, readings, address
    return sample


def _readings(value: bytes, rows: int) -> tuple[MeshPeerReading, ...]:
    """The rows of a field that ``mesh_check`` passed, as MeshPeerReadings (in one C pass,
    speedups.mesh_rows; row by row when an address is new)."""
    readings = mesh_rows(value, MESH_HEAD.size, rows, MESH_MAX_RTTS, _TEXTS, MeshPeerReading)
    return tuple(_rows(value, rows)) if readings is None else readings


def _text(family: int, raw: bytes) -> str:
    """A peer's address as text (cached); ParseError for an unknown family."""
    address = address_text(family, raw)
    if address is None:
        raise ParseError(f"mesh: address family {family}")
    if len(_TEXTS) < _MAX_TEXTS:
        _TEXTS[bytes((family,)) + raw] = address
    return address


def _rows(value: bytes, rows: int) -> list[MeshPeerReading]:
    """The rows, one by one, their addresses' texts put in _TEXTS (ParseError: as
    ``mesh_rows``'s, or an address of an unknown family)."""
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
        address = texts.get(bytes((peer_family,)) + raw) or _text(peer_family, raw)
        append(_new(MeshPeerReading, (address, peer_port, answered, lost, rtts)))
    if at != len(value):
        raise ParseError(f"mesh: {len(value) - at} bytes after its last row")
    return readings
