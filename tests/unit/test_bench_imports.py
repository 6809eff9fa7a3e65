"""The benchmarks are not run by the suite (tests/bench/README.md: they print ratios, they
assert no time), but each must still import: a name moved in netui must not leave one
broken until someone next measures with it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("module", sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__"))
def test_each_benchmark_imports(module):
    importlib.import_module(f"tests.bench.{module}")
