"""The event loop of a real `netui` run: `netui --version` says which, `netui snapshot --json`
reports the loop it ran on, NETUI_EVENT_LOOP switches it, a bad value is a clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

uvloop = pytest.importorskip("uvloop", reason="uvloop is a dependency of netui on CPython outside Windows")


def netui(*args: str, loop: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NETUI_EVENT_LOOP"}
    if loop is not None:
        env["NETUI_EVENT_LOOP"] = loop
    return subprocess.run([sys.executable, "-m", "netui", *args], capture_output=True, text=True, env=env, timeout=30)


@pytest.mark.parametrize(("loop", "expected", "says"), [
    (None, "uvloop", f"event loop uvloop {uvloop.__version__}"),
    ("asyncio", "asyncio", "event loop asyncio (NETUI_EVENT_LOOP=asyncio)"),
])
def test_snapshot_runs_on_the_loop_that_version_names(loop, expected, says):
    version = netui("--version", loop=loop)
    assert version.returncode == 0 and says in version.stdout, version.stdout + version.stderr
    r = netui("snapshot", "--json", "--interval", "0.2", loop=loop)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["event_loop"] == expected
    assert doc["nodes"][0]["state"] == "up" and doc["nodes"][0]["interfaces"]  # the run really sampled
    assert "warning" not in r.stderr.lower(), r.stderr


def test_a_bad_loop_name_is_a_clear_error_not_a_traceback(tmp_path):
    for command in (["snapshot", "--json"], ["record", "-o", str(tmp_path / "r.gz"), "--count", "1"]):
        r = netui(*command, loop="libuv")
        assert r.returncode == 2, command  # an input error
        assert r.stderr.strip() == ("netui: NETUI_EVENT_LOOP='libuv' is not a loop netui knows: use auto, uvloop, "
                                    "asyncio (unset = auto: uvloop when installed)"), command
        assert r.stdout == "" and not list(tmp_path.iterdir())
