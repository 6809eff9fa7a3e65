"""One node of the lab: a network namespace with its own hostname and an sshd.

Every process of a node — sshd, `exec`, `popen` — starts as

    ip netns exec netui-<lab>-node<K> unshare --uts sh -c 'hostname "$0" && exec "$@"' nodeK …

so it sees the node's network (lo, eth0; `ip netns exec` also remounts /sys) and the node's
hostname (lab-notes pitfall 7). Each step execs the next, so the Popen pid is the pid of
the command itself.

The fault helpers are all reversible, and `heal()` reverses whichever were used.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import lldp, network, ssh_files
from .processes import kill_until_gone, port_open, send_signal

if TYPE_CHECKING:
    from .cluster import Lab

EXEC_TIMEOUT_S = 30.0
SSHD_STOP_TIMEOUT_S = 3.0
# The node's hostname; and root's ~/.bashrc hidden from the node's shells (in the mount
# namespace `ip netns exec` gives each command, so nothing outside the node sees it). bash run by
# sshd reads ~/.bashrc even for `ssh node cmd`, and a host's own rc is no part of the lab: a
# pyenv init there runs `pyenv rehash`, which waits up to a minute on a lock file that a killed
# session left behind, and every lab login waited with it.
_SET_HOSTNAME = ('hostname "$0" && { [ ! -f "$HOME/.bashrc" ] || mount --bind /dev/null "$HOME/.bashrc" '
                 '2>/dev/null || :; } && exec "$@"')
# With lldpd in the node: its socket over the default path, so a plain `lldpctl` finds it
# (lldp.py). Skipped while the socket does not exist yet (lldpd itself starts that way).
_BIND_LLDP_SOCKET = '{{ [ ! -S {sock} ] || mount --bind {sock} {default} 2>/dev/null || :; }} && '
LLDPD_READY_TIMEOUT_S = 10.0


class LabError(RuntimeError):
    """The lab could not do what was asked (sshd did not start, leftovers remain, …)."""


class LabNode:
    """Node K of a lab: name 'nodeK', address 198.18.0.x, namespace netui-<lab>-nodeK."""

    def __init__(self, lab: Lab, k: int, *, leaf: int | None = None, port: int | None = None):
        self.lab = lab
        self.k = k
        self.name = f"node{k}"
        self.namespace = network.namespace_name(lab.name, k)
        self.leaf = leaf  # two-tier lab: cabled to leaf<leaf>'s swp<port>; None in a flat lab
        self.port = port
        self._sshd: subprocess.Popen | None = None
        self._lldpd: subprocess.Popen | None = None
        self._processes: list[subprocess.Popen] = []
        self._faults: set[str] = set()

    def __repr__(self) -> str:
        return f"<LabNode {self.name} {self.namespace} {self.address}>"

    @property
    def address(self) -> str:
        """The node's IPv4 address on eth0, e.g. '198.18.0.1'."""
        return network.node_address(self.lab.first_host + self.k - 1)

    @property
    def directory(self) -> Path:
        return self.lab.directory / self.name

    @property
    def host_key(self) -> Path:
        return self.directory / "ssh_host_ed25519_key"

    @property
    def sshd_config(self) -> Path:
        return self.directory / "sshd_config"

    @property
    def sshd_log(self) -> Path:
        """sshd's stderr (`-e`): one line per connection, errors at start-up."""
        return self.directory / "sshd.log"

    @property
    def sshd_pid(self) -> int | None:
        """Pid of the listening sshd, None when it is not running."""
        return self._sshd.pid if self.sshd_running else None

    @property
    def sshd_running(self) -> bool:
        return self._sshd is not None and self._sshd.poll() is None

    # ---- running things in the node ----------------------------------------------
    def command(self, args: str | Sequence[str]) -> list[str]:
        """argv that runs `args` inside the node; a string is run by `sh -c`."""
        argv = ["sh", "-c", args] if isinstance(args, str) else list(args)
        wrapper = _SET_HOSTNAME
        if self.lab.lldp:
            wrapper = _BIND_LLDP_SOCKET.format(sock=shlex.quote(str(self.lldp_socket)),
                                               default=lldp.DEFAULT_SOCKET) + wrapper
        return ["ip", "netns", "exec", self.namespace,
                "unshare", "--uts", "sh", "-c", wrapper, self.name, *argv]

    def exec(self, args: str | Sequence[str], *, timeout_s: float = EXEC_TIMEOUT_S,
             check: bool = False, **kw) -> subprocess.CompletedProcess:
        """Run `args` inside the node and wait at most `timeout_s` seconds.

        Output is captured as text unless the caller passes stdout/stderr; stdin is
        /dev/null unless `input` is given. On timeout the process is killed and
        subprocess.TimeoutExpired raised.
        """
        if "input" not in kw:
            kw.setdefault("stdin", subprocess.DEVNULL)
        if not {"stdout", "stderr", "capture_output"} & kw.keys():
            kw["capture_output"] = True
        kw.setdefault("text", True)
        return subprocess.run(self.command(args), timeout=timeout_s, check=check, **kw)

    def popen(self, args: str | Sequence[str], **kw) -> subprocess.Popen:
        """Start `args` inside the node in the background; the lab kills it at teardown.

        stdin/stdout/stderr default to /dev/null (a pipe nobody reads would block it).
        """
        for stream in ("stdin", "stdout", "stderr"):
            kw.setdefault(stream, subprocess.DEVNULL)
        kw.setdefault("start_new_session", True)
        proc = subprocess.Popen(self.command(args), **kw)
        self._processes.append(proc)
        return proc

    def pids(self) -> list[int]:
        """Every process in the node's namespace (what `ip netns pids` lists)."""
        return network.namespace_pids([self.namespace])[self.namespace]

    def tracked_processes(self) -> list[subprocess.Popen]:
        return [p for p in [self._sshd, self._lldpd, *self._processes] if p is not None]

    def forget_processes(self) -> None:
        self._sshd = None
        self._lldpd = None
        self._processes = []

    # ---- lldpd (two-tier lab) ------------------------------------------------------
    @property
    def lldp_socket(self) -> Path:
        """The node's lldpd control socket; /run/lldpd.socket inside the node."""
        return self.directory / "lldpd.socket"

    @property
    def lldpd_running(self) -> bool:
        return self._lldpd is not None and self._lldpd.poll() is None

    def start_lldpd(self) -> None:
        """Start the node's lldpd on eth0 (no-op when it runs); call before start_sshd()."""
        if self.lldpd_running:
            return
        lldp.write_config(self.directory / "lldpd.conf")
        self.lldp_socket.unlink(missing_ok=True)  # a dead lldpd's, or wait_for_lldpd sees it
        with open(self.directory / "lldpd.log", "ab") as log:
            self._lldpd = subprocess.Popen(
                self.command(lldp.argv(self.directory, "eth0")),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)

    def stop_lldpd(self) -> None:
        """End the node's lldpd (a fault: `lldpctl` then cannot connect); heal() restarts it."""
        if self._lldpd is not None and self._lldpd.poll() is None:
            self._lldpd.kill()
            self._lldpd.wait(timeout=SSHD_STOP_TIMEOUT_S)
        self._lldpd = None
        self._faults.add("lldpd_stopped")

    def wait_for_lldpd(self, deadline: float) -> None:
        try:
            lldp.wait_for_socket(self.lldp_socket, deadline, lambda: self.lldpd_running)
        except RuntimeError as e:
            raise LabError(f"{self.name}: {e}") from None

    def _reap(self) -> None:
        for proc in self.tracked_processes():
            proc.poll()

    # ---- sshd --------------------------------------------------------------------
    def write_sshd_config(self) -> None:
        ssh_files.write_sshd_config(self.sshd_config, address=self.address,
                                    host_key=self.host_key,
                                    pid_file=self.directory / "sshd.pid",
                                    authorized_keys=self.lab.authorized_keys)

    def start_sshd(self, wait: bool = True) -> None:
        """Start the listener (no-op when it runs); with `wait`, return once it accepts."""
        if self.sshd_running:
            return
        with open(self.sshd_log, "ab") as log:  # never the caller's stdio (pitfall 8)
            self._sshd = subprocess.Popen(
                self.command([ssh_files.SSHD, "-D", "-e", "-f", str(self.sshd_config)]),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        if wait:
            self.wait_for_sshd(time.monotonic() + 10.0)

    def wait_for_sshd(self, deadline: float) -> None:
        """Return once port 22 accepts connections; LabError (with sshd's log) otherwise."""
        while True:
            if not self.sshd_running:
                raise LabError(f"sshd of {self.name} is not running:\n{self._log_tail()}")
            if port_open(self.address, 22):
                return
            if time.monotonic() > deadline:
                raise LabError(f"sshd of {self.name} does not accept on {self.address}:22"
                               f"\n{self._log_tail()}")
            time.sleep(0.01)

    def stop_sshd(self) -> None:
        """End the listener: new connections are refused. Open sessions live on.

        A root session (`sshd: root@notty`) is a child of the listener but survives it
        (lab-notes pitfall 5); use kill_all() for a node that is really gone.
        """
        if self._sshd is None:
            return
        if self._sshd.poll() is None:
            send_signal([self._sshd.pid], signal.SIGCONT)  # a frozen sshd ignores TERM
            self._sshd.terminate()
            try:
                self._sshd.wait(timeout=SSHD_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._sshd.kill()
                self._sshd.wait(timeout=SSHD_STOP_TIMEOUT_S)
        self._sshd = None

    def kill_all(self) -> None:
        """SIGKILL every process in the namespace: the node is dead (start_sshd revives)."""
        alive = kill_until_gone(self.pids, reap=self._reap)
        self._reap()
        if alive:
            raise LabError(f"{self.name}: processes {alive} survived SIGKILL")
        self._sshd = None
        self._lldpd = None
        self._faults.discard("frozen")

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.sshd_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no sshd log)"

    # ---- faults ------------------------------------------------------------------
    def freeze(self, pid: int | None = None) -> None:
        """SIGSTOP `pid`, or every process in the namespace: connections hang, not fail."""
        send_signal([pid] if pid is not None else self.pids(), signal.SIGSTOP)
        self._faults.add("frozen")

    def thaw(self, pid: int | None = None) -> None:
        """SIGCONT `pid`, or every process in the namespace."""
        send_signal([pid] if pid is not None else self.pids(), signal.SIGCONT)
        if pid is None:
            self._faults.discard("frozen")

    def regenerate_host_key(self, trust: bool = False) -> None:
        """Give the node a new host key and restart sshd.

        With `trust=False` the lab's known_hosts keeps the old key, so a client with
        StrictHostKeyChecking sees "REMOTE HOST IDENTIFICATION HAS CHANGED".
        """
        original = self.host_key.with_name(self.host_key.name + ".orig")
        if not original.exists():
            shutil.copy2(self.host_key, original)
            shutil.copy2(f"{self.host_key}.pub", f"{original}.pub")
        ssh_files.generate_keys([self.host_key], comment=self.name)
        self._faults.add("host_key")
        if trust:
            self.lab.write_client_files()
        self._restart_sshd()

    def restore_host_key(self) -> None:
        """Put the node's first host key back (known_hosts rewritten) and restart sshd."""
        original = self.host_key.with_name(self.host_key.name + ".orig")
        if original.exists():
            shutil.move(original, self.host_key)
            shutil.move(f"{original}.pub", f"{self.host_key}.pub")
            self.lab.write_client_files()
            self._restart_sshd()
        self._faults.discard("host_key")

    def _restart_sshd(self) -> None:
        if self.sshd_running:
            self.stop_sshd()
            self.start_sshd()

    def slow_link(self, rate: str | int = "100mbit", latency_ms: int = 50) -> None:
        """Cap what the node sends on eth0 to `rate` ('100mbit', or bits per second).

        A tbf qdisc on the node's own eth0: its TCP senders slow down without drops;
        what others send to it is not limited.
        """
        network.shape_egress(self.namespace, rate, latency_ms)
        self._faults.add("slow_link")

    def clear_link(self) -> None:
        """Remove the rate cap of slow_link()."""
        network.clear_egress(self.namespace)
        self._faults.discard("slow_link")

    @property
    def faults(self) -> frozenset[str]:
        """The faults now applied: 'frozen', 'host_key', 'slow_link', 'lldpd_stopped'."""
        return frozenset(self._faults)

    def heal(self) -> None:
        """Undo every fault: thaw, clear the link, restore the host key, restart sshd."""
        if "frozen" in self._faults:
            self.thaw()
        if "slow_link" in self._faults:
            self.clear_link()
        if "host_key" in self._faults:
            self.restore_host_key()
        self._processes = [p for p in self._processes if p.poll() is None]
        if self.lab.lldp and not self.lldpd_running:
            self.start_lldpd()
            self.wait_for_lldpd(time.monotonic() + LLDPD_READY_TIMEOUT_S)
            # a new socket: sessions of the running sshd would still see the old one's mount
            self._restart_sshd()
        self._faults.discard("lldpd_stopped")
        if not self.sshd_running:
            self.start_sshd()

