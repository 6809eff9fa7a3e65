"""The test data that lives in the repository (tests/data/), by path relative to it.

Every fixture a test reads is vendored under tests/data/ (origins and licenses:
tests/data/SOURCES.txt). A missing one is a broken checkout, never a reason to skip: these
helpers FAIL the test (or the collection of its module) with a message naming the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"

# The vendored third-party sets (see SOURCES.txt), each a directory of tests/data/.
PROCFS = "prometheus-procfs"
ETHQ = "isc-ethq"
IPERF3_PYTHON = "iperf3-python"
ISSUE_QUOTES = "issue-quotes"
VENDORED = (PROCFS, ETHQ, IPERF3_PYTHON, ISSUE_QUOTES)


def missing_message(path: Path) -> str:
    try:
        shown = path.relative_to(DATA.parent.parent)
    except ValueError:
        shown = path
    return (f"test data {shown} is missing: fixtures are part of the repository (tests/data/, "
            f"origins in tests/data/SOURCES.txt); restore it with `git checkout -- tests/data`")


def data_path(rel: str) -> Path:
    """The path of ``tests/data/<rel>``, a file or a directory holding at least one file;
    fails (does not skip) when it is not there."""
    path = DATA / rel
    present = path.is_file() or (path.is_dir() and any(p.is_file() for p in path.rglob("*")))
    if not present:
        pytest.fail(missing_message(path), pytrace=False)
    return path


def data_text(rel: str) -> str:
    return data_path(rel).read_text()


def data_bytes(rel: str) -> bytes:
    return data_path(rel).read_bytes()
