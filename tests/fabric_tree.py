"""A live RDMA node made of files: a COPY of the real prometheus-procfs sysfs capture
(hfi1_0, mlx4_0 with two ports, mlx5_0 with hw_counters) whose counters a test bumps
between samples, as traffic would. Nothing here fakes netui: the readers and the sampler
read these files exactly as they read /sys.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from netui.collectors.source import BaseSource
from tests.testdata import PROCFS, data_path

PROCFS_SYS = data_path(f"{PROCFS}/sys")
PROCFS_PROC = data_path(f"{PROCFS}/proc")
IB = "class/infiniband"
MLX5_NETDEV = "enp1s0f0np0"  # the capture has no device/ link: the copy pairs mlx5_0 with it


def copy_tree(dest: Path, *, with_netdev: bool = True) -> Path:
    """Copy the captured /sys to ``dest`` (writable) and return it; optionally add the PCI
    function's netdev of mlx5_0 (``device/net/<netdev>/{dev_id,dev_port}``, as a real tree has)."""
    shutil.copytree(PROCFS_SYS, dest)
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    if with_netdev:
        net = dest / IB / "mlx5_0" / "device" / "net" / MLX5_NETDEV
        net.mkdir(parents=True)
        (net / "dev_id").write_text("0x0\n")
        (net / "dev_port").write_text("0\n")
    return dest


def counter_path(root: Path, hca: str, port: int, name: str, *, hw: bool = False) -> Path:
    return root / IB / hca / "ports" / str(port) / ("hw_counters" if hw else "counters") / name


def read_counter(root: Path, hca: str, port: int, name: str, *, hw: bool = False) -> int:
    return int(counter_path(root, hca, port, name, hw=hw).read_text())


def bump(root: Path, hca: str, port: int, name: str, by: int, *, hw: bool = False) -> int:
    """Add ``by`` to a counter file; returns the new value."""
    path = counter_path(root, hca, port, name, hw=hw)
    value = int(path.read_text()) + by
    path.write_text(f"{value}\n")
    return value


def set_text(root: Path, hca: str, port: int, attr: str, text: str) -> None:
    (root / IB / hca / "ports" / str(port) / attr).write_text(text + "\n")


SYNTH = data_path("fabric")


class RdmaTreeNode:
    """A node whose RDMA ports are a copy of the captured tree, bumped poll after poll as a
    training job would (mlx5_0 sending 14–22 Gbit/s, mlx4_0/1 receiving 30, a symbol error
    on mlx4_0/2 every 5 s, RoCE retransmit counters, PFC pauses on priority 3), read by the
    real reader and parsers. Clocks are the poll number, so pictures are deterministic; the
    host part (interfaces, TCP, CPUs) is tests/synth's scripted node.
    """

    def __init__(self, root: Path, name: str = "rdma01", *, mono0: float = 1000.0) -> None:
        self.name = name
        self.tree = copy_tree(root)
        self.mono0 = mono0
        self.polls = 0
        self.pause_rx = 500
        self._pfc_t0 = (SYNTH / "ethtool-S_mlx5_pfc_t0.txt").read_text()

    def step(self, k: int) -> None:
        """The counters' increase during second k (k ≥ 1)."""
        import math

        tx_bps = 18e9 + 4e9 * math.sin(k / 3)
        bump(self.tree, "mlx5_0", 1, "port_xmit_data", int(tx_bps / 32))
        bump(self.tree, "mlx5_0", 1, "port_rcv_data", int(6e9 / 32))
        bump(self.tree, "mlx5_0", 1, "port_xmit_packets", int(tx_bps / 32 / 1024))
        bump(self.tree, "mlx5_0", 1, "port_rcv_packets", int(6e9 / 32 / 1024))
        bump(self.tree, "mlx5_0", 1, "out_of_sequence", 3, hw=True)
        bump(self.tree, "mlx5_0", 1, "roce_slow_restart_cnps", 40 + k % 7, hw=True)
        bump(self.tree, "mlx5_0", 1, "rx_write_requests", 52_000, hw=True)
        bump(self.tree, "mlx4_0", 1, "port_rcv_data", int((30e9 + 2e9 * math.cos(k / 4)) / 32))
        bump(self.tree, "mlx4_0", 1, "port_xmit_data", int(1e9 / 32))
        if k % 5 == 0:
            bump(self.tree, "mlx4_0", 2, "symbol_error", 1)
        self.pause_rx += 120

    def ethtool_text(self) -> str:
        """The captured-format ``ethtool -S`` of mlx5_0's netdev, with this poll's pauses."""
        text = self._pfc_t0.replace("rx_prio3_pause: 500", f"rx_prio3_pause: {self.pause_rx}")
        return text.replace("rx_prio3_pause_duration: 80000", f"rx_prio3_pause_duration: {self.pause_rx * 50}")

    def sample(self, k: int):
        from dataclasses import replace

        from netui.collectors.assemble import fabric_from_texts
        from netui.collectors.infiniband import read_infiniband
        from tests.synth import node_sample

        if k:
            self.step(k)
        host = node_sample(k, rx_bps=7e9, tx_bps=5e9, softirq_pct=22, mono0=self.mono0, hostname=self.name)
        fabric = fabric_from_texts(read_infiniband(str(self.tree)), {MLX5_NETDEV: self.ethtool_text()},
                                   mono_s=host.mono_s, ethtool_mono_s=host.mono_s, boot_id=host.boot_id)
        return replace(host, fabric=fabric)


class RdmaTreeSource(BaseSource):
    """The engine's view of an RdmaTreeNode: poll k returns its sample at k."""

    def __init__(self, node: RdmaTreeNode) -> None:
        self.node = node
        self.name = node.name
        self.polls = 0

    async def sample(self):
        s = self.node.sample(self.polls)
        self.polls += 1
        return s
