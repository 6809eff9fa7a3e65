"""netui as a user runs it: the real command in an 80×24 tmux pane, keyboard only."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (tests/run.sh installs it as root)")


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session: str, text: str, timeout_s: float = 15) -> str:
    deadline = time.monotonic() + timeout_s
    screen = ""
    while time.monotonic() < deadline:
        screen = capture(session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; screen was:\n{screen}")


@pytest.fixture
def tmux_session():
    name = f"netui-test-{uuid.uuid4().hex[:8]}"
    yield name
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


@pytest.mark.slow
def test_netui_live_in_80x24_tmux(tmux_session):
    cmd = f"{sys.executable} -m netui --interval 0.5"
    subprocess.run(["tmux", "new-session", "-d", "-s", tmux_session, "-x", "80", "-y", "24", cmd], check=True)
    screen = wait_for(tmux_session, " up ")
    host = socket.gethostname()
    lines = screen.splitlines()
    assert lines[0].lstrip().startswith("netui") and "1 node: 1 up" in lines[0]
    assert any(line.startswith("Node") and "RX" in line and "TX" in line for line in lines)
    assert any(line.startswith(host[:12]) for line in lines)
    assert all(len(line) <= 80 for line in lines)
    assert "Quit" in lines[-1]
    # the row updates: rates appear after the second sample
    screen = wait_for(tmux_session, "b/s      ")
    subprocess.run(["tmux", "send-keys", "-t", tmux_session, "Enter"], check=True)
    screen = wait_for(tmux_session, "CPU softirq")
    assert f"› {host}" in screen.splitlines()[0]
    subprocess.run(["tmux", "send-keys", "-t", tmux_session, "Escape"], check=True)
    wait_for(tmux_session, "Node ")
    subprocess.run(["tmux", "send-keys", "-t", tmux_session, "q"], check=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        alive = subprocess.run(["tmux", "has-session", "-t", tmux_session], capture_output=True).returncode == 0
        if not alive:
            break
        time.sleep(0.2)
    assert not alive, "netui did not quit on q"


@pytest.mark.slow
def test_netui_replay_of_a_lab_recording_with_seek(tmux_session, tmp_path):
    from tests.replayed import lab_replay

    path = lab_replay(tmp_path / "lab.ndjson.gz")
    cmd = f"{sys.executable} -m netui replay {path}"
    subprocess.run(["tmux", "new-session", "-d", "-s", tmux_session, "-x", "110", "-y", "30", cmd], check=True)
    wait_for(tmux_session, "/ 0:38")
    subprocess.run(["tmux", "send-keys", "-t", tmux_session, "p"], check=True)
    screen = wait_for(tmux_session, "‖ 1×")
    assert "4 nodes: 4 up" in screen.splitlines()[0]
    before = next(line for line in screen.splitlines() if "/ 0:38" in line)
    at = int(before.split("/ 0:38")[0].split()[-1].split(":")[1])
    subprocess.run(["tmux", "send-keys", "-t", tmux_session, "Right"], check=True)
    screen = wait_for(tmux_session, f"0:{at + 10:02d} / 0:38")
    # 10 s later the traffic is on, node3 retransmits: its Why says so (the status bar's
    # straggler text is cut first where the badges need the room)
    assert re.search(r"node3 .* retr \d", screen), screen
    subprocess.run(["tmux", "send-keys", "-t", tmux_session, "S-Left"], check=True)
    wait_for(tmux_session, "0:00 / 0:38")
    subprocess.run(["tmux", "send-keys", "-t", tmux_session, "q"], check=True)


def drops_per_s(session: str, node: str) -> str | None:
    """The Drops/s cell of ``node``'s row, None while the grid does not show it."""
    lines = capture(session).splitlines()
    header = next((line for line in lines if line.startswith("Node ") and "Drops/s" in line), None)
    if header is None:
        return None
    end = header.index("Drops/s") + len("Drops/s")  # the column is right-aligned under its label
    for line in lines:
        words = line.split()
        if words[:1] == ["●"]:
            words = words[1:]
        if words[:1] == [node]:
            cell = line[:end].split()
            return cell[-1] if cell else None
    return None


