"""The JSON document of ``netui snapshot --json`` (stable; documented in docs/json.md).

Counters are the raw kernel values of the last sample; rates are per second over the last
interval, ``null`` when unknown. Field names never change meaning; new fields may be added.
"""

from __future__ import annotations

import heapq
import math

from netui.model.fabric import NO_PAUSE, FabricRates, FabricSample
from netui.model.fleet import Fleet
from netui.model.flows import PeerRates, pair_matrix
from netui.model.mesh import MIN_PROBES, Counts, PairMesh
from netui.model.node import Node, NodeState, data_plane, is_hidden, without_countdown
from netui.model.samples import INTERFACE_COUNTER_NAMES
from netui.model.straggler import METRIC_UNITS, THROUGHPUT
from netui.model.topology import Attachment
from netui.model.units import name_key

SCHEMA_VERSION = 2  # 2: a straggler's throughput value and median in bits/s, with its "unit"
MESH_WORST_PAIRS = 20  # the mesh's pairs in the document: the worst, at most this many

_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped")


def _num(v):
    """A rate for JSON: rounded, None when unknown (or, should one ever get here, not finite)."""
    return None if v is None or not -math.inf < v < math.inf else round(v, 3)


def _reasons(node: Node) -> list[str]:
    return list(node.reasons)


def placement_document(placement: Attachment | None) -> dict | None:
    """Where a node is cabled: its leaf switch and port, and the source of each."""
    if placement is None:
        return None
    return {"leaf": placement.switch, "port": placement.port, "leaf_source": placement.source or None,
            "port_source": placement.port_source}


def peers_document(node: Node, peers: dict[str, PeerRates], known) -> dict | None:
    """A node's TCP peers (model/flows.py): the reading and its top peers, busiest first,
    each by the watched node it is (``node``) or its address; null without a reading."""
    p = node.sample.peers if node.sample is not None else None
    if p is None:
        return None
    return {
        "available": p.available, "error": p.error, "capped": p.capped, "sockets": p.sockets,
        "peers_seen": p.peers_seen, "local_addresses": list(p.local_addresses),
        "peers": [{"peer": name, "node": name if known(name) else None,
                   "tx_bits_per_s": None if r.tx_bytes_per_s is None else _num(r.tx_bytes_per_s * 8),
                   "rx_bits_per_s": None if r.rx_bytes_per_s is None else _num(r.rx_bytes_per_s * 8),
                   "rtt_s": None if r.rtt_s is None else float(f"{r.rtt_s:.6g}"),
                   "retrans_per_s": _num(r.retrans_per_s), "sockets": r.sockets,
                   "delivery_bits_per_s": None if r.delivery_bytes_per_s is None else _num(r.delivery_bytes_per_s * 8)}
                  for name, r in peers.items()] if p.available else [],
    }


def peer_flows_document(fleet: Fleet) -> list[dict]:
    """The TCP flows between watched nodes, sender to receiver (model/flows.py pair_matrix)."""
    return [{"from": src, "to": dst, "bits_per_s": None if f.bytes_per_s is None else _num(f.bytes_per_s * 8),
             "rtt_s": None if f.rtt_s is None else float(f"{f.rtt_s:.6g}"), "retrans_per_s": _num(f.retrans_per_s),
             "sockets": f.sockets}
            for (src, dst), f in sorted(pair_matrix(fleet.peer_flows()).items())]


