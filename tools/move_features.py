#!/usr/bin/env python3
"""Move the pair test, the latency test and the doctor into feature folders, netui/checks/.

    python3 tools/move_features.py            # in a checkout: git mv + rewrite references
    python3 tools/move_features.py --dry-run  # say what it would do, change nothing

Each feature's modules are named by their role, and the role says the layer
(tests/unit/test_layers.py): ``parse_*``/``probe`` collectors, ``model``/``verdict*``/
``counters``/``rules*`` model, ``tools``/``runner``/``report`` engine, ``screen``/``dialog`` ui.
The latency test is called latency everywhere: ``PingTest`` is ``LatencyTest``, ``PingSettings``
is ``LatencySettings`` (the tools stay ping and fping).

What it rewrites, by content (not by fixed file lists, so files that moved or appeared on
other branches are caught), in every tracked text file under netui/, tests/, screenshots/,
docs/, tools/ (but itself) and in CONTRIBUTING.md, pyproject.toml:

- dotted module names: ``netui.engine.pairtest`` (imports, ``import … as``, strings such as
  lazy-import lists or monkeypatch targets) → ``netui.checks.pairs.runner``;
- ``from netui.engine import pairdoc, pingdoc`` → one import per moved module, under a name
  that says the feature (``pair_report``, ``latency_report``), and the file's uses renamed;
- paths: ``engine/pairtest.py`` and ``netui/engine/pairtest.py`` → ``checks/pairs/runner.py``;
- ````model.pairs```` in docstrings → ````checks.pairs.model````;
- the class names above.

Safe to run again: modules already moved are left alone (a module present at both its old
and its new place is refused), and the rewrite finds nothing left to change. Run it again
after merging a branch that still uses the old names. It never commits.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

# old path under netui/ → new path under netui/; optional moves are for modules that only
# some branches have
MOVES: list[tuple[str, str, bool]] = [
    # the pair bandwidth test
    ("collectors/iperf3.py", "checks/pairs/parse_iperf3.py", False),
    ("collectors/perftest.py", "checks/pairs/parse_perftest.py", False),
    ("model/pairs.py", "checks/pairs/model.py", False),
    ("model/pairverdict.py", "checks/pairs/verdict.py", False),
    ("model/fabricverdict.py", "checks/pairs/verdict_fabric.py", True),
    ("model/paircounters.py", "checks/pairs/counters.py", False),
    ("engine/pairtools.py", "checks/pairs/tools.py", False),
    ("engine/pairtest.py", "checks/pairs/runner.py", False),
    ("engine/pairdoc.py", "checks/pairs/report.py", False),
    ("ui/matrix.py", "checks/pairs/screen.py", False),
    ("ui/pairdialog.py", "checks/pairs/dialog.py", False),
    # the latency test
    ("collectors/ping.py", "checks/latency/parse_ping.py", False),
    ("model/latency.py", "checks/latency/model.py", False),
    ("engine/pingtools.py", "checks/latency/tools.py", False),
    ("engine/pingtest.py", "checks/latency/runner.py", False),
    ("engine/pingdoc.py", "checks/latency/report.py", False),
    ("ui/latency.py", "checks/latency/screen.py", False),
    # the doctor
    ("collectors/doctor_probe.py", "checks/doctor/probe.py", False),
    ("collectors/nic_settings.py", "checks/doctor/parse_nic.py", False),
    ("model/doctor.py", "checks/doctor/rules.py", False),
    ("model/doctor_nic.py", "checks/doctor/rules_nic.py", False),
    ("model/doctor_sysctl.py", "checks/doctor/rules_sysctl.py", False),
    ("engine/doctor.py", "checks/doctor/runner.py", False),
    ("ui/doctor.py", "checks/doctor/screen.py", False),
]

# `from netui.<layer> import <old>`: the name the module goes by afterwards, in that file
LOCAL_NAMES = {"pairdoc": "pair_report", "pingdoc": "latency_report", "pairtest": "pair_runner",
               "pingtest": "latency_runner", "pairtools": "pair_tools", "pingtools": "latency_tools",
               "doctor_nic": "rules_nic", "doctor_sysctl": "rules_sysctl"}

# identifiers renamed everywhere (whole words)
IDENTIFIERS = {"PingTest": "LatencyTest", "PingSettings": "LatencySettings"}

PACKAGES = ["checks", "checks/pairs", "checks/latency", "checks/doctor"]

ROOTS = ("netui", "tests", "screenshots", "docs", "tools", ".ci")
TOP_FILES = ("CONTRIBUTING.md", "pyproject.toml", "setup.py")
SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".sh", ".tcss", ".yml", ".yaml"}
SELF = "tools/move_features.py"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def dotted(rel: str) -> str:
    return "netui." + rel.removesuffix(".py").replace("/", ".")


def plan_moves(repo: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(the moves still to make, the problems that forbid running at all)."""
    todo, problems = [], []
    for old, new, optional in MOVES:
        o, n = repo / "netui" / old, repo / "netui" / new
        if o.exists() and n.exists():
            problems.append(f"netui/{old} and netui/{new} both exist: merge them by hand first")
        elif o.exists():
            todo.append((old, new))
        elif not n.exists() and not optional:
            problems.append(f"netui/{old} is missing and netui/{new} too: not the tree this script knows")
    return todo, problems


def text_files(repo: Path) -> list[Path]:
    files = git(repo, "ls-files", "-z", "--", *ROOTS, *TOP_FILES).split("\0")
    return [repo / f for f in files if f and f != SELF and Path(f).suffix in SUFFIXES and (repo / f).is_file()]


