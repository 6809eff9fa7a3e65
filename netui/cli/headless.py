"""What the commands without a screen (snapshot, record, bench, doctor) share: when a node is
worth no more waiting, and the line said when closing gave up on some."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netui.engine.monitor import Monitor


def settled_states() -> frozenset:
    """The node states that no waiting will change: a failure to report."""
    from netui.model.node import NodeState

    return frozenset({NodeState.DOWN, NodeState.AUTH_FAILED, NodeState.HOST_KEY_UNKNOWN,
                      NodeState.HOST_KEY_CHANGED, NodeState.UNSUPPORTED, NodeState.PARSE_ERROR,
                      NodeState.CONFIG_ERROR})


def say_abandoned(monitor: Monitor) -> None:
    """One line on stderr when closing gave up waiting for some nodes (engine/monitor.py)."""
    names = getattr(monitor, "abandoned", None)
    if names:
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5:,} more" if len(names) > 5 else "")
        print(f"netui: stopped without waiting for {len(names):,} node(s) that did not end in time: {shown}",
              file=sys.stderr)