def node_document(node: Node, placement: Attachment | None = None, peers: dict | None = None,
                  known=None) -> dict:
    """``peers``: the node's peers by name or address (Fleet.node_peers), ``known`` whether a
    name is a watched node (AddressBook.knows), for its "peers" (null without a reading)."""
    s, r = node.sample, node.rates
    doc: dict = {
        "name": node.name,
        "state": node.state.value,
        "error": without_countdown(node.error) if node.error else node.error,
        "failed_at": node.failed_at_s if node.state is not NodeState.UP else None,
        "hostname": s.hostname if s else None,
        "boot_id": s.boot_id if s else None,
        "time": s.wall_s if s else None,
        "interval_s": _num(r.interval_s) if r else None,
        "interfaces": [],
        "tcp": None,
        "cpus": [],
        "softnet": [],
        "totals": None,
        "cpu_totals": None,
        "fabric": None,
        "peers": None,
        "health": {"level": node.level.label, "reasons": _reasons(node)},
        "switch": placement_document(placement),
        "lldp": {"state": node.lldp_state,
                 "neighbours": [{"interface": n.interface, "switch": n.switch, "port": n.port} for n in node.lldp]},
    }
    if s is None:
        return doc
    if s.peers is not None:
        doc["peers"] = peers_document(node, peers or {}, known or (lambda name: False))
    if s.fabric is not None:
        doc["fabric"] = fabric_document(s.fabric, node.fabric_rates)
        sm = node.summary
        doc["fabric"]["totals"] = {
            "rx_bits_per_s": None if sm.rdma_rx_bytes_per_s is None else _num(sm.rdma_rx_bytes_per_s * 8),
            "tx_bits_per_s": None if sm.rdma_tx_bytes_per_s is None else _num(sm.rdma_tx_bytes_per_s * 8),
            "errors_per_s": _num(sm.rdma_errors_per_s), "cnp_per_s": _num(sm.cnp_per_s),
            "pause_per_s": _num(sm.pause_per_s),
        }
    sm = node.summary  # the grid's network columns: the data-plane interfaces' sums
    if r is not None:
        doc["totals"] = {
            "rx_bits_per_s": None if sm.rx_bytes_per_s is None else _num(sm.rx_bytes_per_s * 8),
            "tx_bits_per_s": None if sm.tx_bytes_per_s is None else _num(sm.tx_bytes_per_s * 8),
            "drops_per_s": _num(sm.drops_per_s), "errors_per_s": _num(sm.errors_per_s),
            "max_link_percent": _num(sm.max_link_percent),
        }
    main = set(data_plane(s.interfaces))
    for name in sorted(s.interfaces):
        i = s.interfaces[name]
        ir = r.interfaces.get(name) if r else None
        c = i.counters
        doc["interfaces"].append({
            "name": name,
            "kind": i.kind,
            "hidden": is_hidden(i) and name not in main,
            "mtu": i.mtu,
            "speed_mbps": i.speed_mbps,
            "operstate": i.operstate,
            "carrier": i.carrier,
            "counters": {k: getattr(c, k) for k in _COUNTERS}
                        | {k: getattr(c, k) for k in INTERFACE_COUNTER_NAMES if k not in _COUNTERS},
            "rates": {
                "rx_bits_per_s": _num(ir.rx_bits_per_s) if ir else None,
                "tx_bits_per_s": _num(ir.tx_bits_per_s) if ir else None,
                "rx_packets_per_s": _num(ir.rx_packets_per_s) if ir else None,
                "tx_packets_per_s": _num(ir.tx_packets_per_s) if ir else None,
                "rx_dropped_per_s": _num(ir.rx_dropped_per_s) if ir else None,
                "tx_dropped_per_s": _num(ir.tx_dropped_per_s) if ir else None,
                "rx_errors_per_s": _num(ir.rx_errors_per_s) if ir else None,
                "tx_errors_per_s": _num(ir.tx_errors_per_s) if ir else None,
                "link_percent": _num(ir.link_percent) if ir else None,
            },
        })
    if s.tcp is not None:
        t = r.tcp if r else None
        doc["tcp"] = {
            "counters": dict(s.tcp.tcp) | dict(s.tcp.ext),
            # whether retrans_ratio counts for health: only over retrans_min_segments sent in
            # the interval (the [health] table); null when there is no ratio
            "retrans_judged": node.summary.retrans_judged,
            "retrans_min_segments": node.rules.retrans_min_segments,
            "rates": {
                "retrans_segs_per_s": _num(t.retrans_segs_per_s) if t else None,
                "out_segs_per_s": _num(t.out_segs_per_s) if t else None,
                "in_segs_per_s": _num(t.in_segs_per_s) if t else None,
                "retrans_ratio": None if t is None or t.retrans_ratio is None else float(f"{t.retrans_ratio:.6g}"),
                "ext_per_s": {k: _num(v) for k, v in sorted(t.ext_per_s.items())} if t else {},
            },
        }
    ncpus = len(s.cpu.cpus) if s.cpu is not None else s.cpu_sums.ncpus if s.cpu_sums is not None else None
    if ncpus is not None or s.softnet is not None or s.softirqs is not None or s.cpu_sums is not None:
        sm = node.summary  # the grid's figures: from the per-CPU tables, or the node's sums of them
        doc["cpu_totals"] = {
            "cpus": ncpus, "hottest_cpu": sm.hottest_cpu, "hottest_softirq_percent": _num(sm.hottest_softirq_percent),
            "net_rx_per_s": _num(sm.net_rx_per_s), "softnet_dropped_per_s": _num(sm.softnet_drops_per_s),
            "time_squeeze_per_s": _num(sm.time_squeeze_per_s),
        }
    cr = r.cpu if r else None
    if s.cpu is not None:
        rates_by_cpu = {}
        if cr is not None:
            rates_by_cpu = {cpu: (p, rx, tx) for cpu, p, rx, tx in zip(cr.cpus, cr.softirq_percent, cr.net_rx_per_s, cr.net_tx_per_s)}
        for cpu in s.cpu.cpus:
            p, rx, tx = rates_by_cpu.get(cpu, (None, None, None))
            doc["cpus"].append({"cpu": cpu, "softirq_percent": _num(p), "net_rx_per_s": _num(rx), "net_tx_per_s": _num(tx)})
    if s.softnet is not None:
        sr = r.softnet if r else None
        by_cpu = {}
        if sr is not None:
            by_cpu = {cpu: (d, q) for cpu, d, q in zip(sr.cpus, sr.dropped_per_s, sr.time_squeeze_per_s)}
        for cpu, p, d, q in zip(s.softnet.cpus, s.softnet.processed, s.softnet.dropped, s.softnet.time_squeeze):
            dr, qr = by_cpu.get(cpu, (None, None))
            doc["softnet"].append({"cpu": cpu, "processed": p, "dropped": d, "time_squeeze": q,
                                   "dropped_per_s": _num(dr), "time_squeeze_per_s": _num(qr)})
    return doc


