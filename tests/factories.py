"""Hand-made values shared by test modules: samples, recordings, doctor facts.

Real netui values built by hand (NodeSample, a recording written by RecordingWriter, a live
Monitor's recording), not mocks. The scripted cluster the UI tests watch is tests/synth.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from netui.engine.document import mesh_document
from netui.engine.monitor import Monitor
from netui.engine.sources import SourceError
from netui.engine.recording.codec import header_record, sample_record
from netui.engine.recording.writer import RecordingWriter
from netui.checks.doctor.rules import DoctorProbe, NicQueues, NodeFacts
from netui.model.health import Level
from netui.model.mesh import MeshPeerReading, MeshSample
from netui.model.node import NodeState
from netui.model.topology import Attachment, Switch, Topology
from netui.model.samples import (
    INTERFACE_COUNTER_NAMES,
    CpuTimes,
    InterfaceCounters,
    InterfaceSample,
    NodeSample,
    SoftirqCounts,
    SoftnetStat,
    TcpSample,
)
from tests.synth import ScriptedSource, demo_sources, node_sample

# --- samples -----------------------------------------------------------------------------------


def make_iface(name: str = "eth0", *, ifindex: int | None = 2, speed_mbps: int | None = None,
               kind: str | None = "physical", mtu: int | None = 1500, operstate: str | None = "up",
               **counters: int) -> InterfaceSample:
    """An interface whose counters are 0 except those named (rx_bytes=..., tx_dropped=...)."""
    values = {name_: 0 for name_ in INTERFACE_COUNTER_NAMES} | counters
    return InterfaceSample(name, InterfaceCounters(**values), mtu=mtu, operstate=operstate,
                           carrier=True, speed_mbps=speed_mbps, ifindex=ifindex, kind=kind)


def make_cpu(softirq: dict[int, int], total: dict[int, int]) -> CpuTimes:
    """CPU times per CPU id: softirq and total ticks; the rest is idle."""
    cpus = tuple(softirq)
    zeros = (0,) * len(cpus)
    idle = tuple(total[c] - softirq[c] for c in cpus)
    return CpuTimes(cpus, zeros, zeros, zeros, idle, zeros, zeros,
                    tuple(softirq[c] for c in cpus), zeros, tuple(total[c] for c in cpus))


def make_sample(mono_s: float, *ifaces: InterfaceSample, boot_id: str | None = "boot-1",
                tcp: dict[str, int] | None = None, ext: dict[str, int] | None = None,
                cpu: CpuTimes | None = None, softirqs: SoftirqCounts | None = None,
                softnet: SoftnetStat | None = None, wall_s: float | None = None,
                problems: tuple[str, ...] = ()) -> NodeSample:
    return NodeSample(
        wall_s=1_700_000_000.0 + mono_s if wall_s is None else wall_s,
        mono_s=mono_s,
        boot_id=boot_id,
        interfaces={i.name: i for i in ifaces},
        tcp=None if tcp is None else TcpSample(dict(tcp), dict(ext or {})),
        cpu=cpu,
        softirqs=softirqs,
        softnet=softnet,
        hostname="gpu01",
        problems=problems,
    )


def full_sample(t: float, *, rx: int = 0, retrans: int = 0, boot_id: str = "boot-1") -> NodeSample:
    """A sample with every part filled in, as a healthy live node gives."""
    return make_sample(
        t,
        make_iface("eth0", speed_mbps=25_000, rx_bytes=rx, tx_bytes=rx // 2, rx_packets=rx // 1000,
                   rx_dropped=3, tx_errors=1),
        make_iface("lo", ifindex=1, kind="loopback", speed_mbps=None, operstate="unknown"),
        boot_id=boot_id,
        tcp={"RtoAlgorithm": 1, "MaxConn": -1, "CurrEstab": 15, "InSegs": rx // 50, "OutSegs": rx // 100,
             "RetransSegs": retrans},
        ext={"TCPTimeouts": retrans, "TCPSynRetrans": 16},
        cpu=make_cpu({0: 10 * rx, 1: 5}, {0: 100 * rx + 100, 1: 100 * rx + 100}),
        softirqs=SoftirqCounts((0, 1, 2, 3), (rx, 0, 0, 0), (rx // 2, 0, 0, 0)),
        softnet=SoftnetStat((0, 1), (rx, 2), (0, 0), (7, 0xF0000769)),
        problems=("net/netstat: not readable",),
    )


# --- recordings --------------------------------------------------------------------------------


def write_ticks(path: Path, ticks: int, *, nodes=("gpu01", "gpu02"), **kw) -> tuple[RecordingWriter, list[int]]:
    """A recording of ``ticks`` ticks of full samples, left open; the file size after each sync
    (where a reader is guaranteed every record written so far). ``kw`` goes to RecordingWriter."""
    w = RecordingWriter(path, header_record(100.0, hosts=list(nodes), interval_s=1.0), **kw)
    synced = [w.size]
    for k in range(ticks):
        for i, node in enumerate(nodes):
            w.write(sample_record(100.0 + k, node, full_sample(float(k), rx=10**6 * k + i, retrans=k)))
        w.write({"type": "tick", "t": 100.0 + k})
        w.sync()
        synced.append(w.size)
    return w, synced


async def record_demo(path: Path, ticks: int = 30) -> list[tuple]:
    """The scripted demo cluster through a live Monitor, recorded; the live rates seen."""
    m = Monitor(demo_sources(), interval_s=1.0, history_s=120)
    live: list[tuple] = []
    m.on_sample = lambda name, s: live.append((name, s.mono_s, m.fleet[name].rates, m.fleet[name].health))
    clock = iter(float(1_800_000_000 + k * 0.25) for k in range(100_000))
    m.start_recording(path, clock=lambda: next(clock))
    for _ in range(ticks):
        await m.tick()
    m.stop_recording()
    return live


MESH_NODES = ("gpu01", "gpu02", "gpu03", "gpu04")
MESH_LOSSY, MESH_DOWN = "gpu03", range(12, 16)  # gpu03's link loses; gpu04 is down for these ticks


def mesh_address(name: str) -> str:
    return f"198.18.0.{MESH_NODES.index(name) + 1}"


def mesh_node_sample(name: str, k: int, *, up=MESH_NODES) -> NodeSample:
    """Node ``name``'s sample at tick ``k`` with its mesh: 5 probes of every other node of ``up``
    settled a frame, one lost on a pair of MESH_LOSSY's every fifth frame (4 %), RTTs of
    200-249 µs."""
    readings = []
    for j, peer in enumerate(p for p in up if p != name):
        lost = int(MESH_LOSSY in (name, peer) and (k + j) % 5 == 0)
        readings.append(MeshPeerReading(mesh_address(peer), 40_000 + MESH_NODES.index(peer), 5 - lost, lost,
                                        tuple(200 + (k * 7 + j * 13 + i) % 50 for i in range(5 - lost))))
    sample = node_sample(k, rx_bps=10e9, tx_bps=10e9)
    mesh = MeshSample(sample.mono_s, port=40_000 + MESH_NODES.index(name), peers=len(MESH_NODES) - 1, answers=5 * k,
                      refused=0, readings=tuple(readings), address=mesh_address(name))
    return replace(sample, mesh=mesh)


def mesh_sources() -> list[ScriptedSource]:
    """Four nodes with the probe mesh on (``mesh_node_sample``): gpu03's link loses, gpu04
    is down during MESH_DOWN (and meanwhile no peer reports its probes of it)."""
    def script(name):
        def sample(k):
            if name == "gpu04" and k in MESH_DOWN:
                return SourceError(NodeState.DOWN, "connection refused (retrying in 4 s)")
            up = tuple(n for n in MESH_NODES if n != "gpu04" or k not in MESH_DOWN)
            return mesh_node_sample(name, k, up=up)
        return sample
    return [ScriptedSource(name, script(name)) for name in MESH_NODES]


async def record_mesh_demo(path: Path, ticks: int = 30) -> list:
    """``mesh_sources`` through a live Monitor, recorded; the mesh section of the live
    fleet's document after each tick (as JSON reads it back)."""
    m = Monitor(mesh_sources(), interval_s=1.0, history_s=120)
    clock = iter(float(1_800_000_000 + k * 0.25) for k in range(100_000))
    m.start_recording(path, clock=lambda: next(clock))
    live = []
    for _ in range(ticks):
        await m.tick()
        live.append(json.loads(json.dumps(mesh_document(m.fleet))))
    m.stop_recording()
    return live


