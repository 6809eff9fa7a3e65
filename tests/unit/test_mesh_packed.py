"""A frame's mesh rows taken as the sampler packs them (collectors/mesh.py ``MeshRows``, the
window's ``pool_rows`` pass) make the same window as the same readings taken one by one: the
same pairs, counts, pooled figures and judgement, through lost probes, several RTTs, peers no
node answers on, a node met before it is numbered, a node that restarts and one that moves."""

from __future__ import annotations

import random
import socket
import struct

import pytest

from netui.collectors.mesh import parse_mesh
from netui.collectors.protocol import MESH_HEAD, MESH_ON, MESH_ROW
from netui.model.mesh import MeshRows, MeshSample
from netui.model.mesh_window import Endpoints, MeshWindow
from netui.model.topology import Attachment, Switch, Topology

NODES = [f"node{i:03d}" for i in range(150)]  # (past KEEP_ALL_PAIRS: the common rows go through C)
TOPO = Topology([Switch("spine")] + [Switch(f"leaf{k}", parent="spine") for k in range(5)],
                [Attachment(n, f"leaf{i // 30}") for i, n in enumerate(NODES)])
LATE = "node149"  # reports from second 3 on: met first as a peer, numbered when its frames go in
MAPPED = "node007"  # its peers' rows give its address as IPv4-mapped IPv6


def address(i: int) -> str:
    return f"10.0.{i // 250}.{i % 250 + 1}"


def row(peer: str, port: int, answered: int, lost: int, rtts: list[int]) -> bytes:
    raw = socket.inet_aton(peer) + bytes(12)
    family = 2
    if peer == address(NODES.index(MAPPED)):
        family, raw = 10, bytes(10) + b"\xff\xff" + socket.inet_aton(peer)
    return MESH_ROW.pack(family, raw, port, answered, lost, len(rtts)) + struct.pack(f"<{len(rtts)}I", *rtts)


def field(i: int, port: int, mono: float, rows: list[bytes]) -> bytes:
    home = socket.inet_aton(address(i)) + bytes(12)
    return MESH_HEAD.pack(MESH_ON, 0, port, len(NODES) - 1, 0, 0, len(rows), mono, 2, home) + b"".join(rows)


def frames(seconds: int = 8, seed: int = 5):
    """(node, its MeshSample's field) a second at a time: mostly one answered probe and one RTT
    a row, some lost, some of several RTTs, some to an address no node answers on or to the
    prober itself; node010's link loses a third; node020 restarts at second 4 (its clock
    starts again), node030 moves to another port at second 5."""
    rng = random.Random(seed)
    # (most nodes share a port, as nodes behind one NAT would: found by address; some have their own)
    ports = {n: 8000 + i if i % 10 == 0 else 7000 + i % 3 for i, n in enumerate(NODES)}
    clock = {n: 1000.0 for n in NODES}
    for t in range(seconds):
        if t == 5:
            ports["node030"] = 9001
        batch = []
        for i, a in enumerate(NODES):
            if a == LATE and t < 3:
                continue
            clock[a] = 10.0 if (a == "node020" and t == 4) else clock[a] + 1.0
            rows = []
            for j in rng.sample(range(len(NODES)), 12):
                b = NODES[j]
                lost = int(rng.random() < (0.33 if "node010" in (a, b) else 0.02))
                answered = rng.choice([1, 1, 1, 1, 2, 0]) if not lost else rng.choice([0, 1])
                rtts = [rng.randrange(50, 900) for _ in range(min(answered, rng.choice([1, 1, 2])))]
                rows.append(row(address(j), ports[b], answered, lost, rtts))
            rows.append(row("192.0.2.1", 9, 1, 0, [77]))  # (no node answers there)
            if i % 7 == 0:
                rows.append(row(address(i), ports[a], 1, 0, [5]))  # (itself)
            batch.append((a, field(i, ports[a], clock[a], rows)))
        yield batch


def fill(packed: bool) -> tuple[MeshWindow, list]:
    w, at, of, verdicts = MeshWindow(window_s=5.0), Endpoints(), {}, []
    for batch in frames():
        for name, value in batch:
            m = parse_mesh(value)
            assert type(m.readings) is MeshRows
            endpoint = (m.address, m.port)
            if of.get(name) != endpoint:  # (as Fleet.observe_mesh keeps them)
                if name in of:
                    at.drop(of[name])
                of[name] = endpoint
                at.put(endpoint, name)
            if packed:
                w.add_readings(name, m.mono_s, m.readings, at)
            else:  # the readings one by one, named by a plain dict
                w.add_readings(name, m.mono_s, tuple(m.readings), dict(at))
        verdicts.append(w.judge(TOPO))
    return w, verdicts


