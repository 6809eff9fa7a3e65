"""Standard streams and signals, as a shell, a terminal or an unlucky user hands them to netui.

The real ``netui`` command, started by a shell with its standard streams redirected
(``>/dev/full``, ``>&-``, ``<&-``, ``2>&-``) on either event loop; ``netui record`` sent
SIGHUP and SIGTERM after it has started recording; a matrix of pair tests over local nodes
(tests/localnodes.py) interrupted with SIGINT after it has measured some pairs. Traffic
stays on 127.0.0.0/8; every process started is ended, also on failure. (The TUI's terminal
after a signal: tests/ui/test_tmux.py.)
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from tests.testdata import PROCFS, data_path

BOUND_S = 120  # a run still going after this long is hung (a bound, not a timing)
LOOPS = ("uvloop", "asyncio")


def clean_env(home: Path, loop: str = "uvloop") -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SSH_", "NETUI_"))}
    env["HOME"] = str(home)  # no ~/.ssh of the machine: an empty home
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["NETUI_EVENT_LOOP"] = loop
    return env


def shell_netui(redirect: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    """``netui ARGS REDIRECT`` as a shell runs it (``exec``: the shell's redirection is
    netui's own); what the streams left open carry is captured."""
    capture = {}
    if ">" not in redirect.replace("2>", ""):
        capture["stdout"] = subprocess.PIPE
    if "2>" not in redirect:
        capture["stderr"] = subprocess.PIPE
    if "<" not in redirect:
        capture["stdin"] = subprocess.DEVNULL
    script = f'exec "$@" {redirect}'
    return subprocess.run(["sh", "-c", script, "sh", sys.executable, "-m", "netui", *args],
                          text=True, timeout=BOUND_S, env=env, **capture)


def tree_snapshot(*extra: str) -> list[str]:
    """``netui snapshot`` of a captured /proc and /sys: quick, no network."""
    tree = data_path(PROCFS)
    return ["snapshot", "--procfs", str(tree / "proc"), "--sysfs", str(tree / "sys"), "--interval", "0.05", *extra]


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    import asyncio

    from tests.replayed import record_lab_replay

    path = tmp_path_factory.mktemp("rec") / "lab.ndjson.gz"
    asyncio.run(record_lab_replay(path))
    return path


# --- standard output that cannot be written --------------------------------------------------

FULL = ("/dev/full", ">/dev/full", "No space left on device")
CLOSED = ("closed", ">&-", "Bad file descriptor")


@pytest.mark.parametrize("stdout", [FULL, CLOSED], ids=lambda s: s[0])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_snapshot_that_cannot_reach_stdout_says_so_and_exits_2(tmp_path, stdout, fmt):
    _, redirect, why = stdout
    r = shell_netui(redirect, *tree_snapshot(*(["--json"] if fmt == "json" else [])), env=clean_env(tmp_path))
    assert (r.returncode, r.stderr) == (2, f"netui: cannot write to standard output: {why}\n")


@pytest.mark.slow
@pytest.mark.parametrize("stdout", [FULL, CLOSED], ids=lambda s: s[0])
def test_on_the_stock_loop_too(tmp_path, stdout):
    _, redirect, why = stdout
    r = shell_netui(redirect, *tree_snapshot("--json"), env=clean_env(tmp_path, "asyncio"))
    assert (r.returncode, r.stderr) == (2, f"netui: cannot write to standard output: {why}\n")


@pytest.mark.parametrize("stdout", [FULL, CLOSED], ids=lambda s: s[0])
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_an_export_that_cannot_reach_stdout_says_so_and_exits_2(tmp_path, recording, stdout, fmt):
    _, redirect, why = stdout
    r = shell_netui(redirect, "export", str(recording), "--format", fmt, env=clean_env(tmp_path))
    assert (r.returncode, r.stderr) == (2, f"netui: cannot write to standard output: {why}\n")


@pytest.mark.parametrize("stdout", [FULL, CLOSED], ids=lambda s: s[0])
@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["bench", "--help"]], ids=" ".join)
def test_help_and_version_that_cannot_reach_stdout_say_so(tmp_path, stdout, argv):
    """argparse drops a failed write of --help without a word: it is said all the same."""
    _, redirect, why = stdout
    r = shell_netui(redirect, *argv, env=clean_env(tmp_path))
    assert (r.returncode, r.stderr) == (2, f"netui: cannot write to standard output: {why}\n")


