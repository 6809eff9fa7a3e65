"""No file of tests/data/ is hidden from git by an ignore rule: every fixture a test reads is
committed (the rest of the checks on tests/data/ are tests/unit/test_testdata.py)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.testdata import DATA

ROOT = DATA.parent.parent


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_no_file_of_tests_data_is_hidden_by_an_ignore_rule():
    ignored = subprocess.run(["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--", "tests/data"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    ignored = [p for p in ignored if "__pycache__" not in p]
    assert ignored == [], "git ignores these test data files (they would not be committed): " + ", ".join(ignored)
