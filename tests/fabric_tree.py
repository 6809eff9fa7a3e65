"""A live RDMA node made of files: a COPY of the real prometheus-procfs sysfs capture
(hfi1_0, mlx4_0 with two ports, mlx5_0 with hw_counters) whose counters a test bumps
between samples, as traffic would. Nothing here fakes netui: the readers and the sampler
read these files exactly as they read /sys.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
PROCFS_SYS = FIXTURES / "prometheus-procfs" / "sys"
PROCFS_PROC = FIXTURES / "prometheus-procfs" / "proc"
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
