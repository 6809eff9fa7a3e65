"""Benchmark: the probe mesh's window and judgement in-process (model/mesh_window.py ``MeshWindow``).

Run: python -m tests.bench.bench_mesh [--nodes 1024] [--leaves 32] [--seconds 20] [--loss-node NAME]
A window is filled as ``--nodes`` nodes fill the mesh's 60 s window at the default rate (each
node 20 readings a frame, one probe and one RTT each, its peers in turn, as
tests/bench/fake_fleet.py's FakeMesh sends them, decoded from their "mesh" field before the clock
starts, so taken as the fleet takes them: packed rows, each node at an address of its own), with a topology of ``--leaves`` leaves; then
``--seconds`` more frames of every node are added, the window judged after each second as the
fleet judges it (model/fleet.py: at most every 5 s while quiet; here every second, the worst
case: something named). ``--loss-node`` makes one node's link lose 2 % of the probes through it.

Prints: CPU µs per reading added, per node-sample (a node's frame: 20 readings), the
judgements' CPU (mean and max: a window puts the readings added since its last read into its
figures then, and ages the old ones out), the pairs in the window and those whose figures are
kept, and the heap the window holds (tracemalloc, measured apart in a second fill). Pure model
code: no SSH, no decoding (bench_fleet measures those).
"""

from __future__ import annotations

import argparse
import gc
import random
import socket
import struct
import time
import tracemalloc
from collections.abc import Mapping, Sequence

from netui.collectors.mesh import parse_mesh
from netui.collectors.protocol import MESH_HEAD, MESH_ON, MESH_ROW
from netui.model.mesh import DEFAULT_RATE, WINDOW_S, MeshPeerReading, MeshWindow
from netui.model.topology import Attachment, Switch, Topology

try:
    from netui.model.mesh_window import Endpoints
except ImportError:
    Endpoints = None  # type: ignore[assignment,misc]


PORT = 7000


def fleet(nodes: int, leaves: int) -> tuple[list[str], Topology]:
    names = [f"node{i:04d}" for i in range(nodes)]
    topology = Topology([Switch("spine")] + [Switch(f"leaf{k}", parent="spine") for k in range(leaves)],
                        [Attachment(n, f"leaf{i * leaves // nodes}") for i, n in enumerate(names)])
    return names, topology


class Probers:
    """Every node's frames as FakeMesh makes them: DEFAULT_RATE readings a second, peers in turn."""

    def __init__(self, names: list[str], loss_node: str | None, seed: int = 1) -> None:
        self.names = names
        self.next = {n: i + 1 for i, n in enumerate(names)}  # each starts at a different peer
        self.loss_node = loss_node
        self.rng = random.Random(seed)
        self.at = endpoints(names)  # where each node answers

    def frame(self, prober: str, second: int) -> Sequence[MeshPeerReading]:
        """The readings of ``prober``'s frame as the frame decoder gives them: its "mesh" field
        decoded (collectors/mesh.py: MeshRows, taken by the window as packed)."""
        names, rows = self.names, []
        for _ in range(int(DEFAULT_RATE)):
            target = names[self.next[prober] % len(names)]
            self.next[prober] += 1
            if target == prober:
                target = names[self.next[prober] % len(names)]
                self.next[prober] += 1
            lost = int(self.loss_node in (prober, target) and self.rng.random() < 0.02)
            rtts = () if lost else (150 + (second + len(rows)) % 50,)
            rows.append(MESH_ROW.pack(2, socket.inet_aton(address(target)) + bytes(12), PORT, 1 - lost, lost, len(rtts))
                        + struct.pack(f"<{len(rtts)}I", *rtts))
        head = MESH_HEAD.pack(MESH_ON, 0, PORT, len(names) - 1, 0, 0, len(rows), 1000.0 + second, 2,
                              socket.inet_aton(address(prober)) + bytes(12))
        return parse_mesh(head + b"".join(rows)).readings


def address(name: str) -> str:
    """A node's address here: 10.x.y.z from its number."""
    i = int(name[4:])
    return f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"


def endpoints(names: list[str]) -> Mapping[tuple[str, int], str]:
    """Where each node answers, as Fleet.observe_mesh keeps it (model/mesh_window.py Endpoints)."""
    if Endpoints is None:  # (the window before Endpoints: a dict)
        return {(address(n), PORT): n for n in names}
    at = Endpoints()
    for n in names:
        at.put((address(n), PORT), n)
    return at


def add(window: MeshWindow, prober: str, mono_s: float, readings: list[MeshPeerReading], at: dict) -> None:
    """A frame's readings into the window, as Fleet.observe_mesh puts them."""
    if hasattr(window, "add_readings"):
        window.add_readings(prober, mono_s, readings, at)
    else:  # (the window before add_readings: one reading at a time)
        window.seen(prober, mono_s)
        for r in readings:
            target = at.get((r.address, r.port))
            if target is not None and target != prober:
                window.add(prober, target, mono_s, r.answered, r.lost, r.rtts_us)


def fill(window: MeshWindow, names: list[str], probers: Probers, seconds: int, start: int = 0) -> float:
    """``seconds`` seconds of every node's frames; the CPU seconds they took."""
    frames = [[probers.frame(n, s) for n in names] for s in range(start, start + seconds)]
    at = probers.at  # (one for the session, as the fleet's)
    t0 = time.process_time()
    for s, per_node in enumerate(frames, start):
        for n, readings in zip(names, per_node):
            add(window, n, 1000.0 + s, readings, at)
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--leaves", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--loss-node", default=None)
    args = parser.parse_args()
    names, topology = fleet(args.nodes, args.leaves)
    warm = int(WINDOW_S)

    # the heap the window holds, full (a fill of its own: tracemalloc slows what it traces)
    tracemalloc.start()
    w = MeshWindow()
    base = tracemalloc.get_traced_memory()[0]
    fill(w, names, Probers(names, args.loss_node), warm)
    w.judge(topology, names)
    heap = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del w
    gc.collect()

    w = MeshWindow()
    probers = Probers(names, args.loss_node)
    fill(w, names, probers, warm)
    t0 = time.process_time()
    w.judge(topology, names)
    first = time.process_time() - t0
    adding, judging = 0.0, []
    for s in range(warm, warm + args.seconds):
        adding += fill(w, names, probers, 1, s)  # a second's readings, and those a minute old leave (at the judgement)
        t0 = time.process_time()
        v = w.judge(topology, names)
        judging.append(time.process_time() - t0)
    node_samples = args.nodes * args.seconds
    readings = node_samples * int(DEFAULT_RATE)
    per_ns = (adding + sum(judging)) / node_samples * 1e6
    print(f"{args.nodes} nodes, {args.leaves} leaves, {args.seconds} s after a full window; "
          f"{w.pair_count:,} pairs in the window, {len(v.pairs):,} kept with their figures; "
          f"named: {', '.join(s.name for s in v.suspects) or 'nobody'}")
    print(f"  adding: {adding / readings * 1e6:.2f} µs CPU per reading, {adding / node_samples * 1e6:.1f} µs per node-sample")
    print(f"  judgement: first {first * 1e3:.0f} ms (a whole window's readings put in); then every second "
          f"{sum(judging) / len(judging) * 1e3:.1f} ms mean, {max(judging) * 1e3:.1f} ms max (the second's readings put in, "
          f"the old aged out) = {sum(judging) / node_samples * 1e6:.1f} µs per node-sample")
    print(f"  window + a judgement every second: {per_ns:.1f} µs per node-sample; the window's heap {heap / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
