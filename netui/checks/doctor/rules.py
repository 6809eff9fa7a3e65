"""The doctor's rules: a cluster's configuration checked node by node and across nodes.

Pure: per-node facts in (the monitor's latest sample for the interfaces, the doctor's probe
for sysctls, RDMA ports, queues and IRQs — parsed by ``checks/doctor/probe.py``),
findings out. Each finding has a severity (ok / careful / warning / critical, the levels
of ``model.health``), evidence in words, and where a command can fix it, that command
(``fix``); where only hands can (a cable, an optic, a switch port), the command that shows
more (``look``). A run *fails* when any finding is a warning or worse.

Across nodes, a value is compared with the majority of the nodes that have it (MTU and
link speed per interface name; sysctls); on a tie the larger value is taken as the
intended one (jumbo frames and full link speed are configured on purpose, their loss is
the usual accident). The sysctl rules and the recommended values are data
(``checks.doctor.rules_sysctl``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from netui.checks.doctor import rules_nic
from netui.checks.doctor.rules_nic import NicSettings
from netui.checks.doctor.rules_sysctl import SYSCTL_RULES, BufferPath, Recommendations, sysctl_command
from netui.checks.doctor.model import Finding
from netui.model import units
from netui.model.health import Level
from netui.checks.latency.model import LatencyResult
from netui.model.node import data_plane
from netui.model.samples import SOFTWARE_KINDS, InterfaceSample
from netui.model.units import fold

# --- what the probe saw on a node (parsed by checks/doctor/probe.py) -------------------


@dataclass(frozen=True, slots=True)
class RdmaPortState:
    device: str
    port: int
    state: str  # "ACTIVE", "DOWN", "INIT", … (the name after "4: "), "" when unreadable
    phys_state: str  # "LinkUp", "Polling", "Disabled", …
    rate: str  # "100 Gb/sec (4X EDR)"
    link_layer: str  # "InfiniBand", "Ethernet"
    netdevs: tuple[str, ...] = ()  # the netdevs of the same HCA (RoCE: the port's netdev)

    @property
    def name(self) -> str:
        return f"{self.device} port {self.port}"

    @property
    def rate_gbps(self) -> float | None:
        try:
            return float(self.rate.split()[0])
        except (IndexError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class NicQueues:
    """One netdev's receive queues and interrupts."""

    rx_queues: int = 0
    rps_on: bool = False  # any RX queue has a non-zero rps_cpus mask
    irqs: tuple[int, ...] = ()  # its device's MSI/MSI-X interrupts
    irq_cpus: frozenset[int] = frozenset()  # the CPUs those interrupts are delivered to


@dataclass(frozen=True)
class DoctorProbe:
    """One node's answer to the doctor's probe. Unknown is absent (or None), never 0."""

    sysctls: dict[str, str] = field(default_factory=dict)  # "net.ipv4.tcp_rmem" → "4096 131072 6291456"
    cpus: int | None = None
    irqbalance: bool | None = None  # an irqbalance process runs
    nics: dict[str, NicQueues] = field(default_factory=dict)
    rdma: tuple[RdmaPortState, ...] = ()
    rdma_present: bool = False  # /sys/class/infiniband exists
    complete: bool = False  # the probe ran to its end
    problems: tuple[str, ...] = ()
    # tc and ethtool on the data-plane interfaces (interface → what they said)
    nic_settings: dict[str, NicSettings] = field(default_factory=dict)
    tc: bool | None = None  # the node has tc; None: not asked (a copied tree)
    ethtool: bool | None = None  # the node has ethtool; None: not asked


@dataclass(frozen=True)
class NodeFacts:
    """Everything the doctor knows about one node.

    ``interfaces``: the monitor's latest sample (None: no sample); ``errors_per_s``: each
    interface's RX+TX errors per second over the last interval (None: unknown);
    ``probe``: the probe's answer (None: it could not run — ``unreachable`` or
    ``no_commands`` says why); ``rtt_ms``: the RTT the last latency test measured
    (``rtt_by_node``), for the buffer advice.
    """

    name: str
    interfaces: Mapping[str, InterfaceSample] | None = None
    errors_per_s: Mapping[str, float | None] = field(default_factory=dict)
    probe: DoctorProbe | None = None
    unreachable: str | None = None  # the node is down, or the probe failed: why
    no_commands: str | None = None  # the node cannot run commands (a replay): why
    rtt_ms: float | None = None  # the RTT the last latency test measured (rtt_by_node); None: none yet


