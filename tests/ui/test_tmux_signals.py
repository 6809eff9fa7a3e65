"""A signal that ends the TUI leaves the terminal as it found it: the real command in a tmux
pane, ended by SIGTERM, SIGHUP or SIGINT sent to its process once it shows the grid."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("bash") is None,
                                reason="tmux or bash is not installed (tests/run.sh installs them as root)")

BOUND_S = 30  # a bound on waiting, not a measure


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def pane(session: str, fmt: str) -> str:
    return subprocess.run(["tmux", "display", "-p", "-t", session, fmt], capture_output=True, text=True).stdout.strip()


def wait_for(session: str, text: str) -> str:
    deadline = time.monotonic() + BOUND_S
    screen = ""
    while time.monotonic() < deadline:
        screen = capture(session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; screen was:\n{screen}")


@pytest.fixture
def tmux_session():
    name = f"netui-sig-{uuid.uuid4().hex[:8]}"
    yield name
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def replay_args(tmp_path) -> str:
    from tests.replayed import lab_replay

    return f"replay {lab_replay(tmp_path / 'lab.ndjson.gz')}"


@pytest.mark.slow
@pytest.mark.parametrize("what, signum", [
    ("live", signal.SIGTERM), ("live", signal.SIGHUP), ("live", signal.SIGINT), ("replay", signal.SIGTERM),
], ids=lambda v: v if isinstance(v, str) else signal.Signals(v).name)
def test_a_signal_that_ends_netui_restores_the_terminal(tmux_session, tmp_path, what, signum):
    args = "--interval 0.5" if what == "live" else replay_args(tmp_path)
    pidfile = tmp_path / "pid"
    subprocess.run(["tmux", "new-session", "-d", "-s", tmux_session, "-x", "100", "-y", "24",
                    f"{shutil.which('bash')} --norc --noprofile"], check=True)
    command = (f"PS1='shell$ '; bash -c 'echo $$ > {pidfile}; exec {sys.executable} -m netui {args}'; "
               "echo netui-''ended=$?")  # the line typed does not hold what it prints
    subprocess.run(["tmux", "send-keys", "-t", tmux_session, command, "Enter"], check=True)
    wait_for(tmux_session, "Quit")
    assert pane(tmux_session, "#{alternate_on} #{cursor_flag}") == "1 0"  # netui's screen, as it draws it
    pid = int(pidfile.read_text())
    try:
        import os

        os.kill(pid, signum)
        screen = wait_for(tmux_session, "netui-ended=")
    finally:
        subprocess.run(["kill", "-KILL", str(pid)], capture_output=True)  # if it is still there
    assert f"netui-ended={128 + signum}" in screen, screen
    # the shell's screen again: out of the alternate screen, cursor shown, no mouse tracking
    assert pane(tmux_session, "#{alternate_on} #{cursor_flag} #{mouse_any_flag}") == "0 1 0"
