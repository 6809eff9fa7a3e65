"""Reading a recording, trusting nothing: regular files only, within the limits of
netui/readlimits.py (16 MiB a line, 512 MiB in all, decompressed; ``$NETUI_MAX_READ``),
streamed; compressed or plain, one gzip member or several. A line that is not what netui
writes (netui/engine/recording/codec.py ``decode_line``, ``check_record``) or damaged gzip
data ends the file's read after its complete ticks, with a note naming the file and line;
before the first tick it refuses the file (``RecordingError``). A header of a format this
netui does not know is refused, naming the formats it reads.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path

from netui import __version__
from netui.engine.recording.codec import READ_FORMATS, RecordingError, check_record, decode_line
from netui.engine.recording.writer import rotated_paths
from netui.readlimits import MAX_READ_ENV, FileRefused, LineTooLong, max_line_bytes, max_read_bytes, open_regular, split_lines

GZIP_MAGIC = b"\x1f\x8b"
MAX_BLANK_LINES = 1000  # netui writes none
MIN_RECORD_BYTES = 128  # a file may hold (bytes read at most) / this many records

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