def tables(w: MeshWindow) -> dict:
    i = w._index
    return {"ids": i.ids, "probes": i.probes, "lost": i.lost, "node_probes": i.node_probes, "sums_of": i.sums_of,
            "sums": i.sums, "pairs": i.pair_count, "heard": i.heard, "silence": i.silence, "lossy": i.lossy,
            "leaf_sums": i.leaf_sums, "frames": {a: [(f[0], list(f[1]), f[2]) for f in q] for a, q in w._frames.items()}}


def test_rows_as_packed_make_the_window_the_readings_make():
    packed, by_rows = fill(True)
    general, by_readings = fill(False)
    assert packed.pair_count > 5_000 and not packed._keep_all()  # (the common rows went through C)
    assert tables(packed) == tables(general)
    assert by_rows == by_readings
    assert packed.answered() == general.answered()
    assert any(s.name == "node010 link" for s in by_rows[-1].suspects)


def test_the_rows_read_as_the_readings_they_hold():
    value = field(0, 7000, 1.5, [row(address(1), 7000, 2, 1, [120, 95]), row("192.0.2.1", 9, 0, 1, [])])
    m = parse_mesh(value)
    assert len(m.readings) == 2 and m.readings[0] == (address(1), 7000, 2, 1, (120, 95))
    assert m.readings == ((address(1), 7000, 2, 1, (120, 95)), ("192.0.2.1", 9, 0, 1, ()))
    assert m == MeshSample(1.5, port=7000, peers=149, readings=tuple(m.readings), address=address(0))
    assert hash(m.readings) == hash(tuple(m.readings)) and repr(m.readings) == repr(tuple(m.readings))


@pytest.mark.parametrize("family, raw", [(10, socket.inet_pton(socket.AF_INET6, "2001:db8::7")),
                                         (10, bytes(10) + b"\xff\xff" + socket.inet_aton("10.0.0.9")),
                                         (2, socket.inet_aton("10.0.0.9") + bytes(12))])
def test_a_peer_is_found_by_the_address_its_text_gives(family, raw):
    """(a row's peer is numbered by its key in C: the same node as its text names)"""
    text = "2001:db8::7" if family == 10 and raw[0] == 0x20 else "10.0.0.9"
    value = field(0, 7000, 1.0, [MESH_ROW.pack(family, raw, 7001, 1, 0, 1) + struct.pack("<I", 300)])
    at = Endpoints()
    at.put((text, 7001), "b")
    w = MeshWindow()
    w.add_readings("a", 1.0, parse_mesh(value).readings, at)
    w.add_readings("a", 2.0, parse_mesh(value).readings, at)  # (the second: numbered from what the first made)
    assert w.pair_count == 1 and w._index.counts[("a", "b")] == (2, 0)


def test_a_judged_node_is_the_one_its_constructor_makes():
    """(the window makes each node's NodeMesh without its __init__: every field must be as its own)"""
    from netui.model.mesh import Counts, NodeMesh
    from netui.model.mesh_window import _node_mesh

    made = _node_mesh("n1", Counts(40, 2), 7, 1, 180.0, [0, 25, 3, 0, 0, 1])
    own = NodeMesh("n1", Counts(40, 2), 7, 1, 180.0, 1, True, False)
    assert made == own and vars(made) == vars(own) and repr(made) == repr(own) and hash(made) == hash(own)


def test_peers_no_node_answers_at_are_kept_only_so_many():
    """A sampler naming ever new addresses (broken, or hostile) must not grow the window's
    table of where the nodes answer without end: past NOWHERE_KEPT it starts again."""
    from netui.model import mesh_window

    at = Endpoints()
    at.put(("10.0.0.2", 7000), "b")
    w = MeshWindow()
    rows_of = lambda k: [row(f"192.0.{(k * 200 + j) // 250 % 250}.{(k * 200 + j) % 250 + 1}", 9000 + j, 1, 0, [50])
                         for j in range(200)] + [row("10.0.0.2", 7000, 1, 0, [60])]
    for k in range(60):  # 12,000 addresses no node answers at
        w.add_readings("a", 1.0 + k, parse_mesh(field(0, 7000, 1.0 + k, rows_of(k))).readings, at)
        kept = sum(len(p) // 2 if isinstance(p, tuple) else len(p) for p in w._at if p)
        assert kept <= mesh_window.NOWHERE_KEPT + 4 * len(w._index.ids) + 201
    assert w.pair_count == 1 and w._index.counts[("a", "b")] == (60, 0)  # (the one node answering, all along)