def _rates(values: dict[str, float | None]) -> dict[str, float | None]:
    return {k: _num(v) for k, v in sorted(values.items())}


def _state(state) -> str | None:
    if state is None:
        return None
    return state.name if state.name else str(state.num)


def fabric_document(f: FabricSample, rates: FabricRates | None) -> dict:
    """The node's RDMA ports and PFC counters: raw counters as sysfs and ethtool print them
    (``port_*_data`` in 4-byte words), rates per second (bits/s for data)."""
    ports = []
    for key, p in f.ports.items():
        r = rates.ports.get(key) if rates else None
        ports.append({
            "hca": p.hca, "port": p.port, "state": _state(p.state), "phys_state": _state(p.phys_state),
            "active": p.active, "rate_gbps": p.rate_gbps, "link_layer": p.link_layer, "netdev": p.netdev,
            "counters": dict(p.counters), "hw_counters": dict(p.hw_counters),
            "rates": None if r is None else {
                "rx_bits_per_s": _num(r.rx_bits_per_s), "tx_bits_per_s": _num(r.tx_bits_per_s),
                "rx_packets_per_s": _num(r.rx_packets_per_s), "tx_packets_per_s": _num(r.tx_packets_per_s),
                "errors_per_s": _num(r.errors_per_s), "discards_per_s": _num(r.discards_per_s),
                "xmit_wait_per_s": _num(r.xmit_wait_per_s), "cnp_sent_per_s": _num(r.cnp_sent_per_s),
                "cnp_handled_per_s": _num(r.cnp_handled_per_s), "roce_loss_per_s": _num(r.roce_loss_per_s),
                "counters_per_s": _rates(r.counters_per_s), "hw_counters_per_s": _rates(r.hw_per_s),
                "unknown": dict(sorted(r.unknown.items())),
            },
        })
    pfc = []
    for netdev, c in f.pfc.items():
        pr = rates.pfc.get(netdev) if rates else None
        pfc.append({
            "netdev": netdev,
            "priorities": [{"priority": i, **p._asdict()} for i, p in enumerate(c.priorities) if p != NO_PAUSE],
            "global_pause": c.global_pause._asdict() if c.global_pause != NO_PAUSE else None,
            "counters": {k: getattr(c, k) for k in _PFC_FIELDS},
            "rates": None if pr is None else {
                "rx_pause_per_s": _num(pr.rx_pause_per_s), "tx_pause_per_s": _num(pr.tx_pause_per_s),
                "priorities": [{"priority": i, **{k: _num(v) for k, v in p._asdict().items()}}
                               for i, p in enumerate(pr.priorities) if c.priorities[i] != NO_PAUSE],
                **{f"{k}_per_s": _num(getattr(pr, f"{k}_per_s")) for k in _PFC_RATE_FIELDS},
            },
        })
    return {
        "ports": ports,
        "pfc": pfc,
        "ethtool_time_s": f.ethtool_mono_s,  # the node's monotonic clock at the ethtool reading
        "ethtool_per_s": {n: _rates(v) for n, v in rates.ethtool_per_s.items()} if rates else {},
        "problems": list(f.problems),
    }


