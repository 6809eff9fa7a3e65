"""The event loop of a real `netui` run: `netui --version` says which, `netui snapshot --json`
reports the loop it ran on, NETUI_EVENT_LOOP switches it, a bad value is a clear error; and
subprocesses and signal handlers on either loop (the choice itself: tests/unit/test_eventloop.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess

import pytest

from netui.engine import eventloop
from netui.engine.eventloop import ENV, run, running
from tests.command import netui

def loop_env(loop: str | None) -> dict:
    """This environment with NETUI_EVENT_LOOP set to ``loop`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "NETUI_EVENT_LOOP"}
    if loop is not None:
        env["NETUI_EVENT_LOOP"] = loop
    return env


uvloop = pytest.importorskip("uvloop", reason="uvloop is a dependency of netui on CPython outside Windows")


@pytest.mark.slow
@pytest.mark.parametrize(("loop", "expected", "says"), [
    (None, "uvloop", f"event loop uvloop {uvloop.__version__}"),
    ("asyncio", "asyncio", "event loop asyncio (NETUI_EVENT_LOOP=asyncio)"),
])
def test_snapshot_runs_on_the_loop_that_version_names(loop, expected, says):
    version = netui("--version", env=loop_env(loop))
    assert version.returncode == 0 and says in version.stdout, version.stdout + version.stderr
    r = netui("snapshot", "--json", "--interval", "0.2", env=loop_env(loop))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["event_loop"] == expected
    assert doc["nodes"][0]["state"] == "up" and doc["nodes"][0]["interfaces"]  # the run really sampled
    assert "warning" not in r.stderr.lower(), r.stderr


@pytest.mark.slow
def test_a_bad_loop_name_is_a_clear_error_not_a_traceback(tmp_path):
    for command in (["snapshot", "--json"], ["record", "-o", str(tmp_path / "r.gz"), "--count", "1"]):
        r = netui(*command, env=loop_env("libuv"))
        assert r.returncode == 2, command  # an input error
        assert r.stderr.strip() == ("netui: NETUI_EVENT_LOOP='libuv' is not a loop netui knows: use auto, uvloop, "
                                    "asyncio (unset = auto: uvloop when installed)"), command
        assert r.stdout == "" and not list(tmp_path.iterdir())


@pytest.mark.parametrize("env", [{}, {ENV: "asyncio"}])
def test_subprocesses_and_signal_handlers_work_on_either_loop(env):
    """What netui does on the loop besides sockets: pair tests start local commands with
    asyncio subprocesses (engine/shell.py LocalShell), `netui record` stops on SIGTERM."""

    async def main():
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", "read x; echo got $x; echo oops >&2; exit 3", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
        out, err = await asyncio.wait_for(proc.communicate(b"hello\n"), 10)
        got = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, got.set)
        try:
            signal.raise_signal(signal.SIGUSR1)
            await asyncio.wait_for(got.wait(), 5)
        finally:
            loop.remove_signal_handler(signal.SIGUSR1)
        return running(), proc.returncode, out, err

    name, rc, out, err = run(main(), environ=env)
    assert name == eventloop.choose(env)
    assert (rc, out, err) == (3, b"got hello\n", b"oops\n")
