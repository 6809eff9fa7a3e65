"""Read this host's counters: from /proc and /sys, or from a captured copy of them.

``TreeReader`` reads any procfs/sysfs root (``--procfs``/``--sysfs``, as node_exporter's
``--path.procfs``): a host's /proc mounted into a container, or a captured tree.
``LiveReader`` is the default for this host: the interface list and stats64 come from
netlink (pyroute2) in one dump instead of many file reads, link speed from psutil, and the
rest from the /proc parsers.
"""

from __future__ import annotations

import os
import select
import socket
import time
from dataclasses import replace

from netui.collectors.assemble import IFACE_ATTRS, PACKED_ATTRS, sample_from_texts
from netui.collectors.protocol import PROC_FILES
from netui.collectors.infiniband import ethtool_netdevs, open_regular, read_infiniband
from netui.model.samples import InterfaceCounters, InterfaceSample, NodeSample
from netui.model.text import safe_text


MAX_TREE_FILE_BYTES = 16 << 20
"""The most read of one procfs or sysfs file. The biggest real ones (/proc/net/dev with
thousands of interfaces, /proc/stat of hundreds of CPUs) are well under a megabyte; a file
past this in a --procfs tree is not what it claims to be and is skipped, with a problem."""


READ_CHUNK = 1 << 16


