"""Recordings: the file format, its writer and its reader.

A recording stores raw samples (counters), never rates, so replay runs the same code as
live mode. It is JSON lines, one record per line, each with its type and the monitor's wall
time ``t`` (seconds since the epoch)::

    {"type": "header", "format": 2, "netui": "0.1.0", "hosts": [...], "interval_s": 1.0, "t": ...}
    {"type": "sample", "t": ..., "node": "gpu01", "sample": {...}}      # raw counters
    {"type": "state", "t": ..., "node": "gpu03", "state": "down", "reason": "..."}
    {"type": "health", "t": ..., "node": "gpu02", "level": "warning", "was": "ok", "reasons": [...]}
    {"type": "straggler", "t": ..., "node": "gpu07", "flagged": true, "metric": "tx", "reason": "..."}
    {"type": "test", "t": ..., "kind": "pair-test" | "latency-test", "report": {...}}
    {"type": "tick", "t": ...}                                           # the end of one tick

The lines go through one gzip stream that is flushed with ``Z_SYNC_FLUSH`` at the end of
every tick: ``zcat`` reads the file, compression spans records (the samples of one node
look alike from one tick to the next), and a writer killed mid-write (SIGKILL, a full disk)
leaves a file whose every byte up to the last flush decompresses — the reader drops the
incomplete tail. Version 1 recordings — plain JSON lines of ``{"node", "sample"}`` — still
load.

``sample_to_dict``/``sample_from_dict`` are the one place a sample becomes JSON and back.
"""

from __future__ import annotations

import json
import re
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import fields
from pathlib import Path

from netui import __version__
from netui.model.fabric import fabric_from_dict, fabric_to_dict
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

FORMAT_VERSION = 2
GZIP_MAGIC = b"\x1f\x8b"
RECORD_TYPES = frozenset({"header", "sample", "state", "health", "straggler", "test", "tick"})


class RecordingError(ValueError):
    pass


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
            cpu_sums=CpuSums(**d["cpu_sums"]) if d.get("cpu_sums") else None,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordingError(f"bad sample record: {exc!r}") from None


def dump_lines(records: Iterable[tuple[str, NodeSample]]) -> Iterator[str]:
    """Version 1 lines (``{"node", "sample"}``): kept for tests of old recordings."""
    for node, sample in records:
        yield json.dumps({"node": node, "sample": sample_to_dict(sample)}, separators=(",", ":"),
                         default=_json_default) + "\n"


# --- records ------------------------------------------------------------------------------------


def header_record(t: float, *, hosts: list[str], interval_s: float) -> dict:
    return {"type": "header", "format": FORMAT_VERSION, "netui": __version__, "hosts": list(hosts),
            "interval_s": interval_s, "t": t}


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
    elif kind == "test" and not isinstance(rec.get("report"), dict):
        raise RecordingError("a test record needs its report")
    t = out.get("t")
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        raise RecordingError("a record needs its time t (seconds)")
    return out


# --- writing --------------------------------------------------------------------------------------


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """"100M", "1.5G", "512k", "4096", "2GiB" → bytes (powers of 1024). ValueError otherwise."""
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"not a size: {text!r} (e.g. 100M, 2G)")
    value = int(float(m.group(1)) * (1 << (10 * " kmgt".index(m.group(2).lower() or " "))))
    if value < 1:
        raise ValueError(f"not a size: {text!r}")
    return value


def rotated_paths(path: str | Path) -> list[Path]:
    """The files of a rotated recording, oldest first: FILE.N … FILE.1, FILE (those that exist)."""
    path = Path(path)
    older = []
    k = 1
    while (p := path.with_name(f"{path.name}.{k}")).exists():
        older.append(p)
        k += 1
    return [*reversed(older), *([path] if path.exists() else [])]


