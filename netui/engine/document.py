"""The JSON document of ``netui snapshot --json`` (stable; documented in the README).

Counters are the raw kernel values of the last sample; rates are per second over the last
interval, ``null`` when unknown. Field names never change meaning; new fields may be added.
"""

from __future__ import annotations

from netui.model.fleet import Fleet
from netui.model.node import Node, data_plane, is_hidden
from netui.model.samples import INTERFACE_COUNTER_NAMES

SCHEMA_VERSION = 1

_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped")


def _num(v):
    return None if v is None else round(v, 3)


def _reasons(node: Node) -> list[str]:
    lead = [node.straggler.reason] if node.straggler is not None else []
    return lead + list(node.health.reasons)


def node_document(node: Node) -> dict:
    s, r = node.sample, node.rates
    doc: dict = {
        "name": node.name,
        "state": node.state.value,
        "error": node.error,
        "hostname": s.hostname if s else None,
        "boot_id": s.boot_id if s else None,
        "time": s.wall_s if s else None,
        "interval_s": _num(r.interval_s) if r else None,
        "interfaces": [],
        "tcp": None,
        "cpus": [],
        "softnet": [],
        "health": {"level": node.level.label, "reasons": _reasons(node)},
    }
    if s is None:
        return doc
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
            "rates": {
                "retrans_segs_per_s": _num(t.retrans_segs_per_s) if t else None,
                "out_segs_per_s": _num(t.out_segs_per_s) if t else None,
                "in_segs_per_s": _num(t.in_segs_per_s) if t else None,
                "retrans_ratio": None if t is None or t.retrans_ratio is None else float(f"{t.retrans_ratio:.6g}"),
                "ext_per_s": {k: _num(v) for k, v in sorted(t.ext_per_s.items())} if t else {},
            },
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


def fleet_document(fleet: Fleet) -> dict:
    rx, tx = fleet.totals()
    return {
        "version": SCHEMA_VERSION,
        "nodes": [node_document(n) for n in fleet],
        "stragglers": [
            {"node": s.node, "metric": s.metric, "value": _num(s.value), "median": _num(s.median), "reason": s.reason}
            for s in fleet.stragglers
        ],
        "totals": {
            "rx_bits_per_s": None if rx is None else round(rx * 8, 3),
            "tx_bits_per_s": None if tx is None else round(tx * 8, 3),
            "states": {state.value: count for state, count in fleet.count_by_state().items()},
        },
    }
