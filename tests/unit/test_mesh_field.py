"""The sampler's "mesh" field decoded (collectors/mesh.py): as the sampler packs it, and every
way a node's bytes can be wrong is a ParseError (the frame decoder then makes the node's mesh
unavailable, never the node's error)."""

from __future__ import annotations

import socket
import struct
from dataclasses import replace

import pytest

from netui.collectors.frames import FrameDecoder, encode_fields
from netui.collectors.mesh import parse_mesh
from netui.collectors.procfs import ParseError
from netui.collectors.protocol import MESH_HEAD, MESH_MAX_RTTS, MESH_ON, MESH_ROW, MESH_UNAVAILABLE
from netui.collectors.ssh import sampler_command
from netui.model.mesh import MeshSample


def row(address: str, port: int, answered: int, lost: int, rtts: list[int]) -> bytes:
    raw = socket.inet_pton(socket.AF_INET, address) + bytes(12)
    return MESH_ROW.pack(2, raw, port, answered, lost, len(rtts)) + struct.pack(f"<{len(rtts)}I", *rtts)


HOME = socket.inet_pton(socket.AF_INET, "198.18.0.1") + bytes(12)


def field(rows: list[bytes], *, status: int = MESH_ON, mono: float = 12.5) -> bytes:
    return MESH_HEAD.pack(status, 0, 4242, 3, 17, 2, len(rows), mono, 2, HOME) + b"".join(rows)


def test_a_field_as_the_sampler_packs_it():
    m = parse_mesh(field([row("198.18.0.2", 5000, 3, 1, [120, 95, 130]), row("198.18.0.3", 5001, 0, 2, [])]))
    assert (m.available, m.port, m.peers, m.answers, m.refused, m.mono_s) == (True, 4242, 3, 17, 2, 12.5)
    assert m.address == "198.18.0.1"
    assert [(r.address, r.port, r.answered, r.lost, r.rtts_us) for r in m.readings] == [
        ("198.18.0.2", 5000, 3, 1, (120, 95, 130)), ("198.18.0.3", 5001, 0, 2, ())]


@pytest.mark.parametrize("rows", [
    [("198.18.0.2", 5000, 1, 0, [120]), ("198.18.0.3", 5001, 1, 0, [95])],  # one RTT each (the default rate's frame)
    [("198.18.0.2", 5000, 2, 0, [120, 95]), ("198.18.0.3", 5001, 0, 1, [])],  # 2 and 0: the same length
    [("198.18.0.2", 5000, 1, 1, [120]), ("198.18.0.3", 5001, 0, 0, [7])],  # one RTT listed for no answer
], ids=["one-rtt-rows", "two-and-none", "rtt-without-answer"])
def test_rows_of_one_rtt_read_as_any_others(rows):
    value = field([row(*r) for r in rows])
    if any(len(r[4]) > r[2] for r in rows):
        with pytest.raises(ParseError):
            parse_mesh(value)
        return
    assert [tuple(r) for r in parse_mesh(value).readings] == [(a, p, n, lost, tuple(t)) for a, p, n, lost, t in rows]


def test_a_decoded_sample_is_the_one_its_constructor_makes():
    """(parse_mesh makes it without MeshSample's __init__: every field must be as its own)"""
    m = parse_mesh(field([row("198.18.0.2", 5000, 1, 0, [120])]))
    made = MeshSample(12.5, port=4242, peers=3, answers=17, refused=2, readings=m.readings, address="198.18.0.1")
    assert m == made and vars(m) == vars(made) and repr(m) == repr(made)
    assert replace(m, available=False) == replace(made, available=False)


def test_a_node_without_its_socket_says_so():
    m = parse_mesh(MESH_HEAD.pack(MESH_UNAVAILABLE, 97, 0, 0, 0, 0, 0, 1.0, 0, bytes(16)))
    assert not m.available and "Address family not supported" in (m.error or "")


@pytest.mark.parametrize("value", [
    b"",  # shorter than its head
    field([row("198.18.0.2", 5000, 1, 0, [10])])[:-2],  # cut inside its RTTs
    field([row("198.18.0.2", 5000, 1, 0, [10])]) + b"x",  # bytes after its last row
    field([row("198.18.0.2", 5000, 1, 0, [10, 20])]),  # more RTTs than answers
    field([row("198.18.0.2", 5000, 100, 0, [1] * (MESH_MAX_RTTS + 1))]),  # more RTTs than the cap
    field([], status=7),  # an unknown status
    field([], mono=float("nan")),
    MESH_HEAD.pack(MESH_ON, 0, 1, 1, 0, 0, 5, 1.0, 0, bytes(16)),  # five rows said, none there
    MESH_HEAD.pack(MESH_ON, 0, 1, 1, 0, 0, 0, 1.0, 9, bytes(16)),  # its own address of no family
], ids=["short", "cut", "trailing", "rtts>answers", "rtts>cap", "status", "nan", "rows", "home"])
def test_a_field_that_is_not_the_samplers_is_refused(value):
    with pytest.raises(ParseError):
        parse_mesh(value)


def test_a_bad_mesh_field_makes_the_mesh_unavailable_not_the_node():
    base = [("wall", b"1.0"), ("mono", b"2.0"), ("net/dev", b"Inter-|\n face |\n")]
    sample = FrameDecoder().decode(encode_fields(base + [("mesh", b"garbage")]))
    assert sample.mesh is not None and not sample.mesh.available and "mesh" in (sample.mesh.error or "")
    assert FrameDecoder().decode(encode_fields(base)).mesh is None
    good = field([row("198.18.0.2", 5000, 1, 0, [120])])
    assert FrameDecoder().decode(encode_fields(base + [("mesh", good)])).mesh == parse_mesh(good)


def test_the_command_line_stays_under_the_kernels_limit_for_one_argument():
    """The sampler travels as one argument of `python3 -c`: Linux refuses one longer than
    MAX_ARG_STRLEN (32 pages, 128 KiB) with E2BIG, and the node could not be watched."""
    assert len(sampler_command(1.0).encode()) < 128 * 1024
