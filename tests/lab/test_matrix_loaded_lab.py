"""The all-pairs matrix on a loaded machine names the shaped uplink, never a node.

Three leaves of two nodes under a spine (node1, node2 on leaf1; node3, node4 on leaf2; node5,
node6 on leaf3), leaf2's uplink shaped to 300 Mbit/s both ways by tbf, and beside the matrix a
bounded busy loop on every CPU (the noisy neighbour of the issue that made one in-leaf pair
decide the verdict). Ten matrices both ways (the shift pattern: 5 rounds of 6 flows, 1 s
each, the deciding pairs rerun alone), each must name leaf2's uplink and no node. (On this
lab the healthy pairs scatter less than on the issue's fabric: 4–10 Gbit/s against 4.9–19, and
the in-leaf pair of leaf2 stays within the old rule's reach; the unit tests hold the issue's
own numbers, tests/unit/test_pairsplit.py.)

Traffic only between the lab's namespaces (198.18.0.0/15); every iperf3 run is bounded; the
busy loops end by themselves after LOAD_S and are killed in ``finally``. ~3 minutes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from netui.checks.pairs.runner import PairTest
from netui.checks.pairs.tools import BOTH_WAYS, SHIFT, PairSettings
from netui.collectors.topology_files import read_topology_file
from tests.lab.watch import lab_monitor, started_all_up, stop, topology_file

pytestmark = [pytest.mark.lab, pytest.mark.slow]

RUNS = 10
LOAD_S = 240  # the busy loops' own bound: longer than the ten runs, never forever
BUSY = ("import sys, time\nend = time.monotonic() + float(sys.argv[1])\n"
        "while time.monotonic() < end:\n    pass\n")


async def test_ten_loaded_matrices_name_the_shaped_uplink_and_no_node(make_lab, tmp_path):
    # pyroute2 runs an event loop of its own: the lab is built beside this one
    lab = await asyncio.to_thread(make_lab, leaves=3, nodes_per_leaf=2)
    await asyncio.to_thread(lab.shape_uplink, "leaf2", "300mbit")
    names = [n.name for n in lab.nodes]
    monitor = lab_monitor(lab, names)
    monitor.fleet.topology = read_topology_file(topology_file(tmp_path, lab))
    monitor.fleet.topology_source = "fabric.toml"
    task = await started_all_up(monitor)
    load = [subprocess.Popen([sys.executable, "-c", BUSY, str(LOAD_S)]) for _ in range(os.cpu_count() or 2)]
    verdicts = []
    try:
        for _ in range(RUNS):
            settings = PairSettings(duration_s=1, direction=BOTH_WAYS)
            report = await PairTest(monitor, names, settings).run()
            v = report.verdict
            rates = ", ".join(f"{r.sender}→{r.receiver} {r.gbps:.3g}" for r in report.results if r.gbps is not None)
            again = ", ".join(f"{r.sender}→{r.receiver} {r.gbps:.3g}" for r in report.retests if r.gbps is not None)
            verdicts.append((v.suspects, [f.name for f in v.fabric], v.text, rates, again))
            assert report.pattern == SHIFT and report.rounds == 5 and report.tests_done == 30
            # before naming the uplink, two of its pairs (and any marginal clearing pair) ran again alone
            assert len(report.retests) == report.retests_total >= 2, report.retests
            assert all(load_p.poll() is None for load_p in load), "the busy loops ended early"
    finally:
        for p in load:
            p.kill()
            p.wait(timeout=10)
        await stop(monitor, task)
    named = [(s, f) for s, f, *_ in verdicts]
    wrong = [v for v in verdicts if v[0] != [] or v[1] != ["leaf2↔spine"]]
    assert not wrong, "\n".join(f"{s} {f}: {text} | {rates} | retests: {again}" for s, f, text, rates, again in wrong)
    assert named == [([], ["leaf2↔spine"])] * RUNS
