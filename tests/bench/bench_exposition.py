"""Benchmark: what one node_exporter scrape costs the monitor, by step.

Run: python -m tests.bench.bench_exposition
Two bodies: the real scrape of a 2-CPU lab node (tests/data/node_exporter/lab-node2-full.prom),
and a 128-CPU, 16-interface node built from it (its cpu, softnet and interface lines
repeated with other cpu/device labels, everything else as captured). For each: the size,
prometheus_client's parser on the whole body, the same after ``keep_lines`` (netui's path),
the mapping onto a NodeSample, and, as a floor in the same run, ``str.split`` of the lines
netui keeps.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from netui.collectors.exposition import keep_lines, parse_exposition, sample_from_series

CAPTURE = Path(__file__).parents[1] / "data" / "node_exporter" / "lab-node2-full.prom"
ROUNDS = 20


def scaled(text: str, ncpu: int = 128, niface: int = 16) -> str:
    out = []
    for line in text.split("\n"):
        if 'cpu="0"' in line and not line.startswith("#"):
            out.extend(line.replace('cpu="0"', f'cpu="{c}"') for c in range(ncpu))
        elif 'cpu="1"' in line and not line.startswith("#"):
            continue
        elif 'device="eth0"' in line and line.startswith("node_network_"):
            out.extend(line.replace('device="eth0"', f'device="eth{i}"') for i in range(niface))
        else:
            out.append(line)
    return "\n".join(out)


def per_call_s(fn, arg) -> float:
    fn(arg)
    t0 = time.perf_counter()
    for _ in range(ROUNDS):
        fn(arg)
    return (time.perf_counter() - t0) / ROUNDS


def full_parse(text: str) -> int:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(len(f.samples) for f in text_string_to_metric_families(text))


def main() -> None:
    real = CAPTURE.read_text()
    for label, text in (("2-CPU lab node (real)", real), ("128-CPU, 16-interface node", scaled(real))):
        kept = keep_lines(text)
        series = parse_exposition(text)
        lines = kept.count("\n")
        t_full = per_call_s(full_parse, text)
        t_kept = per_call_s(parse_exposition, text)
        t_map = per_call_s(lambda s: sample_from_series(s, wall_s=0.0, mono_s=0.0), series)
        t_floor = per_call_s(lambda t: [ln.split() for ln in keep_lines(t).split("\n")], text)
        sample = sample_from_series(series, wall_s=0.0, mono_s=0.0)
        print(f"{label}: body {len(text) / 1024:.0f} KB, {len(re.findall(r'^[a-z]', text, re.M))} samples, "
              f"netui keeps {lines} ({len(kept) / 1024:.0f} KB); {len(sample.cpu.cpus)} CPUs, "
              f"{len(sample.interfaces)} interfaces")
        print(f"  prometheus_client, whole body     {t_full * 1e3:8.2f} ms")
        print(f"  keep_lines + prometheus_client    {t_kept * 1e3:8.2f} ms  ({t_kept / lines * 1e6:.1f} µs per kept line)")
        print(f"  mapping onto NodeSample           {t_map * 1e3:8.2f} ms")
        print(f"  floor: keep_lines + str.split     {t_floor * 1e3:8.2f} ms  (parser = {t_kept / t_floor:.0f}× floor)")
        per_node = t_kept + t_map
        print(f"  → {per_node * 1e3:.2f} ms per node-scrape: {1 / per_node:,.0f} node-scrapes/s on one core")


if __name__ == "__main__":
    main()