# the checks in the order a report lists them, with what "ok" means in words
CHECKS: dict[str, str] = {
    "examined": "every node examined",
    "mtu": "data-plane MTU equal on all nodes",
    "link_speed": "link speeds equal",
    "link_state": "data-plane interfaces up where their peers' are",
    "rdma_port": "RDMA ports ACTIVE and LinkUp",
    "rdma_rate": "RDMA port rates equal",
    "sysctl": "sysctls as recommended",
    "interface_errors": "no interface errors since boot",
    "irq_spread": "NIC interrupts spread over CPUs",
    "rps": "receive packet steering where a NIC has one queue",
    "traffic_shaping": "no traffic shaping (tbf, netem, htb) on data-plane interfaces",
    "offloads": "GRO and TSO on",
    "rings": "NIC rings not far below their maximum",
}


def failed(findings: Iterable[Finding]) -> bool:
    """Whether any finding is a warning or worse (``netui doctor`` exits 1)."""
    return any(f.failed for f in findings)


# --- words ---------------------------------------------------------------------------------


def nodes_text(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def _gbps(mbps: int) -> str:
    return units.mbps(mbps)


def cpu_mask(cpus: int) -> str:
    """The hex mask of CPUs 0…cpus-1 as sysfs writes it: 32-bit words joined by commas
    (``cpu_mask(2) == "3"``, ``cpu_mask(40) == "ff,ffffffff"``)."""
    digits = f"{(1 << max(cpus, 1)) - 1:x}"
    words = []
    while digits:
        words.insert(0, digits[-8:])
        digits = digits[:-8]
    return ",".join(words)


# --- the checks ----------------------------------------------------------------------------


def _majority(values: Mapping[str, object]) -> tuple[object, int]:
    """The most common value and how many have it; on a tie the largest."""
    counts = Counter(values.values())
    top = max(counts.values())
    return max(v for v, c in counts.items() if c == top), top


def _up(iface: InterfaceSample) -> bool:
    return iface.operstate in (None, "up", "unknown") and iface.carrier is not False


def _dataplane(facts: NodeFacts) -> dict[str, InterfaceSample]:
    if not facts.interfaces:
        return {}
    return {n: facts.interfaces[n] for n in data_plane(dict(facts.interfaces))}


def _groups(per_node: Mapping[str, Mapping[str, object]]) -> dict[str, dict[str, dict[str, object]]]:
    """Values per interface name across nodes: {group: {node: {iface: value}}}. A name only
    one node has is compared with all such names of the other nodes (group "*")."""
    holders = Counter(name for values in per_node.values() for name in values)
    groups: dict[str, dict[str, dict[str, object]]] = {}
    for node, values in per_node.items():
        for name, value in values.items():
            key = name if holders[name] > 1 else "*"
            groups.setdefault(key, {}).setdefault(node, {})[name] = value
    return groups


def _compare(per_node: Mapping[str, Mapping[str, object]]):
    """(node, iface, value, majority value, how many have it) for every value unlike the
    majority of its group; per group, the majority counts one value per node."""
    for key, nodes in _groups(per_node).items():
        if len(nodes) < 2:
            continue
        firsts = {node: next(iter(values.values())) for node, values in nodes.items()}
        if key == "*":  # unmatched names: each node's values against everyone's
            firsts = {f"{node}/{name}": v for node, values in nodes.items() for name, v in values.items()}
        target, count = _majority(firsts)
        for node, values in nodes.items():
            for name, value in values.items():
                if value != target:
                    yield node, name, value, target, count, len(firsts) if key == "*" else len(nodes)


def _mtu(facts: Sequence[NodeFacts]) -> list[Finding]:
    per_node = {f.name: {n: i.mtu for n, i in _dataplane(f).items() if _up(i) and i.mtu} for f in facts}
    out = []
    for node, name, mtu, target, count, of in _compare(per_node):
        harm = "larger frames from them are dropped here" if mtu < target else "its large frames are dropped by them"
        out.append(Finding("mtu", Level.CRITICAL, node, name, f"{name} MTU {mtu}; {count} of {of} nodes have MTU "
                                                              f"{target} — {harm}",
                           fix=f"ip link set dev {name} mtu {target}"))
    return out


def _speed(facts: Sequence[NodeFacts]) -> list[Finding]:
    per_node = {f.name: {n: i.speed_mbps for n, i in _dataplane(f).items()
                         if _up(i) and i.speed_mbps and i.kind not in SOFTWARE_KINDS} for f in facts}
    out = []
    for node, name, mbps, target, count, of in _compare(per_node):
        peers = f"{count} of {of} nodes at {_gbps(target)}"
        if mbps < target:
            out.append(Finding("link_speed", Level.WARNING, node, name,
                               f"{name} at {_gbps(mbps)}; {peers}: it trained down (cable, optic or switch "
                               f"port), or was set so", fix=f"ethtool -r {name}", look=f"ethtool {name}"))
        else:
            out.append(Finding("link_speed", Level.CAREFUL, node, name,
                               f"{name} at {_gbps(mbps)}, faster than the others ({peers}): they may be the "
                               f"ones that trained down", look=f"ethtool {name}"))
    return out


def _link_state(facts: Sequence[NodeFacts]) -> list[Finding]:
    planes = {f.name: _dataplane(f) for f in facts}
    per_node = {node: {n: _up(i) for n, i in plane.items()} for node, plane in planes.items()}
    out = []
    for node, name, up, target, count, of in _compare(per_node):
        if up or target is not True:
            continue
        iface = planes[node][name]
        if iface.carrier is False:
            out.append(Finding("link_state", Level.WARNING, node, name,
                               f"{name} has no carrier; it is up on {count} of {of} nodes — the cable, the optic "
                               f"or the switch port", look=f"ethtool {name}"))
        else:
            out.append(Finding("link_state", Level.WARNING, node, name,
                               f"{name} is {iface.operstate or 'down'}; it is up on {count} of {of} nodes",
                               fix=f"ip link set dev {name} up"))
    return out


def _rdma(facts: NodeFacts) -> list[Finding]:
    out = []
    for p in facts.probe.rdma if facts.probe else ():
        state_ok = p.state == "ACTIVE"
        phys_ok = p.phys_state == "LinkUp"
        if state_ok and phys_ok:
            continue
        words = f"{p.name}: state {p.state or 'unreadable'}, physical state {p.phys_state or 'unreadable'}"
        words += f" ({p.link_layer})" if p.link_layer else ""
        fix = look = None
        netdev = (facts.interfaces or {}).get(p.netdevs[0]) if p.netdevs else None
        roce_down = p.link_layer == "Ethernet" and bool(p.netdevs) and not phys_ok
        if roce_down and (netdev is None or netdev.carrier is not False):
            words += f" — RoCE follows its netdev {p.netdevs[0]}"
            fix = f"ip link set dev {p.netdevs[0]} up"
        elif roce_down:
            words += f" — its netdev {p.netdevs[0]} has no carrier: the cable, the optic or the switch port"
            look = f"ethtool {p.netdevs[0]}"
        elif p.state == "INIT" and phys_ok:
            words += " — the link is up but no subnet manager has configured the port"
            look = f"sminfo -C {p.device} -P {p.port}"
        else:
            words += " — the cable, the optic, the switch port or the HCA"
            look = f"ibstat {p.device} {p.port}"
        out.append(Finding("rdma_port", Level.CRITICAL, facts.name, p.name, words, fix=fix, look=look))
    return out


def _rdma_rates(facts: Sequence[NodeFacts]) -> list[Finding]:
    per_node = {f.name: {p.name: p.rate_gbps for p in f.probe.rdma if p.state == "ACTIVE" and p.rate_gbps}
                for f in facts if f.probe}
    out = []
    for node, name, gbps, target, count, of in _compare(per_node):
        slower = gbps < target
        out.append(Finding("rdma_rate", Level.WARNING if slower else Level.CAREFUL, node, name,
                           f"{name} at {gbps:g} Gb/s; {count} of {of} nodes at {target:g} Gb/s"
                           + (" — fewer lanes or a lower rate trained (cable, optic, switch port)" if slower
                              else ": the others may be the ones that trained down"),
                           look=f"ibstat {name.replace(' port ', ' ')}"))
    return out


def buffer_path(facts: NodeFacts) -> BufferPath:
    """What one flow of the node must fill: its fastest data-plane link that is up and has a
    real speed (not a software device's nominal one), and the RTT the last latency test measured."""
    links = [(i.speed_mbps, n) for n, i in _dataplane(facts).items()
             if _up(i) and i.speed_mbps and i.speed_mbps > 0 and i.kind not in SOFTWARE_KINDS]
    mbps, name = max(links, default=(None, None))
    return BufferPath(mbps / 1000 if mbps else None, name, facts.rtt_ms)


def _probed(facts: Iterable[NodeFacts]) -> list[tuple[NodeFacts, DoctorProbe]]:
    """The nodes the probe answered, each with its answer."""
    return [(f, f.probe) for f in facts if f.probe is not None]


def _sysctls(facts: Sequence[NodeFacts], rec: Recommendations) -> list[Finding]:
    out = []
    probed = _probed(facts)
    for rule in SYSCTL_RULES:
        values = {f.name: " ".join(probe.sysctls[rule.key].split())
                  for f, probe in probed if rule.key in probe.sysctls}
        if not values:
            continue
        target, count = _majority(values)
        for f, _ in probed:
            value = values.get(f.name)
            if value is None:
                continue
            path = buffer_path(f)
            target_ok = rule.judge(str(target), rec, path) is None
            verdict = rule.judge(value, rec, path)
            peers = f"; {count} of {len(values)} nodes have {target}" if value != target and len(values) > 1 else ""
            if verdict is not None:
                level, words, to = verdict
                if target_ok and value != target:
                    to = str(target)  # match the peers, who are fine
                if rule.key == "net.ipv4.tcp_congestion_control":
                    to = _available_cc(f, to, rec)
                fix = None if to is None else sysctl_command(rule.key, to)
                if fix and rule.key == "net.ipv4.tcp_congestion_control" and to not in _available(f):
                    fix = f"modprobe tcp_{to} && {fix}"
                out.append(Finding("sysctl", level, f.name, rule.key, words + peers, fix=fix))
            elif value != target and target_ok:
                out.append(Finding("sysctl", Level.CAREFUL, f.name, rule.key,
                                   f"{value}, unlike the others{peers}", fix=sysctl_command(rule.key, str(target))))
    return out


def _available(f: NodeFacts) -> list[str]:
    return (f.probe.sysctls.get("net.ipv4.tcp_available_congestion_control", "") if f.probe else "").split()


def _available_cc(f: NodeFacts, wanted: str | None, rec: Recommendations) -> str | None:
    """The congestion control to set: ``wanted``, or a good one the node already has."""
    available = _available(f)
    if wanted in available or not available:
        return wanted
    for cc in rec.good_congestion:
        if cc in available:
            return cc
    return wanted


def _errors(facts: NodeFacts) -> list[Finding]:
    out = []
    for name, iface in _dataplane(facts).items():
        c = iface.counters
        errors = c.rx_errors + c.tx_errors
        if errors <= 0:
            continue
        parts = [f"{c.rx_errors:,} RX errors" + (f" (frame {c.rx_frame:,}, fifo {c.rx_fifo:,})"
                                                  if c.rx_frame or c.rx_fifo else ""),
                 f"{c.tx_errors:,} TX errors" + (f" (carrier {c.tx_carrier:,})" if c.tx_carrier else "")]
        packets = c.rx_packets + c.tx_packets
        rate = facts.errors_per_s.get(name)
        rising = rate is not None and rate > 0
        words = f"{name}: {' and '.join(parts)} since boot, of {packets:,} packets"
        words += f"; rising now, {rate:.3g}/s" if rising else "; none in the last interval" if rate == 0 else ""
        out.append(Finding("interface_errors", Level.WARNING if rising else Level.CAREFUL, facts.name, name,
                           words + " — a cable, an optic or a switch port",
                           look=f"ethtool -S {name} | grep -iE 'err|crc|fcs|symbol'"))
    return out


def _queues(facts: NodeFacts) -> list[Finding]:
    probe = facts.probe
    if probe is None or not probe.cpus or probe.cpus < 2:
        return []
    out = []
    for name, iface in _dataplane(facts).items():
        nic = probe.nics.get(name)
        if nic is None or iface.kind is None or iface.kind in SOFTWARE_KINDS:
            continue
        if len(nic.irqs) >= 2 and len(nic.irq_cpus) == 1:
            cpu = next(iter(nic.irq_cpus))
            running = probe.irqbalance
            words = f"all {len(nic.irqs)} interrupts of {name} go to CPU {cpu}"
            if running is False:
                words += "; irqbalance is not running"
            out.append(Finding("irq_spread", Level.CAREFUL, facts.name, name,
                               words + f" — one CPU does the receive work of {nic.rx_queues or 'every'} queue(s)",
                               fix="systemctl start irqbalance" if running is False else "irqbalance --oneshot",
                               look=f"grep -E '{name}|mlx|CPU' /proc/interrupts"))
        if nic.rx_queues == 1 and not nic.rps_on:
            out.append(Finding("rps", Level.CAREFUL, facts.name, name,
                               f"{name} has one receive queue and packet steering (RPS) is off: one CPU "
                               f"handles every packet it receives, of {probe.cpus}",
                               fix=f"echo {cpu_mask(probe.cpus)} > /sys/class/net/{name}/queues/rx-0/rps_cpus"))
    return out


def _examined(facts: NodeFacts) -> list[Finding]:
    """How far a node was examined, as a finding: interfaces only, a probe cut short. A node
    not examined at all (``unreachable``) is no finding, at no level: ``not_examined``."""
    if facts.no_commands:
        return [Finding("examined", Level.CAREFUL, facts.name, "",
                        f"interfaces only ({facts.no_commands}): sysctls, RDMA ports, queues, qdiscs, offloads "
                        f"and rings not checked")]
    if facts.probe is not None and not facts.probe.complete:
        why = "; ".join(facts.probe.problems) or "its output ended early"
        return [Finding("examined", Level.WARNING, facts.name, "", f"the probe did not finish: {why}")]
    return []


def _ok(check: str, findings: list[Finding], facts: Sequence[NodeFacts]) -> list[Finding]:
    """One ok finding per check that found nothing, saying what it looked at; none for a
    check that had nothing to look at (no RDMA ports, no known link speeds)."""
    probed = _probed(facts)
    if check == "sysctl":
        out = []
        bad = {f.subject for f in findings}
        for rule in SYSCTL_RULES:
            have = [probe.sysctls[rule.key] for _, probe in probed if rule.key in probe.sysctls]
            if have and rule.key not in bad:
                words = f"{' '.join(have[0].split())} on {nodes_text(len(have))} ({rule.ok_words})"
                out.append(Finding(check, Level.OK, None, rule.key, words))
        return out
    if findings:
        return []
    planes = [_dataplane(f) for f in facts]
    if check == "mtu":
        mtus = sorted({i.mtu for p in planes for i in p.values() if _up(i) and i.mtu})
        seen = sum(any(_up(i) and i.mtu for i in p.values()) for p in planes)
        words = f"MTU {', '.join(map(str, mtus))} alike on {nodes_text(seen)}"
    elif check == "link_speed":
        seen = sum(any(_up(i) and i.speed_mbps and i.kind not in SOFTWARE_KINDS for i in p.values()) for p in planes)
        words = f"alike on {nodes_text(seen)}"
    elif check in ("link_state", "interface_errors"):
        seen = sum(bool(p) for p in planes)
        words = f"on {nodes_text(seen)}"
    elif check in ("rdma_port", "rdma_rate"):
        ports = sum(len(probe.rdma) for _, probe in probed)
        seen = sum(bool(probe.rdma) for _, probe in probed)
        words = f"{ports} ports on {nodes_text(seen)}"
    elif check in ("traffic_shaping", "offloads", "rings"):
        tool = "tc" if check == "traffic_shaping" else "ethtool"
        seen, skipped = rules_nic.coverage(check, [(getattr(probe, tool), _dataplane(f),
                                                     probe.nic_settings) for f, probe in probed])
        words = f"on {nodes_text(seen)}" if seen else "not checked"
        words += "".join(f"; not checked on {nodes_text(n)} ({why})" if seen else f" on {nodes_text(n)} ({why})"
                         for why, n in skipped.items())
        seen = seen or sum(skipped.values())
    elif check in ("irq_spread", "rps"):
        seen = sum(any(n in probe.nics and i.kind is not None
                       and i.kind not in SOFTWARE_KINDS for n, i in _dataplane(f).items()) for f, probe in probed)
        words = f"on {nodes_text(seen)} with NICs"
    else:  # examined: every node, or it is not said (the nodes not examined are their own line)
        seen = 0 if any(f.unreachable for f in facts) else len(facts)
        words = nodes_text(seen)
    return [Finding(check, Level.OK, None, "", words)] if seen else []


def diagnose(facts: Sequence[NodeFacts], rec: Recommendations | None = None) -> list[Finding]:
    """Every finding about ``facts``: worst first, then in the order of the nodes and of
    ``CHECKS``; each check that found nothing gives one ok finding for the fleet."""
    rec = rec or Recommendations()
    facts = list(facts)
    by_check: dict[str, list[Finding]] = {c: [] for c in CHECKS}
    for f in facts:
        by_check["examined"] += _examined(f)
        by_check["rdma_port"] += _rdma(f)
        by_check["interface_errors"] += _errors(f)
        for q in _queues(f):
            by_check[q.check].append(q)
        if f.probe is not None:
            plane, settings = _dataplane(f), f.probe.nic_settings
            by_check["traffic_shaping"] += rules_nic.shaping(f.name, plane, settings)
            by_check["offloads"] += rules_nic.offloads(f.name, plane, settings)
            by_check["rings"] += rules_nic.rings(f.name, plane, settings)
    by_check["traffic_shaping"] = rules_nic.shared_caps(
        by_check["traffic_shaping"], {f.name: rules_nic.root_caps(_dataplane(f), f.probe.nic_settings)
                                      for f in facts if f.probe is not None})
    by_check["mtu"] += _mtu(facts)
    by_check["link_speed"] += _speed(facts)
    by_check["link_state"] += _link_state(facts)
    by_check["rdma_rate"] += _rdma_rates(facts)
    by_check["sysctl"] += _sysctls(facts, rec)
    order = {f.name: k for k, f in enumerate(facts)}
    checks = list(CHECKS)
    out: list[Finding] = []
    for check, found in by_check.items():
        out += found + _ok(check, found, facts)
    out.sort(key=lambda f: (-f.severity, order.get(f.node, -1) if f.node else -1, checks.index(f.check)))
    return out


def rtt_by_node(results: Iterable[LatencyResult]) -> dict[str, float]:
    """The RTT (ms) the buffer advice takes for each node of a latency test: the typical RTT
    of the test's slowest pair, the same for every node that took part — a collective moves
    at the pace of its slowest hop, and one mistuned default stays one line for the fleet."""
    timed = [(ms, r) for r in results if (ms := r.typical_ms) is not None]
    if not timed:
        return {}
    slowest = max(ms for ms, _ in timed)
    return {node: slowest for _, r in timed for node in r.pair}


def not_examined(facts: Iterable[NodeFacts]) -> list[tuple[list[str], str]]:
    """The nodes the doctor could not examine (down, the probe failed), grouped by reason:
    (the nodes, the reason with their names folded: "acc[4-5] is down (connection refused)").
    Never a finding or a level: what is known about a node that was not looked at is nothing."""
    groups: dict[str, list[str]] = {}
    for f in facts:
        if f.unreachable:
            template = re.sub(rf"(?<![\w.-]){re.escape(f.name)}(?![\w.-])", "\0", f.unreachable)
            groups.setdefault(template, []).append(f.name)
    out = []
    for template, nodes in groups.items():
        names = fold(nodes)
        out.append((nodes, template.replace("\0", names) if "\0" in template else f"{names}: {template}"))
    return out


def failing_nodes(findings: Iterable[Finding], order: Sequence[str] | None = None) -> list[str]:
    """The nodes with a warning or worse, each once: in ``order`` (the fleet's), else in
    the order of the findings."""
    bad = dict.fromkeys(f.node for f in findings if f.failed and f.node)
    return [n for n in order if n in bad] if order is not None else list(bad)


def grouped(findings: Iterable[Finding]) -> list[tuple[Finding, list[str]]]:
    """Findings alike but for their node, once each with the nodes they are about (a
    mistuned default is one line for the fleet, not one per node), in the order of their
    first member. Fleet-wide findings (node None) have no nodes."""
    groups: dict[tuple, tuple[Finding, list[str]]] = {}
    for f in findings:
        key = (f.check, f.severity, f.subject, f.evidence, f.fix, f.look, f.node is None)
        first, nodes = groups.setdefault(key, (f, []))
        if f.node:
            nodes.append(f.node)
    return list(groups.values())