def test_a_reader_that_goes_away_still_ends_quietly(tmp_path, recording):
    """``| head``: no message, status 141 (or 0 when all of it fitted in the pipe)."""
    env = clean_env(tmp_path)
    netui_p = subprocess.Popen([sys.executable, "-m", "netui", "export", str(recording)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    try:
        head = subprocess.run(["head", "-c", "100"], stdin=netui_p.stdout, capture_output=True, timeout=BOUND_S)
        netui_p.stdout.close()
        err = netui_p.stderr.read()
        netui_p.wait(timeout=BOUND_S)
    finally:
        if netui_p.poll() is None:
            netui_p.kill()
            netui_p.wait()
    assert len(head.stdout) == 100 and netui_p.returncode in (0, 141) and err == b"", (netui_p.returncode, err)


# --- closed standard input or error ------------------------------------------------------------


@pytest.mark.parametrize("loop", [pytest.param("uvloop"), pytest.param("asyncio", marks=pytest.mark.slow)])
@pytest.mark.parametrize("redirect", ["<&-", "2>&-"])
def test_a_snapshot_runs_with_stdin_or_stderr_closed(tmp_path, redirect, loop):
    r = shell_netui(redirect, *tree_snapshot("--json"), env=clean_env(tmp_path, loop))
    assert r.returncode == 0, (r.returncode, r.stderr)
    doc = json.loads(r.stdout)
    assert [n["state"] for n in doc["nodes"]] == ["up"] and doc["event_loop"] == loop
    if redirect == "<&-":
        assert r.stderr == ""


@pytest.mark.slow
@pytest.mark.parametrize("loop", LOOPS)
def test_record_runs_with_every_standard_stream_closed(tmp_path, loop):
    out = tmp_path / "r.ndjson.gz"
    r = shell_netui("<&- >&- 2>&-", "record", "-o", str(out), "--count", "2", *tree_snapshot()[1:],
                    env=clean_env(tmp_path, loop))
    assert r.returncode == 0
    lines = gzip.decompress(out.read_bytes()).splitlines()
    assert [json.loads(line)["type"] for line in lines].count("tick") == 2


# --- signals to netui record -------------------------------------------------------------------


def signals_as_a_shell_leaves_them() -> None:
    """(A ``preexec_fn``.) The signals sent here at their default action in the child, whatever
    the runner of the tests inherited: under ``nohup``, SIGHUP is ignored, and a shell's
    background job (``&``) ignores SIGINT, and a child inherits what is ignored."""
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def start_recording(out: Path, env: dict, *, ignore_hup: bool = False, stderr=subprocess.PIPE) -> subprocess.Popen:
    """``netui record`` of the captured tree every 0.1 s, once its file holds a tick."""

    def before() -> None:
        signals_as_a_shell_leaves_them()
        if ignore_hup:  # as nohup starts it
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    p = subprocess.Popen([sys.executable, "-m", "netui", "record", "-o", str(out), *tree_snapshot()[1:-2],
                          "--interval", "0.1"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=stderr, text=True, env=env, preexec_fn=before)
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline and p.poll() is None:
        try:  # flushed after every tick: readable while written
            if b'"tick"' in zlib.decompressobj(wbits=31).decompress(out.read_bytes()):
                break
        except (OSError, zlib.error):
            pass
        time.sleep(0.05)
    assert p.poll() is None, p.communicate()
    return p


def ended(p: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = p.communicate(timeout=BOUND_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, err


def assert_complete(out: Path) -> None:
    """A finished gzip file (its trailer read back), ending with a whole tick."""
    lines = gzip.decompress(out.read_bytes()).splitlines()
    assert json.loads(lines[-1])["type"] == "tick"


@pytest.mark.parametrize("loop, signum", [
    ("uvloop", signal.SIGHUP),  # the case of the fast loop
    pytest.param("asyncio", signal.SIGHUP, marks=pytest.mark.slow),
    pytest.param("uvloop", signal.SIGTERM, marks=pytest.mark.slow),
    pytest.param("asyncio", signal.SIGTERM, marks=pytest.mark.slow),
], ids=lambda v: signal.Signals(v).name if isinstance(v, int) else v)
def test_record_ended_by_sighup_or_sigterm_finishes_its_file(tmp_path, loop, signum):
    """A closed SSH session or tmux pane sends SIGHUP: the recording ends as with SIGTERM,
    the file finished (gzip trailer, last tick whole), exit status 0."""
    out = tmp_path / "r.ndjson.gz"
    p = start_recording(out, clean_env(tmp_path, loop))
    p.send_signal(signum)
    rc, err = ended(p)
    assert rc == 0 and "netui: recorded" in err, (rc, err)
    assert_complete(out)


@pytest.mark.slow
def test_record_whose_terminal_is_gone_finishes_and_exits_0(tmp_path):
    """The SSH session closes: the terminal netui says things on is gone (a write to it fails,
    EIO), then SIGHUP comes. The file is finished, and saying so to nobody changes nothing."""
    import pty

    out = tmp_path / "r.ndjson.gz"
    master, slave = pty.openpty()
    try:
        p = start_recording(out, clean_env(tmp_path), stderr=slave)
    finally:
        os.close(slave)
        os.close(master)  # the terminal goes
    p.send_signal(signal.SIGHUP)
    rc, _ = ended(p)
    assert rc == 0
    assert_complete(out)


@pytest.mark.slow
def test_record_under_nohup_goes_on_after_sighup(tmp_path):
    out = tmp_path / "r.ndjson.gz"
    p = start_recording(out, clean_env(tmp_path), ignore_hup=True)
    p.send_signal(signal.SIGHUP)
    size = out.stat().st_size
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline and p.poll() is None and out.stat().st_size == size:
        time.sleep(0.05)  # until the next flushed tick: still recording
    assert p.poll() is None and out.stat().st_size > size
    p.send_signal(signal.SIGTERM)
    rc, err = ended(p)
    assert rc == 0 and "netui: recorded" in err, (rc, err)
    assert_complete(out)


# --- Ctrl-C during a matrix ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def shell_nodes(tmp_path_factory):
    """An ssh_config whose every host is this one, over a real SSH server on 127.0.0.1
    (tests/shell_ssh.py); ended with the module."""
    directory = tmp_path_factory.mktemp("nodes")
    server = subprocess.Popen([sys.executable, "-m", "tests.shell_ssh", str(directory)], stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        assert server.stdout.readline().strip() == "ready"
        yield directory
    finally:
        server.terminate()
        try:
            server.wait(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_ctrl_c_in_a_matrix_prints_what_was_measured_marked_interrupted(shell_nodes, tmp_path, fmt):
    """Three nodes, six one-second tests on loopback; SIGINT once three have a result: the
    report of those three, said to be cancelled, exit status 130."""
    env = clean_env(shell_nodes)
    err_path = tmp_path / "stderr"
    with open(err_path, "w+") as err:
        p = subprocess.Popen([sys.executable, "-m", "netui", "bench", "iperf3", "n1", "n2", "n3", "--matrix",
                              "--duration", "1", "--test-net", "lo", "-F", str(shell_nodes / "ssh_config"),
                              *(["--json"] if fmt == "json" else [])],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                             preexec_fn=signals_as_a_shell_leaves_them)
        try:
            deadline = time.monotonic() + BOUND_S
            while time.monotonic() < deadline and p.poll() is None and "· 3/6 tests" not in err_path.read_text():
                time.sleep(0.05)
            assert p.poll() is None, err_path.read_text()
            p.send_signal(signal.SIGINT)
            out, _ = p.communicate(timeout=BOUND_S)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        said = err_path.read_text()
    assert p.returncode == 130, said
    done = int(re.search(r"interrupted after (\d) of 6 tests", said).group(1))
    assert 3 <= done < 6, said
    if fmt == "json":
        doc = json.loads(out)
        assert doc["cancelled"] is True and doc["tests_done"] == done and doc["summary"].startswith(
            f"Cancelled after {done} of 6 tests")
        measured = [r for r in doc["pairs"] if r["gbps"] is not None]
        assert len(measured) == done and all(r["gbps"] > 0 for r in measured)
    else:
        assert f"Cancelled after {done} of 6 tests" in out
        # (a pair "ran" where the verdict is inconclusive: loopback's speed is no pass mark)
        assert len(re.findall(r"^n\d→n\d  (pass|ran|FAIL) ", out, re.M)) == done, out


# --- ProxyCommand and Match exec from ssh_config -----------------------------------------------------

RELAY = """\
import os, socket, sys, threading
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
def up():
    while d := os.read(0, 65536):
        s.sendall(d)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
said = False
while d := s.recv(65536):
    os.write(1, d)
    if not said:  # as `ssh -W` warns: a line on stderr once the session is under way
        os.write(2, b"Warning: Permanently added the host key\\n")
        said = True
"""


@pytest.mark.slow
def test_a_proxycommand_that_exits_at_once_says_so_with_its_stderr(tmp_path):
    """Not `down (Broken pipe)`: the command's status and the last line it wrote to stderr,
    or why it could not start."""
    config = tmp_path / "ssh_config"
    config.write_text("Host failing\n  ProxyCommand sh -c \"echo 'bastion: no route to host' >&2; exit 1\"\n"
                      "Host missing\n  ProxyCommand /nonexistent/proxy %h %p\n")
    r = subprocess.run([sys.executable, "-m", "netui", "snapshot", "-F", str(config), "--connect-timeout", "10",
                        "failing", "missing"], capture_output=True, text=True, timeout=BOUND_S,
                       env=clean_env(tmp_path), stdin=subprocess.DEVNULL)
    assert r.returncode == 1, r.stderr
    states = {line.split(":")[0]: line for line in r.stdout.splitlines() if not line.startswith(" ")}
    # "down (failed at HH:MM:SS: what)"
    assert re.search(r"down \(failed at [\d:]+: ProxyCommand exited: status 1: bastion: no route to host",
                     states["failing"]), r.stdout
    assert re.search(r"down \(failed at [\d:]+: ProxyCommand /nonexistent/proxy: No such file or directory",
                     states["missing"]), r.stdout


@pytest.mark.slow
def test_a_proxycommand_that_writes_stderr_mid_session_still_connects(shell_nodes, tmp_path):
    """The command's stderr is its own, never read as SSH data (asyncssh's own ProxyCommand
    took that warning for a packet: "Max packet size exceeded")."""
    relay = tmp_path / "relay.py"
    relay.write_text(RELAY)
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  ProxyCommand {sys.executable} {relay} %h %p\n"
                      + (shell_nodes / "ssh_config").read_text().split("\n", 1)[1])
    r = subprocess.run([sys.executable, "-m", "netui", "snapshot", "-F", str(config), "--connect-timeout", "10",
                        "n1", "n2"], capture_output=True, text=True, timeout=BOUND_S, env=clean_env(shell_nodes),
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [line.split()[:2] for line in r.stdout.splitlines() if not line.startswith(" ")] == [
        ["n1:", "up"], ["n2:", "up"]]


@pytest.mark.slow
def test_match_exec_runs_on_this_host_as_the_user_and_dev_null_reads_no_config(tmp_path):
    """What docs/watching.md says: a `Match exec` command of ~/.ssh/config runs here, as the
    user running netui, when netui reads the config for a host; `-F /dev/null` (as with ssh)
    reads no config, so nothing runs."""
    ran = tmp_path / "ran"
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text(f'Match exec "id -u >> {ran}"\n  Port 1\n')
    counts = []
    for flags in ([], ["-F", os.devnull]):
        r = subprocess.run([sys.executable, "-m", "netui", "snapshot", *flags, "--connect-timeout", "1",
                            "--interval", "0.1", "127.0.0.1:9"], capture_output=True, text=True, timeout=BOUND_S,
                           env=clean_env(tmp_path), stdin=subprocess.DEVNULL)
        assert r.returncode == 1 and re.search(r"127\.0\.0\.1: down \(failed at [\d:]+: connection refused", r.stdout), r.stdout + r.stderr
        counts.append(ran.read_text().split() if ran.exists() else [])
    assert counts[0] and set(counts[0]) == {str(os.getuid())}  # it ran, as this user
    assert counts[1] == counts[0]  # -F /dev/null: nothing more ran
