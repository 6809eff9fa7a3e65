"""Benchmark: the instructions per node-sample of the "peers" field's decoding, flow rates and the tick's flows, in one process.

Run: sh tests/bench/steps_instructions.sh peers_instructions OUT.cg [--nodes 256] [--seconds 4]  (callgrind, the report after)

``--nodes`` nodes of a ring all-reduce job (tests/bench/fake_peers.py: 12 sockets, 5 peers,
counters growing every frame), each with a FrameDecoder of its own, are fed WARM seconds of
their "peers" fields, then ``--seconds`` more with each step called through a C function of
its own (``operator.call`` for all, inside it ``functools.reduce`` the decoding, the
FrameDecoder's of the field alone; ``itertools.starmap`` the flow rates, as ``Node.observe``
calls ``flow_rates``; with ``--read`` each node's rates read at once; ``filter`` the tick's
flows, ``Fleet.peer_flows`` over the nodes' last readings — the flows between watched nodes and
their address book, as a tick that found someone slow makes them —, once a second, their
rates made there unless ``--read`` made them), so callgrind's inclusive counts of those are the
steps' instructions.
The nodes are taken in turn, as a fleet's frames come. The cyclic GC is off in the measured
seconds.
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import operator
import time
from dataclasses import replace
from pathlib import Path

from netui.collectors.frames import FrameDecoder
from netui.model.fleet import Fleet
from netui.model.flows import flow_rates
from netui.model.node import NodeState
from tests.bench.fake_peers import FakePeers
from tests.bench.callgrind_steps import report
from tests.synth import node_sample

WARM = 5
STEPS = {"decode": "functools_reduce", "flow rates": "starmap_next", "tick's flows": "filter_next"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--read", action="store_true",
                        help="read each node's rates at each sample (as a tick that found someone slow does)")
    parser.add_argument("--report", default=None, help="a callgrind output file to read")
    parser.add_argument("--wait", default=None, help="after the warm seconds, touch WAIT.ready and wait for WAIT")
    args = parser.parse_args()
    if args.report:
        report(args.report, args.nodes * args.seconds, STEPS, allocations=True, digits=2)
        return
    fakes = [FakePeers(i, args.nodes) for i in range(args.nodes)]
    decoders = [FrameDecoder()._peers_of for _ in fakes]
    fields = [[f.field(1000.0 + t) for f in fakes] for t in range(WARM + args.seconds)]
    samples = [None] * args.nodes
    flows = [None] * args.nodes
    fleet = Fleet([f"rank{i:04d}" for i in range(args.nodes)])  # (named apart from their addresses)
    nodes = list(fleet)
    base = node_sample(0)

    def settle() -> None:
        """Each node's last reading and flows where the fleet reads them (as Node.observe leaves them)."""
        for node, s, f in zip(nodes, samples, flows):
            node.sample, node.flows, node.state = replace(base, peers=s), f, NodeState.UP

    def decode(values):
        return [d(v) for d, v in zip(decoders, values)]

    def rates(cur):
        for i, c in enumerate(cur):
            flows[i] = f = flow_rates(samples[i], c, flows[i])
            samples[i] = c
            if read and f is not None:
                f.rates  # noqa: B018  (made when first read: model/flows.py NodeFlows)

    read = args.read

    for values in fields[:WARM]:
        rates(decode(values))
        settle()
        fleet.peer_flows()
    gc.collect()
    gc.disable()
    if args.wait:  # (callgrind's instrumentation is turned on now: tests/bench/steps_instructions.sh peers_instructions)
        Path(args.wait + ".ready").touch()
        while not Path(args.wait).exists():
            time.sleep(0.05)
    for values in fields[WARM:]:
        cur = operator.call(functools.reduce, lambda _, v: decode(v), [values], None)
        operator.call(lambda: list(itertools.starmap(rates, [(cur,)])))
        settle()
        between = operator.call(lambda: list(filter(lambda _: fleet.peer_flows(), [None])))
        assert between
    assert all(f is not None and len(f.rates) == 5 and f.distinct for f in flows)
    between = fleet.peer_flows()
    assert len(between) == args.nodes and all(len(p) == 2 for p in between.values())  # (a ring: 2 a node)


if __name__ == "__main__":
    main()