_PFC_FIELDS = ("rx_pause_ctrl_phy", "tx_pause_ctrl_phy", "rx_discards_phy", "tx_discards_phy", "rx_out_of_buffer",
               "tx_pause_storm_warning_events", "tx_pause_storm_error_events")
_PFC_RATE_FIELDS = ("rx_pause_ctrl_phy", "tx_pause_ctrl_phy", "rx_discards_phy", "tx_discards_phy",
                    "rx_out_of_buffer")


def _straggler_figures(s) -> dict:
    """A straggler's value and median in the document's units: throughput in bits per second."""
    if s.metric in THROUGHPUT:
        return {"value": _num(s.value * 8), "median": _num(s.median * 8), "unit": "bits/s"}
    return {"value": _num(s.value), "median": _num(s.median), "unit": METRIC_UNITS.get(s.metric)}


def _rtt_s(us: float | None) -> float | None:
    return None if us is None else float(f"{us / 1e6:.6g}")


def mesh_loss(counts: Counts) -> float | None:
    """The share of probes lost (0 to 1), None under MIN_PROBES settled probes: too few to
    read a loss from (model/mesh.py)."""
    loss = counts.loss
    return None if loss is None or counts.probes < MIN_PROBES else float(f"{loss:.6g}")


def _worst_first(p: PairMesh) -> tuple:
    """Pairs with a loss figure first, the lossiest first, then the slowest (RTT p99)."""
    return (p.loss is None, -(p.loss or 0.0), -p.counts.lost, -(p.p99_us or 0.0), name_key(p.prober),
            name_key(p.target))


