"""Deterministic samples for UI tests: a tiny cluster whose counters follow a script.

Not a mock of netui: these are real NodeSample values, replayed through the real engine,
model and UI, exactly as a recording is.
"""

from __future__ import annotations

from dataclasses import replace

from netui.collectors.assemble import fabric_from_texts
from netui.collectors.source import BaseSource
from netui.engine.sources import SourceError
from netui.model.mesh import MeshPeerReading, MeshSample
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


def rdma_texts(t: int, *, rx_bps: float, tx_bps: float, pause_per_s: int = 0, cnp_per_s: int = 0,
               loss_per_s: int = 0, state: str = "4: ACTIVE", netdev: str = "eth0") -> tuple[dict, dict]:
    """The /sys/class/infiniband texts (one RoCE port, mlx5_0/1, paired with ``netdev``) and
    the ``ethtool -S`` text of that netdev at ``t`` seconds of constant rates (bits/s)."""
    base = "mlx5_0/ports/1"
    ib = {
        f"{base}/state": state, f"{base}/phys_state": "5: LinkUp" if "ACTIVE" in state else "2: Polling",
        f"{base}/rate": "100 Gb/sec (4X EDR)", f"{base}/link_layer": "Ethernet",
        f"mlx5_0/device/net/{netdev}": "", f"mlx5_0/device/net/{netdev}/dev_id": "0x0",
        f"mlx5_0/device/net/{netdev}/dev_port": "0",
    }
    words = {"port_xmit_data": tx_bps / 32 * t, "port_rcv_data": rx_bps / 32 * t,
             "port_xmit_packets": tx_bps / 32000 * t, "port_rcv_packets": rx_bps / 32000 * t,
             "unicast_xmit_packets": tx_bps / 32000 * t, "unicast_rcv_packets": rx_bps / 32000 * t,
             "symbol_error": 0, "port_rcv_errors": 0, "port_xmit_discards": 0, "link_downed": 0}
    ib |= {f"{base}/counters/{k}": str(int(v)) for k, v in words.items()}
    hw = {"np_cnp_sent": cnp_per_s * t, "rp_cnp_handled": cnp_per_s * t // 2, "out_of_sequence": loss_per_s * t,
          "np_ecn_marked_roce_packets": cnp_per_s * t * 3, "rx_write_requests": int(rx_bps / 64000 * t)}
    ib |= {f"{base}/hw_counters/{k}": str(v) for k, v in hw.items()}
    eth = {netdev: "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in {
        "rx_bytes_phy": int(rx_bps / 8 * t), "tx_bytes_phy": int(tx_bps / 8 * t),
        "rx_pause_ctrl_phy": pause_per_s * t, "tx_pause_ctrl_phy": 0,
        "rx_prio3_pause": pause_per_s * t, "rx_prio3_pause_duration": pause_per_s * t * 40,
        "tx_prio3_pause": 0, "tx_prio3_pause_duration": 0, "rx_prio3_pause_transition": pause_per_s * t // 2,
        "rx_discards_phy": 0, "rx_out_of_buffer": 0}.items())}
    return ib, eth


def node_sample(step: int, *, rx_bps: float = 0.0, tx_bps: float = 0.0, drops_per_s: int = 0,
                retrans_per_s: int = 0, out_segs_per_s: int = 80_000, dsack_segs_per_s: int = 0,
                softirq_pct: int = 5, ncpus: int = 4,
                boot_id: str = "boot-1",
                mono0: float = 1000.0, hostname: str | None = None, rdma: dict | None = None) -> NodeSample:
    """The sample at ``step`` seconds of a node moving at constant rates (bits/s for rx/tx).

    ``dsack_segs_per_s``: segments the receivers' D-SACKs reported twice received (TcpExt
    TCPDSACKRecvSegs, only when given). ``rdma``: the keyword arguments of ``rdma_texts``
    (rates in bits/s) for a node with one RoCE port and PFC counters, read through the real
    parsers; None: no fabric.
    """
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
    out_segs = out_segs_per_s * t
    tcp = TcpSample({"RetransSegs": retrans_per_s * t, "OutSegs": out_segs, "InSegs": 70_000 * t, "CurrEstab": 12},
                    {"TCPLostRetransmit": (retrans_per_s // 4) * t, "TCPTimeouts": 0,
                     **({"TCPDSACKRecvSegs": dsack_segs_per_s * t} if dsack_segs_per_s else {})})
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
        fabric=None if rdma is None else fabric_from_texts(*rdma_texts(t, **rdma), mono_s=mono0 + t,
                                                           ethtool_mono_s=mono0 + t, boot_id=boot_id),
    )


class ScriptedSource(BaseSource):
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

def demo_sources() -> list[ScriptedSource]:
    """Three nodes: a busy healthy one, one dropping and retransmitting, one down."""
    return [
        ScriptedSource("gpu01", lambda k: node_sample(k, rx_bps=40e9, tx_bps=38e9, softirq_pct=12)),
        ScriptedSource("gpu02", lambda k: node_sample(k, rx_bps=9e9, tx_bps=8e9, drops_per_s=250,
                                                      retrans_per_s=2400, softirq_pct=85)),
        ScriptedSource("gpu03", lambda k: SourceError(NodeState.DOWN, "connection refused (retrying in 4 s)")),
    ]


# --- the probe mesh ----------------------------------------------------------------------------

MESH_PROBES = 5  # probes each node settles of each peer a frame (a pair reaches MIN_PROBES in 4)


def mesh_address(i: int) -> tuple[str, int]:
    """Where the i-th node of a scripted mesh answers probes (a test range, never probed)."""
    return f"198.18.0.{i + 1}", 40_000 + i


def _lost(loss: float, step: int, probes: int) -> int:
    """Probes lost at ``step`` of ``probes`` a step at a steady ``loss``: spread evenly."""
    return int(loss * probes * (step + 1)) - int(loss * probes * step)


def mesh_sample(names: list[str], me: str, step: int, loss_of=lambda a, b: 0.0, *, rtt_us: int = 180,
                probes: int = MESH_PROBES, mono0: float = 1000.0) -> MeshSample:
    """Node ``me``'s mesh at ``step``: ``probes`` probes settled of every other of ``names``, those
    to peer b lost at ``loss_of(me, b)`` (deterministically spread over the steps), the answered ones
    taking ``rtt_us`` µs and a little more."""
    i = names.index(me)
    address, port = mesh_address(i)
    readings = []
    for j, peer in enumerate(names):
        if peer == me:
            continue
        lost = _lost(loss_of(me, peer), step, probes)
        answered = probes - lost
        readings.append(MeshPeerReading(*mesh_address(j), answered, lost,
                                        tuple(rtt_us + 10 * (k + j) for k in range(answered))))
    return MeshSample(mono_s=mono0 + step, port=port, peers=len(names) - 1, answers=probes * step,
                      readings=tuple(readings), address=address)


def mesh_sources(names: list[str], loss_of=lambda a, b: 0.0, *, probes: int = MESH_PROBES, traffic_of=None,
                 **traffic) -> list[ScriptedSource]:
    """Scripted nodes ``names`` at steady rates (``node_sample``'s ``traffic`` keywords, or
    ``traffic_of(name)``'s), each frame with its mesh: every node settles ``probes`` probes of
    every other, losing ``loss_of(prober, target)`` of them."""
    def script(name: str):
        rates = traffic_of(name) if traffic_of is not None else traffic
        return lambda k: replace(node_sample(k, **rates), mesh=mesh_sample(names, name, k, loss_of, probes=probes))
    return [ScriptedSource(n, script(n)) for n in names]
