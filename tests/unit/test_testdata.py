"""The test data is part of the repository: tests read it from tests/data/ only, a missing
file fails (never skips), no source names a path outside the checkout (that git hides none
of tests/data/: tests/integration/test_testdata_git.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.testdata import DATA, VENDORED, data_bytes, data_path, data_text

ROOT = DATA.parent.parent
THIS = Path(__file__).resolve()  # not scanned: it holds the patterns, and examples of them
SCANNED = ("tests", "netui", "screenshots", "setup.py", "pyproject.toml")
SUFFIXES = {".py", ".sh", ".toml", ".cfg", ".ini", ".c", ".h"}

OUTSIDE = [
    re.compile("shared" + r"\s*[/\\]\s*" + "fixtures"),
    re.compile(r"""["']shared["']\s*[/,]\s*["']fixtures["']"""),
    re.compile(r"(?<![\w./:-])/" + r"work(?:/|\b)"),
]
PARENTS = re.compile(r"__file__\)(?:\.resolve\(\))?\.parents\[(\d+)\]")


def sources() -> list[Path]:
    found = []
    for name in SCANNED:
        top = ROOT / name
        paths = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in paths:
            rel = path.relative_to(ROOT)
            if rel.parts[:2] == ("tests", "data") or "__pycache__" in rel.parts or path == THIS:
                continue
            if path.is_file() and (path.suffix in SUFFIXES or path.name == "run.sh"):
                found.append(path)
    return found


def outside_paths(path: Path, root: Path = ROOT) -> list[str]:
    """Lines of ``path`` that name a place outside the checkout: the old shared fixture
    directory, an absolute /work path, or a climb above the repository from ``__file__``
    (``parents[N]`` or ``".."`` beyond the root)."""
    rel = path.relative_to(root)
    depth = len(rel.parts)  # parents[depth - 1] of a file is the root
    bad = []
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        where = f"{rel}:{n}: {line.strip()}"
        if any(p.search(line) for p in OUTSIDE):
            bad.append(where)
        elif any(int(m) >= depth for m in PARENTS.findall(line)):
            bad.append(where)
        elif "__file__" in line and "dirname" in line and line.count('".."') >= depth:
            bad.append(where)
    return bad


@pytest.mark.slow
def test_no_source_reads_a_path_outside_the_checkout():
    files = sources()
    assert len(files) > 100 and ROOT / "tests" / "testdata.py" in files and THIS not in files
    bad = [line for path in files for line in outside_paths(path)]
    assert bad == [], "paths outside the repository (put the data in tests/data/):\n" + "\n".join(bad)


@pytest.mark.parametrize("line", [
    'FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"',
    'X = Path("/' + 'work/shared/fixtures/prometheus-procfs/sys")',
    'os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "fixtures")',
    'SYNTH.parent / "shared' + '/fixtures/isc-ethq/ethtool-S_mlx5_core.txt"',
    'ROOT = Path(__file__).parents[3]',
    'ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")',
])
def test_the_check_finds_a_path_outside(tmp_path, line):
    source = tmp_path / "tests" / "unit" / "test_x.py"
    source.parent.mkdir(parents=True)
    source.write_text("import os\n" + line + "\n")
    assert outside_paths(source, tmp_path) == [f"tests/unit/test_x.py:2: {line}"]


def test_the_check_lets_paths_inside_the_checkout_pass(tmp_path):
    lines = ['ROOT = Path(__file__).resolve().parents[2]', 'open("/proc/net/dev")',
             'data_text("prometheus-procfs/proc/stat")', '"see https://example.org/work/x"']
    source = tmp_path / "tests" / "unit" / "test_x.py"
    source.parent.mkdir(parents=True)
    source.write_text("\n".join(lines) + "\n")
    assert outside_paths(source, tmp_path) == []


def test_a_missing_fixture_fails_with_its_name_not_skips():
    for read in (data_path, data_text, data_bytes):
        with pytest.raises(pytest.fail.Exception) as failed:
            read("prometheus-procfs/proc/no-such-file")
        assert "tests/data/prometheus-procfs/proc/no-such-file is missing" in str(failed.value)
        assert "SOURCES.txt" in str(failed.value)
    assert not issubclass(pytest.fail.Exception, pytest.skip.Exception)


def test_a_directory_without_files_is_missing(tmp_path, monkeypatch):
    import tests.testdata as testdata

    (tmp_path / "empty" / "sub").mkdir(parents=True)
    monkeypatch.setattr(testdata, "DATA", tmp_path)
    with pytest.raises(pytest.fail.Exception, match="empty is missing"):
        testdata.data_path("empty")
    (tmp_path / "empty" / "sub" / "f").write_text("")
    assert testdata.data_path("empty") == tmp_path / "empty"


def test_every_vendored_set_is_there_and_has_its_origin_and_license_recorded():
    text = (DATA / "SOURCES.txt").read_text()
    for name in VENDORED:
        files = [p for p in data_path(name).rglob("*") if p.is_file()]
        assert files, name
        section = re.search(rf"^\d\) {re.escape(name)}/.*?(?=^\d\) |\Z)", text, re.M | re.S)
        assert section, f"{name} has no section in tests/data/SOURCES.txt"
        assert re.search(r"^\s+license: ", section.group(0), re.M), name
        assert re.search(r"^\s+used by: ", section.group(0), re.M), name


