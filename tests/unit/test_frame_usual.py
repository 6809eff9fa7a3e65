"""A steady node's frames read in one call (FrameDecoder's ``usual_frame`` path): the very
samples the careful path makes of them, whatever a frame changes, and the same FrameError
for a frame that is not well formed. And usual_frame (C) against its pure-Python twin."""

from __future__ import annotations

import os
import socket
import struct
from array import array
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui import speedups
from netui.collectors.frames import FrameDecoder, FrameError, encode_fields
from netui.collectors.protocol import MESH_HEAD, MESH_ON, MESH_ROW
from netui.model.samples import CpuSums
from netui.speedups import py_frame_fields
from tests.bench.fake_fleet import NodeFrames
from tests.bench.fake_peers import FakePeers

try:
    from netui import _speedups as compiled
except ImportError:  # pragma: no cover - CI builds it
    compiled = None

needs_c = pytest.mark.skipif(compiled is None and os.geteuid() != 0, reason="netui._speedups was not built")


@lru_cache(maxsize=1)
def node() -> NodeFrames:
    return NodeFrames()


def fields_of(step: int, detail: bool = False) -> list[tuple[str, bytes]]:
    """The fields of a fake 128-CPU, 16-interface node's frame ``step`` (the sampler's own), in order."""
    whole = node().frame(step, 1000.0 + step, 50.0 + step, 49.0 + step if step else None, detail)
    return list(py_frame_fields(whole[whole.index(b"\n") + 1:]).items())


def payload(pairs) -> bytes:
    return encode_fields(pairs)


def mesh_field(mono: float) -> bytes:
    home = socket.inet_pton(socket.AF_INET, "198.18.0.1") + bytes(12)
    row = MESH_ROW.pack(2, socket.inet_pton(socket.AF_INET, "198.18.0.2") + bytes(12), 5000, 1, 0, 1)
    return MESH_HEAD.pack(MESH_ON, 0, 4242, 1, 1, 0, 1, mono, 2, home) + row + struct.pack("<I", 120)


def peers_field(mono: float) -> bytes:
    return FakePeers(0, 4).field(mono)


def outcome(decode, data: bytes):
    try:
        return decode(data), None
    except FrameError as exc:
        return None, str(exc)


def assert_same_sample(fast, careful) -> None:
    """Equal, and alike where equality does not look: the arrays' types, the sums' type."""
    assert fast == careful
    if fast is None:
        return
    assert fast.interfaces.flat.typecode == careful.interfaces.flat.typecode
    assert fast.interfaces.layout == careful.interfaces.layout or fast.interfaces.layout is careful.interfaces.layout
    assert type(fast.cpu_sums) is type(careful.cpu_sums)
    if fast.tcp is not None:
        for a, b in ((fast.tcp.tcp, careful.tcp.tcp), (fast.tcp.ext, careful.tcp.ext)):
            assert type(a) is type(b) and a.keys_ == b.keys_
            assert a.values_.typecode == b.values_.typecode and a.values_ == b.values_


# --- what a frame of a steady stream may change -------------------------------------------------

def _get(pairs, key) -> bytes:
    return dict(pairs).get(key, b"")  # (b"": a change before took it out)


def _set(pairs, key, value):
    return [(k, value if k == key else v) for k, v in pairs]


def _cpusum(mask: int, soft: int = 3, total: int = 9):
    def change(pairs):
        raw = _get(pairs, "cpusum")
        if len(raw) != 88:
            return pairs
        values = list(struct.unpack("<10Qd", raw))
        values[0], values[8], values[9] = mask, soft, total
        return _set(pairs, "cpusum", struct.pack("<10Qd", *values))
    return change


def _tcp_names(pairs):
    raw = _get(pairs, "tcp")
    return _set(pairs, "tcp", raw.replace(b"RtoMin", b"RtoMiN", 1))


def _netdev_fewer(pairs):
    raw = _get(pairs, "netdev")
    names, _, values = raw.partition(b"\n")
    return _set(pairs, "netdev", b" ".join(names.split()[:-1]) + b"\n" + values[:-128])


def _records(step: int, operstate: bytes):
    """The interface records sent again (one of them changed), instead of ifsame."""
    def change(pairs):
        records = [(k, v) for k, v in fields_of(0) if k.startswith("if/")]
        name, value = records[0]
        parts = value.split(b"\x1f")
        parts[1] = operstate
        records[0] = (name, b"\x1f".join(parts))
        return [(k, v) for k, v in pairs if k != "ifsame"] + records
    return change