@pytest.mark.slow
def test_ctrl_z_suspends_netui_and_fg_brings_it_back_updating(tmux_session):
    """As any terminal program: Ctrl-Z gives the shell back (the job is stopped, the screen
    restored), ``fg`` brings the grid back, and it goes on updating: over a fleet whose drop
    rates change at every poll (tests/reorder_app.py: n0 drops 1, 101, 201, 301, 1… a
    second, poll after poll), n0's Drops/s takes one value after another after fg."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(["tmux", "new-session", "-d", "-s", tmux_session, "-x", "100", "-y", "24",
                    f"{bash} --norc --noprofile"], check=True)
    keys = ["tmux", "send-keys", "-t", tmux_session]
    subprocess.run(keys + [f"PS1='shell$ '; cd {repo} && {sys.executable} -m tests.reorder_app 0.3", "Enter"],
                   check=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and drops_per_s(tmux_session, "n0") in (None, "—"):
        time.sleep(0.1)  # until the rates show (two polls)
    assert drops_per_s(tmux_session, "n0") not in (None, "—"), capture(tmux_session)
    subprocess.run(keys + ["C-z"], check=True)
    screen = wait_for(tmux_session, "Stopped")
    assert "Node " not in screen  # the terminal is the shell's again
    subprocess.run(keys + ["fg", "Enter"], check=True)
    wait_for(tmux_session, "Node ")
    # the value fg repaints, then those that poll after poll put there: three in a row,
    # each another than the one before, are two polls after fg at least
    seen = [drops_per_s(tmux_session, "n0")]
    deadline = time.monotonic() + 15  # a bound on waiting, not a measure: the polls are 0.3 s apart
    while time.monotonic() < deadline and len(seen) < 3:
        time.sleep(0.1)
        now = drops_per_s(tmux_session, "n0")
        if now not in (None, "—") and now != seen[-1]:
            seen.append(now)
    assert len(seen) >= 3, f"the grid did not update after fg (n0's Drops/s: {seen}):\n{capture(tmux_session)}"
    subprocess.run(keys + ["q"], check=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [line for line in capture(tmux_session).splitlines() if line.strip()]
        if lines and lines[-1].strip() == "shell$" and not any(line.startswith("Node ") for line in lines):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"netui did not quit on q after fg:\n{capture(tmux_session)}")


@pytest.mark.slow
def test_ctrl_z_without_a_shell_to_come_back_to_says_so_and_goes_on(tmux_session):
    """netui under a shell without job control (as ``ssh -t host netui`` runs it): a stopped
    netui could never be resumed, so Ctrl-Z says so, and netui goes on."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = f"{sys.executable} -m netui --interval 0.5; echo netui-ended; sleep 30"
    subprocess.run(["tmux", "new-session", "-d", "-s", tmux_session, "-x", "100", "-y", "24",
                    f"{bash} --norc --noprofile -c '{script}'"], check=True)
    keys = ["tmux", "send-keys", "-t", tmux_session]
    wait_for(tmux_session, "b/s      ")
    subprocess.run(keys + ["C-z"], check=True)
    deadline = time.monotonic() + 15
    said = ""
    while time.monotonic() < deadline and "nothing could bring it back" not in said:
        time.sleep(0.2)
        # the notice's lines, after its left edge, joined (it wraps as the pane's width has it)
        said = " ".join(line.split("▌", 1)[1].strip() for line in capture(tmux_session).splitlines() if "▌" in line)
    assert "nothing could bring it back" in said, capture(tmux_session)
    subprocess.run(keys + ["q"], check=True)
    wait_for(tmux_session, "netui-ended")


