"""Finding, signalling and waiting for the processes of a lab (plain /proc, no psutil)."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable, Iterable


def cmdline_pids(fragment: str) -> list[int]:
    """Pids whose command line contains `fragment` (like `pgrep -f`), never our own."""
    needle = fragment.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ")
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(entry))
    return found


def is_gone(pid: int) -> bool:
    """True when `pid` has exited: no such process, or a zombie waiting to be reaped.

    Killed sshds that were reparented stay defunct for a while (lab-notes pitfall 10);
    they hold no sockets and no namespace, so they count as gone.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def send_signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def kill_until_gone(find: Callable[[], Iterable[int]], timeout_s: float = 5.0,
                    reap: Callable[[], None] = lambda: None) -> list[int]:
    """SIGKILL whatever `find()` returns, again and again, until it finds nothing alive.

    Looping matters: a listener may fork a child (a new SSH connection) between the
    moment its namespace is listed and the moment it is killed. Returns the pids still
    alive at the deadline (normally none). `reap` is called while waiting so the caller
    can collect its own children.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        reap()
        alive = [pid for pid in set(find()) if not is_gone(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        send_signal(alive, signal.SIGKILL)
        time.sleep(0.01)


def port_open(address: str, port: int, timeout_s: float = 0.2) -> bool:
    """True when a TCP connection to address:port is accepted."""
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            return True
    except OSError:
        return False
