"""Hostile input: nothing hangs, nothing reads without bound, every limit says how to raise it.

Thousands of failing nodes, non-finite numbers, huge ranges, a configuration that is a
device or a FIFO, a 2 GB file in a --procfs tree, ssh_config loops. Network traffic goes
only to 127.0.0.0/8 (a port nobody listens on).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from netui.collectors.source import BaseSource
from netui.collectors.ssh import SshSource
from netui.collectors.ssh_connect import SshSettings
from netui.engine.monitor import Monitor
from netui.model.node import NodeState
from tests.command import netui
from tests.testdata import PROCFS, data_path

HANG_BOUND_S = 300  # a run still going after this long is hung (a bound, not a timing)


def closed_port() -> int:
    """A loopback TCP port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SSH_", "NETUI_"))}
    env["HOME"] = str(home)  # no ~/.ssh of the machine: an empty home
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    return env


# --- stopping ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("run", range(3))
def test_snapshot_of_thousands_of_refusing_nodes_ends(tmp_path, run):
    """Thousands of nodes whose connections are refused at once: the snapshot reports them
    all down and ends. Before, cancellations that landed while a connection attempt was
    failing came back as that failure, the node retried forever, and close() waited for it."""
    port = closed_port()
    config = tmp_path / "ssh_config"
    config.write_text("")
    # 127.0.0.0/8 is all loopback: 4,000 distinct nodes, each refused at once
    result = netui("snapshot", "--connect-timeout", "2", "-F", str(config), f"127.1.[0-15].[1-250]:{port}",
                   env=clean_env(tmp_path), timeout=HANG_BOUND_S)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stdout.splitlines() if not line.startswith(" ")]
    assert len(lines) == 4000, (len(lines), result.stderr[-3000:])
    # every node reported as a failure; which failure depends on how far each connection got
    # before the snapshot's deadline (refused, or no answer in time on a loaded machine)
    states = collections.Counter(line.split(": ", 1)[1].split("  health")[0] for line in lines)
    assert all(state.startswith("down (") for state in states), states.most_common(5)
    assert "did not end in time" not in result.stderr


class LosesCancellation:
    """A connector whose connect turns a cancellation into a connection error, as asyncssh's
    connect does on Python 3.11 when the cancellation meets a failing attempt (wait_for)."""

    def __init__(self) -> None:
        self.settings = SshSettings(backoff_first_s=0.01, backoff_max_s=0.02)
        self.attempts = 0

    async def connect(self, alias, user, port):
        self.attempts += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise ConnectionRefusedError(111, "Connection refused") from None

    async def close(self) -> None:
        pass


def test_a_node_task_stops_when_its_cancellation_comes_back_as_a_failure():
    async def main():
        connector = LosesCancellation()
        source = SshSource("n1", "127.0.0.1", connector)
        monitor = Monitor([source], interval_s=0.5, history_s=10)
        monitor._start_push()
        while connector.attempts == 0:
            await asyncio.sleep(0.01)
        await monitor.close(wait_s=30)
        return monitor.abandoned, connector.attempts

    abandoned, attempts = asyncio.run(asyncio.wait_for(main(), HANG_BOUND_S))
    assert abandoned == []
    assert attempts == 1  # stopped: never a retry after the cancellation


class NeverStops(BaseSource):
    """A push source whose task ignores cancellation until released (a stuck library)."""

    push = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.released = False
        self.closed = False

    async def run(self, sink) -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if self.released:
                    raise

    async def close(self) -> None:
        self.closed = True


@pytest.mark.slow
def test_close_is_bounded_and_names_the_nodes_it_gave_up_on():
    async def main():
        stuck, fine = NeverStops("stuck-node"), NeverStops("fine-node")
        fine.released = True
        monitor = Monitor([stuck, fine], interval_s=0.5, history_s=10)
        monitor._start_push()
        await asyncio.sleep(0)
        tasks = list(monitor._tasks)
        await monitor.close(wait_s=0.5)
        abandoned = list(monitor.abandoned)
        stuck.released = True  # let the test's loop end
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return abandoned, stuck.closed and fine.closed

    abandoned, closed = asyncio.run(asyncio.wait_for(main(), HANG_BOUND_S))
    assert abandoned == ["stuck-node"]
    assert closed  # the sources are closed all the same


