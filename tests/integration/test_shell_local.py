"""Guarded commands on this host (the --local node): output, gate, timeout, and no orphans.

The same script runs on SSH nodes (tests/lab/test_pairtest_lab.py checks it there).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
import uuid

import pytest

from netui.collectors.shell import NOT_STARTED, LocalShell, guarded, run_guarded


def marked_sleep() -> tuple[str, str]:
    """A sleep whose command line nobody else has: (command, what to look for in /proc)."""
    seconds = f"{300 + uuid.uuid4().int % 10_000}.{os.getpid() % 1000}"
    return f"sleep {seconds}", f"sleep\0{seconds}"


def alive(needle: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
                with open(f"/proc/{entry}/stat") as f:
                    state = f.read().rpartition(")")[2].split()[0]
            except OSError:
                continue
            if needle.encode() in cmdline and state not in ("Z", "X"):
                found.append(int(entry))
    return found


async def gone(needle: str, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not alive(needle):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_output_and_exit_status():
    result = await run_guarded(LocalShell("here"), "sh -c " + shlex.quote("echo out; echo err >&2; exit 3"), 5)
    assert (result.exit_status, result.stdout, result.stderr, result.timed_out) == (3, "out\n", "err\n", False)


async def test_a_flood_of_output_is_kept_to_the_limit_and_said(monkeypatch):
    from netui.collectors import shell

    monkeypatch.setattr(shell, "OUTPUT_LIMIT", 1000)
    flood = "head -c 300000 /dev/zero | tr '\\0' x; echo; echo done >&2"
    result = await run_guarded(LocalShell("here"), "sh -c " + shlex.quote(flood), 10)
    assert result.exit_status == 0 and not result.timed_out  # read to the end: the node was never blocked
    assert result.stdout == "x" * 1000
    assert result.stderr.startswith("done\n")
    assert result.stderr.endswith("netui: 299001 more characters of stdout were dropped (it keeps 1000)\n")


@pytest.mark.slow
async def test_the_timeout_kills_the_command():
    command, needle = marked_sleep()
    t0 = time.monotonic()
    result = await run_guarded(LocalShell("here"), command, 1)
    assert result.timed_out and result.exit_status == 124
    assert time.monotonic() - t0 < 3
    assert await gone(needle)


@pytest.mark.slow
async def test_stop_kills_a_running_command_and_its_group():
    command, needle = marked_sleep()
    running = await LocalShell("here").start(guarded(f"sh -c {shlex.quote(command + '; echo never')}", 60))
    deadline = time.monotonic() + 3
    while not alive(needle) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert alive(needle)
    await running.stop()
    assert await gone(needle), "the sleep outlived its stop"
    assert "never" not in running.stdout


@pytest.mark.slow
async def test_end_of_stdin_alone_kills_it():
    """What happens when netui dies or the SSH channel goes: stdin closes, nothing else."""
    command, needle = marked_sleep()
    running = await LocalShell("here").start(guarded(command, 60))
    while not alive(needle):
        await asyncio.sleep(0.02)
    running._close_stdin()  # no signal, no channel close: only EOF
    assert await gone(needle)
    result = await running.result(3)
    assert result.exit_status not in (0, None)


@pytest.mark.slow
async def test_gated_commands_wait_for_go_and_take_its_arguments():
    shell = LocalShell("here")
    running = await shell.start(guarded("printf '[%s]'", 10, gate_timeout_s=10, preamble="echo probed"))
    assert await running.wait_gated(3)
    assert running.preamble == "probed\n" and running.stdout == ""
    await asyncio.sleep(0.2)
    assert running.stdout == ""  # nothing runs before go
    running.go("198.18.0.1", "-x", "3")
    result = await running.result(3)
    assert result.exit_status == 0 and result.stdout == "[198.18.0.1][-x][3]"


async def test_a_staged_command_never_told_to_go_ends_with_its_channel():
    running = await LocalShell("here").start(guarded("echo ran", 10, gate_timeout_s=30))
    assert await running.wait_gated(3)
    await running.stop()
    assert running.exit_status == NOT_STARTED and running.stdout == ""


async def test_go_arguments_are_never_shell_code():
    running = await LocalShell("here").start(guarded("echo", 10, gate_timeout_s=10))
    try:
        for bad in ("a b", "$(reboot)", "x;y", "`id`", "*", ""):
            with pytest.raises(ValueError):
                running.go(bad)
    finally:
        await running.stop()
