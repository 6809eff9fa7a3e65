"""The decoder's caps on one frame, pure: fields (both twins of frame_fields), record lines,
interfaces."""

from __future__ import annotations

import time
from array import array

import pytest

from netui import speedups
from netui.collectors.frames import FrameDecoder, FrameError, encode_fields, frame_length
from netui.collectors.protocol import MAX_FIELDS, MAX_IFACES

TWINS = [speedups.py_frame_fields] + ([speedups.frame_fields] if speedups.COMPILED else [])


@pytest.mark.parametrize("fields", TWINS)
def test_frame_fields_stops_at_its_limit(fields):
    payload = b"x\0\0\0\0\0" * 5
    assert fields(payload, 5) == {"x": b""}
    with pytest.raises(ValueError, match="too many fields"):
        fields(payload, 4)
    assert fields(payload) == {"x": b""}  # no limit


def clocks() -> list:
    return [("wall", repr(time.time()).encode()), ("mono", b"1.0")]


def test_a_frame_header_over_the_cap_names_the_size_and_the_cap():
    with pytest.raises(FrameError, match=r"frame too large: 13\.6 MB > 4 MiB"):
        frame_length(b"NETUI2 13600000\n")


def test_too_many_fields_and_lines_are_bad_frames():
    with pytest.raises(FrameError, match=f"too many fields: more than {MAX_FIELDS} in one frame"):
        FrameDecoder().decode(encode_fields(clocks()) + b"x\0\0\0\0\0" * MAX_FIELDS)
    with pytest.raises(FrameError, match="too many lines in 'eth/eth0': more than 4096"):
        FrameDecoder().decode(encode_fields(clocks() + [("eth/eth0", b"a: 1\n" * 5000), ("ethmono", b"1.0")]))


def test_interfaces_beyond_the_cap_are_cut_and_named_in_the_problems():
    n = MAX_IFACES + 10
    names = " ".join(f"v{i}" for i in range(n)).encode()
    netdev = names + b"\n" + array("Q", bytes(8 * 16 * n)).tobytes()
    sample = FrameDecoder().decode(encode_fields(clocks() + [("netdev", netdev)]))
    assert len(sample.interfaces) == MAX_IFACES
    assert f"too many interfaces: {n} > {MAX_IFACES} (first {MAX_IFACES} kept)" in sample.problems
