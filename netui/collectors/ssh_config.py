"""ssh_config read once for a whole fleet: per host, only the lines that can apply to it.

asyncssh parses the ssh_config files on every connection, line by line with ``shlex``. A
site that generates one ``Host`` block per node has a file that grows with the fleet, so
connecting N nodes parses N files of N blocks: at 1,024 nodes that is a minute of CPU on
the event loop before the last node is up, and a frozen screen meanwhile.

``ConfigIndex`` reads each file once and splits it into its sections: the lines before
the first ``Host``/``Match`` (they apply to every host), then each ``Host`` or ``Match``
block. For one host it writes a reduced copy of each file, in the same order, keeping
the global lines, the ``Host`` blocks whose patterns match the host as asyncssh would
match them, and every ``Match`` block (their conditions depend on values only known while
parsing, so they stay for asyncssh to judge). OpenSSH's rule "the first value obtained
wins" sees the same lines in the same order, so the result is the same; a test holds the
two equal on configs with globals, wildcards, negations, Match and Include. Hosts that
keep the same lines share one reduced file (a wildcard-only config makes one file).

The reduced files live in a private temporary directory (0700), removed by ``close()``
(or when the index is collected, or at exit). What asyncssh says about a line of a reduced
copy, ``describe()`` says about the user's own file and line.

Reading also checks what asyncssh would recurse into without end: an ``Include`` loop (or
includes nested deeper than OpenSSH's 16) is an ``SshConfigError`` naming the file and line.
Building an index reads every file (a generated config can hold hundreds of thousands of
blocks): callers build it off the event loop. Wildcard ``Host`` patterns are indexed by
their literal prefix, so a host is matched against the few patterns that can match it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from asyncssh.pattern import WildcardPatternList

_WILDCARDS = frozenset("*?!")
MAX_INCLUDE_DEPTH = 16  # as OpenSSH (READCONF_MAX_DEPTH)
_ERROR_AT = re.compile(r"^(.*) line (\d+): (.*)$", re.S)


class SshConfigError(ValueError):
    """An ssh_config that cannot be used, said as ``file line N: reason`` of the user's file."""


@dataclass
class _Section:
    kind: str  # "global", "host", "match"
    lines: list[str] = field(default_factory=list)
    first_line: int = 1  # the line number of its first line in its file
    patterns: str | None = None  # Host: the comma-joined patterns, as asyncssh joins them
    matcher: WildcardPatternList | None = None  # made when first needed

    def matches(self, host: str) -> bool:
        if self.matcher is None:
            self.matcher = WildcardPatternList(self.patterns or "")
        return self.matcher.matches(host)


def _prefix_key(patterns: list[str]) -> str | None:
    """The literal text every host a Host line's patterns match starts with (lowercased),
    or None when it has none in common or has a negation (then it is always tried)."""
    prefixes = []
    for pattern in patterns:
        if not pattern or pattern[0] == "!":
            return None
        cut = min((i for i, c in enumerate(pattern) if c in "*?"), default=len(pattern))
        prefixes.append(pattern[:cut].lower())
    common = os.path.commonprefix(prefixes) if prefixes else ""
    return common or None


def _keyword(line: str) -> tuple[str, str]:
    """(keyword lowercased, the rest) of a config line; ("", "") for blanks and comments."""
    stripped = line.strip()
    if not stripped or stripped[0] == "#":
        return "", ""
    m = re.match(r"([^\s=]+)\s*=?\s*(.*)$", stripped, re.S)
    return (m.group(1).lower(), m.group(2).strip()) if m else ("", "")


def include_targets(pattern: str) -> list[str]:
    """The files an ``Include`` argument names, as asyncssh finds them (relative to ~/.ssh)."""
    path = Path(pattern).expanduser()
    if path.anchor:
        base, rest = Path(path.anchor), str(Path(*path.parts[1:]))
    else:
        base, rest = Path("~", ".ssh").expanduser(), pattern
    try:
        return sorted(str(p) for p in base.glob(rest) if p.is_file())
    except (OSError, ValueError):
        return []


