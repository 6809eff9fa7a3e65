"""Standard input, output and error as a Unix tool keeps them.

- At start-up, a standard stream that is closed (``netui ... >&-``, ``<&-``, ``2>&-``) gets
  /dev/null on its descriptor before anything else opens a file: no socket, pipe or event
  loop descriptor can then take 0, 1 or 2 (libuv aborts when one does, and a report could
  land on a socket). A closed standard output is opened read-only, so that a write to it
  fails as it would have (``Bad file descriptor``) and is said, never lost in silence; a
  closed standard input reads as empty; a closed standard error takes what is said and
  drops it.
- Standard error is written whole too; a write to it that fails (the terminal gone after
  SIGHUP) is dropped, so that saying what happened never changes how netui ends.
- Every report reaches standard output whole (``write_whole``, ``whole_stdout``), and a
  write that fails for any reason but a reader gone (a full disk, a closed descriptor) is an
  ``OutputError`` (netui/exits.py): ``netui: cannot write to standard output: <why>``, exit
  status 2. A reader that goes away (``| head``) stays a BrokenPipeError, for the command
  line to end quietly.
"""

from __future__ import annotations

import io
import locale
import os
import select
import sys

from netui.exits import OutputError

__all__ = ["OutputError", "open_standard_streams", "whole_stdout", "write_whole"]

STDOUT_FD = 1


def open_standard_streams() -> _WholeWrites:
    """Open /dev/null on each of the descriptors 0, 1 and 2 that is closed (standard output
    read-only: writes to it fail), give Python a stream for each, and make ``sys.stdout``
    one whose writes are whole; the descriptor under it, whose ``error`` is the first write
    that failed (also one a caller swallowed, as argparse does for --help). Call it first,
    before any other file is opened."""
    closed = []
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_RDONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        new = os.open(os.devnull, flags)  # the lowest free descriptor: this one, or below it
        if new != fd:
            os.dup2(new, fd)
            os.close(new)
        closed.append(fd)
    encoding = "utf-8" if sys.flags.utf8_mode else locale.getpreferredencoding(False)
    if 0 in closed:
        sys.stdin = sys.__stdin__ = open(0, encoding=encoding, closefd=False)
    if 1 in closed:
        sys.stdout = sys.__stdout__ = open(1, "w", encoding=encoding, closefd=False)
    if 2 in closed:
        sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, encoding=encoding, errors="backslashreplace",
                                           closefd=False)
    # what netui says goes to a terminal that may be gone (SIGHUP: the SSH session closed):
    # a failed write to standard error is dropped, never a second failure
    err = sys.stderr
    err.flush()
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(_QuietWrites(2), 1 << 12), encoding=err.encoding or encoding,
                                  errors="backslashreplace", line_buffering=True)
    old = sys.stdout
    raw = _WholeWrites(STDOUT_FD)
    old.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw, 1 << 16), encoding=old.encoding or encoding,
                                  errors=old.errors or "strict", line_buffering=old.isatty())
    return raw


def write_whole(fd: int, data: bytes | memoryview) -> None:
    """Every byte of ``data`` to ``fd``: a short write goes on where it stopped, and a full
    non-blocking pipe is waited on until the reader makes room, as a blocking write waits.
    OSError as the write raised it (BrokenPipeError when the reader has gone)."""
    view = memoryview(data).cast("B")
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])  # the reader makes room, or goes (then the write fails)
            continue
        view = view[written:]


class _WholeWrites(io.RawIOBase):
    """A descriptor whose every write is whole (``write_whole``); never closes it. Once a
    write has failed (raised to the writer), what is still buffered above it is dropped, so
    that closing the stream at exit does not fail a second time."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self.error: OSError | None = None  # the first write that failed

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        if self.error is None:
            try:
                write_whole(self._fd, view)
            except OSError as exc:
                self.error = exc
                raise
        return len(view)


class _QuietWrites(_WholeWrites):
    """A descriptor whose writes are whole, and dropped without a word once one fails."""

    def write(self, data) -> int:
        try:
            return super().write(data)
        except OSError:
            return len(memoryview(data).cast("B"))


def whole_stdout() -> io.TextIOWrapper:
    """A text stream on standard output that writes every byte of what it is given (buffered;
    flush it at the end): for a report written piece by piece (netui export). What
    ``sys.stdout`` holds is written first."""
    sys.stdout.flush()
    return io.TextIOWrapper(io.BufferedWriter(_WholeWrites(sys.stdout.fileno()), 1 << 16),
                            encoding=sys.stdout.encoding or "utf-8", errors=sys.stdout.errors or "strict")
