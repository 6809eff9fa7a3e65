"""The window's common path in one call (speedups.put_frame: a prober's due frames aged out and
its new frame's rows put in) makes the window the general path makes: on random fleets of
frames — lost probes, RTTs, peers no node answers on, nodes met before they are numbered, two
frames at one time, nodes that restart, leave, go quiet and are forgotten, pairs that reach
MIN_PROBES and are kept — the same counts, pooled sums, silence, heard bits, frames and
verdicts, tick after tick, with the C module and with its pure-Python twin."""

from __future__ import annotations

import random
import socket
import struct

import pytest

from netui import speedups
from netui.collectors.mesh import parse_mesh
from netui.collectors.protocol import MESH_HEAD, MESH_ON, MESH_ROW
from netui.model import mesh_window
from netui.model.mesh_window import Endpoints, MeshWindow
from netui.model.topology import Attachment, Switch, Topology

NODES = [f"node{i:03d}" for i in range(150)]  # (150² frames' probers: past KEEP_ALL_PAIRS, the fused path's)
TOPO = Topology([Switch("spine")] + [Switch(f"leaf{k}", parent="spine") for k in range(5)],
                [Attachment(n, f"leaf{i // 30}") for i, n in enumerate(NODES[:140])])  # (the last ten: no leaf)


def address(i: int) -> str:
    return f"10.0.{i // 250}.{i % 250 + 1}"


def row(peer: str, port: int, answered: int, lost: int, rtts: list[int]) -> bytes:
    return MESH_ROW.pack(2, socket.inet_aton(peer) + bytes(12), port, answered, lost, len(rtts)) \
        + struct.pack(f"<{len(rtts)}I", *rtts)


def field(i: int, port: int, mono: float, rows: list[bytes]) -> bytes:
    home = socket.inet_aton(address(i)) + bytes(12)
    return MESH_HEAD.pack(MESH_ON, 0, port, len(NODES) - 1, 0, 0, len(rows), mono, 2, home) + b"".join(rows)


def events(seed: int, ticks: int = 9):
    """A tick at a time, the list of what happens: ("frame", node, value) or ("forget", node)."""
    rng = random.Random(seed)
    loss = rng.choice([0.0, 0.002, 0.02, 0.1])
    ports = {n: 8000 + i if i % 10 == 0 else 7000 + i % 3 for i, n in enumerate(NODES)}
    clock = {n: 1000.0 + rng.randrange(5) for n in NODES}
    late = set(rng.sample(NODES, 3))  # (report from tick 3 on: met first as peers)
    quiet = set(rng.sample(NODES, 2))  # (stop reporting at tick 4: their frames age at the reads)
    favourites = {n: rng.sample(range(len(NODES)), 4) for n in NODES}  # (pairs that reach MIN_PROBES)
    for t in range(ticks):
        out: list[tuple] = []
        for i, a in enumerate(NODES):
            if (a in late and t < 3) or (a in quiet and t >= 4) or rng.random() < 0.03:
                continue
            clock[a] = 5.0 if rng.random() < 0.01 else clock[a] + rng.choice([1.0, 1.0, 1.0, 0.5, 2.0])
            for _ in range(2 if rng.random() < 0.05 else 1):  # (two frames at one time: the second joins the first)
                rows = []
                for _ in range(rng.randrange(0, 9)):
                    j = rng.choice(favourites[a]) if rng.random() < 0.4 else rng.randrange(len(NODES))
                    lost = int(rng.random() < loss)
                    answered = rng.choice([1, 1, 1, 2, 0, 3]) if not lost else rng.choice([0, 1])
                    rtts = [rng.randrange(50, 900) for _ in range(min(answered, rng.choice([0, 1, 1, 2])))]
                    rows.append(row(address(j), ports[NODES[j]], answered, lost, rtts))
                if rng.random() < 0.2:
                    rows.append(row("192.0.2.1", 9, 1, 0, [77]))  # (no node answers there)
                if rng.random() < 0.1:
                    rows.append(row(address(i), ports[a], 1, 0, [5]))  # (itself)
                rng.shuffle(rows)
                out.append(("frame", a, field(i, ports[a], clock[a], rows)))
        if rng.random() < 0.3:
            out.insert(rng.randrange(len(out) + 1), ("forget", rng.choice(NODES)))
        yield out


def tables(w: MeshWindow) -> dict:
    i = w._index
    return {"ids": i.ids, "alive": i.alive, "probes": i.probes, "lost": i.lost, "node_probes": i.node_probes,
            "sums_of": i.sums_of, "sums": i.sums, "pairs": i.pair_count, "heard": i.heard, "silence": i.silence,
            "lossy": i.lossy, "leaf_sums": i.leaf_sums, "answered": (i.answered_pairs, i.unanswered_pairs),
            "frames": {a: [(f[0], list(f[1]), f[2]) for f in q] for a, q in w._frames.items()},
            "top": w._top, "kept": w._rows, "kept_by": w._kept_by}


def run(seed: int, fused: bool, monkeypatch=None, twin: bool = False) -> tuple[list, int]:
    """Each tick's (tables, verdict, answered) of a window fed ``events(seed)``, and how many
    frames the fused call took."""
    calls = [0]
    if fused and monkeypatch is not None:
        put = speedups.py_put_frame if twin else speedups.put_frame

        def counted(*args):
            calls[0] += 1
            return put(*args)

        monkeypatch.setattr(mesh_window, "put_frame", counted)
    w, at, of, out = MeshWindow(window_s=3.0), Endpoints(), {}, []
    w.fused = fused
    for tick in events(seed):
        for event in tick:
            if event[0] == "forget":
                w.forget(event[1])
                continue
            _, name, value = event
            m = parse_mesh(value)
            endpoint = (m.address, m.port)
            if of.get(name) != endpoint:
                if name in of:
                    at.drop(of[name])
                of[name] = endpoint
                at.put(endpoint, name)
            w.add_readings(name, m.mono_s, m.readings, at)
        verdict = w.judge(TOPO, NODES[:-1])  # (the last node: not judged, as a node down)
        out.append((tables(w), verdict, w.answered(), w.pairs()))
    return out, calls[0]


def check(seed: int, monkeypatch, twin: bool = False) -> None:
    # (a window keeps every pair's rows below 2,500 pairs or 50 probers here: most frames are
    # past it, their probers keeping a pair's rows only for its loss or its MIN_PROBES)
    monkeypatch.setattr(mesh_window, "KEEP_ALL_PAIRS", 2500)
    general, none = run(seed, False)
    fused, calls = run(seed, True, monkeypatch, twin)
    assert none == 0 and calls > 400  # (the fused path was taken, and often)
    for t, (g, f) in enumerate(zip(general, fused)):
        assert g[0] == f[0], f"seed {seed}, tick {t}: the tables differ"
        assert g[1:] == f[1:], f"seed {seed}, tick {t}: the verdicts differ"


@pytest.mark.parametrize("seed", range(3))
def test_the_fused_path_makes_the_window_the_general_path_makes(seed, monkeypatch):
    check(seed, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 40))
def test_the_fused_path_makes_the_window_the_general_path_makes_on_more_seeds(seed, monkeypatch):
    check(seed, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_the_fused_twin_makes_the_window_the_general_path_makes(seed, monkeypatch):
    check(seed, monkeypatch, twin=True)