def mesh_document(fleet: Fleet) -> dict | None:
    """The probe mesh over its window (model/mesh.py): each node's pairs, the suspects as held,
    the worst pairs (at most MESH_WORST_PAIRS); None while no node reports a mesh (it is off)."""
    if fleet.mesh is None:
        return None
    verdict = fleet.mesh_verdict
    judged = verdict.nodes if verdict is not None else {}
    nodes = []
    for node in fleet:
        m = node.sample.mesh if node.sample is not None else None
        n = judged.get(node.name)
        if m is None and n is None:
            continue
        # its sampler's word (null: its last sample had no mesh), then its pairs over the window
        entry: dict = {"node": node.name, "available": None, "error": None, "address": None, "port": None,
                       "answered": None, "refused": None}
        if m is not None:
            entry |= {"available": m.available, "error": m.error, "address": m.address, "port": m.port or None,
                      "answered": m.answers, "refused": m.refused}
        counts = n.counts if n is not None else Counts()
        entry |= {"probes": counts.probes, "lost": counts.lost, "loss": mesh_loss(counts),
                  "peers": n.peers if n is not None else 0, "lossy_peers": n.lossy_peers if n is not None else 0,
                  "p99_rtt_s": _rtt_s(n.p99_us) if n is not None else None,
                  # its pairs never answered, not in the figures above (UDP blocked: no loss)
                  "unanswered_pairs": n.unanswered if n is not None else 0,
                  "answers_none": n.answers_none if n is not None else False,
                  "answered_none": n.answered_none if n is not None else False}
        nodes.append(entry)
    pairs = verdict.pairs.values() if verdict is not None else ()
    worst = heapq.nsmallest(MESH_WORST_PAIRS, pairs, key=_worst_first)  # (a fleet of 1,024 has a million pairs)
    return {
        "window_s": verdict.window_s if verdict is not None else fleet.mesh.window_s,
        "nodes": nodes,
        "suspects": [
            {"kind": s.kind, "name": s.name, "nodes": list(s.nodes), "probes": s.through.probes,
             "lost": s.through.lost, "loss": mesh_loss(s.through), "elsewhere_probes": s.elsewhere.probes,
             "elsewhere_loss": mesh_loss(s.elsewhere), "reason": s.text}
            for s in fleet.mesh_suspects
        ],
        "pairs": verdict.probed if verdict is not None else 0,
        "unanswered_pairs": verdict.unanswered if verdict is not None else 0,
        "none_answered": verdict.none_answered if verdict is not None else False,
        "worst_pairs": [
            {"from": p.prober, "to": p.target, "probes": p.counts.probes, "lost": p.counts.lost,
             "loss": mesh_loss(p.counts), "p50_rtt_s": _rtt_s(p.p50_us), "p99_rtt_s": _rtt_s(p.p99_us)}
            for p in worst
        ],
    }


def fleet_document(fleet: Fleet) -> dict:
    rx, tx = fleet.totals()
    book = fleet.address_book()
    return {
        "version": SCHEMA_VERSION,
        "nodes": [node_document(n, fleet.placement(n.name), fleet.node_peers(n.name), book.knows) for n in fleet],
        "peer_flows": peer_flows_document(fleet),
        # the stragglers, then their victims (a ``cause``: "slowed by node3"), never first
        "stragglers": [
            {"node": s.node, "metric": s.metric, **_straggler_figures(s), "reason": s.reason,
             "cause": s.cause, "slowed_by": list(s.slowed_by)}
            for s in fleet.stragglers + fleet.victims
        ],
        # the fabric's suspects (model/fabric_suspects.py): a leaf's uplink named, its nodes
        # the victims above ("slowed_by": ["leaf2's uplink"])
        "fabric_suspects": [
            {"name": s.name, "switch": s.switch, "kind": s.kind, "rule": s.rule, "ways": list(s.ways),
             "share": _num(s.share), "flows": [list(f) for f in s.flows], "nodes": list(s.nodes),
             "reason": s.reason}
            for s in fleet.fabric_suspects
        ],
        # the probe mesh (docs/mesh.md): null while it is off
        "mesh": mesh_document(fleet),
        "totals": {
            "rx_bits_per_s": None if rx is None else round(rx * 8, 3),
            "tx_bits_per_s": None if tx is None else round(tx * 8, 3),
            "states": {state.value: count for state, count in fleet.count_by_state().items()},
        },
        "topology_source": fleet.topology_source or None,
        "topology_notes": list(fleet.topology.notes) if fleet.topology is not None else [],
    }
