"""Benchmark: the probe mesh's instructions per node-sample, by step, under callgrind.

Run: sh tests/bench/steps_instructions.sh mesh_instructions OUT.cg [--nodes 1024] [--seconds 2]   (callgrind, the report after)
     python -m tests.bench.mesh_instructions [--nodes 1024] [--seconds 2]      (CPU seconds only)

A fleet of ``--nodes`` nodes (each at 127.0.0.1 on a port of its own, as tests/bench/fake_fleet.py
runs them) fills the mesh's 60 s window at the default rate: each second every node's "mesh"
field as FakeMesh packs it (20 rows of one answered probe and one RTT, its peers in turn) is
decoded (collectors/mesh.py ``parse_mesh``), queued (model/fleet.py ``Fleet.observe_mesh``), and
the window is read and judged (model/mesh_window.py, with a 32-leaf topology). Then ``--seconds``
more seconds are run with each step called through a C function of its own (``operator.call``
for all of them, the step's own inside: ``functools.reduce`` decode, ``itertools.starmap``
queue, ``itertools.filterfalse`` put in and aged out, ``filter`` judged), so callgrind's inclusive counts of
those functions are the steps' instructions. ``--report`` prints them per node-sample. The
cyclic GC is off in the measured seconds unless ``--gc`` (then its share is printed apart).
Without callgrind it runs the same and prints the CPU seconds of the measured part.
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import operator
import time

from pathlib import Path

from netui.collectors.mesh import parse_mesh
from netui.engine.monitor import tune_gc
from netui.model.fleet import Fleet
from tests.bench.bench_mesh import fleet
from tests.bench.callgrind_steps import report
from tests.bench.fake_fleet import FakeMesh

STEPS = {"decode": "functools_reduce", "queue": "starmap_next", "put in, aged out": "filterfalse_next",
         "judged": "filter_next", "(of which the cyclic GC)": "gc_collect_main"}


def meshes(names: list[str]) -> list[FakeMesh]:
    out = []
    for i, _ in enumerate(names):
        m = FakeMesh(20000 + i)
        m.command(b"m " + b"0" * 32)
        m.peers = [("127.0.0.1", 20000 + j) for j in range(len(names)) if j != i]
        m.next = i  # (each starts at a different peer)
        out.append(m)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--fill", type=int, default=60,
                        help="seconds filled before the measured ones (60: the frames aged then are the fill's first, "
                             "the very first holding no row; 62: two full ones)")
    parser.add_argument("--report", default=None, help="a callgrind output file to read")
    parser.add_argument("--gc", action="store_true", help="the cyclic GC on while measured (off: steadier counts)")
    parser.add_argument("--wait", default=None, help="after the fill, touch WAIT.ready and wait for WAIT")
    args = parser.parse_args()
    if args.report:
        report(args.report, args.nodes * args.seconds, STEPS)
        return
    tune_gc()  # (as the engine runs)
    names, topology = fleet(args.nodes, 32)
    fakes = meshes(names)
    f = Fleet(names, history_s=10.0)
    mono = [1000.0]

    def fields():
        mono[0] += 1.0
        return [m.field(mono[0], 1.0) for m in fakes]

    def decode(values):
        return [parse_mesh(v) for v in values]

    def queue(samples):
        for n, s in zip(names, samples):
            f.observe_mesh(n, s)

    def put_in():
        w = f.mesh
        w._flush()
        w._prune()

    def judged():
        return f.mesh.judge(topology, names)

    for _ in range(args.fill):  # the window filled
        queue(decode(fields()))
        put_in()
    judged()
    if args.wait:  # (callgrind's instrumentation is turned on now: tests/bench/steps_instructions.sh)
        Path(args.wait + ".ready").touch()
        while not Path(args.wait).exists():
            time.sleep(0.05)
    if not args.gc:  # (when a collection falls in the measured seconds is chance: ±30 k a node-sample)
        gc.disable()
    t0 = time.process_time()
    for _ in range(args.seconds):
        values = fields()
        samples = operator.call(functools.reduce, lambda _, v: decode(v), [values], None)
        operator.call(lambda: list(itertools.starmap(queue, [(samples,)])))
        operator.call(lambda: list(itertools.filterfalse(lambda _: put_in(), [0])))
        operator.call(lambda: list(filter(lambda _: judged() and False, [0])))
    cpu = time.process_time() - t0
    print(f"{args.nodes} nodes, {args.seconds} s measured: {cpu / (args.nodes * args.seconds) * 1e6:.1f} µs CPU "
          f"per node-sample (decode, queue, put in and aged out, judged); {f.mesh.pair_count:,} pairs")


if __name__ == "__main__":
    main()
