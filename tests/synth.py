"""Deterministic samples for UI tests: a tiny cluster whose counters follow a script.

Not a mock of netui: these are real NodeSample values, replayed through the real engine,
model and UI, exactly as a recording is.
"""

from __future__ import annotations

from netui.engine.sources import SourceError
from netui.model.node import NodeState
from netui.model.samples import (
    CpuTimes,
    InterfaceCounters,
    InterfaceSample,
    NodeSample,
    SoftirqCounts,
    SoftnetStat,
    TcpSample,
)


def counters(rx_bytes=0, tx_bytes=0, rx_packets=0, tx_packets=0, rx_errors=0, tx_errors=0,
             rx_dropped=0, tx_dropped=0) -> InterfaceCounters:
    return InterfaceCounters(rx_bytes, rx_packets, rx_errors, rx_dropped, 0, 0, 0, 0,
                             tx_bytes, tx_packets, tx_errors, tx_dropped, 0, 0, 0, 0)


def node_sample(step: int, *, rx_bps: float = 0.0, tx_bps: float = 0.0, drops_per_s: int = 0,
                retrans_per_s: int = 0, softirq_pct: int = 5, ncpus: int = 4, boot_id: str = "boot-1",
                mono0: float = 1000.0, hostname: str | None = None) -> NodeSample:
    """The sample at ``step`` seconds of a node moving at constant rates (bits/s for rx/tx)."""
    t = step
    eth0 = InterfaceSample(
        "eth0",
        counters(rx_bytes=int(rx_bps / 8 * t), tx_bytes=int(tx_bps / 8 * t), rx_packets=int(rx_bps / 12000 * t),
                 tx_packets=int(tx_bps / 12000 * t), rx_dropped=drops_per_s * t),
        mtu=9000, operstate="up", carrier=True, speed_mbps=100_000, ifindex=2, kind="physical",
    )
    lo = InterfaceSample("lo", counters(rx_bytes=1000 * t, tx_bytes=1000 * t), mtu=65536, operstate="unknown",
                         carrier=True, ifindex=1, kind="loopback")
    cpus = tuple(range(ncpus))
    hot = [softirq_pct if c == 1 else 1 for c in cpus]
    total = tuple(100 * t for _ in cpus)
    softirq = tuple(h * t for h in hot)
    user = tuple(20 * t for _ in cpus)
    idle = tuple(100 * t - 20 * t - s for s in softirq)
    zero = tuple(0 for _ in cpus)
    cpu = CpuTimes(cpus, user, zero, zero, idle, zero, zero, softirq, zero, total)
    out_segs = 80_000 * t
    tcp = TcpSample({"RetransSegs": retrans_per_s * t, "OutSegs": out_segs, "InSegs": 70_000 * t, "CurrEstab": 12},
                    {"TCPLostRetransmit": (retrans_per_s // 4) * t, "TCPTimeouts": 0})
    return NodeSample(
        wall_s=1_790_000_000.0 + t,
        mono_s=mono0 + t,
        boot_id=boot_id,
        interfaces={"eth0": eth0, "lo": lo},
        tcp=tcp,
        cpu=cpu,
        softirqs=SoftirqCounts(cpus, tuple(500 * t * (c + 1) for c in cpus), tuple(50 * t for _ in cpus)),
        softnet=SoftnetStat(cpus, tuple(1000 * t for _ in cpus), zero, tuple(t if c == 1 else 0 for c in cpus)),
        hostname=hostname,
    )


class ScriptedSource:
    """A node whose poll ``k`` returns ``script(k)``: a NodeSample, or a SourceError to raise."""

    def __init__(self, name: str, script) -> None:
        self.name = name
        self.script = script
        self.polls = 0

    async def sample(self) -> NodeSample:
        result = self.script(self.polls)
        self.polls += 1
        if isinstance(result, SourceError):
            raise result
        return result

    async def close(self) -> None:
        pass


def demo_sources() -> list[ScriptedSource]:
    """Three nodes: a busy healthy one, one dropping and retransmitting, one down."""
    return [
        ScriptedSource("gpu01", lambda k: node_sample(k, rx_bps=40e9, tx_bps=38e9, softirq_pct=12)),
        ScriptedSource("gpu02", lambda k: node_sample(k, rx_bps=9e9, tx_bps=8e9, drops_per_s=250,
                                                      retrans_per_s=2400, softirq_pct=85)),
        ScriptedSource("gpu03", lambda k: SourceError(NodeState.DOWN, "connection refused (retrying in 4 s)")),
    ]