# --- a slow reader ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("unbuffered", [True, False], ids=["PYTHONUNBUFFERED", "buffered"])
def test_a_report_longer_than_the_pipe_reaches_a_slow_reader_whole(tmp_path, unbuffered):
    """The report goes out whole when a write of it comes back short. Here the pipe is made
    non-blocking (a flag of the pipe, shared with netui) and read only once full, so that
    netui's first write of the report is short, every time: under PYTHONUNBUFFERED print()
    took it as whole and the rest was lost without a word (578 of 4,000 node lines once,
    from a pipe interrupted while full); buffered, it raised BlockingIOError."""
    import fcntl
    import termios
    import time

    config = tmp_path / "ssh_config"
    config.write_text("")
    env = clean_env(tmp_path)
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    read_end, write_end = os.pipe()
    pipe_bytes = fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)  # the kernel's smallest: a page
    os.set_blocking(write_end, False)
    with open(tmp_path / "stderr", "w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "netui", "snapshot", "--json", "--connect-timeout", "2",
                                 "-F", str(config), f"127.1.0.[1-20]:{closed_port()}"],
                                stdin=subprocess.DEVNULL, stdout=write_end, stderr=err, env=env)
        os.close(write_end)
        try:
            # nothing read until the pipe is full (or netui has ended): then all of it, to the end
            deadline = time.monotonic() + HANG_BOUND_S  # a bound, not a timing
            queued = bytearray(4)
            while proc.poll() is None and time.monotonic() < deadline:
                fcntl.ioctl(read_end, termios.FIONREAD, queued)
                if int.from_bytes(queued, sys.byteorder) >= pipe_bytes:
                    break
                time.sleep(0.05)
            out = b""
            while chunk := os.read(read_end, 65536):
                out += chunk
            proc.wait(timeout=HANG_BOUND_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(read_end)
        err.seek(0)
        stderr = err.read()
    assert proc.returncode == 1, stderr
    assert len(out) > pipe_bytes  # longer than the pipe: the first write was short
    doc = json.loads(out)
    assert [n["name"] for n in doc["nodes"]] == [f"127.1.0.{i}" for i in range(1, 21)]
    assert "Traceback" not in stderr, stderr


# --- numbers -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ("snapshot", "--interval", "inf"),
    ("snapshot", "--interval", "nan"),
    ("snapshot", "--interval", "-1"),
    ("snapshot", "--interval", "1e300"),
    ("snapshot", "--scrape-timeout", "inf"),
    ("snapshot", "--scrape-timeout", "1e309"),
    ("snapshot", "--connect-timeout=-inf"),
    ("--history", "inf"),
    ("record", "-o", "x.ndjson.gz", "--interval", "NaN"),
    ("doctor", "--timeout", "inf"),
    ("doctor", "--interval", "inf"),
    ("bench", "ping", "a", "b", "--ping-interval", "inf"),
    ("bench", "ping", "a", "b", "--max-loss", "nan"),
    ("bench", "ping", "a", "b", "--max-loss", "-5"),
    ("bench", "ping", "a", "b", "--rtt-factor", "inf"),
    ("bench", "iperf3", "a", "b", "--threshold-gbps", "inf"),
    ("bench", "ib_write_bw", "a", "b", "--gid-index", "-1"),
])
def test_non_finite_or_out_of_range_numbers_are_usage_errors(args, tmp_path):
    result = netui(*args, env=clean_env(tmp_path))
    assert result.returncode == 2, (result.stdout, result.stderr)
    last = result.stderr.strip().splitlines()[-1]
    assert "error: argument" in last and ("not a finite number" in last or "must be" in last), last
    assert "Traceback" not in result.stderr


