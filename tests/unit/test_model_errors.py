"""One error boundary: a bug of netui's while judging one node's sample is that node's
``internal error`` state, whatever the source; the other nodes and the app carry on."""

from __future__ import annotations

import asyncio

from netui.engine.monitor import Monitor
from netui.model.node import NodeState
from tests.synth import ScriptedSource, node_sample


def test_a_bug_judging_one_nodes_sample_is_its_internal_error_and_the_rest_carries_on():
    bad_steps = {2, 3}  # the steps at which judging gpu02's sample fails

    monitor = Monitor([ScriptedSource(n, lambda k: node_sample(k, rx_bps=1e9, tx_bps=1e9)) for n in ("gpu01", "gpu02")],
                      interval_s=1.0, history_s=60)
    node = monitor.fleet["gpu02"]
    judge = node.observe
    step = [0]

    def observe(sample):  # a bug in the model, for two samples of one node
        if step[0] in bad_steps:
            raise ZeroDivisionError("float division by zero")
        return judge(sample)

    node.observe = observe
    seen = []

    async def run():
        for k in range(6):
            step[0] = k
            await monitor.poll_once()
            seen.append((monitor.fleet["gpu01"].state, node.state, node.error))

    asyncio.run(run())
    assert [s[0] for s in seen] == [NodeState.UP] * 6  # the other node never noticed
    assert seen[2][1] is NodeState.INTERNAL_ERROR and seen[3][1] is NodeState.INTERNAL_ERROR
    assert "ZeroDivisionError: float division by zero" in seen[2][2] and "bug of netui" in seen[2][2]
    assert seen[5][1] is NodeState.UP  # judged again once its samples can be
