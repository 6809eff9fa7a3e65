"""Benchmark: the engine's instructions and allocations per node-sample, by step, in one process.

Run: sh tests/bench/steps_instructions.sh observe_instructions OUT.cg [--nodes 256] [--seconds 4] [--no-tick] [--spread 12]  (callgrind, the report after)
     python -m tests.bench.observe_instructions --blocks [--nodes 256] [--seconds 4]  (blocks kept, no callgrind)

``--nodes`` nodes (tests/bench/fake_fleet.py's frames of a 128-CPU, 16-interface node, the
sums only, as the grid gets them), each with a FrameDecoder of its own, are fed WARM seconds
of frames (their histories hold rows), then ``--seconds`` more with each step called through a
C function of its own (``operator.call`` for all, inside it ``functools.reduce`` decode,
``itertools.starmap`` observe (engine/monitor.py ``take_sample``: ``Node.observe``), ``filter``
the tick's judgement (``judge_tick``)), so callgrind's inclusive counts of those are the steps'
instructions, and its call counts of the allocator the blocks allocated (in the measured
seconds, the tick's too: ``--no-tick`` leaves it out). The nodes are taken
in turn, as a fleet's frames come: each node's data is cold by its next sample. The cyclic GC
is off in the measured seconds (when a collection falls is chance).

``--blocks`` (no callgrind): the memory blocks a node-sample leaves behind until the next one
lets them go, counted by keeping every value the node holds after each sample alive
(``sys.getallocatedblocks``): the objects a sample makes that are freed a second later, cold.
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import operator
import sys
import time
from pathlib import Path

from netui.collectors.frames import FrameDecoder
from netui.engine.monitor import judge_tick, take_sample, tune_gc
from netui.model.fleet import Fleet
from tests.bench.callgrind_steps import report
from tests.bench.fake_fleet import NodeFrames

WARM = 20
STEPS = {"decode": "functools_reduce", "observe": "starmap_next", "tick": "filter_next"}


def _payloads(source: NodeFrames, second: int, nodes: int, spread: int = 0) -> list[bytes | None]:
    """Every node's frame of ``second``: node i's of its step ``second - i % spread`` (it
    connected that many seconds after the first: its own phase of the same frames, as a fleet's
    nodes are; None before it connected); with no spread every node's frame alike (the same
    bytes, its own decoder and state)."""
    frames: dict[int, bytes | None] = {}
    out: list[bytes | None] = []
    for i in range(nodes):
        step = second - (i % spread if spread else 0)
        if step not in frames:
            if step < 0:
                frames[step] = None
            else:
                whole = source.frame(step, 1000.0 + second, 1000.0 + second, 999.0 + second if step else None)
                frames[step] = whole[whole.index(b"\n") + 1:]
        out.append(frames[step])
    return out


def _held(node) -> tuple:
    """Every value a node holds after a sample, one level into its held health."""
    return (*vars(node).values(), *(getattr(node.held, a, None) for a in getattr(node.held, "__slots__", ())),
            *getattr(node.held, "__dict__", {}).values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--blocks", action="store_true", help="count the blocks a node-sample keeps until the next")
    parser.add_argument("--report", default=None, help="a callgrind output file to read")
    parser.add_argument("--no-tick", action="store_true",
                        help="no tick in the measured seconds (the blocks allocated: decode and observe's alone)")
    parser.add_argument("--spread", type=int, default=0,
                        help="node i connects i %% SPREAD seconds after the first (its own phase of the frames, "
                             "as in the fake fleet: the tick then finds what a fleet's tick finds); 0: every node alike")
    parser.add_argument("--wait", default=None, help="after the warm seconds, touch WAIT.ready and wait for WAIT")
    args = parser.parse_args()
    if args.report:
        report(args.report, args.nodes * args.seconds, STEPS, allocations=True)
        return
    tune_gc()
    names = [f"node{i:04d}" for i in range(args.nodes)]
    fleet = Fleet(names)
    decoders = [FrameDecoder().decode for _ in names]
    source = NodeFrames()
    pairs = list(zip(names, decoders))

    def decode(payloads):
        return [d(p) if p is not None else None for d, p in zip(decoders, payloads)]

    def observe(samples):
        for n, s in zip(names, samples):
            if s is not None:
                take_sample(fleet, n, s)

    for second in range(WARM):
        observe(decode(_payloads(source, second, args.nodes, args.spread)))
        judge_tick(fleet)
    measured = [_payloads(source, second, args.nodes, args.spread) for second in range(WARM, WARM + args.seconds)]
    gc.collect()
    gc.disable()
    if args.wait:  # (callgrind's instrumentation is turned on now: tests/bench/steps_instructions.sh)
        Path(args.wait + ".ready").touch()
        while not Path(args.wait).exists():
            time.sleep(0.05)
    if args.blocks:
        keep: list = []
        made = 0
        for payloads in measured:
            before = sys.getallocatedblocks()
            for (n, d), p in zip(pairs, payloads):
                if p is None:
                    continue
                take_sample(fleet, n, d(p))
                keep.append(_held(fleet.nodes[n]))
            made += sys.getallocatedblocks() - before - len(payloads)  # (less keep's own tuples)
        print(f"{args.nodes} nodes, {args.seconds} s: {made / (args.nodes * args.seconds):.1f} blocks kept "
              "per node-sample until the next (less the keeping)")
        return
    for payloads in measured:  # (made before: the allocator's calls counted are the steps' own)
        samples = operator.call(functools.reduce, lambda _, v: decode(v), [payloads], None)
        operator.call(lambda: list(itertools.starmap(observe, [(samples,)])))
        if not args.no_tick:
            operator.call(lambda: list(filter(lambda _: judge_tick(fleet) and False, [0])))
        del samples
    node = fleet.nodes[names[0]]
    assert node.summary.rx_bytes_per_s and node.samples_seen == WARM + args.seconds


if __name__ == "__main__":
    main()