# --- doctor facts ------------------------------------------------------------------------------

# sysctls of a node tuned for fast TCP: the doctor finds nothing to say about them
TUNED = {
    "net.core.rmem_max": "134217728",
    "net.core.wmem_max": "134217728",
    "net.ipv4.tcp_rmem": "4096 131072 134217728",
    "net.ipv4.tcp_wmem": "4096 16384 134217728",
    "net.ipv4.ip_local_port_range": "32768 60999",
    "net.ipv4.tcp_slow_start_after_idle": "0",
    "net.ipv4.tcp_notsent_lowat": "131072",
    "net.ipv4.tcp_congestion_control": "bbr",
    "net.ipv4.tcp_available_congestion_control": "reno cubic bbr",
}


def nic_counters(**kw) -> InterfaceCounters:
    """Counters of an interface that has moved 1000 packets each way; the rest 0 unless named."""
    values = dict.fromkeys(InterfaceCounters._fields, 0) | {"rx_packets": 1000, "tx_packets": 1000} | kw
    return InterfaceCounters(**values)


def nic(name="eth0", *, mtu=9000, speed=100_000, kind="physical", operstate="up", carrier=True, **kw):
    """An interface as the doctor sees it: MTU 9000 at 100 Gbit/s unless told otherwise."""
    return InterfaceSample(name, nic_counters(**kw), mtu=mtu, operstate=operstate, carrier=carrier,
                           speed_mbps=speed, ifindex=2, kind=kind)


