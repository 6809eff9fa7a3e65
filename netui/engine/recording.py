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
    {"type": "tick", "t": ..., "interval_s": 5.0}     # ... in which the interval changed: 5 s from here on

The lines go through one gzip stream that is flushed with ``Z_SYNC_FLUSH`` at the end of
every tick: ``zcat`` reads the file, compression spans records (the samples of one node
look alike from one tick to the next), and a writer killed mid-write (SIGKILL, a full disk)
leaves a file whose every byte up to the last flush decompresses — the reader drops the
incomplete tail. An interval change rides on a tick mark (a field that a reader of format 2
which does not know it ignores), so a recording with one is still format 2; a file started
by rotation has the interval of its time in its header. Version 1 recordings — plain JSON
lines of ``{"node", "sample"}`` — still load.

Reading trusts nothing: regular files only, within the limits of netui/readlimits.py
(16 MiB a line, 512 MiB in all, decompressed; ``$NETUI_MAX_READ``), streamed. A line that
is not what netui writes — not JSON, NaN or infinity (the writer refuses them), nested more
than 64 deep — or damaged gzip data ends the file's read after its complete ticks, with a
note naming the file and line; before the first tick it refuses the file. A header of a
format this netui does not know is refused, naming the formats it reads.

``sample_to_dict``/``sample_from_dict`` are the one place a sample becomes JSON and back.
"""

from __future__ import annotations

import errno
import itertools
import json
import math
import re
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import fields
from functools import partial
from pathlib import Path

from netui import __version__
from netui.model.fabric import fabric_from_dict, fabric_to_dict
from netui.model.flows import peers_from_dict, peers_to_dict
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
from netui.readlimits import (
    MAX_LINE_BYTES,
    MAX_READ_ENV,
    FileRefused,
    LineTooLong,
    max_line_bytes,
    max_read_bytes,
    open_regular,
    parse_size,  # noqa: F401 - netui.engine.recording.parse_size, as before
    split_lines,
)

FORMAT_VERSION = 2
GZIP_MAGIC = b"\x1f\x8b"
RECORD_TYPES = frozenset({"header", "sample", "state", "health", "straggler", "test", "tick"})
READ_FORMATS = (1, 2)  # version 1: plain JSON lines of {"node", "sample"}, no header
MAX_DEPTH = 64  # JSON nesting; a recorded sample nests 6 deep
MAX_INT = 1 << 64  # the kernel's counters are unsigned 64-bit: below this
MIN_INT = -(1 << 63)  # and signed ones (the Tcp pair's MaxConn is -1) at least this
MAX_TIME_S = 1e11  # seconds since 1970: year 5138
MAX_BLANK_LINES = 1000  # netui writes none
MAX_NODES = 100_000  # in one recording: more than netui watches
MAX_NAME_CHARS = 512  # a node's name: [user@]host[:port]
MIN_RECORD_BYTES = 128  # a file may hold (bytes read at most) / this many records
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.01, 86400.0  # an interval outside these is not believed


class RecordingError(ValueError):
    pass


class RecordTooLarge(ValueError):
    """A record longer than a line a reader takes (MAX_LINE_BYTES): not written."""


class RecordRefused(ValueError):
    """A record a reader would refuse (NaN, an infinity, an integer beyond 64 bits): not written."""


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
            peers=peers_from_dict(d.get("peers")),
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


# --- writing --------------------------------------------------------------------------------------


def rotated_paths(path: str | Path) -> list[Path]:
    """The files of a rotated recording, oldest first: FILE.N … FILE.1, FILE (those that exist)."""
    path = Path(path)
    older = []
    k = 1
    while (p := path.with_name(f"{path.name}.{k}")).exists():
        older.append(p)
        k += 1
    return [*reversed(older), *([path] if path.exists() else [])]


MIN_ROTATE_BYTES = 1 << 10
"""``max_size_bytes`` at least this: a smaller file holds less than its header and one record
(``--max-size 100`` is a typo for 100M)."""


class RecordingWriter:
    """Appends records to FILE through one gzip stream, flushed (``sync``) after every tick.
    FILE must not exist (FileExistsError): a recording is never written over.

    With ``max_size_bytes``, a file that has reached it at a ``sync`` is finished and
    renamed FILE.1 (FILE.1 → FILE.2 …, at most ``keep`` old files; the oldest goes), and a
    new FILE starts with the same header. A file may pass the size by one tick's records.
    """

    def __init__(self, path: str | Path, header: dict, *, max_size_bytes: int | None = None,
                 keep: int = 5, level: int = 6) -> None:
        if keep < 1:
            raise ValueError("keep at least one rotated file")
        if max_size_bytes is not None and max_size_bytes < MIN_ROTATE_BYTES:
            raise ValueError(f"a rotated file of at least {MIN_ROTATE_BYTES >> 10} KiB "
                             f"(a file holds its header and a tick's records), not {max_size_bytes:,} bytes")
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
        try:  # never over an existing file: two recordings started within a second share a name
            self._file = open(self.path, "xb", buffering=0)  # noqa: SIM115 - closed in close()/_rotate()
        except FileExistsError:
            raise FileExistsError(errno.EEXIST, "exists: netui never overwrites a recording", str(self.path)) from None
        self._zip = zlib.compressobj(self.level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip wrapper
        self.size = 0  # compressed bytes in the current file
        self._raw = 0
        self.write(self.header)
        self._put(self._zip.flush(zlib.Z_SYNC_FLUSH))  # readable at once; never a rotation here

    def write(self, record: dict) -> None:
        """Append one record. RecordTooLarge (nothing written) for a record longer than a
        reader takes in a line: it would end every reader's read of the file there;
        RecordRefused (nothing written) for one whose numbers a reader refuses. Only what
        ``decode_line`` reads back is written."""
        try:
            line = encode(record)
        except ValueError:  # NaN or an infinity (allow_nan=False)
            raise RecordRefused(f"a {record.get('type')} record holding NaN or an infinity: left out") from None
        if _LONG_DIGITS in line.translate(_DIGITS_AS_ZERO):  # an integer of 20 digits or more: read it back
            try:
                decode_line(line)
            except ValueError as exc:
                raise RecordRefused(f"a {record.get('type')} record a reader refuses ({exc}): left out") from None
        if len(line) > MAX_LINE_BYTES:
            raise RecordTooLarge(f"a {record.get('type')} record of {len(line):,} bytes is longer than the "
                                 f"{MAX_LINE_BYTES >> 20} MiB a reader takes: left out")
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
        # FILE.1 … FILE.m exist (m ≤ keep): only those are looked at and moved, whatever keep is
        older = len(rotated_paths(self.path)) - 1
        if older >= self.keep:
            self.path.with_name(f"{self.path.name}.{self.keep}").unlink()
            older = self.keep - 1
        for k in range(older, 0, -1):
            self.path.with_name(f"{self.path.name}.{k}").rename(self.path.with_name(f"{self.path.name}.{k + 1}"))
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
_PIECE = 1 << 20  # decompressed bytes per step: a gzip bomb never expands at once


class _Damaged(Exception):
    """The gzip stream is damaged here; everything before it was given."""


def _gunzip(chunks: Iterator[bytes], path: str, notes: list[str]) -> Iterator[bytes]:
    """The decompressed bytes of one or more gzip members, in pieces of at most 1 MiB.
    A stream cut mid-write ends with a note; damaged data raises _Damaged after everything
    that came before it."""
    unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = b""
    while True:
        if not data:
            data = next(chunks, b"")
            if not data:
                break
        saved = unzip.copy()
        try:
            out = unzip.decompress(data, _PIECE)
        except zlib.error as exc:
            # zlib gives nothing from a failing call: feed the data again byte by byte to a
            # copy taken before it, for what comes before the damage
            out = bytearray()
            for i in range(len(data)):
                try:
                    out += saved.decompress(data[i:i + 1])
                except zlib.error:
                    break
                if len(out) >= _PIECE:
                    yield bytes(out)
                    out.clear()
            yield bytes(out)
            raise _Damaged(f"damaged gzip data: {exc}") from None
        if out:
            yield out
        if unzip.eof:  # the end of one gzip member: another may follow
            rest = unzip.unused_data
            while len(rest) < len(GZIP_MAGIC) and (more := next(chunks, b"")):
                rest += more
            if not rest:
                return
            if not rest.startswith(GZIP_MAGIC):
                notes.append(f"{path}: data after the last gzip member is ignored")
                return
            unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = rest
            continue
        data = unzip.unconsumed_tail
    notes.append(f"{path}: not finished (the recorder was killed, or is still recording): "
                 "read up to its last complete record")


def _file_lines(f, path: str, notes: list[str]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, complete) of an open recording, compressed or plain, within the
    read limits (netui/readlimits.py)."""
    total = max_read_bytes()
    chunks = iter(partial(f.read, _CHUNK), b"")
    first = next(chunks, b"")
    chunks = itertools.chain([first], chunks)
    if first[:len(GZIP_MAGIC)] == GZIP_MAGIC[:len(first)] and first:  # a gzip file, maybe cut in its magic
        chunks = _gunzip(chunks, path, notes)
    yield from split_lines(chunks, max_line=max_line_bytes(total), max_total=total)


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
        obj = (_BIG_NUMBERS if _LONG_DIGITS in line.translate(_DIGITS_AS_ZERO) else _DECODER).decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if deep is None and _nests_deeper(obj, MAX_DEPTH):
        raise ValueError(f"JSON nested more than {MAX_DEPTH} deep")
    return obj