CHANGES = {
    "same": lambda pairs: pairs,
    "wall as 1e3": lambda pairs: _set(pairs, "wall", b"1e3"),
    "wall with a space": lambda pairs: _set(pairs, "wall", b" 1001.5"),
    "wall with an underscore": lambda pairs: _set(pairs, "wall", b"1_001.5"),
    "mono of 64 digits": lambda pairs: _set(pairs, "mono", b"1" * 64),
    "mono not a number": lambda pairs: _set(pairs, "mono", b"1.2.3"),
    "mono empty": lambda pairs: _set(pairs, "mono", b""),
    "wall with a NUL": lambda pairs: _set(pairs, "wall", b"1.5\0"),
    "new hostname": lambda pairs: _set(pairs, "hostname", b"gpu002\n"),
    "hostname unsafe": lambda pairs: _set(pairs, "hostname", b"gpu\x1b[31m\n"),
    "new boot_id": lambda pairs: _set(pairs, "boot_id", b"0000\n"),
    "no hottest CPU": _cpusum(7),
    "a hottest CPU above its total": _cpusum(15, 10, 9),
    "a hottest CPU of no ticks": _cpusum(15, 0, 0),
    "bad mask": _cpusum(16),
    "cpusum short": lambda pairs: _set(pairs, "cpusum", _get(pairs, "cpusum")[:-1]),
    "tcp names changed": _tcp_names,
    "tcp short": lambda pairs: _set(pairs, "tcp", _get(pairs, "tcp")[:-8]),
    "netdev short": lambda pairs: _set(pairs, "netdev", _get(pairs, "netdev")[:-8]),
    "netdev one less": _netdev_fewer,
    "netdev no names": lambda pairs: _set(pairs, "netdev", b"\n" + _get(pairs, "netdev").partition(b"\n")[2]),
    "records again": _records(0, b"up\n"),
    "a link down": _records(0, b"down\n"),
    "no ifsame": lambda pairs: [(k, v) for k, v in pairs if k != "ifsame"],
    "no tcp": lambda pairs: [(k, v) for k, v in pairs if k != "tcp"],
    "no wall": lambda pairs: [(k, v) for k, v in pairs if k != "wall"],
    "wall twice": lambda pairs: pairs + [("wall", b"7.0")],
    "an unknown field": lambda pairs: pairs + [("later", b"x")],
    "a raw text": lambda pairs: pairs + [("net/snmp", b"Tcp: a\nTcp: 1\n")],
    "peers": lambda pairs: pairs + [("peers", peers_field(50.0))],
    "peers twice": lambda pairs: pairs + [("peers", peers_field(50.0))] * 2,
    "peers not a field": lambda pairs: pairs + [("peers", b"\x01\x02")],
    "mesh": lambda pairs: pairs + [("mesh", mesh_field(50.0))],
    "mesh broken": lambda pairs: pairs + [("mesh", mesh_field(50.0)[:-3])],
    "mesh and peers": lambda pairs: pairs + [("mesh", mesh_field(50.0)), ("peers", peers_field(50.0))],
    "fields reordered": lambda pairs: pairs[::-1],
}


@st.composite
def streams(draw):
    """A stream of frames: steady ones mostly, some changed (detail frames too), some cut."""
    frames = []
    for step in range(draw(st.integers(2, 8))):
        detail = draw(st.integers(0, 9)) == 0
        pairs = fields_of(step, detail)
        if step and not detail:
            pairs = CHANGES[draw(st.sampled_from(sorted(CHANGES)))](pairs)
        data = payload(pairs)
        if draw(st.integers(0, 9)) == 0:
            data = data[: draw(st.integers(0, len(data) - 1))]
        frames.append(data)
    return frames


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(streams())
def test_a_stream_decodes_as_the_careful_path_decodes_it(frames):
    """Frame by frame, the decoder gives what one that never takes the one-call path gives
    (the careful path: the rule before it), its FrameErrors too."""
    fast, careful = FrameDecoder(), FrameDecoder()
    for data in frames:
        careful._same = None  # (the careful path only)
        got, want = outcome(fast.decode, data), outcome(careful.decode, data)
        assert got[1] == want[1]
        assert_same_sample(got[0], want[0])


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_change_after_steady_frames_decodes_as_the_careful_path_does(change):
    """Two steady frames (the second read in one call), one changed, then a steady one again."""
    fast, careful = FrameDecoder(), FrameDecoder()
    frames = [payload(fields_of(0)), payload(fields_of(1)), payload(fields_of(2)),
              payload(CHANGES[change](fields_of(3))), payload(fields_of(4)), payload(fields_of(5))]
    took = []
    for data in frames:
        careful._same = None
        took.append(fast._same is not None)
        got, want = outcome(fast.decode, data), outcome(careful.decode, data)
        assert got[1] == want[1]
        assert_same_sample(got[0], want[0])
    assert took[2] and took[3] and took[5]  # the one-call path was taken: it is what is compared


