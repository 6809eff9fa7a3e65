"""netui over a scripted fleet whose worst-first order changes at every poll, for the tmux
tests: ``python -m tests.reorder_app [interval_s]`` (run from the checkout).

Node ``n{i}`` drops ``100 × ((poll + i) mod 4) + 1`` packets a second: each poll another node
is the worst, and every row moves.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from netui.engine import eventloop
from netui.engine.monitor import Monitor
from netui.ui.app import make_app
from tests.synth import ScriptedSource, node_sample


def rate(i: int, k: int) -> int:
    return 100 * ((k + i) % 4) + 1


def rotating(i: int):
    def sample(k: int):
        s = node_sample(k, rx_bps=1e9, tx_bps=1e9)
        eth0 = s.interfaces["eth0"]
        dropped = sum(rate(i, j) for j in range(1, k + 1))  # a counter: it only grows
        eth0 = eth0._replace(counters=eth0.counters._replace(rx_dropped=dropped))  # a NamedTuple
        return replace(s, interfaces={**s.interfaces, "eth0": eth0})
    return sample


def main() -> None:
    interval_s = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
    sources = [ScriptedSource(f"n{i}", rotating(i)) for i in range(4)]
    # on the loop the netui command runs its app on (uvloop when installed), as netui does
    eventloop.run(make_app(Monitor(sources, interval_s=interval_s, history_s=60)).run_async())


if __name__ == "__main__":
    main()
