"""A check made for the tests: the echo check, one folder's worth of a real ``Check`` — a
trivial test, verdict and report of its own, no mock — for tests to register beside netui's
own (``registered``) and see the registry, ``netui bench``, the app, the cluster screen's
keys, the help screen and the command palette take it up with no other edit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from netui import checks
from netui.model.straggler import Straggler

KIND = "echo-test"


@dataclass(frozen=True)
class EchoSettings:
    suspect: str = ""  # the node the echo test names; "" passes

    def check(self) -> EchoSettings:
        return self


@dataclass(frozen=True)
class EchoVerdict:
    status: str
    suspects: list[str]
    tested: frozenset[str]
    text: str
    untested: list[object] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == checks.PASS


@dataclass
class EchoReport:
    nodes: list[str]
    verdict: EchoVerdict | None = None
    refused: str = ""
    cancelled: bool = False
    tests_done: int = 0
    tests_total: int = 0


class EchoTest:
    """Judges nothing but its settings: names ``settings.suspect`` when it is one of the nodes."""

    def __init__(self, monitor, nodes, settings: EchoSettings, *, matrix: bool, on_progress=None) -> None:
        self.nodes, self.settings, self.cancelled = list(nodes), settings, False

    async def run(self) -> EchoReport:
        bad = [n for n in self.nodes if n == self.settings.suspect]
        verdict = EchoVerdict(checks.FAIL if bad else checks.PASS, bad, frozenset(self.nodes),
                              f"{bad[0]} echoes wrong" if bad else "every node echoes")
        return EchoReport(self.nodes, verdict, tests_done=len(self.nodes), tests_total=len(self.nodes))

    def cancel(self) -> None:
        self.cancelled = True


class EchoDocuments:
    """The echo check's report module."""

    @staticmethod
    def report_document(report: EchoReport) -> dict:
        v = report.verdict
        return {"kind": KIND, "nodes": report.nodes, "status": v.status, "suspects": v.suspects, "text": v.text}

    @staticmethod
    def text_report(report: EchoReport) -> str:
        return f"echo over {len(report.nodes)} nodes: {report.verdict.text}"

    @staticmethod
    def load_report(document: dict) -> EchoReport:
        if document.get("kind") != KIND:
            raise ValueError("not an echo document")
        verdict = EchoVerdict(document["status"], list(document["suspects"]), frozenset(document["nodes"]),
                              document["text"])
        return EchoReport(list(document["nodes"]), verdict)


def echo_stragglers(verdict: EchoVerdict) -> list[Straggler]:
    return [Straggler(n, "pairs", 0.0, 0.0, f"{n}: the echo test names it") for n in verdict.suspects]


STARTED: list[tuple] = []


def start_echo(app, nodes, **options) -> None:
    STARTED.append((app, list(nodes), options))


ECHO = checks.Check(name="echo", title="echo test", kind=KIND, key="E", recorded=True, verbs=("echo",),
                    description="every node answers back", aliases=("ping-back",), start=start_echo,
                    screen=object, runner=EchoTest, settings=EchoSettings, report=EchoDocuments,
                    stragglers=echo_stragglers)


@contextmanager
def registered(check: checks.Check = ECHO) -> Iterator[checks.Check]:
    """``check`` registered (``STARTED`` emptied) until the block ends."""
    checks.register(check)
    STARTED.clear()
    try:
        yield check
    finally:
        checks.unregister(check.name)
