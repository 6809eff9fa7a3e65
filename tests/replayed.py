"""A version 2 recording of the lab, for replay tests, snapshots and screenshots.

Made by the real recorder: the lab capture (tests/data/lab-capture.jsonl, recorded over SSH
from the 4-node lab) is played through a Monitor that records, with the clock of the
capture, and the saved reports of two real lab tests are recorded on the way, as the UI
records a test that ends: the iperf3 matrix with a tbf towards node3 at 0:20, the ping
matrix with loss at node3 at 0:28. Deterministic: the same bytes every time.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from netui.engine.monitor import Monitor
from netui.engine.recording.playback import load
from netui.engine.sources import ReplaySource

DATA = Path(__file__).resolve().parent / "data"
CAPTURE = DATA / "lab-capture.jsonl"
PAIR_TEST = DATA / "pairtest-lab-tbf-node3.json"
LATENCY_TEST = DATA / "latency-lab-loss-node3.json"
PAIR_AT, LATENCY_AT = 20, 28  # ticks into the capture


async def record_lab_replay(path: Path) -> Path:
    capture = load(str(CAPTURE)).samples_by_node()
    sources = [ReplaySource(name, samples) for name, samples in sorted(capture.items())]
    start = min(s[0].wall_s for s in capture.values())
    m = Monitor(sources, interval_s=1.0, history_s=60)
    tick = 0
    recorder = m.start_recording(path, clock=lambda: round(start + tick, 3))
    for tick in range(len(next(iter(capture.values())))):
        await m.tick()
        if tick == PAIR_AT:
            recorder.test("pair-test", json.loads(PAIR_TEST.read_text()))
        if tick == LATENCY_AT:
            recorder.test("latency-test", json.loads(LATENCY_TEST.read_text()))
    m.stop_recording()
    return path


def lab_replay(path: Path) -> Path:
    """Write the recording to ``path`` (from sync code); its path."""
    return asyncio.run(record_lab_replay(path))