LO = InterfaceSample("lo", nic_counters(), mtu=65536, operstate="unknown", carrier=True, kind="loopback")


def node_facts(name, *ifaces, sysctls=None, probe=True, errors_per_s=None, nics=None, cpus=8, irqbalance=True,
               rdma=()) -> NodeFacts:
    """A node's facts for the doctor: tuned sysctls and 8 queues per NIC unless told otherwise."""
    interfaces = {i.name: i for i in (*ifaces, LO)} if ifaces else {"eth0": nic(), "lo": LO}
    p = None
    if probe:
        p = DoctorProbe(sysctls=TUNED | (sysctls or {}), cpus=cpus, irqbalance=irqbalance,
                        nics=nics if nics is not None else {n: NicQueues(8, False, tuple(range(40, 48)),
                                                                          frozenset(range(8)))
                                                            for n in interfaces if n != "lo"},
                        rdma=tuple(rdma), rdma_present=bool(rdma), complete=True)
    return NodeFacts(name, interfaces, errors_per_s or {}, probe=p)


def problems(findings) -> list[tuple]:
    """The findings worse than ok: (node, check, subject, severity, fix)."""
    return [(f.node, f.check, f.subject, f.severity.label, f.fix) for f in findings if f.severity > Level.OK]


# a pair test's report with a topology: three leaves of four nodes, watched in an order that
# does not follow the leaves
FABRIC_TOPO = Topology([Switch("spine1"), *(Switch(f"leaf{i}", parent="spine1") for i in (1, 2, 3))],
                       [Attachment(f"n{i}", f"leaf{(i - 1) // 4 + 1}") for i in range(1, 13)])
FABRIC_WATCHED = ["n9", "n1", "n5", "n2", "n10", "n6", "n3", "n11", "n7", "n4", "n12", "n8"]


def fabric_report(topology=FABRIC_TOPO, bad_uplink="leaf1"):
    """A judged all-pairs iperf3 report of FABRIC_WATCHED: pairs crossing ``bad_uplink`` at 0.191 Gbit/s."""
    from netui.checks.pairs.runner import PairTestReport
    from netui.checks.pairs.tools import PairSettings
    from netui.checks.pairs.model import PairResult, all_pairs_rounds

    def gbps(a, b):
        la, lb = FABRIC_TOPO.leaf_of(a), FABRIC_TOPO.leaf_of(b)
        return 0.191 if la != lb and bad_uplink in (la, lb) else 9.4

    results = [PairResult(a, b, "iperf3", gbps(a, b), True) for r in all_pairs_rounds(FABRIC_WATCHED, directed=True)
               for a, b in r]
    rep = PairTestReport(PairSettings(duration_s=2), FABRIC_WATCHED, True, results=results, topology=topology,
                         topology_source="topology.conf", elapsed_s=44.0, rounds=22)
    rep.judge()
    return rep
