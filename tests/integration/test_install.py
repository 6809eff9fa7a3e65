"""The README's first command, as a new user on a stock Debian runs it: the system Python
(/usr/bin/python3, which refuses `pip install` outside a venv), a clean HOME, a copy of the
repository, and the command exactly as the README prints it, in a tmux pane. It must
install netui and show this host's grid; `q` quits it with status 0.

Slow (a fresh venv installs netui's dependencies from the package index: a minute or two).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"


def readme_first_command() -> str:
    """The command in the README's first shell block (under "The two commands")."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The two commands", 1)[1]
    match = re.search(r"```sh\n(.+?)\n```", section, re.S)
    assert match, "the README has no first command"
    return match.group(1).strip()


def system_python_unusable() -> str | None:
    if shutil.which("tmux") is None:
        return "tmux is not installed (tests/run.sh installs it as root)"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"no system Python at {SYSTEM_PYTHON}"
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import ensurepip, venv"], capture_output=True)
    if probe.returncode != 0:
        return "the system Python has no venv module (Debian package python3-venv; tests/run.sh installs it as root)"
    return None


def test_the_readme_names_a_command_that_a_system_python_allows():
    command = readme_first_command()
    assert "pip install" not in command.split("&&")[0], command  # not straight into the system Python
    assert command.endswith("netui"), command  # ... and it starts netui watching this host


@pytest.mark.slow
@pytest.mark.skipif(system_python_unusable() is not None, reason=str(system_python_unusable()))
def test_the_readme_first_command_installs_and_runs_netui_with_the_system_python(tmp_path):
    command = readme_first_command()
    source = tmp_path / "netui"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        relative = Path(os.fsdecode(name))
        if not (ROOT / relative).is_file():
            continue
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, source / relative)
    home = tmp_path / "home"
    home.mkdir()
    status = tmp_path / "status"
    # the system Python first on PATH, nothing of this test run's environment but the
    # package index settings (pip's own config files stay where they are)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    session = f"netui-install-{uuid.uuid4().hex[:8]}"
    script = f"cd {source} && {command}; echo $? > {status}"
    tmux = ["tmux", "-L", session]
    try:
        subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "100", "-y", "30",
                        "env", "-i", *[f"{k}={v}" for k, v in env.items()], "sh", "-c", script], check=True)
        deadline = time.monotonic() + 600
        screen = ""
        while time.monotonic() < deadline and not status.exists():
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", session], capture_output=True,
                                    text=True).stdout
            if "1 node: 1 up" in screen:
                break
            time.sleep(0.5)
        assert "1 node: 1 up" in screen, f"netui's grid never appeared; the pane showed:\n{screen}"
        subprocess.run([*tmux, "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not status.exists():
            time.sleep(0.2)
        assert status.read_text().strip() == "0"
        # the venv was made from the system Python, not from one of this test run's
        assert (source / ".venv" / "bin" / "python").resolve() == Path(SYSTEM_PYTHON).resolve()
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