def check_includes(paths: list[str]) -> None:
    """SshConfigError naming the file and line of an Include loop, or of includes nested
    deeper than MAX_INCLUDE_DEPTH; files that cannot be read are left for asyncssh to name."""
    done: set[str] = set()

    def visit(path: str, stack: list[tuple[str, int]]) -> None:
        real = os.path.realpath(path)
        if real in done:
            return
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = list(f)
        except OSError:
            return
        for number, line in enumerate(lines, start=1):
            word, rest = _keyword(line)
            if word != "include":
                continue
            try:
                args = shlex.split(rest)
            except ValueError:
                continue  # asyncssh names it
            for arg in args:
                for target in include_targets(arg):
                    chain = [*stack, (path, number)]
                    seen = [os.path.realpath(p) for p, _ in chain]
                    if os.path.realpath(target) in seen:
                        names = " → ".join([*(p for p, _ in chain[seen.index(os.path.realpath(target)):]), target])
                        raise SshConfigError(f"{path} line {number}: Include loop: {names}")
                    if len(chain) >= MAX_INCLUDE_DEPTH:
                        raise SshConfigError(f"{path} line {number}: Include nested more than "
                                             f"{MAX_INCLUDE_DEPTH} files deep")
                    visit(target, chain)
        done.add(real)

    for path in paths:
        visit(os.path.expanduser(path), [])


def _header(line: str) -> tuple[str, list[str]] | None:
    """('host'|'match', args) when the line opens a Host or Match block, else None.

    Split as asyncssh splits it (shlex, ``Host=x`` allowed). A line shlex cannot split
    opens nothing here: it stays where it is, and asyncssh reports it.
    """
    stripped = line.strip()
    if not stripped or stripped[0] == "#":
        return None
    word = stripped.split(None, 1)[0].split("=", 1)[0].lower()
    if word not in ("host", "match"):
        return None
    try:
        parts = shlex.split(stripped)
    except ValueError:
        return None
    args: list[str] = []
    for i, arg in enumerate(parts):
        if i == 0:
            key, eq, val = arg.partition("=")
            if eq and val:
                args.append(val)
            continue
        if arg.startswith("="):
            if len(arg) > 1:
                args.append(arg[1:])
        elif arg.endswith("="):
            args.append(arg[:-1])
        else:
            args.append(arg)
    return word, args


