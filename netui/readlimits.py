"""Reading the files a user names (recordings, host files): regular files only, and bounded.

A FIFO would block the open until a writer comes, ``/dev/zero`` never ends, a 1 MB gzip
bomb expands to a gigabyte: every such read is refused here with a message that says why.
Limits: ``MAX_LINE_BYTES`` per line and ``max_read_bytes()`` in all (decompressed bytes for
a gzip file), which ``$NETUI_MAX_READ`` raises for the rare huge recording (``2G``); the
per-line limit grows with it (a 32nd of the total, never below 16 MiB). ``MAX_NODES`` bounds
the nodes one command line, host file or Slurm job may name.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from typing import BinaryIO

# how many nodes netui takes from a command line, a host file or a Slurm job: more than
# MAX_NODES is taken for a typo in a range (``node[1-10000000]``) whatever --max-nodes says
MAX_NODES_DEFAULT = 10_000  # nodes watched unless --max-nodes says more
MAX_NODES = 100_000  # --max-nodes at most

MAX_READ_ENV = "NETUI_MAX_READ"
DEFAULT_MAX_READ_BYTES = 512 << 20
MAX_LINE_BYTES = 16 << 20


class FileRefused(ValueError):
    """A file netui will not read (not a regular file, too large); the message names it."""


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


def max_read_bytes(environ: Mapping[str, str] = os.environ) -> int:
    """Bytes netui reads from one file at most: ``$NETUI_MAX_READ`` (e.g. ``2G``), else 512 MiB."""
    text = environ.get(MAX_READ_ENV)
    if not text:
        return DEFAULT_MAX_READ_BYTES
    try:
        return parse_size(text)
    except ValueError as exc:
        raise FileRefused(f"${MAX_READ_ENV}: {exc}") from None


def max_line_bytes(total: int) -> int:
    """The longest line read when a file may hold ``total`` bytes."""
    return max(MAX_LINE_BYTES, total // 32)


def human(n: int) -> str:
    """1024-based sizes as the limits are given: 16 MiB, 512 MiB, 2 GiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} bytes"


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading in binary, when it is a regular file (symbolic links are
    followed). FileRefused for a directory, a FIFO, a device; OSError (FileNotFoundError…)
    as ``open`` raises it. A FIFO never blocks the call: it is opened without waiting."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise FileRefused(f"{os.fspath(path)}: is a directory")
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise FileRefused(f"{os.fspath(path)}: {kind}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def unreadable_file(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a regular file ("is a directory", "no such file",
    "a FIFO (named pipe), not a regular file", "permission denied"…), or None. Reads nothing."""
    try:
        open_regular(path).close()
    except FileRefused as exc:
        return str(exc).removeprefix(f"{os.fspath(path)}: ")
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()
    return None


def read_capped(path: str | os.PathLike[str], limit: int) -> bytes:
    """A regular file's bytes; FileRefused when it holds more than ``limit``."""
    with open_regular(path) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"{os.fspath(path)}: larger than {human(limit)}, more than netui reads from such a file")
    return data


class LineTooLong(FileRefused):
    def __init__(self, lineno: int, limit: int) -> None:
        super().__init__(f"line {lineno} is longer than {human(limit)}")
        self.lineno = lineno


class TooMuchData(FileRefused):
    pass


def split_lines(chunks: Iterable[bytes], *, max_line: int, max_total: int) -> Iterator[tuple[int, bytes, bool]]:
    """(line number from 1, line without its newline, complete) for the bytes of ``chunks``;
    the last line is incomplete when no newline ends it. Raises LineTooLong and TooMuchData
    (after yielding every line before): no line or total is ever held above its limit."""
    parts: list[bytes] = []  # the line being read, when no newline came yet
    held = 0
    total = 0
    n = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_total:
            raise TooMuchData(f"more than {human(max_total)} of data (${MAX_READ_ENV}=2G reads more)")
        if b"\n" not in chunk:
            held += len(chunk)
            if held > max_line:
                raise LineTooLong(n + 1, max_line)
            parts.append(chunk)
            continue
        if parts:
            parts.append(chunk)
            chunk = b"".join(parts)
            parts = []
        *lines, rest = chunk.split(b"\n")
        for line in lines:
            n += 1
            if len(line) > max_line:
                raise LineTooLong(n, max_line)
            yield n, line, True
        held = len(rest)
        if held > max_line:
            raise LineTooLong(n + 1, max_line)
        if rest:
            parts.append(rest)
    if parts:
        yield n + 1, b"".join(parts), False


MAX_TOML_DEPTH = 64
"""Arrays and inline tables nested deeper than this in a TOML file are refused: a real
config.toml or topology map nests two or three deep, and Python's TOML reader recurses once a
level (500 levels, 1 KB of brackets, end it with RecursionError)."""


def toml_too_deep(text: str, limit: int = MAX_TOML_DEPTH) -> int | None:
    """The line (from 1) where ``[``/``{`` nesting in TOML ``text`` first passes ``limit``, or
    None. Brackets inside strings and comments do not count. One pass, linear in the text: it
    runs before the TOML reader, so a hostile file is refused with its line, never a traceback."""
    depth = 0
    line = 1
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif ch in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else ch
            j = i + len(quote)
            while True:
                k = text.find(quote, j)
                if k < 0:
                    return None  # an unterminated string: the TOML reader says where
                if ch == '"' and _escaped(text, k):
                    j = k + 1
                    continue
                break
            line += text.count("\n", i, k)
            i = k + len(quote)
            continue
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return line
        elif ch in "]}":
            depth = max(0, depth - 1)
        i += 1
    return None


def _escaped(text: str, k: int) -> bool:
    """Whether the quote at ``k`` is escaped by an odd run of backslashes before it."""
    run = 0
    while k - run - 1 >= 0 and text[k - run - 1] == "\\":
        run += 1
    return run % 2 == 1
