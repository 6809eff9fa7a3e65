"""netui's command line run in a child process, as a user runs it: ``python -m netui ARGS``
from the repository's root, stdin closed, stdout and stderr captured as text.

``timeout`` only stops a hang (a hung command fails the test either way, just later); a test
that asserts a command *ends* within a bound passes that bound explicitly."""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HANG_S = 120.0


def netui(*args: str, timeout: float = HANG_S, env: dict | None = None,
          limit_memory: int | None = None) -> subprocess.CompletedProcess:
    """``python -m netui ARGS``; ``env`` is the child's whole environment (None: this one's),
    ``limit_memory`` its address-space limit in bytes."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_memory, limit_memory))

    return subprocess.run([sys.executable, "-m", "netui", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout, env=env, stdin=subprocess.DEVNULL,
                          preexec_fn=limit if limit_memory is not None else None)


async def netui_async(*args: str, timeout: float = HANG_S) -> tuple[int, str, str]:
    """``python -m netui ARGS`` while the test's own servers keep answering on this loop:
    (exit status, stdout, stderr), undecodable bytes kept as surrogates. A child still running
    at the timeout is killed and the timeout raised."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "netui", *args, cwd=REPO,
                                                stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode, out.decode("utf-8", "surrogateescape"), err.decode("utf-8", "surrogateescape")
