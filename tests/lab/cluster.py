"""A cluster on one machine: `Lab` (network namespaces + OpenSSH) and its `LabNode`s.

    with Lab(4) as lab:                    # node1 … node4, ~0.3 s up
        lab.ssh(lab.node("node2"), "hostname").stdout   # 'node2\\n'
        lab.nodes[0].slow_link("100mbit")

    with Lab(leaves=2, nodes_per_leaf=4) as lab:   # two-tier: leaf1, leaf2, a spine, lldpd
        lab.shape_uplink("leaf1", "200mbit")          # node1 … node4 on leaf1, node5 … on leaf2

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

from . import fabric, network, ssh_files
from . import lldp as lldpd
from .node import LabError, LabNode
from .switch import LabSwitch
from .processes import cmdline_pids, kill_until_gone

STATE_FILE = "lab.json"
SSHD_READY_TIMEOUT_S = 10.0


class Lab:
    """`n` nodes, each a network namespace with eth0 on one bridge and a real sshd.

    `name` (1–6 of [a-z0-9]) tells labs apart: starting a lab replaces any lab of the
    same name (a crashed one, say); labs of different names run side by side. The CLI's
    lab is called "lab", the pytest fixtures' "t<pid in base 36>" (flat) and "f<…>" (two-tier).

    With `leaves`, the lab is two-tier (fabric.py): node k sits on leaf `node.leaf`, port
    swp`node.port`; leaves hang off one spine; lldpd runs in every switch and node when
    installed (`lab.lldp`), and `shape_uplink` makes an oversubscribed leaf uplink.

    Use as a context manager (or call `start()` and `close()`); `close()` always
    tears down, also after a half-built start.
    """

    def __init__(self, n: int | None = None, *, name: str = "adhoc",
                 directory: str | Path | None = None, leaves: int | None = None,
                 nodes_per_leaf: int = 4, lldp: bool | None = None):
        # Two-tier when `leaves` is given: n = leaves × nodes_per_leaf, node numbers run
        # leaf by leaf. `lldp` (two-tier only): None = when lldpd is installed.
        if leaves is not None:
            if leaves < 1 or nodes_per_leaf < 1:
                raise ValueError("a two-tier lab has at least 1 leaf and 1 node per leaf")
            if n is not None and n != leaves * nodes_per_leaf:
                raise ValueError(f"{n} nodes do not fill {leaves} leaves of {nodes_per_leaf}")
            n = leaves * nodes_per_leaf
        n = 4 if n is None else n
        if not 1 <= n <= network.LAST_NODE_HOST:
            raise ValueError(f"a lab has 1 to {network.LAST_NODE_HOST} nodes, got {n}")
        if leaves is None and lldp:
            raise ValueError("lldpd runs in two-tier labs only (give `leaves`)")
        if lldp and not lldpd.available():
            raise LabError("lldpd is not installed (Debian package lldpd)")
        self.n = n
        self.leaves = leaves
        self.nodes_per_leaf = nodes_per_leaf if leaves is not None else None
        self.lldp = leaves is not None and (lldpd.available() if lldp is None else lldp)
        self.switches: list[LabSwitch] = []
        self._shaped_uplinks: set[int] = set()
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
            self.nodes = [LabNode(self, k, **self._cabling(k)) for k in range(1, self.n + 1)]
            for node in self.nodes:
                node.directory.mkdir(mode=0o700)
            if self.leaves is not None:
                self.switches = [LabSwitch(self.name, f"leaf{leaf}", self.directory / f"leaf{leaf}")
                                 for leaf in range(1, self.leaves + 1)]
                self.switches.append(LabSwitch(self.name, "spine", self.directory / "spine"))
            if self.lldp:
                # lldpd runs its configuring lldpcli unprivileged, and lldpcli itself drops
                # root: both must get to the sockets (the keys in there stay 0600)
                for each in [self.directory, *(n.directory for n in self.nodes)]:
                    each.chmod(0o711)
            ssh_files.generate_keys([self.identity] + [n.host_key for n in self.nodes])
            self.authorized_keys.write_text(ssh_files.public_key(self.identity) + "\n")
            with network.lab_lock():
                self.first_host = network.first_free_host(self.n)
                network.build_bridge(self.name)
                if self.leaves is None:
                    for node in self.nodes:
                        network.build_node(self.name, node.k, self.first_host + node.k - 1)
                else:
                    self._build_fabric()
            self.write_client_files()
            if self.lldp:
                self._start_lldpds()
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
        procs = [p for each in [*self.nodes, *self.switches] for p in each.tracked_processes()]
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        directories = [self.directory] if self.directory else []
        remove_lab(self.name, directories,
                   reap=lambda: [proc.poll() for proc in procs])
        self.directory = None
        for each in [*self.nodes, *self.switches]:
            each.forget_processes()
        self._shaped_uplinks.clear()
        leftovers = (network.lab_namespaces(self.name) + fabric.switch_namespaces(self.name)
                     + network.lab_links(self.name))
        if leftovers:
            raise LabError(f"lab {self.name!r} left behind: {leftovers}")

    def detach(self) -> None:
        """Leave the lab running after this process exits (the CLI's `up`)."""
        atexit.unregister(self.close)

    def heal(self) -> None:
        """Undo every fault helper: thaw, clear shaping, restore host keys, restart sshd."""
        for leaf in sorted(self._shaped_uplinks):
            self.clear_uplink(f"leaf{leaf}")
        for node in self.nodes:
            node.heal()

    # ---- the fabric (two-tier labs) ------------------------------------------------
    def switch(self, name: str) -> LabSwitch:
        """'leaf1', 'leaf2', … or 'spine'."""
        for each in self.switches:
            if each.name == name:
                return each
        raise KeyError(name)

    def leaf_nodes(self, leaf: str | int) -> list[LabNode]:
        """The nodes cabled to leaf `leaf` ('leaf1' or 1), in port order."""
        number = self._leaf_number(leaf)
        return [node for node in self.nodes if node.leaf == number]

    def shape_uplink(self, leaf: str | int, rate: str | int = "200mbit",
                     latency_ms: int = 50) -> None:
        """Cap leaf `leaf`'s link to the spine to `rate` ('200mbit', or bits per second),
        both directions: an oversubscribed uplink. In-leaf traffic is not limited."""
        number = self._leaf_number(leaf)
        fabric.shape_uplink(self.name, number, rate, latency_ms)
        self._shaped_uplinks.add(number)

    def clear_uplink(self, leaf: str | int) -> None:
        """Remove the cap of shape_uplink()."""
        number = self._leaf_number(leaf)
        fabric.clear_uplink(self.name, number)
        self._shaped_uplinks.discard(number)

    @property
    def shaped_uplinks(self) -> frozenset[str]:
        return frozenset(f"leaf{n}" for n in self._shaped_uplinks)

    def _leaf_number(self, leaf: str | int) -> int:
        number = leaf if isinstance(leaf, int) else int(str(leaf).removeprefix("leaf") or 0)
        if self.leaves is None or not 1 <= number <= self.leaves:
            raise KeyError(f"no leaf {leaf!r} in lab {self.name!r}")
        return number

    def _cabling(self, k: int) -> dict:
        if self.leaves is None:
            return {}
        leaf, port = divmod(k - 1, self.nodes_per_leaf)
        return {"leaf": leaf + 1, "port": port + 1}

    def _build_fabric(self) -> None:
        fabric.build(self.name, self.leaves,
                     [(node.k, node.leaf, node.port, self.first_host + node.k - 1)
                      for node in self.nodes])

    def _start_lldpds(self) -> None:
        with network.lab_lock():
            lldpd.ensure_mount_point()
        for each in [*self.switches, *self.nodes]:
            each.start_lldpd()
        deadline = time.monotonic() + lldpd.READY_TIMEOUT_S
        for each in [*self.switches, *self.nodes]:
            try:
                each.wait_for_lldpd(deadline)
            except RuntimeError as e:
                raise LabError(f"{each.name}: {e}") from None

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
            "leaves": self.leaves,
            "nodes_per_leaf": self.nodes_per_leaf,
            "lldp": self.lldp,
            "nodes": [{"name": n.name, "namespace": n.namespace, "address": n.address,
                       "sshd_pid": n.sshd_pid, "leaf": n.leaf, "port": n.port}
                      for n in self.nodes],
            "switches": [{"name": s.name, "namespace": s.namespace,
                          "lldp_socket": str(s.lldp_socket) if self.lldp else None}
                         for s in self.switches],
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
        by_ns = network.namespace_pids(network.lab_namespaces(name)
                                       + fabric.switch_namespaces(name))
        pids = {pid for pids in by_ns.values() for pid in pids}
        for directory in directories:
            pids.update(cmdline_pids(f"-f {directory}/"))
        return pids

    alive = kill_until_gone(find, reap=reap)
    if alive:
        raise LabError(f"lab {name!r}: processes {alive} survived SIGKILL")
    with network.lab_lock():
        fabric.remove_switch_links(name)
        network.remove_network(name)
        fabric.remove_switch_namespaces(name)
        lldpd.release_mount_point(bool(fabric.all_leaf_namespaces()))
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)

