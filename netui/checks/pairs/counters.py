"""What both ends of a pair test did meanwhile: deltas of a node's counters over the test.

Pure: two samples of one node (the last before the test started and the last when it had
ended) in, flat numbers out, under the keys ``PairResult.counters`` uses
(``"node1.retrans"``). The window is the samples' own, ``"<node>.window_s"`` seconds of the
node's clock: with samples every interval it can start up to one interval before the test
and end up to one interval before its end.
"""

from __future__ import annotations

from netui.model.node import data_plane
from netui.model.rates import node_rates
from netui.model.samples import NodeSample

# what each key holds, in the order shown beside a result
COUNTER_KEYS = ("retrans", "drops", "softnet_drops", "softirq_percent", "softirq_cpu", "window_s")


def _count(per_s: float | None, dt: float) -> int | None:
    return None if per_s is None else round(per_s * dt)


def pair_counters(node: str, before: NodeSample | None, after: NodeSample | None) -> dict[str, float | int | None]:
    """Deltas on ``node`` between two of its samples: TCP retransmitted segments, drops of
    its data-plane interfaces (RX + TX, /proc/net/dev), softnet backlog drops, and the
    hottest CPU's softirq share (%) over the window. Unknown values are None; no comparable
    pair of samples (none, the same one twice, a reboot between) gives ``{}``."""
    if before is None or after is None or before is after:
        return {}
    rates = node_rates(before, after)
    if rates is None:
        return {}
    dt = rates.interval_s
    drops: int | None = None
    for name in data_plane(after.interfaces):
        r = rates.interfaces.get(name)
        if r is None:
            continue
        for per_s in (r.rx_dropped_per_s, r.tx_dropped_per_s):
            if per_s is not None:
                drops = (drops or 0) + round(per_s * dt)
    hottest = rates.hottest_cpu()
    softnet_drops = None
    if rates.softnet is not None:
        softnet_drops = round(sum(rates.softnet.dropped_per_s) * dt)
    elif rates.cpu_sums is not None and rates.cpu_sums.dropped_per_s is not None:
        softnet_drops = round(rates.cpu_sums.dropped_per_s * dt)
    values: dict[str, float | int | None] = {
        "retrans": _count(rates.tcp.retrans_segs_per_s, dt) if rates.tcp is not None else None,
        "drops": drops,
        "softnet_drops": softnet_drops,
        "softirq_percent": None if hottest is None else round(hottest[1], 1),
        "softirq_cpu": None if hottest is None else hottest[0],
        "window_s": round(dt, 3),
    }
    return {f"{node}.{key}": value for key, value in values.items()}
