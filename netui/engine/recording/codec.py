"""A recording's records as JSON and back: the one place a sample becomes JSON
(``sample_to_dict``) and is read back (``sample_from_dict``), the records netui writes
(``header_record``, ``sample_record``, ``encode``), what a reader takes of a line
(``decode_line``: UTF-8, finite numbers, integers within 64 bits, nested at most
``MAX_DEPTH`` deep) and of a record (``check_record``). The file format is described in
netui/engine/recording/__init__.py and docs/json.md.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import math
import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import fields

from netui import __version__
from netui.collectors.protocol import MESH_MAX_PEERS, MESH_MAX_RTTS
from netui.model.fabric import fabric_from_dict, fabric_to_dict
from netui.model.flows import peers_from_dict, peers_to_dict
from netui.model.mesh import MeshPeerReading, MeshSample
from netui.model.samples import (
    CpuSums,
    CpuTimes,
    InterfaceCounters,
    InterfaceSample,
    NodeSample,
    SoftirqCounts,
    SoftnetStat,
    TcpSample,
)
from netui.model.text import safe_text

FORMAT_VERSION = 2
RECORD_TYPES = frozenset({"header", "sample", "state", "health", "straggler", "test", "tick"})
READ_FORMATS = (1, 2)  # version 1: plain JSON lines of {"node", "sample"}, no header
MAX_DEPTH = 64  # JSON nesting; a recorded sample nests 6 deep
MAX_INT = 1 << 64  # the kernel's counters are unsigned 64-bit: below this
MIN_INT = -(1 << 63)  # and signed ones (the Tcp pair's MaxConn is -1) at least this
MAX_TIME_S = 1e11  # seconds since 1970: year 5138
MAX_NODES = 100_000  # in one recording: more than netui watches
MAX_NAME_CHARS = 512  # a node's name: [user@]host[:port]
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.01, 86400.0  # an interval outside these is not believed


class RecordingError(ValueError):
    """A file that is not a recording netui reads, or a record that is not what netui writes."""


# --- samples ------------------------------------------------------------------------------------


def _json_default(o):
    """Per-CPU columns decoded from a remote sampler are arrays: JSON lists."""
    if isinstance(o, array):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def _columns_to_dict(obj) -> dict | None:
    """Per-CPU columns (tuples or arrays) as JSON lists."""
    if obj is None:
        return None
    return {f.name: None if (v := getattr(obj, f.name)) is None else list(v) for f in fields(obj)}


def sample_to_dict(s: NodeSample) -> dict:
    return {
        "wall_s": s.wall_s,
        "mono_s": s.mono_s,
        "boot_id": s.boot_id,
        "interfaces": {name: i._asdict() | {"counters": i.counters._asdict()} for name, i in s.interfaces.items()},
        "tcp": None if s.tcp is None else {"tcp": dict(s.tcp.tcp), "ext": dict(s.tcp.ext)},
        "cpu": _columns_to_dict(s.cpu),
        "softirqs": _columns_to_dict(s.softirqs),
        "softnet": _columns_to_dict(s.softnet),
        "hostname": s.hostname,
        "problems": list(s.problems),
        "fabric": fabric_to_dict(s.fabric),
        "cpu_sums": None if s.cpu_sums is None else s.cpu_sums._asdict(),
        **({} if s.peers is None else {"peers": peers_to_dict(s.peers)}),
        **({} if s.mesh is None else {"mesh": mesh_to_dict(s.mesh)}),
    }


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
        mono = float(d["mono_s"])
        return NodeSample(
            wall_s=float(d["wall_s"]),
            mono_s=mono,
            boot_id=d.get("boot_id"),
            interfaces=interfaces,
            tcp=tcp,
            cpu=_tuples(d.get("cpu"), CpuTimes),
            softirqs=_tuples(d.get("softirqs"), SoftirqCounts),
            softnet=_tuples(d.get("softnet"), SoftnetStat),
            hostname=d.get("hostname"),
            problems=tuple(d.get("problems", ())),
            fabric=fabric_from_dict(d.get("fabric")),
            cpu_sums=CpuSums(**d["cpu_sums"]) if d.get("cpu_sums") else None,
            peers=peers_from_dict(d.get("peers")),
            mesh=_recorded_mesh(d.get("mesh"), mono),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordingError(f"bad sample record: {exc!r}") from None


# --- the probe mesh -----------------------------------------------------------------------------
# A sample's mesh is kept under a key of its own ("mesh", absent when the mesh was off), which
# a netui that predates it ignores: the format stays 2. Rows are lists, as the peers' are:
# [address, port, answered, lost, [RTTs in µs]].

MESH_MAX_ERROR_CHARS = 200  # why a node's mesh was unavailable: an errno's words
_U16, _U32 = 1 << 16, 1 << 32  # the wire's fields (docs/protocol.md#mesh): what a recording may hold


def mesh_to_dict(m: MeshSample) -> dict:
    return {"mono_s": m.mono_s, "available": m.available, "error": m.error, "port": m.port, "peers": m.peers,
            "answers": m.answers, "refused": m.refused, "address": m.address,
            "readings": [[r.address, r.port, r.answered, r.lost, list(r.rtts_us)] for r in m.readings]}


def _count(value: object, below: int, what: str) -> int:
    if type(value) is not int or not 0 <= value < below:
        raise ValueError(f"mesh: {what} {str(value)[:40]} is not a count the sampler sends")
    return value


def _address(value: object) -> str:
    if not isinstance(value, str) or len(value) > 64:
        raise ValueError(f"mesh: address {str(value)[:40]!r} is not an IP address")
    return str(ipaddress.ip_address(value))  # ValueError for anything else


def mesh_from_dict(d: object) -> MeshSample:
    """``mesh_to_dict`` back, checked as the frame decoder checks the sampler's field
    (collectors/mesh.py): at most MESH_MAX_PEERS rows, at most MESH_MAX_RTTS RTTs a row and no
    more than its answers, counts within the wire's fields, IP addresses, a finite time.
    ValueError (or TypeError) otherwise."""
    if not isinstance(d, dict):
        raise TypeError("mesh is not an object")
    mono = d["mono_s"]
    if type(mono) not in (int, float) or not -MAX_TIME_S <= mono <= MAX_TIME_S:
        raise ValueError(f"mesh: time {str(mono)[:40]} is not a clock's")
    available, error, address = d.get("available", True), d.get("error"), d.get("address")
    if not isinstance(available, bool) or not (error is None or isinstance(error, str)):
        raise TypeError("mesh: available is true or false, error a text or null")
    rows = d.get("readings", [])
    if not isinstance(rows, list) or len(rows) > MESH_MAX_PEERS:
        raise ValueError(f"mesh: readings are a list of at most {MESH_MAX_PEERS} rows")
    readings = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 5 or not isinstance(row[4], list):
            raise ValueError(f"mesh: bad reading {str(row)[:80]}")
        answered, rtts = _count(row[2], _U16, "answered"), row[4]
        if len(rtts) > min(answered, MESH_MAX_RTTS):
            raise ValueError(f"mesh: {len(rtts)} RTTs listed for {answered} answers")
        readings.append(MeshPeerReading(_address(row[0]), _count(row[1], _U16, "port"), answered,
                                        _count(row[3], _U16, "lost"), tuple(_count(t, _U32, "RTT") for t in rtts)))
    return MeshSample(float(mono), available, None if error is None else safe_text(error, MESH_MAX_ERROR_CHARS),
                      _count(d.get("port", 0), _U16, "port"), _count(d.get("peers", 0), _U32, "peers"),
                      _count(d.get("answers", 0), _U32, "answers"), _count(d.get("refused", 0), _U32, "refused"),
                      tuple(readings), None if address is None else _address(address))


def _recorded_mesh(d: object, mono_s: float) -> MeshSample | None:
    """A recorded sample's mesh; one that netui would not have written is refused as the live
    decoder refuses a bad field: the node's mesh unavailable, with the reason, never the
    node's error nor the recording's damage."""
    if d is None:
        return None
    try:
        return mesh_from_dict(d)
    except KeyError as exc:
        why = f"no {exc}"
    except (TypeError, ValueError) as exc:
        why = str(exc)
    return MeshSample(mono_s, available=False, error=safe_text(f"recorded mesh refused: {why}", MESH_MAX_ERROR_CHARS))


def dump_lines(records: Iterable[tuple[str, NodeSample]]) -> Iterator[str]:
    """Version 1 lines (``{"node", "sample"}``): kept for tests of old recordings."""
    for node, sample in records:
        yield json.dumps({"node": node, "sample": sample_to_dict(sample)}, separators=(",", ":"),
                         default=_json_default) + "\n"


# --- records ------------------------------------------------------------------------------------


def header_record(t: float, *, hosts: list[str], interval_s: float, mesh_answered: dict | None = None) -> dict:
    """A file's header; ``mesh_answered`` (``mesh_answered_to_dict``): the probe mesh's pairs
    answered before the file began, absent when none was."""
    return {"type": "header", "format": FORMAT_VERSION, "netui": __version__, "hosts": list(hosts),
            "interval_s": interval_s, "t": t, **({"mesh_answered": mesh_answered} if mesh_answered else {})}


MESH_ANSWERED_MAX_NODES = 4096  # a header's mesh_answered at most (~2.8 MB); past it, left out


def mesh_answered_to_dict(names: list[str], answered: dict[str, int]) -> dict | None:
    """The mesh's pairs answered at least once (``MeshWindow.answered``) as a header keeps them:
    the nodes, and per prober the bits of the nodes that answered it, little-endian, base64 (a
    1,024-node fleet: some 180 kB before compression); None when no pair was answered, or
    past MESH_ANSWERED_MAX_NODES nodes (a header a reader's line would not take)."""
    if not answered or len(names) > MESH_ANSWERED_MAX_NODES:
        return None
    size = (len(names) + 7) // 8
    return {"nodes": list(names),
            "answered": {p: base64.b64encode(bits.to_bytes(size, "little")).decode() for p, bits in answered.items()}}


def mesh_answered_from_dict(d: object) -> tuple[list[str], dict[str, int]]:
    """``mesh_answered_to_dict`` back; ValueError when it is not what netui writes (more than
    MESH_ANSWERED_MAX_NODES nodes, a node named twice, a prober that is none of them, bits
    longer than the nodes')."""
    if not isinstance(d, dict) or not isinstance(d.get("nodes"), list) or not isinstance(d.get("answered"), dict):
        raise ValueError("mesh_answered is not an object of nodes and answered")
    names = d["nodes"]
    if len(names) > MESH_ANSWERED_MAX_NODES:
        raise ValueError(f"mesh_answered: {len(names):,} nodes (netui writes at most {MESH_ANSWERED_MAX_NODES:,})")
    if not all(isinstance(n, str) and len(n) <= MAX_NAME_CHARS for n in names):
        raise ValueError("mesh_answered: its nodes are not names")
    known = set(names)
    if len(known) != len(names):
        raise ValueError("mesh_answered: a node named twice")
    if len(d["answered"]) > len(names):
        raise ValueError("mesh_answered: more probers than nodes")
    size = (len(names) + 7) // 8
    out = {}
    for prober, text in d["answered"].items():
        if prober not in known or not isinstance(text, str) or len(text) > 4 * (size + 2) // 3 + 4:
            raise ValueError("mesh_answered: a prober's bits are not its nodes'")
        try:
            out[prober] = int.from_bytes(base64.b64decode(text, validate=True), "little")
        except (binascii.Error, ValueError):
            raise ValueError("mesh_answered: bits not in base64") from None
    return list(names), out


def is_interval(value) -> bool:
    """Whether ``value`` is an interval netui believes (seconds, MIN_INTERVAL_S to MAX_INTERVAL_S)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and MIN_INTERVAL_S <= value <= MAX_INTERVAL_S


def sample_record(t: float, node: str, sample: NodeSample) -> dict:
    return {"type": "sample", "t": t, "node": node, "sample": sample_to_dict(sample)}


def encode(record: dict) -> bytes:
    """One record as one line of compact JSON (NaN and infinities are refused)."""
    return json.dumps(record, separators=(",", ":"), allow_nan=False, default=_json_default).encode() + b"\n"


def check_record(rec) -> dict:
    """A record as the rest of netui may rely on it: version 1 lines get ``type`` "sample";
    a sample's dict becomes a NodeSample under ``"sample"``. Raises RecordingError."""
    if not isinstance(rec, dict):
        raise RecordingError("a record is a JSON object")
    kind = rec.get("type", "sample" if "sample" in rec and "node" in rec else None)
    if kind not in RECORD_TYPES:
        raise RecordingError(f"unknown record type {kind!r}")
    out = dict(rec, type=kind)
    if kind == "sample":
        if not isinstance(rec.get("node"), str) or not isinstance(rec.get("sample"), dict):
            raise RecordingError("a sample record needs a node name and a sample")
        out["sample"] = sample_from_dict(rec["sample"])
        if "t" not in rec:  # version 1: the node's wall clock is all there is
            out["t"] = out["sample"].wall_s
    elif kind in ("state", "health", "straggler") and not isinstance(rec.get("node"), str):
        raise RecordingError(f"a {kind} record needs a node name")
    elif kind == "header":
        hosts = rec.get("hosts") or []
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise RecordingError("a header's hosts are a list of names")
        if len(hosts) > MAX_NODES:
            raise RecordingError(f"a header of {len(hosts):,} hosts (netui records at most {MAX_NODES:,})")
    elif kind == "test" and not isinstance(rec.get("report"), dict):
        raise RecordingError("a test record needs its report")
    elif kind == "tick" and "interval_s" in rec and not is_interval(rec["interval_s"]):
        raise RecordingError(f"a tick's interval_s is {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g} seconds")
    names = (rec.get("hosts") or []) if kind == "header" else [rec.get("node") or ""]
    for name in names:
        if len(name) > MAX_NAME_CHARS:
            raise RecordingError(f"a node name of {len(name):,} characters (at most {MAX_NAME_CHARS})")
    # a file's words: a node's name is shown as netui shows any name it did not make (model/text.py)
    if kind == "header" and "hosts" in rec:
        out["hosts"] = [safe_text(h, MAX_NAME_CHARS) for h in names]
    elif isinstance(rec.get("node"), str):
        out["node"] = safe_text(rec["node"], MAX_NAME_CHARS)
    t = out.get("t")
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        raise RecordingError("a record needs its time t (seconds)")
    if not 0 <= t <= MAX_TIME_S:
        raise RecordingError(f"time t {t!r} is not seconds since 1970")
    return out


# --- lines --------------------------------------------------------------------------------------


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number netui records")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    value = int(text)
    if not MIN_INT <= value < MAX_INT:  # within 64 bits: u64 counters, signed ones (MaxConn is -1)
        raise ValueError(f"number {text[:40]}… is out of range (beyond 64 bits)")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)