def _check_format(rec: dict, where: str) -> None:
    version = rec.get("format")
    if version not in READ_FORMATS[1:] or isinstance(version, bool):
        shown = "no format" if version is None else f"format {version!r}"
        raise RecordingError(f"{where}: a recording in {shown}; this netui ({__version__}) reads formats "
                             f"{', '.join(map(str, READ_FORMATS))} (a newer netui wrote it?)")


def _damaged(where: str, ticks: int, why: object) -> str:
    return f"{where}: recording damaged after tick {ticks}; kept {ticks} ticks ({why})"


def _file_records(path: str, notes: list[str]) -> Iterator[dict]:
    """The records of one file, checked. A bad or damaged record after the file's first
    tick ends the read there with a note (every tick before it is kept); before it, the
    file is refused: RecordingError."""
    records = ticks = blanks = n = 0
    try:
        max_records = max_read_bytes() // MIN_RECORD_BYTES
        with open_regular(path) as f:
            for n, line, complete in _file_lines(f, path, notes):
                if records >= max_records:
                    raise RecordingError(f"{path}:{n}: more than {max_records:,} records, more than netui reads "
                                         f"from a file (${MAX_READ_ENV}=2G reads more)")
                try:
                    if not line.strip():
                        blanks += 1
                        if blanks <= MAX_BLANK_LINES:
                            continue
                        raise ValueError(f"more than {MAX_BLANK_LINES} blank lines")
                    rec = check_record(decode_line(line))
                except ValueError as exc:  # incl. JSON, UTF-8, RecordingError
                    if not complete and (records or line.lstrip().startswith(b"{")):
                        notes.append(f"{path}: the last record was cut mid-write and is ignored")
                        return
                    if not records:
                        raise RecordingError(f"{path}:{n}: not a netui recording ({exc})") from None
                    if not ticks:
                        raise RecordingError(f"{path}:{n}: {exc}") from None
                    notes.append(_damaged(f"{path}:{n}", ticks, exc))
                    return
                if rec["type"] == "header":
                    _check_format(rec, f"{path}:{n}")
                records += 1
                ticks += rec["type"] == "tick"
                yield rec
    except _Damaged as exc:
        if not records:
            raise RecordingError(f"{path}: not a netui recording ({exc})") from None
        if not ticks:
            raise RecordingError(f"{path}: damaged before its first tick ({exc})") from None
        notes.append(_damaged(f"{path}:{n + 1}", ticks, exc))
    except LineTooLong as exc:
        if ticks:  # a damaged part loses itself only: every tick before it is whole
            notes.append(_damaged(f"{path}:{exc.lineno}", ticks, f"{exc}; ${MAX_READ_ENV} raises the limit"))
            return
        what = "not a netui recording" if not records else "damaged"
        raise RecordingError(f"{path}:{exc.lineno}: {what}: {exc} (${MAX_READ_ENV} raises the limit)") from None
    except FileRefused as exc:  # not a regular file, too much data, a bad $NETUI_MAX_READ
        raise RecordingError(str(exc) if str(exc).startswith(path) else f"{path}: {exc}") from None


def read_records(paths: str | Path | Iterable[str | Path], notes: list[str] | None = None) -> Iterator[dict]:
    """Every record of a recording (one file, or a rotated set oldest first), checked
    (``check_record``). Raises RecordingError naming the file (and line) of a file that is
    not a recording, of a newer format, past the read limits, or bad before its first tick;
    a damaged or cut tail ends that file's read with a note in ``notes`` instead."""
    notes = notes if notes is not None else []
    if isinstance(paths, (str, Path)):
        paths = [paths]
    for path in paths:
        yield from _file_records(str(path), notes)


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
