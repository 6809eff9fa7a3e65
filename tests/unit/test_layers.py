"""The layers point one way: collectors → model → engine → ui (STYLE.md). Every import of a
netui module, at the top of a file or inside a function, is checked against the layer rules;
a new import across them fails here, not in review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "netui"

# what each layer may import besides itself; the top-level helpers (readlimits, speedups,
# exits) import no layer, and the composition root (cli, benchcmd, doctorcmd, httpsources,
# inventory, config) may import anything
ALLOWED = {
    "model": {"speedups", "_speedups"},
    "collectors": {"model", "speedups", "_speedups", "readlimits"},
    "engine": {"collectors", "model", "readlimits", "speedups", "exits", "config"},
    "ui": {"engine", "model", "readlimits", "exits", "config"},
    "readlimits": set(),
    "speedups": {"_speedups"},
    "exits": set(),
}


def netui_imports(path: Path) -> set[str]:
    """The first component after ``netui.`` of every netui module ``path`` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if node.module != "netui" else [
                f"netui.{a.name}" for a in node.names  # `from netui import cli`: a module, not __version__
                if (PACKAGE / f"{a.name}.py").exists() or (PACKAGE / a.name).is_dir()]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found |= {n.split(".")[1] for n in names if n.startswith("netui.")}
    return found


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def violations() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = layer_of(path)
        if layer not in ALLOWED:
            continue
        for target in sorted(netui_imports(path) - ALLOWED[layer] - {layer}):
            out.append(f"{path.relative_to(PACKAGE.parent)} ({layer}) imports netui.{target}")
    return out


@pytest.mark.slow
def test_every_import_follows_the_layers():
    assert violations() == []


def test_the_checker_sees_an_import_across_the_layers(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from netui.ui.app import make_app\n    import netui.engine.monitor\n"
                   "from netui import cli\n")
    assert netui_imports(bad) == {"ui", "engine", "cli"}
