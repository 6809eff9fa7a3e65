"""The source contract (collectors/source.py) holds: every source class has every member of
``Source`` with its signature, and the engine and the UI call sources and the monitor
directly — no ``getattr`` probing for what they might offer, no ``isinstance`` checks on
collector classes to decide what a node can do."""

from __future__ import annotations

import ast
import asyncio
import inspect
from pathlib import Path

import pytest

from netui.collectors.local import LiveReader, TreeReader
from netui.collectors.node_exporter import HttpClient, HttpSettings, NodeExporterSource
from netui.collectors.prometheus import PrometheusNode, PrometheusReader
from netui.collectors.shell import LocalShell, SshShell
from netui.collectors.source import BaseSource, NodeAccess, Sink, Source
from netui.collectors.ssh import SshSource
from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.engine.monitor import LIVE, Monitor
from netui.engine.replay import REPLAY, ReplayMonitor
from netui.engine.sources import LocalSource, RecordedNode, ReplaySource, shells_for

PACKAGE = Path(__file__).resolve().parents[2] / "netui"

SOURCE_CLASSES = [LocalSource, ReplaySource, RecordedNode, SshSource, NodeExporterSource, PrometheusNode]

# the contract's members, as the Protocol declares them
METHODS = {name: member for name, member in vars(Source).items()
           if callable(member) and not name.startswith("_")}
ATTRIBUTES = {name for name in Source.__annotations__}


def test_the_protocol_declares_the_whole_contract():
    assert set(METHODS) == {"sample", "run", "prepare", "set_interval", "set_detail", "retry_now", "commands",
                            "send_mesh", "close"}
    assert ATTRIBUTES == {"name", "push", "via", "no_commands", "retry_at", "tried"}


@pytest.mark.parametrize("cls", SOURCE_CLASSES, ids=lambda c: c.__name__)
def test_every_source_class_keeps_the_contract(cls):
    assert issubclass(cls, BaseSource)
    for name, declared in METHODS.items():
        mine = getattr(cls, name)
        assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(declared), name
        want = [(p.name, p.kind) for p in inspect.signature(declared).parameters.values()]
        got = [(p.name, p.kind) for p in inspect.signature(mine).parameters.values()]
        assert got == want, f"{cls.__name__}.{name}{inspect.signature(mine)} is not {inspect.signature(declared)}"
    for name in ATTRIBUTES - {"name"}:  # the name is each instance's
        assert hasattr(cls, name), name
    assert isinstance(cls.push, bool)


@pytest.mark.parametrize("cls", [Monitor, ReplayMonitor], ids=lambda c: c.__name__)
def test_the_monitor_is_the_sink_push_sources_report_to(cls):
    for name in ("observe", "report"):
        want = [p.name for p in inspect.signature(getattr(Sink, name)).parameters.values()]
        assert [p.name for p in inspect.signature(getattr(cls, name)).parameters.values()] == want, name
    assert isinstance(cls.interval_s, property)


def test_each_source_says_what_it_is(tmp_path):
    """What the engine used to find out by probing, each source now declares."""
    settings = HttpSettings(timeout_s=1, concurrency=1)
    client = HttpClient(settings)
    procfs, sysfs = str(tmp_path / "proc"), str(tmp_path / "sys")  # a tree is only named here, never read
    tree = LocalSource(TreeReader(procfs, sysfs))
    live = LocalSource(LiveReader())
    ssh = SshSource("n1", "127.0.0.1", SshConnector(SshSettings()))
    exporter = NodeExporterSource("n2", "127.0.0.1", client)
    prom = PrometheusNode("n3", PrometheusReader("http://127.0.0.1:9", client, keys_by_name={"n3": ["n3"]}))
    recorded, replayed = RecordedNode("n4"), ReplaySource("n5", [object()])

    assert [s.push for s in (tree, live, ssh, exporter, prom, recorded, replayed)] == [
        False, False, True, True, True, True, False]
    assert {s.name: s.via for s in (tree, ssh, exporter, prom, recorded)} == {
        tree.name: None, "n1": None, "n2": "node_exporter", "n3": "node_exporter", "n4": None}
    # commands: this host and SSH nodes live; a captured tree on this host, reading its files
    assert isinstance(live.commands().shell, LocalShell) and live.commands().live
    assert isinstance(ssh.commands().shell, SshShell) and ssh.commands().live
    commands = tree.commands()
    assert isinstance(commands.shell, LocalShell)
    assert commands == NodeAccess(commands.shell, live=False, procfs=procfs, sysfs=sysfs)
    for source in (exporter, prom, recorded, replayed):
        assert source.commands() is None and source.no_commands
    assert set(shells_for([tree, live, ssh, exporter, prom, recorded, replayed])) == {live.name, "n1"}
    # the probe mesh: only a sampler over SSH takes part (its lines wait for no channel)
    assert [s.send_mesh(["m 0"]) for s in (tree, live, ssh, exporter, prom, recorded, replayed)] == [
        False, False, True, False, False, False, False]
    # nothing to retry, no pace or detail of their own: explicit no-ops
    for source in (tree, prom, recorded, replayed):
        assert source.retry_at is None and source.retry_now() is False
        source.set_interval(2.0)
        source.set_detail(True)
    asyncio.run(client.close())


