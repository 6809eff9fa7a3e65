"""The type checker over netui, as configured in pyproject.toml ``[tool.mypy]``.

The contracts (netui/checks/__init__.py) and the model modules listed there are checked
strictly and must be clean. The rest is checked normally against tests/unit/mypy_baseline.txt,
the errors each file still has: a file may lose errors (then lower its line, or drop it), never
gain one, and a file absent from the baseline must be clean."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("mypy_baseline.txt")
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+(?::\d+)?: error: ", re.MULTILINE)

pytest.importorskip("mypy", reason="mypy comes with netui's `test` extra")


def read_baseline() -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in BASELINE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            path, count = line.split()
            counts[path] = int(count)
    return counts


def errors_per_file(output: str) -> Counter[str]:
    return Counter(m["path"] for m in ERROR.finditer(output))


def test_no_file_gains_a_type_error() -> None:
    with tempfile.TemporaryDirectory(prefix="netui-mypy-") as cache:
        run = subprocess.run(
            [sys.executable, "-m", "mypy", "--cache-dir", cache, "--no-error-summary",
             "--hide-error-context", "--no-pretty"],
            cwd=ROOT, capture_output=True, text=True, env={**os.environ, "MYPY_FORCE_COLOR": "0"})
    assert run.returncode in (0, 1), run.stderr or run.stdout  # 2: mypy itself failed
    found = errors_per_file(run.stdout)
    baseline = read_baseline()
    worse = {path: (n, baseline.get(path, 0)) for path, n in found.items() if n > baseline.get(path, 0)}
    lines = [line for line in run.stdout.splitlines()
             if (m := ERROR.match(line)) is not None and m["path"] in worse]
    assert not worse, ("files with more type errors than tests/unit/mypy_baseline.txt allows "
                       "(found, allowed): " + repr(worse) + "\n" + "\n".join(lines))
    # the baseline only moves down: a file that lost errors says so in it, so they cannot return
    better = {path: (found.get(path, 0), n) for path, n in baseline.items() if found.get(path, 0) < n}
    assert not better, ("files with fewer type errors than tests/unit/mypy_baseline.txt says "
                        "(found, allowed): lower their counts there, or drop a clean file: " + repr(better))
