"""netui on its pure-Python twins (NETUI_PURE_PYTHON=1, or no compiled netui._speedups), in a
fresh interpreter: the same samples and rates as with the C module. The twins against the C
module function by function are unit tests (tests/unit/test_speedups.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_netui_runs_on_the_pure_python_twins():
    """NETUI_PURE_PYTHON=1 (or no compiled module) gives the same samples and rates."""
    code = (
        "from netui import speedups; assert not speedups.COMPILED\n"
        "from netui.collectors.assemble import sample_from_texts, PACKED_ATTRS\n"
        "from netui.model.node import Node\n"
        "from tests.bench.node128 import proc_texts, iface_attrs\n"
        "attrs = {n: tuple(a.get(k) for k in PACKED_ATTRS) for n, a in iface_attrs().items()}\n"
        "node = Node('n')\n"
        "for i in range(3): node.observe(sample_from_texts(proc_texts(i), attrs, wall_s=i, mono_s=i))\n"
        "print(repr((node.summary, tuple(node.rates.cpu.softirq_percent))))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    pure = subprocess.run([sys.executable, "-c", code], env=env | {"NETUI_PURE_PYTHON": "1"}, capture_output=True,
                          text=True, timeout=120)
    assert pure.returncode == 0, pure.stderr
    fast = subprocess.run([sys.executable, "-c", code.replace("assert not speedups.COMPILED", "pass")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert fast.returncode == 0, fast.stderr
    assert pure.stdout == fast.stdout and "rx_bytes_per_s=" in pure.stdout
