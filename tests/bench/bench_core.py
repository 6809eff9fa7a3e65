"""Benchmark: parse + rates for one node-sample of a 128-CPU, 16-interface node.

Run: python -m tests.bench.bench_core
Prints µs per node-sample for netui's path: parse + rates (texts → NodeSample → NodeRates,
the issue's measure; target ≤ 150 µs), and everything a node costs (Node.observe: rates,
summary, health, history), side by side in the same run with the floor of merely tokenising
the same texts (str.split of every file), as a ratio.

Then the same node-samples as a fleet receives them: the remote sampler's frames (its own
``frame()`` run on the same texts, as tests/bench/fake_fleet.py serves them), decoded and
observed, beside the floor of splitting each frame into its fields: as the grid gets them
(the per-CPU tables summed on the node), and with the tables (a node whose screen is open). Which implementation
ran (netui._speedups or the pure-Python twins, NETUI_PURE_PYTHON=1) is printed.
"""

from __future__ import annotations

import time

from netui import speedups
from netui.collectors.assemble import PACKED_ATTRS, sample_from_texts
from netui.collectors.frames import FrameDecoder
from netui.speedups import frame_fields
from netui.model.node import Node
from netui.model.rates import node_rates
from tests.bench.fake_fleet import NodeFrames
from tests.bench.node128 import NCPU, NIFACE, iface_attrs, proc_texts

ROUNDS = 5
SAMPLES = 200


def _netui(texts, attrs) -> float:
    node = Node("gpu001", history_s=900, interval_s=1)
    t0 = time.perf_counter()
    for i, t in enumerate(texts):
        node.observe(sample_from_texts(t, attrs, wall_s=float(i), mono_s=float(i)))
    elapsed = time.perf_counter() - t0
    assert node.rates is not None and len(node.rates.cpu.cpus) == NCPU
    assert len(node.rates.interfaces) == NIFACE and node.summary.rx_bytes_per_s > 0
    return elapsed / len(texts)


def _parse_and_rates(texts, attrs) -> float:
    """The issue's own measure: parse the texts into a NodeSample and compute its rates
    against the previous one (no summary, health or history: _netui includes those)."""
    prev = None
    t0 = time.perf_counter()
    for i, t in enumerate(texts):
        cur = sample_from_texts(t, attrs, wall_s=float(i), mono_s=float(i))
        rates = node_rates(prev, cur)
        prev = cur
    elapsed = time.perf_counter() - t0
    assert rates is not None and len(rates.cpu.cpus) == NCPU and len(rates.interfaces) == NIFACE
    return elapsed / len(texts)


def _floor(texts, attrs) -> float:
    t0 = time.perf_counter()
    n = 0
    for t in texts:
        for text in t.values():
            n += len(text.split())
        for a in attrs.values():
            for v in a:
                if v:
                    n += len(v.split())
    return (time.perf_counter() - t0) / len(texts)


def _remote(frames: list[bytes], detail: bool) -> float:
    node = Node("gpu001", history_s=900, interval_s=1)
    decode = FrameDecoder().decode  # one stream, as SamplerSession decodes it
    t0 = time.perf_counter()
    for payload in frames:
        node.observe(decode(payload))
    elapsed = time.perf_counter() - t0
    assert node.rates is not None and node.summary.rx_bytes_per_s > 0
    assert node.summary.hottest_softirq_percent is not None and node.summary.net_rx_per_s > 0
    assert (node.rates.cpu is not None and len(node.rates.cpu.cpus) == NCPU) == detail
    return elapsed / len(frames)


def _remote_floor(frames: list[bytes]) -> float:
    t0 = time.perf_counter()
    n = 0
    for payload in frames:
        n += len(frame_fields(payload))
    return (time.perf_counter() - t0) / len(frames)


def main() -> None:
    texts = [proc_texts(s) for s in range(SAMPLES)]
    # as the local reader hands them over: each interface's sysfs texts in PACKED_ATTRS order
    attrs = {name: tuple(a.get(k) for k in PACKED_ATTRS) for name, a in iface_attrs().items()}
    best_rates = min(_parse_and_rates(texts, attrs) for _ in range(ROUNDS))
    best_netui = min(_netui(texts, attrs) for _ in range(ROUNDS))
    best_floor = min(_floor(texts, attrs) for _ in range(ROUNDS))
    print(f"node-sample: {NCPU} CPUs, {NIFACE} interfaces, {sum(map(len, texts[0].values()))} bytes of /proc text")
    print(f"netui parse + rates:                     {best_rates * 1e6:8.1f} µs per node-sample (target ≤ 150)")
    print(f"netui parse + rates + health + history: {best_netui * 1e6:8.1f} µs per node-sample (all Node.observe)")
    print(f"floor (str.split of the same texts):     {best_floor * 1e6:8.1f} µs per node-sample")
    print(f"ratio netui (all) / floor:                {best_netui / best_floor:8.2f}×")

    source = NodeFrames()
    for detail, what in ((False, "as the grid gets it (per-CPU sums)"), (True, "with the per-CPU tables")):
        frames = []
        for i in range(SAMPLES):
            whole = source.frame(i, float(i), float(i), float(i - 1), detail)
            frames.append(whole[whole.index(b"\n") + 1 :])
        best_remote = min(_remote(frames, detail) for _ in range(ROUNDS))
        best_rfloor = min(_remote_floor(frames) for _ in range(ROUNDS))
        print(f"remote frame {what}, {sum(map(len, frames)) // len(frames)} bytes:")
        print(f"  decode + observe                        {best_remote * 1e6:8.1f} µs per node-sample")
        print(f"  floor (splitting the frame into fields): {best_rfloor * 1e6:8.1f} µs per node-sample")
    print(f"speedups: {'netui._speedups (C)' if speedups.COMPILED else 'pure-Python twins'}")


if __name__ == "__main__":
    main()
