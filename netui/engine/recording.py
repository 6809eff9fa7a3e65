"""Samples to and from JSON lines: the format of recordings and replayed captures.

A recording stores raw samples (counters), never rates, so replay runs the same code as
live mode. One line per sample: ``{"node": NAME, "sample": {...}}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict

from netui.model.fabric import fabric_from_dict, fabric_to_dict
from netui.model.samples import (
    CpuTimes,
    InterfaceCounters,
    InterfaceSample,
    NodeSample,
    SoftirqCounts,
    SoftnetStat,
    TcpSample,
)


class RecordingError(ValueError):
    pass


def sample_to_dict(s: NodeSample) -> dict:
    d = asdict(s)  # NamedTuples (interfaces, counters) stay tuples here: name their fields
    d["interfaces"] = {
        name: i._asdict() | {"counters": i.counters._asdict()} for name, i in s.interfaces.items()
    }
    d["problems"] = list(s.problems)
    d["fabric"] = fabric_to_dict(s.fabric)
    return d


def _tuples(d: dict | None, cls):
    if d is None:
        return None
    return cls(**{k: None if v is None else tuple(v) for k, v in d.items()})


def sample_from_dict(d: dict) -> NodeSample:
    """Rebuild a NodeSample; raises RecordingError on a malformed record."""
    try:
        interfaces = {}
        for name, i in d["interfaces"].items():
            i = dict(i)
            i["counters"] = InterfaceCounters(**i["counters"])
            interfaces[name] = InterfaceSample(**i)
        tcp = TcpSample(**d["tcp"]) if d.get("tcp") else None
        return NodeSample(
            wall_s=float(d["wall_s"]),
            mono_s=float(d["mono_s"]),
            boot_id=d.get("boot_id"),
            interfaces=interfaces,
            tcp=tcp,
            cpu=_tuples(d.get("cpu"), CpuTimes),
            softirqs=_tuples(d.get("softirqs"), SoftirqCounts),
            softnet=_tuples(d.get("softnet"), SoftnetStat),
            hostname=d.get("hostname"),
            problems=tuple(d.get("problems", ())),
            fabric=fabric_from_dict(d.get("fabric")),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordingError(f"bad sample record: {exc!r}") from None


def dump_lines(records: Iterable[tuple[str, NodeSample]]) -> Iterator[str]:
    for node, sample in records:
        yield json.dumps({"node": node, "sample": sample_to_dict(sample)}, separators=(",", ":")) + "\n"


def load_recording(path: str) -> dict[str, list[NodeSample]]:
    """Samples per node, in file order. Raises RecordingError with the line number."""
    out: dict[str, list[NodeSample]] = {}
    with open(path, "rb") as f:  # bytes: a corrupt line must not fail outside the try
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                out.setdefault(str(rec["node"]), []).append(sample_from_dict(rec["sample"]))
            except (ValueError, KeyError, TypeError) as exc:  # incl. JSON, UTF-8, RecordingError
                raise RecordingError(f"{path}:{n}: {exc}") from None
    return out