class _File:
    """One ssh_config file in sections, with exact Host names indexed."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sections: list[_Section] = [_Section("global")]
        self.exact: dict[str, list[int]] = {}  # lowercased name -> sections naming it exactly
        self.by_prefix: dict[str, list[int]] = {}  # wildcard sections by literal prefix (lowercased)
        self.wild: list[int] = []  # wildcard sections without one: tried for every host
        self.always: list[int] = []  # the sections every host keeps (global, Match)
        self._longest_prefix = 0
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, start=1):
                head = _header(line)
                if head is None:
                    self.sections[-1].lines.append(line)
                    continue
                kind, args = head
                section = _Section(kind, [line], number)
                index = len(self.sections)
                self.sections.append(section)
                if kind == "match":
                    continue
                section.patterns = ",".join(args)
                if any(c in _WILDCARDS for c in section.patterns):
                    key = _prefix_key(section.patterns.split(","))
                    if key is None:
                        self.wild.append(index)
                    else:
                        self.by_prefix.setdefault(key, []).append(index)
                        self._longest_prefix = max(self._longest_prefix, len(key))
                else:
                    for name in section.patterns.split(","):
                        if name:
                            self.exact.setdefault(name.lower(), []).append(index)
        self.always = [i for i, s in enumerate(self.sections) if s.kind != "host"]

    def kept(self, host: str) -> list[int]:
        """The sections that can apply to ``host``, in file order."""
        keep = set(self.exact.get(host.lower(), ()))
        lowered = host.lower()
        candidates = [i for n in range(1, min(len(lowered), self._longest_prefix) + 1)
                      for i in self.by_prefix.get(lowered[:n], ())]
        keep.update(i for i in candidates + self.wild if self.sections[i].matches(host))
        # a Host block that does not apply goes whole: what follows it starts with a header
        # of its own, so no line changes the block it belongs to
        return sorted(keep.union(self.always))

    def lines_for(self, host: str) -> list[str]:
        out: list[str] = []
        for i in self.kept(host):
            out += self.sections[i].lines
        return out

    def where(self, host: str, keyword: str) -> int | None:
        """The line number of the first ``keyword`` line that can apply to ``host``."""
        for i in self.kept(host):
            section = self.sections[i]
            for offset, line in enumerate(section.lines):
                if _keyword(line)[0] == keyword:
                    return section.first_line + offset
        return None


class ConfigIndex:
    """The ssh_config files of a fleet, read once; ``paths_for(host)`` per connection."""

    def __init__(self, paths: list[str]) -> None:
        """Reads every file (and checks their Includes): slow for a big config, so build it
        off the event loop. SshConfigError for an Include loop; OSError for a file that
        cannot be read."""
        check_includes(paths)
        self._files = [_File(os.path.expanduser(p)) for p in paths]
        self._dir: str | None = None
        self._cleanup: weakref.finalize | None = None
        self._written: dict[str, str] = {}  # content digest -> path
        self._origins: dict[str, tuple[_File, list[int]]] = {}  # written path -> its source, sections
        self._by_host: dict[str, list[str]] = {}
        self._lock = threading.Lock()  # paths_for runs in worker threads

    def paths_for(self, host: str) -> list[str]:
        """Paths of the reduced files for ``host`` (as named on the command line)."""
        paths = self._by_host.get(host)
        if paths is None:
            paths = [self._write(f, f.kept(host)) for f in self._files]
            self._by_host[host] = paths
        return paths

    def _write(self, source: _File, kept: list[int]) -> str:
        text = f"# {source.path}, the lines that can apply to one host (netui)\n" + "".join(
            line for i in kept for line in source.sections[i].lines)
        if not text.endswith("\n"):
            text += "\n"
        digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        with self._lock:
            path = self._written.get(digest)
            if path is None:
                if self._dir is None:
                    self._dir = tempfile.mkdtemp(prefix="netui-ssh-config-")
                    # gone at close(), or when the index is collected, or at exit at the latest
                    self._cleanup = weakref.finalize(self, shutil.rmtree, self._dir, ignore_errors=True)
                path = os.path.join(self._dir, f"{digest}.conf")
                Path(path).write_text(text, encoding="utf-8")
                self._written[digest] = path
                self._origins[path] = (source, kept)
        return path

    def origin(self, path: str, line: int) -> tuple[str, int]:
        """Where line ``line`` of a reduced copy comes from: (the user's file, its line);
        any other path is its own origin."""
        found = self._origins.get(path)
        if found is None:
            return path, line
        source, kept = found
        at = 2  # line 1 is the copy's comment
        for i in kept:
            section = source.sections[i]
            if line < at + len(section.lines):
                return source.path, section.first_line + line - at
            at += len(section.lines)
        return source.path, line

    def describe(self, message: str) -> str:
        """asyncssh's ``<file> line <n>: reason`` about a reduced copy, said of the user's file."""
        m = _ERROR_AT.match(message)
        if m is None:
            return message
        path, line = self.origin(m.group(1), int(m.group(2)))
        return f"{path} line {line}: {m.group(3)}"

    def where(self, host: str, keyword: str) -> str | None:
        """``file line N`` of the first ``keyword`` line (lowercase) that can apply to ``host``."""
        for source in self._files:
            line = source.where(host, keyword)
            if line is not None:
                return f"{source.path} line {line}"
        return None

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup()  # removes the directory, once
            self._cleanup = None
            self._dir = None
            self._written.clear()
            self._origins.clear()
            self._by_host.clear()