def read_text(path: str, problems: list[str] | None = None) -> str | None:
    """A file's text, or None when it is missing, unreadable (EINVAL, EACCES, ...), not a
    regular file (a FIFO is never waited on, /dev/zero never read) or larger than
    MAX_TREE_FILE_BYTES — that one said in ``problems``: only that much is ever read."""
    try:
        with open(open_regular(path), "rb", buffering=0) as f:
            # in chunks: a /proc/sys file's handler allocates the size asked for, and a single
            # read of 16 MiB fails there with ENOMEM (boot_id, hostname)
            chunks, size = [], 0
            while size <= MAX_TREE_FILE_BYTES:
                chunk = f.read(READ_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join(chunks)
    except (OSError, ValueError):
        return None
    if len(data) > MAX_TREE_FILE_BYTES:
        if problems is not None:
            problems.append(f"{path}: larger than {MAX_TREE_FILE_BYTES >> 20} MiB, skipped "
                            "(not a procfs or sysfs file)")
        return None
    return data.decode("utf-8", errors="replace")


def read_iface_attrs(sysfs: str, name: str, problems: list[str] | None = None) -> tuple[str | None, ...]:
    """The sysfs attributes of one interface and where its class entry links to, in the
    order of ``assemble.PACKED_ATTRS`` (the remote sampler's record, unpacked)."""
    base = os.path.join(sysfs, "class", "net", name)
    attrs: dict[str, str | None] = {a: read_text(os.path.join(base, a), problems) for a in IFACE_ATTRS}
    try:
        attrs["link"] = os.readlink(base)
    except OSError:
        attrs["link"] = None
    for marker in ("bridge", "bonding", "device"):
        attrs[marker] = "" if os.path.exists(os.path.join(base, marker)) else None
    return tuple(attrs.get(k) for k in PACKED_ATTRS)


class TreeReader:
    """Samples a procfs/sysfs tree by reading its files; no netlink, no psutil."""

    live = False  # a captured tree: commands here tell about this host, not about the tree

    def __init__(self, procfs: str = "/proc", sysfs: str = "/sys") -> None:
        self.procfs = procfs
        self.sysfs = sysfs
        self.name = self._hostname() or "localhost"

    def _hostname(self) -> str | None:
        text = read_text(os.path.join(self.procfs, PROC_FILES["hostname"]))
        return safe_text(text.strip()) if text and text.strip() else None  # the node's name: shown, never obeyed

    def prepare(self) -> None:
        """Nothing to import ahead of the first read."""

    def close(self) -> None:
        """Nothing held between reads."""

    def read_texts(self, problems: list[str] | None = None) -> dict[str, str | None]:
        return {key: read_text(os.path.join(self.procfs, rel), problems) for key, rel in PROC_FILES.items()}

    def sample(self) -> NodeSample:
        mono = time.monotonic()
        wall = time.time()
        problems: list[str] = []
        texts = self.read_texts(problems)
        attrs = {}
        net_dev = texts.get("net/dev")
        if net_dev:
            for line in net_dev.splitlines()[2:]:
                name = line.partition(":")[0].strip()
                # a garbage file must not name a path we cannot open (NUL → ValueError)
                if name and "/" not in name and "\0" not in name and name not in (".", ".."):
                    attrs[name] = read_iface_attrs(self.sysfs, name, problems)
        return sample_from_texts(texts, attrs, wall_s=wall, mono_s=mono, problems=problems,
                                 ib_texts=read_infiniband(self.sysfs))


ETHTOOL_EVERY_S = 5.0
ETHTOOL_BUDGET_S = 2.0  # a reading's whole time: a run not done by then is killed
_WAKE_S = 0.05  # how often a reading looks whether its runs ended (their output wakes it sooner)


class EthtoolReader:
    """``ethtool -S`` of the RDMA netdevs, at most every ``every_s`` seconds, where an ethtool
    binary exists: the remote sampler's own runner (collectors/sampler.py ``Ethtool``: the runs
    in parallel within ``budget_s``, a run past it killed and its netdev skipped for a while, a
    flood cut off), waited for here. ``read(ib_texts)`` → ({netdev: text}, the CLOCK_MONOTONIC
    of the reading), or ({}, None) when it is not yet due or there is none. The sampler's code
    is loaded at the first RDMA netdev: a host without one never loads it."""

    def __init__(self, every_s: float = ETHTOOL_EVERY_S, budget_s: float = ETHTOOL_BUDGET_S) -> None:
        self.every_s = every_s
        self.budget_s = budget_s
        self._due = 0.0
        self._eth = None

    def _runner(self):
        if self._eth is None:
            from netui.collectors.sampler import Ethtool

            self._eth = Ethtool(self.every_s, self.budget_s)
        return self._eth

    @property
    def path(self) -> str | None:
        """The ethtool binary found on PATH or in the sbin directories; None: there is none."""
        eth = self._runner()
        if eth.path is False:
            from netui.collectors.sampler import find_ethtool

            eth.path = find_ethtool()
        return eth.path

    def read(self, ib_texts: dict[str, str]) -> tuple[dict[str, str], float | None]:
        now = time.monotonic()
        if now < self._due:
            return {}, None
        netdevs = ethtool_netdevs(ib_texts)
        self._due = now + self.every_s
        if not netdevs or self.path is None:
            return {}, None
        eth = self._runner()
        eth.start(netdevs, now)
        fields: list[bytes] = []
        while eth.runs:
            pipes = [run.fd for run in eth.runs if not run.eof]
            left = eth.deadline - time.monotonic()
            if pipes and left > 0:
                select.select(pipes, [], [], min(left, _WAKE_S))
            elif left > 0:
                time.sleep(min(left, _WAKE_S))  # every output read: the processes are ending
            eth.collect(fields, time.monotonic())
        texts, mono = {}, None
        for key, value in zip(fields[::2], fields[1::2]):
            if key.startswith(b"eth/"):
                texts[key[4:].decode("utf-8", "replace")] = value.decode("utf-8", "replace")
            elif key == b"ethmono":
                mono = float(value)
        self._due = time.monotonic() + self.every_s
        return texts, mono


# netlink link kinds (IFLA_INFO_KIND) mapped to what netui calls them
_NETLINK_KINDS = {
    "veth": "veth",
    "bridge": "bridge",
    "openvswitch": "bridge",
    "bond": "bond",
    "team": "bond",
    "vlan": "vlan",
    "macvlan": "vlan",
    "ipvlan": "vlan",
    "ifb": "ifb",
    "dummy": "dummy",
    "tun": "tun",
}
_IFF_LOOPBACK = 0x8


def counters_from_stats64(s: dict) -> InterfaceCounters:
    """rtnl_link_stats64 → the /proc/net/dev columns (the same sums the kernel prints)."""
    g = s.get
    return InterfaceCounters(
        rx_bytes=g("rx_bytes", 0),
        rx_packets=g("rx_packets", 0),
        rx_errors=g("rx_errors", 0),
        rx_dropped=g("rx_dropped", 0) + g("rx_missed_errors", 0),
        rx_fifo=g("rx_fifo_errors", 0),
        rx_frame=g("rx_length_errors", 0) + g("rx_over_errors", 0) + g("rx_crc_errors", 0) + g("rx_frame_errors", 0),
        rx_compressed=g("rx_compressed", 0),
        rx_multicast=g("multicast", 0),
        tx_bytes=g("tx_bytes", 0),
        tx_packets=g("tx_packets", 0),
        tx_errors=g("tx_errors", 0),
        tx_dropped=g("tx_dropped", 0),
        tx_fifo=g("tx_fifo_errors", 0),
        tx_colls=g("collisions", 0),
        tx_carrier=g("tx_carrier_errors", 0) + g("tx_aborted_errors", 0) + g("tx_window_errors", 0) + g("tx_heartbeat_errors", 0),
        tx_compressed=g("tx_compressed", 0),
    )


class LiveReader(TreeReader):
    """This host, live: netlink for interfaces, psutil for link speed, /proc for the rest."""

    live = True

    def __init__(self) -> None:
        super().__init__("/proc", "/sys")
        self.name = safe_text(socket.gethostname()) or self.name
        self._ipr = None
        self._ethtool = EthtoolReader()
        self._peers = None  # collectors.peers.LocalPeers, made at the second read
        self._sampled = False

    def prepare(self) -> None:
        """Import what the first sample needs (psutil, pyroute2: ~0.1 s) now, before the app
        starts and the first tick waits for a read. Imported from the first read's thread
        instead, they compete with the app's start-up, the first frame with data comes later
        (tests/bench/bench_startup.py), and on a busy machine the first read can outlast a
        short first tick."""
        try:
            import psutil  # noqa: F401
            import pyroute2  # noqa: F401
        except Exception:  # sample() imports them again and says what is wrong
            pass

    def _links(self) -> dict[str, InterfaceSample] | None:
        import psutil
        from pyroute2 import IPRoute

        try:
            if self._ipr is None:
                self._ipr = IPRoute()
            links = self._ipr.get_links()
        except Exception:  # netlink unavailable (seccomp, odd container): fall back to files
            self.close()
            return None
        try:
            speeds = {n: s.speed for n, s in psutil.net_if_stats().items()}
        except (OSError, RuntimeError):
            speeds = {}
        out: dict[str, InterfaceSample] = {}
        for link in links:
            name = link.get("IFLA_IFNAME")
            stats = link.get("IFLA_STATS64")
            if not name or stats is None:
                continue
            info_kind = link.get(("IFLA_LINKINFO", "IFLA_INFO_KIND"))
            if link["flags"] & _IFF_LOOPBACK:
                kind = "loopback"
            elif info_kind:
                kind = _NETLINK_KINDS.get(info_kind, "virtual")
            else:
                kind = "physical"
            carrier = link.get("IFLA_CARRIER")
            operstate = link.get("IFLA_OPERSTATE")
            speed = speeds.get(name)
            out[name] = InterfaceSample(
                name=name,
                counters=counters_from_stats64(stats),
                mtu=link.get("IFLA_MTU"),
                operstate=operstate.lower() if isinstance(operstate, str) else None,
                carrier=None if carrier is None else bool(carrier),
                speed_mbps=speed if speed and speed > 0 else None,
                ifindex=link.get("index"),
                kind=kind,
            )
        return out

    def sample(self) -> NodeSample:
        mono = time.monotonic()
        wall = time.time()
        interfaces = self._links()
        if interfaces is None:
            return replace(super().sample(), peers=self._read_peers())
        problems: list[str] = []
        texts = self.read_texts(problems)
        texts["net/dev"] = None  # netlink already gave the interfaces
        ib = read_infiniband(self.sysfs)
        eth, eth_mono = self._ethtool.read(ib) if ib else ({}, None)
        return sample_from_texts(texts, {}, wall_s=wall, mono_s=mono, interfaces=interfaces, problems=problems,
                                 ib_texts=ib,
                                 ethtool_texts=eth, ethtool_mono_s=eth_mono,
                                 peers=self._read_peers(texts.get("net/snmp")))

    def _read_peers(self, snmp: str | bytes | None = None):
        """This host's TCP peers, by the remote sampler's own sock_diag code (collectors/peers.py),
        from the second sample on: the first frame waits for no import (the first reading is
        a baseline anyway, its rates unknown). ``snmp``: /proc/net/snmp as read this sample
        (a TCP connection opened since brings the next dump forward, as on a node)."""
        if self._peers is None:
            if not self._sampled:
                self._sampled = True
                return None
            from netui.collectors.peers import LocalPeers

            self._peers = LocalPeers()
        from netui.collectors.peers import tcp_opens

        return self._peers.read(time.monotonic(), tcp_opens(snmp))

    def close(self) -> None:
        if self._peers is not None:
            self._peers.close()
            self._peers = None
        if self._ipr is not None:
            try:
                self._ipr.close()
            except Exception:
                pass
            self._ipr = None
