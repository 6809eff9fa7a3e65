"""The checks a user runs on demand, one folder per feature: the pair bandwidth test
(``pairs/``), the latency test (``latency/``) and the doctor (``doctor/``), and their contract.

A feature folder holds the feature's modules of every layer; the first word of a module's
name says its layer, and the layers still point one way (collectors → model → engine → ui,
tests/unit/test_layers.py):

- ``parse_*``, ``probe``: collectors — a tool's output or a probe script's, parsed; pure
  functions of text.
- ``model*``, ``verdict*``, ``counters``, ``rules*``: model — pure, no I/O, no clock.
- ``tools``, ``runner``, ``report``: engine — the tools' command lines, the run over the
  monitor's connections, the report as JSON, CSV and text.
- ``screen``, ``dialog``: ui — the feature's screen and its settings dialog.

The latency test builds on the pair test (its rounds, its report's helpers, the matrix
screen); the doctor reads a latency test's report for the buffer advice.

**The contract.** Each folder's package (``pairs/__init__.py``) describes its check once, as a
``Check``: its name, the kind of its documents, its words, and where its parts are — named
``"module:attribute"``, loaded by the layer that uses them (the app loads the screen, the
engine the report), so that naming a check loads none of its code. ``REGISTERED`` below is
the one registration: the app, the command line and the engine find a check there, by name,
by document kind or by ``netui bench`` verb, and know nothing else of it. A check's verdict
keeps the ``Verdict`` protocol, its report the ``Report`` protocol, its test the ``Test``
protocol. This module imports nothing of netui but the folders' packages.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

# what a verdict's status is, for every check
PASS, FAIL, INCONCLUSIVE, UNTESTED = "pass", "fail", "inconclusive", "untested"
STATUSES = (PASS, FAIL, INCONCLUSIVE, UNTESTED)


@runtime_checkable
class Verdict(Protocol):
    """A check's judgement, as the app, the command line and the fleet read it.

    ``status``: one of ``STATUSES`` (pass; fail; inconclusive: the data cannot decide;
    untested: nothing could be tested); ``passed``: status is pass; ``suspects``: the nodes
    the failures point to, most failing first; ``untested``: the results that were never
    judged (a node could not take part), never blamed; ``tested``: the nodes of the results
    judged; ``text``: the verdict in words."""

    @property
    def status(self) -> str: ...

    @property
    def passed(self) -> bool: ...

    @property
    def suspects(self) -> Sequence[str]: ...

    @property
    def untested(self) -> Sequence[Any]: ...

    @property
    def tested(self) -> frozenset[str]: ...

    @property
    def text(self) -> str: ...


@runtime_checkable
class Report(Protocol):
    """What a finished test returns: its verdict (None when nothing was judged), why it did
    not start (``refused``, "" when it did), whether it was cancelled, and how many of its
    tests ran."""

    @property
    def verdict(self) -> Verdict | None: ...

    @property
    def refused(self) -> str: ...

    @property
    def cancelled(self) -> bool: ...

    @property
    def tests_done(self) -> int: ...

    @property
    def tests_total(self) -> int: ...


class Test(Protocol):
    """A test made by a check's runner, ``runner(monitor, nodes, settings, matrix=…,
    on_progress=…)``: ``run()`` runs it to its report, ``cancel()`` stops it (the report says so)."""

    async def run(self) -> Report: ...

    def cancel(self) -> None: ...


class Documents(Protocol):
    """A check's report module: its report as a JSON document, as text, and read back."""

    def report_document(self, report: Any) -> dict[str, Any]: ...

    def text_report(self, report: Any) -> str: ...

    def load_report(self, document: Any) -> Any: ...


# a part of a check: "module:attribute" (or "module" for a module), loaded when used; or the
# object itself (a check made in a test)
Ref = Any


def load(ref: Ref) -> Any:
    """The object ``ref`` names (``"netui.checks.pairs.screen:MatrixScreen"``), imported now."""
    if not isinstance(ref, str):
        return ref
    module, _, attribute = ref.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