def test_the_pair_dialog_refuses_non_finite_numbers():
    from netui.checks.dialog_fields import finite_number

    with pytest.raises(ValueError, match="not a finite number"):
        finite_number("inf", "interval")
    assert finite_number("0.5", "interval") == 0.5


# --- how many nodes ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_huge_range_is_refused_with_how_to_raise_the_limit(tmp_path):
    result = netui("snapshot", "n[1-100000]", env=clean_env(tmp_path))
    assert result.returncode != 0
    assert "too many nodes" in result.stderr and "--max-nodes" in result.stderr
    assert "10,000" in result.stderr


@pytest.mark.slow
def test_max_nodes_raises_the_limit_up_to_a_hard_maximum(tmp_path):
    from netui.inventory import InventoryError, build_targets

    assert len(build_targets(["n[1-10000]"])) == 10_000
    with pytest.raises(InventoryError, match="--max-nodes"):
        build_targets(["n[1-10001]"])
    with pytest.raises(InventoryError, match="--max-nodes"):
        build_targets(["n[1-6000]", "m[1-6000]"])  # the limit holds across patterns
    assert len(build_targets(["n[1-20000]"], max_nodes=20_000)) == 20_000
    result = netui("snapshot", "--max-nodes", "200000", "n1", env=clean_env(tmp_path))
    assert result.returncode == 2 and "at most 100,000" in result.stderr


def test_a_cartesian_range_is_counted_not_built():
    from netui.inventory import InventoryError, build_targets

    # ten million names if built: refused from NodeSet's count, before any list
    with pytest.raises(InventoryError, match="too many nodes.*--max-nodes"):
        build_targets(["rack[1-1000]-n[1-10000]"])


# --- the configuration file --------------------------------------------------------------------


@pytest.mark.slow
def test_config_that_is_a_device_is_refused_not_read_forever(tmp_path):
    result = netui("snapshot", "--config", "/dev/zero", "--procfs", str(tmp_path), "--sysfs", str(tmp_path),
                   env=clean_env(tmp_path), limit_memory=2 << 30)
    assert result.returncode != 0
    assert "/dev/zero: not a regular file" in result.stderr
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr


def test_config_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    from netui.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(str(fifo))  # before: open() waited for a writer, for ever


def test_config_that_is_huge_is_refused(tmp_path):
    from netui.config import MAX_CONFIG_BYTES, ConfigError, load_config

    big = tmp_path / "config.toml"
    with open(big, "wb") as f:
        f.truncate(2 << 30)  # sparse: no disk used
    with pytest.raises(ConfigError, match=f"larger than {MAX_CONFIG_BYTES:,} bytes"):
        load_config(str(big))
    with pytest.raises(ConfigError, match="(?i)is a directory"):
        load_config(str(tmp_path))