class Rewriter:
    """Every rewrite of one file's text, from the table of moves."""

    def __init__(self) -> None:
        self.moves = [(old, new) for old, new, _ in MOVES]
        by_len = sorted(self.moves, key=lambda m: -len(dotted(m[0])))  # longest first: doctor_nic before doctor
        self.dotted = {dotted(o): dotted(n) for o, n in by_len}
        alt = "|".join(re.escape(d) for d in self.dotted)
        self.dotted_re = re.compile(rf"(?<![\w.])({alt})(?![\w])")
        self.paths = {o: n for o, n in by_len}
        alt = "|".join(re.escape(p) for p in self.paths)
        self.path_re = re.compile(rf"(?<![\w./-])(netui/)?({alt})(?![\w])")
        # ``model.pairs`` (docstrings): only inside double backticks, never code
        short = {d.removeprefix("netui."): n.removeprefix("netui.") for d, n in self.dotted.items()}
        self.short = short
        alt = "|".join(re.escape(s) for s in short)
        self.short_re = re.compile(rf"(?<=``)({alt})(?=(?:\.\w+)*(?:\(\))?``)")
        # `from netui.<layer> import a, b as c` on one line
        self.from_re = re.compile(r"^(?P<indent>[ \t]*)from netui\.(?P<pkg>collectors|model|engine|ui) import "
                                  r"(?P<names>[\w ,]+?)(?P<tail>[ \t]*(?:#.*)?)$", re.M)
        self.ident_re = re.compile(r"\b(" + "|".join(IDENTIFIERS) + r")\b")

    def rewrite(self, text: str) -> tuple[str, list[str]]:
        """The text with every old reference rewritten; and notes about what needs eyes."""
        notes: list[str] = []
        renames: dict[str, str] = {}

        def from_line(m: re.Match) -> str:
            pkg, indent = m["pkg"], m["indent"]
            kept, lines = [], []
            for part in (p.strip() for p in m["names"].split(",")):
                if not part:
                    continue
                name, _, alias = (w.strip() for w in part.partition(" as "))
                old = f"netui.{pkg}.{name}"
                if old not in self.dotted:
                    kept.append(part)
                    continue
                new_pkg, _, new_name = self.dotted[old].rpartition(".")
                local = alias or LOCAL_NAMES.get(name, new_name)
                if not alias and local != name:
                    renames[name] = local
                lines.append(f"{indent}from {new_pkg} import {new_name}" + (f" as {local}" if local != new_name else ""))
            if not lines:
                return m[0]
            if kept:
                lines.insert(0, f"{indent}from netui.{pkg} import {', '.join(kept)}")
            lines[0] += m["tail"]
            return "\n".join(lines)

        new = self.path_re.sub(lambda m: (m[1] or "") + self.paths[m[2]], text)
        new = self.dotted_re.sub(lambda m: self.dotted[m[1]], new)
        new = self.short_re.sub(lambda m: self.short[m[1]], new)
        new = self.from_re.sub(from_line, new)
        for old, local in renames.items():
            new = re.sub(rf"(?<![\w.]){re.escape(old)}\b", local, new)
        new = self.ident_re.sub(lambda m: IDENTIFIERS[m[1]], new)
        if re.search(r"^[ \t]*from netui\.(collectors|model|engine|ui) import \(", new, re.M):
            notes.append("a parenthesised `from netui.<layer> import (…)`: check it by hand")
        return new, notes


def leftovers(text: str) -> list[str]:
    """Old module names still standing as words (prose, comments): for a person to judge."""
    stems = ("pairverdict", "fabricverdict", "paircounters", "pairtools", "pairtest", "pairdoc", "pairdialog",
             "pingtools", "pingtest", "pingdoc", "doctor_probe", "doctor_nic", "doctor_sysctl")
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for stem in stems:
            if re.search(rf"(?<![\w/]){stem}\b(?![.-])", line) and f"test_{stem}" not in line:
                found.append(f"{n}: {line.strip()[:110]}")
                break
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="the checkout (default: here)")
    parser.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    args = parser.parse_args(argv)
    repo = Path(git(args.repo, "rev-parse", "--show-toplevel").strip())

    todo, problems = plan_moves(repo)
    if problems:
        print("move_features: refusing:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    if not todo:
        print("move_features: every module is already in netui/checks/; rewriting references only")

    for pkg in PACKAGES:
        init = repo / "netui" / pkg / "__init__.py"
        if not init.exists():
            print(f"create netui/{pkg}/__init__.py")
            if not args.dry_run:
                init.parent.mkdir(parents=True, exist_ok=True)
                init.write_text("")
                git(repo, "add", str(init.relative_to(repo)))
    for old, new in todo:
        print(f"git mv netui/{old} netui/{new}")
        if not args.dry_run:
            git(repo, "mv", f"netui/{old}", f"netui/{new}")

    rewriter, changed = Rewriter(), 0
    for path in text_files(repo):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new, notes = rewriter.rewrite(text)
        rel = path.relative_to(repo).as_posix()
        for note in notes:
            print(f"note: {rel}: {note}")
        if new != text:
            changed += 1
            print(f"rewrite {rel}")
            if not args.dry_run:
                path.write_text(new, encoding="utf-8")
    print(f"move_features: {len(todo)} modules moved, {changed} files rewritten")

    for path in text_files(repo):
        if path.suffix == ".py" or path.suffix == ".md":
            for hit in leftovers(path.read_text(encoding="utf-8", errors="replace")):
                print(f"old name left (judge it): {path.relative_to(repo).as_posix()}:{hit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
