"""Writing a recording: ``RecordingWriter`` appends records to one gzip stream flushed
after every tick (``zcat`` reads it, a writer killed mid-write leaves a readable file), and
rotates it at a size (FILE → FILE.1 → … FILE.KEEP, ``rotated_paths``). It writes only what
a reader takes back (netui/engine/recording/codec.py).
"""

from __future__ import annotations

import errno
import zlib
from collections.abc import Callable
from pathlib import Path

from netui.engine.recording.codec import decode_line, encode, has_long_integers
from netui.readlimits import MAX_LINE_BYTES



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


class RecordTooLarge(ValueError):
    """A record longer than a line a reader takes (MAX_LINE_BYTES): not written."""


class RecordRefused(ValueError):
    """A record a reader would refuse (NaN, an infinity, an integer beyond 64 bits): not written."""


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
        self.next_header: Callable[[dict], dict] | None = None  # a new file's header from the last (rotation)
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
        if has_long_integers(line):  # an integer of 20 digits or more: read it back
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
        if self.next_header is not None:
            self.header = self.next_header(self.header)
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