@dataclass(frozen=True)
class Check:
    """One check, as the rest of netui knows it.

    ``name``: its folder; ``title``: the user's word for it ("pair test"); ``kind``: the
    ``kind`` of its JSON documents and recorded tests ("pair-test"); ``key``: the cluster
    screen's key that runs it over the marked nodes (all when none are marked), and in a replay
    shows the last one recorded — unless netui's key table binds it by hand (ui/keys.py, as
    for netui's own checks), the key gets its binding, its help row and its command-palette
    entry from here: ``title`` for their label and ``description`` for their words ("check
    that every node answers"); ``min_nodes``: the fewest nodes the key runs it over (fewer
    marked: the key says so instead).

    Its parts (``Ref``), each of the layer its field says:

    - ``start`` (ui): ``start(app, nodes, **options)`` asks for the settings when it has
      any, then opens its screen over ``nodes``;
    - ``screen`` (ui): its screen; ``screen(report=…)`` shows a finished report again;
    - ``runner`` (engine): makes a ``Test``, ``runner(monitor, nodes, settings, matrix=…,
      on_progress=…)``; None: it has no run without a screen under ``netui bench``;
    - ``settings`` (engine): its settings class; ``settings()`` are the defaults, ``.check()``
      returns them checked or raises ValueError;
    - ``report`` (engine): its report module (``Documents``);
    - ``stragglers`` (model): ``stragglers(verdict)`` → the ``Straggler``s its suspects
      become in the grid; None: its suspects stay on its screen.

    ``recorded``: its finished tests go into a recording (``record_test``), and a replay
    shows the last one recorded instead of running it; ``verbs``: the words after ``netui
    bench`` that run it (the first is the one help shows), ``aliases`` more that still do;
    ``tool_title``: its documents' ``tool`` names it in the events ("iperf3 test")."""

    name: str
    title: str
    kind: str
    start: Ref
    screen: Ref
    report: Ref
    runner: Ref | None = None
    settings: Ref | None = None
    stragglers: Ref | None = None
    key: str = ""
    description: str = ""
    min_nodes: int = 1
    recorded: bool = False
    verbs: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    tool_title: bool = False

    @property
    def label(self) -> str:
        """Its title as a label starts, in the footer and the command palette ("Echo test")."""
        return self.title[:1].upper() + self.title[1:]

    def title_of(self, document: Any) -> str:
        """The test's words in an event: its title, or "<tool> test" when its tool names it."""
        tool = document.get("tool") if self.tool_title and isinstance(document, dict) else None
        return f"{tool} test" if isinstance(tool, str) and tool else self.title

    def documents(self) -> Documents:
        documents: Documents = load(self.report)
        return documents


# the one registration of each check: its folder, whose package holds ``CHECK``
REGISTERED = ("pairs", "latency", "doctor")

_checks: dict[str, Check] = {}  # name → check, in registration order; filled on first use


def _loaded() -> dict[str, Check]:
    if not _checks:
        for folder in REGISTERED:
            check = importlib.import_module(f"{__name__}.{folder}").CHECK
            _checks.setdefault(check.name, check)
    return _checks


def register(check: Check) -> Check:
    """Add ``check`` beside the registered ones (a name, kind, key or verb already taken by a
    check is refused with ValueError); ``unregister`` takes it away again."""
    known = _loaded()
    if check.name in known:
        raise ValueError(f"a check named {check.name!r} is registered already")
    if check.kind and any(c.kind == check.kind for c in known.values()):
        raise ValueError(f"a check of kind {check.kind!r} is registered already")
    if check.key and any(c.key == check.key for c in known.values()):
        raise ValueError(f"the key {check.key!r} runs another check")
    taken = set(bench_verbs())
    if taken & {*check.verbs, *check.aliases}:
        raise ValueError(f"netui bench {sorted(taken & {*check.verbs, *check.aliases})[0]} runs another check")
    known[check.name] = check
    return check


def unregister(name: str) -> None:
    if name in REGISTERED:
        raise ValueError(f"{name!r} is one of netui's own checks")
    _loaded().pop(name, None)


def all_checks() -> list[Check]:
    return list(_loaded().values())


def by_name(name: str) -> Check:
    """The check named ``name``; KeyError when none is."""
    return _loaded()[name]


def by_kind(kind: object) -> Check | None:
    """The check whose documents are of ``kind`` ("pair-test"); None for any other kind."""
    return next((c for c in _loaded().values() if c.kind and c.kind == kind), None)


def by_verb(verb: str) -> Check | None:
    """The check ``netui bench VERB`` runs, by a verb or an alias; None when none does."""
    return next((c for c in _loaded().values() if verb in c.verbs or verb in c.aliases), None)


def bench_verbs(*, aliases: bool = True) -> list[str]:
    """Every verb of ``netui bench``, check by check (the aliases last)."""
    verbs = [v for c in _loaded().values() for v in c.verbs]
    return verbs + ([a for c in _loaded().values() for a in c.aliases] if aliases else [])
