"""lldpd in the lab: one daemon per switch and per node, each with its own control socket.

    lldpd -d -u <dir>/lldpd.socket -p <dir>/lldpd.pid -I <ports> -O <dir>/lldpd.conf

The configuration file sets a 1 s transmit interval (the default is 30 s), so neighbours
appear within a second or two; a switch also gets its system name ("leaf1") and sends its
interface name as port ID ("swp3"), as data-centre switches do.

netui on a node runs a plain `lldpctl`, which talks to the default socket of Debian's build,
/run/lldpd.socket. Every process of a node runs in a mount namespace of its own (the one
`ip netns exec` makes), where the node's socket is bind-mounted over that path (node.py), so
the node's `lldpctl` reaches the node's lldpd. A bind mount needs something at the target:
when the host runs no lldpd, an empty file stands in at /run/lldpd.socket while a lab with
lldpd is up (the host's own `lldpctl` then says it cannot connect, as without it).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

LLDPD = "/usr/sbin/lldpd"
LLDPCLI = "/usr/sbin/lldpcli"
DEFAULT_SOCKET = Path("/run/lldpd.socket")  # `strings liblldpctl.so`: Debian 1.0.16's default
CHROOT = Path("/run/lldpd")  # privilege separation: every instance shares the package's one
TX_INTERVAL_S = 1
READY_TIMEOUT_S = 10.0


def available() -> bool:
    return os.path.exists(LLDPD) and shutil.which("lldpctl") is not None


def write_config(path: Path, *, system_name: str | None = None) -> None:
    lines = [f"configure lldp tx-interval {TX_INTERVAL_S}"]
    if system_name is not None:
        lines += [f"configure system hostname {system_name}",
                  "configure lldp portidsubtype ifname"]
    path.write_text("\n".join(lines) + "\n")


def argv(directory: Path, interfaces: str) -> list[str]:
    """lldpd in the foreground, its socket, pid file and configuration in `directory`."""
    return [LLDPD, "-d", "-u", str(directory / "lldpd.socket"),
            "-p", str(directory / "lldpd.pid"), "-I", interfaces,
            "-O", str(directory / "lldpd.conf")]


def wait_for_socket(socket: Path, deadline: float, alive) -> None:
    """Return once lldpd's control socket exists; RuntimeError if lldpd died or time ran out."""
    while not socket.is_socket():
        if not alive():
            raise RuntimeError(f"lldpd exited before creating {socket}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"lldpd did not create {socket} in time")
        time.sleep(0.01)


def ensure_mount_point() -> None:
    """Make sure /run/lldpd.socket exists (an empty file when no host lldpd runs)."""
    CHROOT.mkdir(mode=0o755, exist_ok=True)
    if not DEFAULT_SOCKET.exists():
        DEFAULT_SOCKET.touch(mode=0o600)


def release_mount_point(other_labs_use_it: bool) -> None:
    """Remove the stand-in file made by ensure_mount_point, unless another lab needs it."""
    if other_labs_use_it:
        return
    try:
        if DEFAULT_SOCKET.is_file() and DEFAULT_SOCKET.stat().st_size == 0:
            DEFAULT_SOCKET.unlink()
    except OSError:
        pass