_BIG_NUMBERS = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int)
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_DIGITS = b"0" * 19  # as many digits as -2**63 has (2**64 has 20): such lines have their integers checked
_BRACKETS_ONLY = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST = re.compile(rb"\[\]|\{\}")


def has_long_integers(line: bytes) -> bool:
    """Whether ``line`` holds a run of 19 digits or more: an integer that may not fit in 64 bits."""
    return _LONG_DIGITS in line.translate(_DIGITS_AS_ZERO)


def _too_deep(line: bytes) -> bool | None:
    """Whether the JSON on ``line`` nests more than MAX_DEPTH deep, judged from its brackets
    alone; None when brackets inside strings leave it unsure."""
    if line.count(b"[") + line.count(b"{") <= MAX_DEPTH:
        return False
    brackets = line.translate(None, _BRACKETS_ONLY)
    for _ in range(MAX_DEPTH):  # each pass takes the innermost level away
        shorter = _INNERMOST.sub(b"", brackets)
        if not shorter:
            return False
        if shorter == brackets:
            return None
        brackets = shorter
    return True


def _nests_deeper(obj, limit: int) -> bool:
    stack = [(obj, 1)]
    while stack:
        o, depth = stack.pop()
        if isinstance(o, dict):
            o = o.values()
        elif not isinstance(o, list):
            continue
        if depth > limit:
            return True
        stack.extend((x, depth + 1) for x in o)
    return False


def decode_line(line: bytes):
    """One line of a recording as JSON, as netui writes it: UTF-8, finite numbers (no NaN,
    no infinity, integers within 64 bits), nested at most MAX_DEPTH deep. ValueError otherwise."""
    text = line.decode("utf-8")
    deep = _too_deep(line)
    if deep:
        raise ValueError(f"JSON nested more than {MAX_DEPTH} deep")
    try:
        obj = (_BIG_NUMBERS if has_long_integers(line) else _DECODER).decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if deep is None and _nests_deeper(obj, MAX_DEPTH):
        raise ValueError(f"JSON nested more than {MAX_DEPTH} deep")
    return obj