# --- a --procfs tree ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_huge_file_in_a_procfs_tree_is_skipped_with_a_problem(tmp_path):
    """A 2 GB (sparse) file in the tree: read no further than the cap, named in the node's
    problems, and the rest of the tree still read. Under a 1.5 GB address-space limit, which
    reading the whole file could not fit in."""
    tree = data_path(PROCFS)
    proc = tmp_path / "proc"
    shutil.copytree(tree / "proc", proc)
    shutil.copy(tree / "proc" / "pid_26231_net" / "netstat", proc / "net" / "netstat")
    with open(proc / "net" / "snmp", "wb") as f:
        f.truncate(2 << 30)
    result = netui("snapshot", "--json", "--interval", "0.2", "--procfs", str(proc), "--sysfs", str(tree / "sys"),
                   env=clean_env(tmp_path), limit_memory=1536 << 20, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    (node,) = json.loads(result.stdout)["nodes"]
    assert node["state"] == "up"
    assert any(i["name"] == "eth0" for i in node["interfaces"])  # the rest of the tree
    assert "net/snmp: larger than 16 MiB, skipped" in node["error"]


def test_tree_reader_reads_regular_files_only(tmp_path):
    from netui.collectors.local import read_text

    os.mkfifo(tmp_path / "fifo")
    problems: list[str] = []
    assert read_text(str(tmp_path / "fifo"), problems) is None  # never waited on
    assert read_text("/dev/zero", problems) is None  # never read without end
    assert problems == []


# --- ssh_config --------------------------------------------------------------------------------


class Reports:
    """A sink that keeps what a node's task reports."""

    interval_s = 0.5

    def __init__(self) -> None:
        self.reports: list[tuple[NodeState, str | None]] = []

    def report(self, name, state, reason) -> None:
        self.reports.append((state, reason))

    def observe(self, name, sample) -> None:
        raise AssertionError("no sample expected")


def run_node(config: Path, alias: str, port: int | None = None) -> list[tuple[NodeState, str | None]]:
    """One node's task run to its end (bounded): what it reported."""
    from netui.collectors.ssh_connect import SshConnector

    async def main():
        connector = SshConnector(SshSettings(config_paths=[str(config)], connect_timeout_s=2,
                                             backoff_first_s=0.01, backoff_max_s=0.05))
        sink = Reports()
        try:
            await SshSource(alias, alias, connector, port=port).run(sink)
        finally:
            await connector.close()
        return sink.reports

    return asyncio.run(asyncio.wait_for(main(), HANG_BOUND_S / 5))


def the_failure(reports) -> tuple[NodeState, str]:
    failures = [(s, r) for s, r in reports if s is not NodeState.CONNECTING]
    assert len(failures) == 1, failures  # said once: never retried
    return failures[0]


def test_an_include_loop_is_a_permanent_error_naming_the_file_and_line(tmp_path):
    main, other = tmp_path / "ssh_config", tmp_path / "other.conf"
    main.write_text("# the fleet\nHost *\n    Include " + str(other) + "\n")
    other.write_text("User ops\nInclude " + str(main) + "\n")
    state, reason = the_failure(run_node(main, "127.0.0.1", closed_port()))
    assert state is NodeState.CONFIG_ERROR
    assert reason.startswith(f"{other} line 2: Include loop:") or reason.startswith(f"{main} line 3: Include loop:")
    assert "Recursion" not in reason and "netui-ssh-config" not in reason


def test_a_bad_line_is_named_in_the_users_own_file_not_a_copy(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("".join(f"Host other{i}\n    Port 2{i:03d}\n" for i in range(50))
                      + "Host 127.0.0.1\n    Port notanumber\n")
    state, reason = the_failure(run_node(config, "127.0.0.1"))
    assert state is NodeState.CONFIG_ERROR
    assert reason.startswith(f"{config} line 102: ")  # the user's line, not the reduced copy's
    assert "Port" in reason and "netui-ssh-config" not in reason


@pytest.mark.parametrize("text, alias, loop", [
    ("Host node1\n    HostName 127.0.0.1\n    ProxyJump node1\n", "node1", "node1 → node1"),
    # the classic: every host through the bastion, the bastion included
    ("Host bastion\n    HostName 127.0.0.1\nHost *\n    ProxyJump bastion\n", "node1", "bastion → bastion"),
    ("Host a\n    ProxyJump b\nHost b\n    ProxyJump a\n", "a", "a → b → a"),
])
def test_a_proxyjump_loop_is_a_permanent_error_naming_the_line(tmp_path, text, alias, loop):
    config = tmp_path / "ssh_config"
    config.write_text(text)
    state, reason = the_failure(run_node(config, alias))
    assert state is NodeState.CONFIG_ERROR
    assert f"ProxyJump loop: {loop}" in reason
    assert reason.startswith(f"{config} line ")
    assert "Recursion" not in reason


def test_proxyjump_hops_are_read_in_order():
    from netui.collectors.ssh_connect import hop_parts, jump_hops

    assert jump_hops("a, ops@b:2222,ssh://c") == ["a", "ops@b:2222", "ssh://c"]
    assert hop_parts("ops@b:2222") == ("ops", "b", 2222)
    assert hop_parts("ssh://root@[fe80::1]:22") == ("root", "fe80::1", 22)
    with pytest.raises(ValueError):
        jump_hops("a,,b")


@pytest.mark.slow
def test_a_huge_wildcard_config_is_indexed_by_prefix(tmp_path):
    """100,000 wildcard Host blocks: a host is matched against the few that share its
    prefix, and the reduced copy keeps exactly the blocks asyncssh would apply."""
    from netui.collectors.ssh_config import ConfigIndex

    config = tmp_path / "ssh_config"
    config.write_text("".join(f"Host n{i}-*\n    Port {1000 + i % 60000}\n" for i in range(100_000))
                      + "Host *\n    User ops\n")
    index = ConfigIndex([str(config)])
    try:
        (reduced,) = index.paths_for("n4242-gpu")
        text = Path(reduced).read_text()
        assert "Host n4242-*\n" in text and "Host n4243-*" not in text and "User ops" in text
        assert text.count("Host ") == 2
        (source,) = index._files
        assert len(source.wild) == 1  # only "Host *" is tried for every host
        assert index.origin(reduced, 3) == (str(config), 2 * 4242 + 2)
    finally:
        index.close()


def test_the_index_is_built_off_the_event_loop(tmp_path, monkeypatch):
    import threading

    from netui.collectors import ssh_connect as ssh

    config = tmp_path / "ssh_config"
    config.write_text("Host x\n    Port 1\n")
    threads = []
    real = ssh.ConfigIndex

    def spy(paths):
        threads.append(threading.current_thread())
        return real(paths)

    monkeypatch.setattr(ssh, "ConfigIndex", spy)

    async def main():
        connector = ssh.SshConnector(SshSettings(config_paths=[str(config)]))
        await connector._index_configs()
        await connector.close()

    asyncio.run(main())
    assert threads and threads[0] is not threading.main_thread()


def test_a_refused_node_stays_down_while_it_is_retried_never_connecting_again(tmp_path):
    """Each retry of a dead node keeps its failure (without the countdown, while the retry
    runs): the grid shows it down throughout, not flickering to "connecting" and back."""
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n    StrictHostKeyChecking yes\n")
    port = closed_port()

    async def main() -> list[tuple[NodeState, str | None]]:
        from netui.collectors.ssh_connect import SshConnector

        connector = SshConnector(SshSettings(config_paths=[str(config)], connect_timeout_s=2,
                                             backoff_first_s=0.01, backoff_max_s=0.02))
        eight = asyncio.Event()

        class Counted(Reports):
            def report(self, name, state, reason) -> None:
                super().report(name, state, reason)
                if len(self.reports) >= 8:
                    eight.set()

        sink = Counted()
        task = asyncio.ensure_future(SshSource("dead", "127.0.0.1", connector, port=port).run(sink))
        waited = asyncio.ensure_future(eight.wait())
        try:  # (4 tries take some 50 ms; a task that ended early ends the wait too)
            await asyncio.wait([task, waited], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        finally:
            task.cancel()
            waited.cancel()
            await asyncio.gather(task, waited, return_exceptions=True)
            await connector.close()
        return sink.reports

    reports = asyncio.run(asyncio.wait_for(main(), HANG_BOUND_S / 5))
    assert len(reports) >= 8, reports
    assert reports[0] == (NodeState.CONNECTING, None)
    assert all(state is NodeState.DOWN for state, _ in reports[1:]), reports
    # a failure with its countdown, then the same failure while it is tried again, in turn
    assert [r for _, r in reports[1::2]] == [r for _, r in reports[1::2] if r.startswith("connection refused (retrying in ")]
    assert {r for _, r in reports[2::2]} == {"connection refused"}
