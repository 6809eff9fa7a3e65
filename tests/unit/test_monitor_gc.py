"""The engine raises the cyclic GC's thresholds for fleet-sized allocation rates."""

from __future__ import annotations

import gc

from netui.engine.monitor import GC_THRESHOLDS, Monitor


def test_a_monitor_raises_the_gc_thresholds_and_never_lowers_them():
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        Monitor([], interval_s=1.0)
        assert gc.get_threshold() == GC_THRESHOLDS
        gc.set_threshold(10**6, 10, 10**4)
        Monitor([], interval_s=1.0)
        assert gc.get_threshold() == (10**6, GC_THRESHOLDS[1], 10**4)
    finally:
        gc.set_threshold(*before)