def test_a_steady_stream_is_read_in_one_call_and_keeps_every_field():
    decoder = FrameDecoder()
    samples = [decoder.decode(payload(fields_of(step))) for step in range(4)]
    assert decoder._same is not None
    last = samples[-1]
    assert (last.wall_s, last.mono_s, last.hostname, last.problems) == (1003.0, 53.0, "gpu001", ())
    assert last.boot_id and len(last.interfaces) == 16 and last.cpu_sums.ncpus == 128
    assert last.cpu_sums.hot_since_s == 52.0 and last.tcp.tcp["MaxConn"] == -1
    assert samples[-1].interfaces.flat != samples[-2].interfaces.flat  # (the counters advance)


def test_a_frame_with_peers_and_mesh_keeps_them_and_a_broken_mesh_is_the_mesh_alone():
    decoder, careful = FrameDecoder(), FrameDecoder()
    for step in range(2):
        decoder.decode(payload(fields_of(step)))
    with_both = payload(fields_of(2) + [("peers", peers_field(52.0)), ("mesh", mesh_field(52.0))])
    sample = decoder.decode(with_both)
    assert sample.peers is not None and sample.peers.available and sample.mesh.available
    broken = decoder.decode(payload(fields_of(3) + [("mesh", b"\x00")]))
    assert broken.problems == () and not broken.mesh.available and broken.mesh.error and broken.mesh.mono_s == 53.0
    careful.decode(payload(fields_of(0)))
    assert_same_sample(broken, careful.decode(payload(fields_of(3) + [("mesh", b"\x00")])))


def test_a_cut_frame_after_steady_ones_is_the_careful_paths_frame_error():
    decoder = FrameDecoder()
    for step in range(3):
        decoder.decode(payload(fields_of(step)))
    data = payload(fields_of(3))
    with pytest.raises(FrameError, match="bad frame: truncated field"):
        decoder.decode(data[:-1])
    with pytest.raises(FrameError, match="frame without node clocks"):
        decoder.decode(payload([(k, v) for k, v in fields_of(3) if k != "mono"]))
    assert decoder.decode(data).mono_s == 53.0


# --- usual_frame: C and its twin ----------------------------------------------------------------

@lru_cache(maxsize=1)
def usual_state() -> tuple:
    decoder = FrameDecoder()
    for step in range(2):
        decoder.decode(payload(fields_of(step)))
    return decoder._same[0]


def usual_outcome(fn, *args):
    try:
        got = fn(*args)
    except (TypeError, ValueError, OverflowError) as exc:
        return None, (type(exc).__name__, str(exc))
    if got is None:
        return None, None
    # arrays compare by value: their types too
    return tuple((v.typecode, v.tolist()) if isinstance(v, array) else (type(v), v) for v in got), None


mutations = st.lists(st.sampled_from(sorted(CHANGES)), max_size=3)


@pytest.mark.slow
@needs_c
@settings(max_examples=400, deadline=None)
@given(mutations, st.integers(-1, 4000), st.binary(max_size=8))
def test_the_twins_agree_on_usual_frame(changes, cut, junk):
    pairs = fields_of(2)
    for change in changes:
        pairs = CHANGES[change](pairs)
    data = payload(pairs)
    for case in (data, data[:cut] if cut >= 0 else data + junk, bytearray(data)):
        c = usual_outcome(compiled.usual_frame, case, usual_state(), CpuSums)
        py = usual_outcome(speedups.py_usual_frame, case, usual_state(), CpuSums)
        assert c == py


def test_usual_frame_reads_a_usual_frame_and_refuses_a_bad_state():
    state = usual_state()
    for usual in (speedups.usual_frame, speedups.py_usual_frame):
        got = usual(payload(fields_of(3)), state, CpuSums)
        assert got is not None and got[:2] == (1003.0, 53.0) and got[6:] == (None, None)
        assert type(got[5]) is CpuSums and got[5].hot_since_s == 52.0
        assert [a.typecode for a in got[2:5]] == ["Q", "q", "Q"] and len(got[2]) == 16 * 16
        assert usual(payload(fields_of(3))[:-1], state, CpuSums) is None
        assert usual(b"", state, CpuSums) is None
        assert usual_outcome(usual, b"", state[:6], CpuSums)[1][0] == "TypeError"
        assert usual_outcome(usual, b"", (*state[:3], "16", *state[4:]), CpuSums)[1][0] == "TypeError"
        assert usual_outcome(usual, b"", (*state[:3], 0, *state[4:]), CpuSums)[1][0] == "ValueError"
        assert usual_outcome(usual, b"", (*state[:6], -1), CpuSums)[1][0] == "ValueError"
        assert usual_outcome(usual, b"", state, dict)[1][0] == "TypeError"
        assert usual_outcome(usual, "text", state, CpuSums)[1][0] == "TypeError"