class RecordingWriter:
    """Appends records to FILE through one gzip stream, flushed (``sync``) after every tick.

    With ``max_size_bytes``, a file that has reached it at a ``sync`` is finished and
    renamed FILE.1 (FILE.1 → FILE.2 …, at most ``keep`` old files; the oldest goes), and a
    new FILE starts with the same header. A file may pass the size by one tick's records.
    """

    def __init__(self, path: str | Path, header: dict, *, max_size_bytes: int | None = None,
                 keep: int = 5, level: int = 6) -> None:
        if keep < 1:
            raise ValueError("keep at least one rotated file")
        self.path = Path(path)
        self.header = header
        self.max_size_bytes = max_size_bytes
        self.keep = keep
        self.level = level
        self.records = 0  # written in all files
        self.rotations = 0
        self._file = None
        self._open()

    def _open(self) -> None:
        self._file = open(self.path, "wb", buffering=0)  # noqa: SIM115 - closed in close()/_rotate()
        self._zip = zlib.compressobj(self.level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip wrapper
        self.size = 0  # compressed bytes in the current file
        self._raw = 0
        self.write(self.header)
        self.sync()

    def write(self, record: dict) -> None:
        line = encode(record)
        self._raw += len(line)
        self.records += 1
        self._put(self._zip.compress(line))

    def _put(self, data: bytes) -> None:
        if data:
            self._file.write(data)
            self.size += len(data)

    def sync(self) -> None:
        """Make everything written so far readable from the file (even after a SIGKILL);
        rotate when the file has reached its size."""
        self._put(self._zip.flush(zlib.Z_SYNC_FLUSH))
        if self.max_size_bytes is not None and self.size >= self.max_size_bytes:
            self._rotate()

    def _rotate(self) -> None:
        self._finish()
        oldest = self.path.with_name(f"{self.path.name}.{self.keep}")
        if oldest.exists():
            oldest.unlink()
        for k in range(self.keep - 1, 0, -1):
            p = self.path.with_name(f"{self.path.name}.{k}")
            if p.exists():
                p.rename(self.path.with_name(f"{self.path.name}.{k + 1}"))
        self.path.rename(self.path.with_name(f"{self.path.name}.1"))
        self.rotations += 1
        self._open()

    def _finish(self) -> None:
        if self._file is not None:
            try:
                self._put(self._zip.flush(zlib.Z_FINISH))
            finally:
                self._file.close()
                self._file = None

    @property
    def raw_size(self) -> int:
        """Bytes of JSON lines written to the current file, before compression."""
        return self._raw

    def close(self) -> None:
        self._finish()

    @property
    def closed(self) -> bool:
        return self._file is None


# --- reading --------------------------------------------------------------------------------------


_CHUNK = 1 << 16


def _decompress_until_damage(unzip, chunk: bytes) -> tuple[bytes, str | None]:
    """What ``chunk`` gives before zlib finds it damaged (zlib returns nothing from a failing
    call, so the chunk is fed again byte by byte to a copy taken before it)."""
    saved = unzip.copy()
    try:
        return unzip.decompress(chunk), None
    except zlib.error as exc:
        out = b""
        for i in range(len(chunk)):
            try:
                out += saved.decompress(chunk[i:i + 1])
            except zlib.error:
                break
        return out, str(exc)


def _gzip_lines(data: bytes, path: str, notes: list[str]) -> Iterator[bytes]:
    """Complete lines of one or more gzip members. A tail cut mid-write, or damaged, ends
    the read with a note instead of failing it: everything before it is kept."""
    pending = b""
    unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pos = 0
    while pos < len(data):
        chunk = data[pos:pos + _CHUNK]
        pos += len(chunk)
        out, damage = _decompress_until_damage(unzip, chunk)
        pending += out
        *lines, pending = pending.split(b"\n")
        yield from lines
        if damage is not None:
            notes.append(f"{path}: damaged data after {len(lines)} more lines ({damage}); the rest is ignored")
            pending = b""
            break
        if unzip.eof:  # the end of one gzip member: another may follow
            rest = unzip.unused_data + data[pos:]
            if rest and not rest.startswith(GZIP_MAGIC):
                notes.append(f"{path}: {len(rest)} bytes after the last gzip member are ignored")
                break
            data, pos = rest, 0
            unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
    if pending:
        notes.append(f"{path}: the last record was cut mid-write ({len(pending)} bytes) and is ignored")
    elif data and not unzip.eof:
        notes.append(f"{path}: not finished (the recorder was killed, or is still recording): "
                     "read up to its last complete record")


def read_lines(path: str | Path, notes: list[str] | None = None) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a recording file, compressed or plain; an incomplete last line
    (a writer killed mid-write) is left out and said in ``notes``."""
    notes = notes if notes is not None else []
    path = str(path)
    with open(path, "rb") as f:
        data = f.read()
    if data.startswith(GZIP_MAGIC):
        yield from enumerate(_gzip_lines(data, path, notes), 1)
        return
    lines = data.split(b"\n")
    tail = lines.pop()  # "" when the file ends with a newline
    yield from enumerate(lines, 1)
    if tail.strip():
        try:
            json.loads(tail)
        except ValueError:
            notes.append(f"{path}: the last line was cut mid-write and is ignored")
        else:
            yield len(lines) + 1, tail


def read_records(paths: str | Path | Iterable[str | Path], notes: list[str] | None = None) -> Iterator[dict]:
    """Every record of a recording (one file, or a rotated set oldest first), checked
    (``check_record``). Raises RecordingError naming the file and line of a bad record."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    for path in paths:
        for n, line in read_lines(path, notes):
            if not line.strip():
                continue
            try:
                yield check_record(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:  # incl. JSON, UTF-8, RecordingError
                raise RecordingError(f"{path}:{n}: {exc}") from None


def recording_files(path: str | Path) -> list[Path]:
    """The files to read for FILE: its rotated set (FILE.N … FILE.1, FILE), or FILE alone."""
    files = rotated_paths(path)
    if not files:
        raise RecordingError(f"{path}: no such file")
    return files


def load_recording(path: str) -> dict[str, list[NodeSample]]:
    """Samples per node, in file order (a rotated set included). Raises RecordingError with
    the line number."""
    out: dict[str, list[NodeSample]] = {}
    for rec in read_records(recording_files(path)):
        if rec["type"] == "sample":
            out.setdefault(rec["node"], []).append(rec["sample"])
    return out