def test_the_monitor_declares_its_mode_and_takes_its_connector():
    closed = []

    class Connector:
        async def close(self):
            closed.append(True)

    async def run():
        m = Monitor([RecordedNode("a")], interval_s=1.0, history_s=10, connector=Connector())
        assert m.mode is LIVE and not m.mode.replay and m.mode.can_record
        assert m.via("a") is None
        await m.close()

    asyncio.run(run())
    assert closed == [True]
    assert ReplayMonitor.mode is REPLAY and REPLAY.replay and not REPLAY.can_record


# --- no probing across the layers ------------------------------------------------------------

# getattr(x, "literal", …) in engine/, ui/, cli/ and checks/ that is not about sources or the monitor:
# the file, the attribute, and why it is fine (a check's verdict and report keep the protocols of
# checks/__init__.py, and are read without probing)
ALLOWED_GETATTR = {
    ("ui/commands.py", "<dynamic>"): "the screen class a lazily imported module names",
    ("ui/app.py", "refresh_data"): "screens that have data to refresh (Textual screens vary)",
    ("ui/keybar.py", "footer_hides"): "screens that hide keys from the footer",
    ("cli/__init__.py", "<dynamic>"): "the function a command's module:function names (COMMANDS)",
    ("cli/settings.py", "history"): "snapshot's and record's parsers take no --history",
    ("engine/document.py", "<dynamic>"): "counters by declared field names",
    ("engine/export.py", "<dynamic>"): "metrics by declared field names",
    ("engine/recording/codec.py", "<dynamic>"): "dataclass fields by name",
}

COLLECTOR_CLASSES = {"SshSource", "NodeExporterSource", "PrometheusNode", "PrometheusReader", "LocalSource",
                     "ReplaySource", "RecordedNode", "LiveReader", "TreeReader", "SshConnector", "HttpClient"}


def probes(path: Path) -> list[tuple[str, str, int]]:
    """(attribute or "<dynamic>", "getattr"/"isinstance", line) of each getattr/hasattr with a
    literal or computed name, and each isinstance against a collector or source class."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        if node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            arg = node.args[1]
            name = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else "<dynamic>"
            found.append((name, node.func.id, node.lineno))
        elif node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            for c in classes:
                name = c.id if isinstance(c, ast.Name) else c.attr if isinstance(c, ast.Attribute) else ""
                if name in COLLECTOR_CLASSES:
                    found.append((name, node.func.id, node.lineno))
    return found


ENGINE_AND_UI_ROLES = ("tools", "runner", "report", "screen", "dialog")


def violations() -> list[str]:
    out = []
    # the engine and the ui; in the feature folders, the modules of those layers (the first
    # word of their names, tests/unit/test_layers.py)
    in_features = [p for p in (PACKAGE / "checks").rglob("*.py") if p.stem.split("_")[0] in ENGINE_AND_UI_ROLES]
    layers = [p for layer in ("engine", "ui", "cli") for p in (PACKAGE / layer).rglob("*.py")]
    for path in sorted([*layers, *in_features]):
        rel = str(path.relative_to(PACKAGE))
        for name, how, line in probes(path):
            if how in ("getattr", "hasattr") and (rel, name) in ALLOWED_GETATTR:
                continue
            out.append(f"netui/{rel}:{line}: {how} {name}")
    return out


def test_engine_and_ui_do_not_probe_sources_or_the_monitor():
    assert violations() == []


def test_the_scan_sees_a_probe(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(monitor, s):\n"
                   "    if getattr(monitor, 'replay', False): pass\n"
                   "    if isinstance(s, SshSource) or isinstance(s.reader, (LiveReader, int)): pass\n"
                   "    return hasattr(s, 'push')\n")
    assert sorted(probes(bad)) == [("LiveReader", "isinstance", 3), ("SshSource", "isinstance", 3),
                                   ("push", "hasattr", 4), ("replay", "getattr", 2)]
