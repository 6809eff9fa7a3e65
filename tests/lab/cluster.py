"""A cluster on one machine: `Lab` (network namespaces + OpenSSH) and its `LabNode`s.

    with Lab(4) as lab:                    # node1 … node4, ~0.3 s up
        lab.ssh(lab.node("node2"), "hostname").stdout   # 'node2\\n'
        lab.nodes[0].slow_link("100mbit")

A lab is known by its short `name`: namespaces netui-<name>-node<K>, links nu-<name>-…,
directory /tmp/netui-<name>.<random> (or a fixed one). Starting a lab first removes
whatever a crashed lab of the same name left behind; closing removes everything it made.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from . import network, ssh_files
from .node import LabError, LabNode
from .processes import cmdline_pids, kill_until_gone

STATE_FILE = "lab.json"
SSHD_READY_TIMEOUT_S = 10.0


class Lab:
    """`n` nodes, each a network namespace with eth0 on one bridge and a real sshd.

    `name` (1–6 of [a-z0-9]) tells labs apart: starting a lab replaces any lab of the
    same name (a crashed one, say); labs of different names run side by side. The CLI's
    lab is called "lab", the pytest fixture's "t<pid in base 36>".

    Use as a context manager (or call `start()` and `close()`); `close()` always
    tears down, also after a half-built start.
    """

    def __init__(self, n: int = 4, *, name: str = "adhoc",
                 directory: str | Path | None = None):
        if not 1 <= n <= network.LAST_NODE_HOST:
            raise ValueError(f"a lab has 1 to {network.LAST_NODE_HOST} nodes, got {n}")
        self.n = n
        self.name = network.check_name(name)
        self._fixed_directory = Path(directory) if directory is not None else None
        self.directory: Path | None = None
        self.nodes: list[LabNode] = []
        self.first_host = 0
        self._live = False  # from start() until close(): close() only touches its own lab

    # ---- paths a client uses -------------------------------------------------------
    @property
    def ssh_config(self) -> Path:
        """`ssh -F <this> nodeK …` works from the root namespace."""
        return self._path("ssh_config")

    @property
    def known_hosts(self) -> Path:
        return self._path("known_hosts")

    @property
    def identity(self) -> Path:
        """The client's private key (ed25519); the public half is `identity.pub`."""
        return self._path("id_ed25519")

    @property
    def authorized_keys(self) -> Path:
        return self._path("authorized_keys")

    def _path(self, leaf: str) -> Path:
        if self.directory is None:
            raise LabError("the lab is not started")
        return self.directory / leaf

    # ---- life cycle ----------------------------------------------------------------
    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> Lab:
        """Build namespaces, keys, configs and sshds; return when every sshd listens."""
        if self._live:
            raise LabError(f"lab {self.name!r} is already started")
        self._live = True
        atexit.register(self.close)
        try:
            remove_lab(self.name, [self._fixed_directory] if self._fixed_directory else [])
            self.directory = self._make_directory()
            self._save_state()  # first, so a crash from here on is found by remove_lab
            self.nodes = [LabNode(self, k) for k in range(1, self.n + 1)]
            for node in self.nodes:
                node.directory.mkdir(mode=0o700)
            ssh_files.generate_keys([self.identity] + [n.host_key for n in self.nodes])
            self.authorized_keys.write_text(ssh_files.public_key(self.identity) + "\n")
            with network.lab_lock():
                self.first_host = network.first_free_host(self.n)
                network.build_bridge(self.name)
                for node in self.nodes:
                    network.build_node(self.name, node.k, self.first_host + node.k - 1)
            self.write_client_files()
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # lab-notes pitfall 1
            for node in self.nodes:
                node.write_sshd_config()
                node.start_sshd(wait=False)
            deadline = time.monotonic() + SSHD_READY_TIMEOUT_S
            for node in self.nodes:
                node.wait_for_sshd(deadline)
            self._save_state()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Kill every lab process, delete veths, namespaces and bridge, remove the directory.

        Safe to call twice and on a lab that failed halfway. Raises LabError if something
        of the lab is still there afterwards.
        """
        atexit.unregister(self.close)
        if not self._live:
            return
        self._live = False
        procs = [p for node in self.nodes for p in node.tracked_processes()]
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        directories = [self.directory] if self.directory else []
        remove_lab(self.name, directories,
                   reap=lambda: [proc.poll() for proc in procs])
        self.directory = None
        for node in self.nodes:
            node.forget_processes()
        leftovers = network.lab_namespaces(self.name) + network.lab_links(self.name)
        if leftovers:
            raise LabError(f"lab {self.name!r} left behind: {leftovers}")

    def detach(self) -> None:
        """Leave the lab running after this process exits (the CLI's `up`)."""
        atexit.unregister(self.close)

    def heal(self) -> None:
        """Undo every fault helper: thaw, clear shaping, restore host keys, restart sshd."""
        for node in self.nodes:
            node.heal()

    # ---- using the lab -------------------------------------------------------------
    def node(self, which: str | int) -> LabNode:
        """A node by name ('node2') or number (2)."""
        for node in self.nodes:
            if which in (node.name, node.k):
                return node
        raise KeyError(which)

    def ssh_command(self, node: LabNode | str, *remote: str) -> list[str]:
        """argv of the OpenSSH client reaching `node` through the lab's ssh_config."""
        name = node.name if isinstance(node, LabNode) else node
        return ["ssh", "-F", str(self.ssh_config), name, *remote]

    def ssh(self, node: LabNode | str, command: str, *, timeout_s: float = 15.0,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run `command` on `node` with the OpenSSH client; output captured as text."""
        return subprocess.run(self.ssh_command(node, command), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout_s,
                              check=check)

    def write_client_files(self) -> None:
        """(Re)write known_hosts from the nodes' current host keys, and ssh_config."""
        hosts = [(n.name, n.address, ssh_files.public_key(n.host_key)) for n in self.nodes]
        ssh_files.write_known_hosts(self.known_hosts, hosts)
        ssh_files.write_ssh_config(self.ssh_config, [(n.name, n.address) for n in self.nodes],
                                   identity=self.identity, known_hosts=self.known_hosts)

    def host_pattern(self) -> str:
        """'node[1-4]' — how netui is told about every node of the lab."""
        return f"node[1-{self.n}]" if self.n > 1 else "node1"

    # ---- internals -----------------------------------------------------------------
    def _make_directory(self) -> Path:
        if self._fixed_directory is None:
            return Path(tempfile.mkdtemp(prefix=f"netui-{self.name}."))
        self._fixed_directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fixed_directory.chmod(0o700)  # remove_lab refused it unless it was empty
        return self._fixed_directory

    def _save_state(self) -> None:
        state = {
            "name": self.name,
            "n": self.n,
            "directory": str(self.directory),
            "ssh_config": str(self.directory / "ssh_config"),
            "first_host": self.first_host,
            "nodes": [{"name": n.name, "namespace": n.namespace, "address": n.address,
                       "sshd_pid": n.sshd_pid} for n in self.nodes],
            "started_at": time.time(),
        }
        path = self.directory / STATE_FILE
        path.write_text(json.dumps(state, indent=2) + "\n")


def lab_directories(name: str, extra: Sequence[Path] = ()) -> list[Path]:
    """Directories of labs called `name`: /tmp/netui-<name>[.*] holding a matching lab.json."""
    tmp = Path(tempfile.gettempdir())
    candidates = [tmp / f"netui-{name}", *tmp.glob(f"netui-{name}.*"), *extra]
    found = []
    for directory in dict.fromkeys(candidates):
        if read_state(directory).get("name") == name:
            found.append(directory)
        elif directory in extra and directory.exists() and any(directory.iterdir()):
            raise LabError(f"{directory} exists and is not a netui lab; not touching it")
    return found


def read_state(directory: Path) -> dict:
    """The lab.json of a lab directory, or {} when there is none."""
    try:
        return json.loads((directory / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def remove_lab(name: str, directories: Sequence[Path] = (), reap=lambda: None) -> None:
    """Remove everything of the lab called `name`: its processes, network and directories.

    Processes are found three ways: inside the lab's namespaces (sessions, iperf3, …),
    by sshd's `-f <dir>/` on the command line (a listener whose namespace is already
    gone), and the caller's own children, reaped through `reap`. Killing repeats until
    nothing is found, so a child forked meanwhile does not escape.
    """
    directories = lab_directories(name, directories)

    def find() -> set[int]:
        by_ns = network.namespace_pids(network.lab_namespaces(name))
        pids = {pid for pids in by_ns.values() for pid in pids}
        for directory in directories:
            pids.update(cmdline_pids(f"-f {directory}/"))
        return pids

    alive = kill_until_gone(find, reap=reap)
    if alive:
        raise LabError(f"lab {name!r}: processes {alive} survived SIGKILL")
    with network.lab_lock():
        network.remove_network(name)
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)

