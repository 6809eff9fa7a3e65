"""The layers point one way: collectors → model → engine → ui (CONTRIBUTING.md), with the command
line (netui/cli/) on top as the one composition root. Every import of a netui module, at the
top of a file or inside a function, is checked against the layer rules; a new import across
them fails here, not in review. And only netui/cli/ parses options or decides the exit: no
other module imports argparse or raises SystemExit."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "netui"

# what each part may import besides itself. Every module of netui belongs to one of them: a
# new top-level module or folder fails until it is placed here.
ALLOWED = {
    "model": {"speedups", "_speedups"},
    "collectors": {"model", "speedups", "_speedups", "readlimits"},
    "engine": {"collectors", "model", "readlimits", "speedups", "exits", "config"},
    "ui": {"engine", "model", "readlimits", "exits", "config"},
    # the composition root: options → settings → sources, monitor, app, report
    "cli": {"collectors", "model", "engine", "ui", "config", "inventory", "readlimits", "exits", "speedups"},
    "__main__": {"cli"},  # python -m netui
    "__init__": set(),
    # beside the layers, importing no layer above the model
    "config": {"model", "readlimits"},  # config.toml → thresholds and rules (model types)
    "inventory": {"readlimits"},  # host patterns, host files, Slurm → the nodes to watch
    "readlimits": set(),
    "speedups": {"_speedups"},
    "exits": set(),
}

# programs of their own, which parse their arguments and end with a status: netui's entry
# point, and the sampler, sent to each node as `python3 -c <source> INTERVAL`
OWN_PROGRAMS = {"netui/__main__.py", "netui/collectors/sampler.py"}


def _is_use(node: ast.AST) -> bool:
    return (isinstance(node, (ast.Import, ast.ImportFrom))
            or isinstance(node, ast.Name) and node.id == "SystemExit"
            or isinstance(node, ast.Attribute) and node.attr in ("exit", "argv") and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


@functools.lru_cache(maxsize=None)
def uses(path: Path) -> tuple[ast.AST, ...]:
    """The imports of ``path`` (at the top or inside a function) and its uses of SystemExit,
    sys.exit and sys.argv: read once for every test of this file."""
    return tuple(n for n in ast.walk(ast.parse(path.read_text(), str(path))) if _is_use(n))


def package_of(path: Path) -> str | None:
    """The dotted package a module of netui is in (``netui.model`` for netui/model/fleet.py)."""
    try:
        parts = path.resolve().relative_to(PACKAGE.parent).with_suffix("").parts
    except ValueError:
        return None
    return ".".join(parts[:-1])


def absolute(node: ast.ImportFrom, package: str | None) -> str | None:
    """The module a ``from … import`` names, relative ones (``from ..ui import app``) resolved
    against ``package``; None for a relative import whose package is not known."""
    if node.level == 0:
        return node.module
    if package is None:
        return None
    base = package.split(".")
    if node.level - 1 >= len(base):
        return None
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def netui_imports(path: Path, package: str | None = None) -> set[str]:
    """The first component after ``netui.`` of every netui module ``path`` imports
    (``package``: the one it is in, for its relative imports; by default where it lies)."""
    package = package or package_of(path)
    found = set()
    for node in uses(path):
        names = []
        module = absolute(node, package) if isinstance(node, ast.ImportFrom) else None
        if isinstance(node, ast.ImportFrom) and module and node.level and not node.module:
            # `from . import report`, `from .. import ui`: each name may be a module
            names = [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and module:
            node_module = module
            names = [node_module] if node_module != "netui" else [
                f"netui.{a.name}" for a in node.names  # `from netui import cli`: a module, not __version__
                if (PACKAGE / f"{a.name}.py").exists() or (PACKAGE / a.name).is_dir()]
            if node_module.startswith("netui.checks"):  # `from netui.checks.pairs import report`
                names = [f"{node_module}.{a.name}" if module_path(f"{node_module}.{a.name}") else node_module
                         for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found |= {layer_of_module(n) for n in names if n.startswith("netui.")}
    return found


# a feature folder (netui/checks/<feature>/) holds one feature's modules of every layer; the
# first word of a module's name says its layer, so a feature's model cannot import its screen
ROLES = {
    "parse": "collectors", "probe": "collectors",  # tool output and probe scripts, parsed
    "model": "model", "verdict": "model", "counters": "model", "rules": "model",  # pure
    "tools": "engine", "runner": "engine", "report": "engine",  # commands, the run, documents
    "screen": "ui", "dialog": "ui",
}
ALLOWED["checks"] = set()  # the packages netui/checks/ and netui/checks/<feature>/ import nothing
# ... so every layer may read the checks' contract and registry there (netui/checks/__init__.py:
# Check, Verdict; each folder's CHECK), which name a check's parts without loading them
for _layer in ("model", "engine", "ui", "cli"):
    ALLOWED[_layer] = ALLOWED[_layer] | {"checks"}


def module_path(dotted: str) -> Path | None:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else None


def layer_of_parts(parts: tuple[str, ...]) -> str:
    """The layer of a module from its path below netui/, without ``.py``."""
    # netui/checks/<feature>/<role>[_<what>].py, and what the features share beside them:
    # netui/checks/<role>_<what>.py; the packages themselves: "checks"
    if parts[0] == "checks" and len(parts) in (2, 3) and parts[-1] != "__init__" \
            and not PACKAGE.joinpath(*parts).is_dir():  # `from netui.checks.pairs import KIND`: the package
        return ROLES.get(parts[-1].split("_")[0], f"checks ({parts[-1]}: no role)")
    return "checks" if parts[0] == "checks" else parts[0]


def layer_of_module(dotted: str) -> str:
    return layer_of_parts(tuple(dotted.split(".")[1:]))


def layer_of(path: Path) -> str:
    return layer_of_parts(path.relative_to(PACKAGE).with_suffix("").parts)


def violations() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = layer_of(path)
        if layer not in ALLOWED:
            out.append(f"{path.relative_to(PACKAGE.parent)} is in no layer (place it in tests/unit/test_layers.py)")
            continue
        for target in sorted(netui_imports(path) - ALLOWED[layer] - {layer}):
            out.append(f"{path.relative_to(PACKAGE.parent)} ({layer}) imports netui.{target}")
    return out


def command_line_uses(path: Path) -> list[str]:
    """What in ``path`` belongs to the command line alone: importing argparse (or optparse,
    getopt), naming SystemExit, calling sys.exit or reading sys.argv."""
    found = []
    for node in uses(path):
        modules = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
            if node.module == "sys":
                modules += [f"sys.{a.name}" for a in node.names]
        for m in modules:
            if m.split(".")[0] in ("argparse", "optparse", "getopt") or m in ("sys.exit", "sys.argv"):
                found.append(f"line {node.lineno}: imports {m}")
        if isinstance(node, ast.Name) and node.id == "SystemExit":
            found.append(f"line {node.lineno}: SystemExit")
        if (isinstance(node, ast.Attribute) and node.attr in ("exit", "argv") and isinstance(node.value, ast.Name)
                and node.value.id == "sys"):
            found.append(f"line {node.lineno}: sys.{node.attr}")
    return found


def outside_the_command_line() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if layer_of(path) == "cli" or rel in OWN_PROGRAMS:
            continue
        out += [f"{rel} {use}" for use in command_line_uses(path)]
    return out


def test_every_import_follows_the_layers():
    assert violations() == []


def test_only_the_command_line_parses_options_and_exits():
    assert outside_the_command_line() == []


def test_the_command_line_is_a_package_with_one_table_of_commands():
    from netui.cli import COMMANDS

    assert not (PACKAGE / "cli.py").exists() and (PACKAGE / "cli" / "__init__.py").exists()
    for name, target in COMMANDS.items():
        module, _, function = target.partition(":")
        assert module.startswith("netui.cli.") and function, name


def test_the_checker_sees_an_import_across_the_layers(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from netui.ui.app import make_app\n    import netui.engine.monitor\n"
                   "from netui import cli\n")
    assert netui_imports(bad) == {"ui", "engine", "cli"}
    # relative imports too, resolved against the module's package
    rel = tmp_path / "rel.py"
    rel.write_text("from ..ui import app\nfrom . import fleet\ndef f():\n    from ...netui.engine import monitor\n")
    assert netui_imports(rel, package="netui.model") == {"ui", "model"}
    assert package_of(PACKAGE / "model" / "fleet.py") == "netui.model"


def test_the_layers_refuse_the_engine_the_command_line():
    assert "cli" not in ALLOWED["engine"] | ALLOWED["collectors"] | ALLOWED["model"] | ALLOWED["ui"]


def test_the_checker_sees_argparse_and_system_exit(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import argparse\nfrom argparse import Namespace\nimport sys\n"
                   "def f(args):\n    if not args:\n        raise SystemExit('netui: no')\n"
                   "    sys.exit(2)\n    return sys.argv\n")
    assert sorted(command_line_uses(bad)) == ["line 1: imports argparse", "line 2: imports argparse",
                                              "line 6: SystemExit", "line 7: sys.exit", "line 8: sys.argv"]
    good = tmp_path / "good.py"
    good.write_text("from netui.exits import InputError\n"
                    "def f(x):\n    if not x:\n        raise InputError('no')\n")
    assert command_line_uses(good) == []


def test_every_module_of_a_feature_folder_has_a_role():
    modules = [p for p in (PACKAGE / "checks").rglob("*.py") if p.name != "__init__.py"]
    assert modules and [str(p) for p in modules if layer_of(p) not in ALLOWED] == []
    assert {p.parent.name for p in modules} == {"pairs", "latency", "doctor", "checks"}


def test_a_module_the_features_share_has_a_role_too():
    """netui/checks/dialog_fields.py is ui, report_common.py and tools_settings.py engine; a
    shared module with no role in its name is in no layer."""
    assert [layer_of(PACKAGE / "checks" / f) for f in ("dialog_fields.py", "report_common.py", "tools_settings.py",
                                                       "__init__.py")] == ["ui", "engine", "engine", "checks"]
    assert layer_of(PACKAGE / "checks" / "common.py") not in ALLOWED
    assert layer_of_module("netui.checks.dialog_fields") == "ui"


def test_a_feature_folder_keeps_the_layers(tmp_path):
    assert [layer_of(PACKAGE / "checks" / "pairs" / f) for f in ("parse_iperf3.py", "verdict.py", "runner.py",
                                                                 "screen.py", "__init__.py")] == \
        ["collectors", "model", "engine", "ui", "checks"]
    bad = tmp_path / "bad.py"
    bad.write_text("from netui.checks.pairs.screen import MatrixScreen\n"
                   "def f():\n    from netui.checks.latency import screen\n    import netui.checks.doctor.runner\n")
    assert netui_imports(bad) == {"ui", "engine"}
    assert not netui_imports(bad) & ALLOWED[layer_of(PACKAGE / "checks" / "pairs" / "model.py")]


# the features build on each other in one order: the latency test on the pair test (its
# rounds and matrix screen), the doctor on the latency test (its RTTs); a feature imports only
# those before it, and the modules all of them share (netui/checks/dialog_fields.py ...)
FEATURES = ("pairs", "latency", "doctor")


def feature_imports(path: Path) -> set[str]:
    """The feature folders whose modules ``path`` imports (not the modules the features share,
    netui/checks/<role>_<what>.py, which every feature may import)."""
    found = set()
    package = package_of(path)
    for node in uses(path):
        names = [absolute(node, package) or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module == "netui.checks":  # `from netui.checks import pairs`
            # (but not the contract's names: `from netui.checks import Check`)
            names = [f"netui.checks.{a.name}" for a in node.names if (PACKAGE / "checks" / a.name).is_dir()
                     or (PACKAGE / "checks" / f"{a.name}.py").exists()]
        found |= {n.split(".")[2] for n in names if n.startswith("netui.checks.") and len(n.split(".")) > 2
                  and not (PACKAGE / "checks" / f"{n.split('.')[2]}.py").exists()}
    return found


def test_the_features_build_on_each_other_in_one_order():
    out = []
    for path in sorted((PACKAGE / "checks").rglob("*.py")):
        if path.parent.name in FEATURES:
            allowed = set(FEATURES[:FEATURES.index(path.parent.name) + 1])
            out += [f"{path.relative_to(PACKAGE.parent)} imports netui.checks.{f}"
                    for f in sorted(feature_imports(path) - allowed)]
    assert out == []
    assert {p.name for p in (PACKAGE / "checks").iterdir() if p.is_dir() and p.name != "__pycache__"} == set(FEATURES)


def test_the_modules_the_features_share_import_no_feature():
    shared = [p for p in (PACKAGE / "checks").glob("*.py") if p.name != "__init__.py"]
    assert shared
    assert {p.name: feature_imports(p) for p in shared if feature_imports(p)} == {}


def test_the_feature_checker_tells_a_shared_module_from_a_feature(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from netui.checks.dialog_fields import field_text\nfrom netui.checks import report_common\n"
                   "from netui.checks import latency\nimport netui.checks.doctor.runner\n")
    assert feature_imports(bad) == {"latency", "doctor"}


# the layer of each part a check names (netui/checks/__init__.py, Check): the layer that loads it
CHECK_PARTS = {"start": "ui", "screen": "ui", "runner": "engine", "settings": "engine", "report": "engine",
               "stragglers": "model"}


def test_each_check_names_its_parts_by_module_in_their_layers():
    """A check's parts are named, not imported (naming a check loads none of its code), each in
    the check's own folder and of the layer that loads it; and each name resolves."""
    import dataclasses

    from netui import checks

    assert {f.name for f in dataclasses.fields(checks.Check)} >= set(CHECK_PARTS)
    out = []
    for check in checks.all_checks():
        for part, layer in CHECK_PARTS.items():
            ref = getattr(check, part)
            if ref is None:
                continue
            assert isinstance(ref, str), (check.name, part)
            module = ref.partition(":")[0]
            if not module.startswith(f"netui.checks.{check.name}.") or layer_of_module(module) != layer:
                out.append(f"{check.name}.{part} = {ref}: not a {layer} module of netui/checks/{check.name}/")
            assert checks.load(ref) is not None
    assert out == []
    assert [c.name for c in checks.all_checks()] == list(checks.REGISTERED) == list(FEATURES)
