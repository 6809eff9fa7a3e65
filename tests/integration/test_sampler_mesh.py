"""The probe mesh's node side, run as a node runs it (the shipped sampler under `sh -c`), on
loopback: two samplers probe each other and read the RTTs on their own clocks; a peer that never
answers is lost; a probe without the session's token, or from an address not on the list, gets
no answer at all, and an answer is never larger than its probe (docs/protocol.md#mesh).

Traffic only on 127.0.0.1; every loop is bounded in frames and seconds; the samplers are killed
in ``finally``."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import time

import pytest

from netui.collectors.frames import FrameDecoder
from netui.collectors.protocol import MESH_ANSWER, MESH_GRACE_S, MESH_PACKET, MESH_QUERY, MESH_TIMEOUT_S
from netui.collectors.ssh import sampler_command
from tests.integration.test_sampler import read_frames

pytestmark = pytest.mark.slow

INTERVAL_S = 0.2
TOKEN = os.urandom(16)


class Sampler:
    """One shipped sampler with its frame decoder; ``tell`` writes a line on its stdin."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(["sh", "-c", sampler_command(INTERVAL_S) + " --max-peers 0"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.decoder = FrameDecoder()

    def tell(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def frame(self):
        return self.decoder.decode(read_frames(self.proc.stdout, 1)[0])

    def port(self) -> int:
        """The mesh's port, from the first frame after "m TOKEN" reached the sampler (bounded)."""
        for _ in range(25):
            mesh = self.frame().mesh
            if mesh is not None:
                return mesh.port
        raise AssertionError("the sampler never turned its mesh on")

    def mesh(self, frames: int = 1):
        """The mesh readings of the next ``frames`` frames (the last one's head)."""
        got = [self.frame().mesh for _ in range(frames)]
        return got[-1], [r for m in got if m is not None for r in m.readings]

    def fresh(self):
        """The first frame made after this moment (the same host, the same monotonic clock):
        the frames piled up in the pipe meanwhile pass by (bounded)."""
        since = time.monotonic()
        for _ in range(200):
            sample = self.frame()
            if sample.mono_s >= since:
                return sample
        raise AssertionError("no fresh frame")

    def now(self):
        """The mesh head of a fresh frame."""
        mesh = self.fresh().mesh
        assert mesh is not None, "the mesh is off"
        return mesh

    def peers(self, n: int, frames: int = 10) -> int:
        """How many peers the mesh lists, once a fresh frame says ``n`` (a line that came
        while a frame was being made is read after it: the next frame shows it), or what the
        last of ``frames`` fresh frames says."""
        for _ in range(frames):
            peers = self.now().peers
            if peers == n:
                break
        return peers

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def udp() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    return s


def answer_to(sock: socket.socket, packet: bytes, port: int, wait_s: float = 0.6) -> bytes | None:
    """Send ``packet`` to 127.0.0.1:port and wait (bounded) for what comes back from there
    that is not a probe (a listed peer is probed by the sampler too: those pass by)."""
    sock.sendto(packet, ("127.0.0.1", port))
    end = time.monotonic() + wait_s
    while (left := end - time.monotonic()) > 0:
        if not select.select([sock], [], [], left)[0]:
            break
        data, source = sock.recvfrom(256)
        if source[1] == port and data[:4] != MESH_QUERY:
            return data
    return None


def test_two_samplers_probe_each_other_and_a_silent_peer_is_lost():
    a, b = Sampler(), Sampler()
    silent = udp()  # a peer that never answers
    silent_port = silent.getsockname()[1]
    try:
        for s in (a, b):
            s.tell(f"m {TOKEN.hex()} 20 0.1")
        port_a, port_b = a.port(), b.port()
        assert port_a > 0 and port_b > 0 and port_a != port_b
        a.tell(f"mp+ 127.0.0.1 {port_b} 127.0.0.1 {silent_port}")
        b.tell(f"mp+ 127.0.0.1 {port_a}")
        # 4.5 s of frames: after the grace for new peers, a probes b and the silent peer, 10 a
        # second each; a probe unanswered after MESH_TIMEOUT_S is lost
        frames = int((MESH_GRACE_S + MESH_TIMEOUT_S + 1.5) / INTERVAL_S)
        readings, head, head_b = [], None, None
        for _ in range(frames):  # both read frame by frame: neither's pipe holds old frames
            head, got = a.mesh()
            head_b, _ = b.mesh()
            readings += got
        head_b, _ = b.mesh(2)  # (its count goes on: a frame later holds every answer a counted)
    finally:
        a.stop()
        b.stop()
        silent.close()
    assert head is not None and head_b is not None
    assert head.available and head.peers == 2
    to_b = [r for r in readings if r.port == port_b]
    to_silent = [r for r in readings if r.port == silent_port]
    answered = sum(r.answered for r in to_b)
    assert answered >= 10 and sum(r.lost for r in to_b) == 0, to_b
    rtts = [t for r in to_b for t in r.rtts_us]
    assert len(rtts) == answered and all(0 <= t < 1_000_000 for t in rtts)  # loopback: well under 1 s
    assert sum(r.answered for r in to_silent) == 0 and sum(r.lost for r in to_silent) >= 5, to_silent
    assert head_b.answers >= answered  # b answered every probe a counted


def test_a_probe_without_the_token_or_from_a_stranger_gets_nothing_and_an_answer_is_no_larger():
    b = Sampler()
    listed, stranger = udp(), udp()
    try:
        b.tell(f"m {TOKEN.hex()} 10 1")
        port = b.port()
        b.tell(f"mp+ 127.0.0.1 {listed.getsockname()[1]}")
        b.mesh(2)  # the list has arrived
        probe = MESH_PACKET.pack(MESH_QUERY, TOKEN, 7, 123456789)
        wrong = MESH_PACKET.pack(MESH_QUERY, bytes(16), 8, 1)
        assert answer_to(listed, wrong, port) is None  # listed, without the token
        assert answer_to(stranger, probe, port) is None  # the token, from an address not listed
        assert answer_to(listed, probe + b"pad", port) is None  # not a probe's size
        answer = answer_to(listed, probe, port, wait_s=5.0)
        assert answer is not None and len(answer) <= len(probe)
        assert MESH_PACKET.unpack(answer) == (MESH_ANSWER, TOKEN, 7, 123456789)
        # an answer is never answered (no loop between two nodes), and counted as refused nowhere
        assert answer_to(listed, answer, port) is None
        head = b.now()
        assert head.answers == 1 and head.refused >= 3
        b.tell("m 0")  # the mesh off: its socket closed, no field
        time.sleep(2 * INTERVAL_S)
        assert b.fresh().mesh is None and b.frame().mesh is None
        assert answer_to(listed, probe, port) is None
    finally:
        b.stop()
        listed.close()
        stranger.close()


def test_a_peer_removed_is_probed_no_more_and_its_probes_in_flight_are_not_lost():
    a = Sampler()
    silent, other = udp(), udp()
    silent_port, other_port = silent.getsockname()[1], other.getsockname()[1]
    try:
        a.tell(f"m {TOKEN.hex()} 50 0.05")
        a.port()
        a.tell(f"mp+ 127.0.0.1 {silent_port} 127.0.0.1 {other_port}")
        assert a.peers(2) == 2
        time.sleep(MESH_GRACE_S + 0.3)  # probes to both are in flight now, none answered
        a.tell(f"mp- 127.0.0.1 {silent_port}")
        assert a.peers(1) == 1
        frames = int((MESH_TIMEOUT_S + 1.0) / INTERVAL_S)
        readings = [r for _ in range(frames) for r in a.frame().mesh.readings]
        a.tell("mp-")
        assert a.peers(0) == 0
    finally:
        a.stop()
        silent.close()
        other.close()
    # the silent peer's probes were forgotten with it; the other one's are lost as they expire
    assert [r for r in readings if r.port == silent_port] == []
    assert sum(r.lost for r in readings if r.port == other_port) > 0
