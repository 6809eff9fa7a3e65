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
(or when the index is collected, or at exit).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from asyncssh.pattern import WildcardPatternList

_WILDCARDS = frozenset("*?!")


@dataclass
class _Section:
    kind: str  # "global", "host", "match"
    lines: list[str] = field(default_factory=list)
    patterns: str | None = None  # Host: the comma-joined patterns, as asyncssh joins them
    matcher: WildcardPatternList | None = None


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
        self.wild: list[int] = []  # Host sections with a wildcard or a negation
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                head = _header(line)
                if head is None:
                    self.sections[-1].lines.append(line)
                    continue
                kind, args = head
                section = _Section(kind, [line])
                index = len(self.sections)
                self.sections.append(section)
                if kind == "match":
                    continue
                section.patterns = ",".join(args)
                if any(c in _WILDCARDS for c in section.patterns):
                    section.matcher = WildcardPatternList(section.patterns)
                    self.wild.append(index)
                else:
                    for name in section.patterns.split(","):
                        if name:
                            self.exact.setdefault(name.lower(), []).append(index)

    def lines_for(self, host: str) -> list[str]:
        keep = set(self.exact.get(host.lower(), ()))
        keep.update(i for i in self.wild if self.sections[i].matcher.matches(host))  # type: ignore[union-attr]
        out: list[str] = []
        for i, section in enumerate(self.sections):
            # a Host block that does not apply goes whole: what follows it starts with a
            # header of its own, so no line changes the block it belongs to
            if section.kind != "host" or i in keep:
                out += section.lines
        return out


class ConfigIndex:
    """The ssh_config files of a fleet, read once; ``paths_for(host)`` per connection."""

    def __init__(self, paths: list[str]) -> None:
        self._files = [_File(os.path.expanduser(p)) for p in paths]
        self._dir: str | None = None
        self._cleanup: weakref.finalize | None = None
        self._written: dict[str, str] = {}  # content digest -> path
        self._by_host: dict[str, list[str]] = {}

    def paths_for(self, host: str) -> list[str]:
        """Paths of the reduced files for ``host`` (as named on the command line)."""
        paths = self._by_host.get(host)
        if paths is None:
            paths = self._by_host[host] = [self._write(f, f.lines_for(host)) for f in self._files]
        return paths

    def _write(self, source: _File, lines: list[str]) -> str:
        text = f"# {source.path}, the lines that can apply to one host (netui)\n" + "".join(lines)
        if not text.endswith("\n"):
            text += "\n"
        digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        path = self._written.get(digest)
        if path is None:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="netui-ssh-config-")
                # gone at close(), or when the index is collected, or at exit at the latest
                self._cleanup = weakref.finalize(self, shutil.rmtree, self._dir, ignore_errors=True)
            path = os.path.join(self._dir, f"{digest}.conf")
            Path(path).write_text(text, encoding="utf-8")
            self._written[digest] = path
        return path

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup()  # removes the directory, once
            self._cleanup = None
            self._dir = None
            self._written.clear()
            self._by_host.clear()