def cursor_node(session: str) -> str | None:
    """The node on the row that wears the cursor: the one row with a background colour no
    other row has (from the pane's escape codes)."""
    out = subprocess.run(["tmux", "capture-pane", "-p", "-e", "-t", session], capture_output=True, text=True).stdout
    rows = {}
    for raw in out.splitlines()[2:]:  # under the status bar and the grid's header
        words = re.sub(r"\x1b\[[0-9;:]*m", "", raw).split()
        words = words[1:] if words[:1] == ["●"] else words
        if words and re.fullmatch(r"n\d", words[0]):
            rows[words[0]] = set(re.findall(r"\x1b\[(?:[0-9;:]*;)?(48;[0-9;:]+)m", raw))
    unique = [n for n, bgs in rows.items() if bgs - set().union(*(b for m, b in rows.items() if m != n))]
    return unique[0] if len(unique) == 1 else None


@pytest.mark.slow
def test_space_marks_two_nodes_while_worst_first_reorders_the_rows(tmux_session):
    """Every row moves at every poll (tests/reorder_app.py). The node marked is the one the
    cursor was on, and the cursor stays on it: two marks, the two nodes the user chose."""
    repo = Path(__file__).resolve().parents[2]
    cmd = f"cd {repo} && {sys.executable} -m tests.reorder_app 0.3"
    subprocess.run(["tmux", "new-session", "-d", "-s", tmux_session, "-x", "80", "-y", "24", cmd], check=True)
    wait_for(tmux_session, "n3")
    keys = ["tmux", "send-keys", "-t", tmux_session]
    chosen = []
    for move in ("Down", "Down"):
        subprocess.run(keys + [move], check=True)
        node = None
        for _ in range(50):  # until the cursor's row is told apart (bounded)
            time.sleep(0.1)
            node = cursor_node(tmux_session)
            if node is not None and node not in chosen:
                break
        assert node is not None and node not in chosen, capture(tmux_session)
        subprocess.run(keys + ["Space"], check=True)
        chosen.append(node)
        screen = wait_for(tmux_session, f"● {node}")
        time.sleep(0.7)  # two polls: the rows move under the cursor
        assert cursor_node(tmux_session) == node, capture(tmux_session)
    screen = wait_for(tmux_session, "2 marked")
    marked = sorted(line.split()[1] for line in screen.splitlines() if line.startswith("● "))
    assert marked == sorted(chosen), screen
    subprocess.run(keys + ["Escape"], check=True)  # Esc unmarks them all
    for _ in range(50):
        screen = capture(tmux_session)
        if "marked" not in screen.splitlines()[0]:
            break
        time.sleep(0.1)
    assert "marked" not in screen.splitlines()[0] and "● n" not in screen, screen
    subprocess.run(keys + ["q"], check=True)


@pytest.mark.slow
def test_q_while_recording_says_where_the_file_went(tmux_session, tmp_path):
    """w records into the current directory; q quits, and the shell is told the file's path,
    its length and size, as netui record says."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = f"cd {tmp_path} && {sys.executable} -m netui --interval 0.5; echo netui-ended; sleep 30"
    subprocess.run(["tmux", "new-session", "-d", "-s", tmux_session, "-x", "80", "-y", "24",
                    f"{bash} --norc --noprofile -c '{script}'"], check=True)
    keys = ["tmux", "send-keys", "-t", tmux_session]
    wait_for(tmux_session, "b/s      ")
    subprocess.run(keys + ["w"], check=True)
    wait_for(tmux_session, "● REC")
    files = list(tmp_path.glob("netui-*.ndjson.gz"))
    assert len(files) == 1
    deadline = time.monotonic() + 15  # a bound on waiting: two ticks recorded at least
    while time.monotonic() < deadline and files[0].stat().st_size < 600:
        time.sleep(0.2)
    subprocess.run(keys + ["q"], check=True)
    screen = wait_for(tmux_session, "netui-ended")
    # -J: the line that wraps at 80 columns, joined back
    said = subprocess.run(["tmux", "capture-pane", "-p", "-J", "-t", tmux_session], capture_output=True,
                          text=True).stdout
    size = files[0].stat().st_size
    from netui.model import units

    assert re.search(r"netui: recorded \d+ samples in \d+ ticks \(\d+ s, " + re.escape(units.si(size, "B")) + r"\) to "
                     + re.escape(str(files[0])), said), screen
