"""The command line with RDMA: `netui snapshot --json` of a captured tree (a copy, so the
test can change it) has each node's fabric section; --config thresholds apply, bad ones are
a one-line error."""

from __future__ import annotations

import json

import pytest

from tests.command import netui
from tests.fabric_tree import MLX5_NETDEV, PROCFS_PROC, copy_tree, set_text


@pytest.mark.slow
def test_snapshot_json_has_the_fabric_of_a_captured_tree(tmp_path):
    tree = copy_tree(tmp_path / "sys")
    set_text(tree, "mlx4_0", 2, "state", "1: DOWN")
    done = netui("snapshot", "--json", "--interval", "0.2", "--procfs", str(PROCFS_PROC), "--sysfs", str(tree))
    doc = json.loads(done.stdout)
    (node,) = doc["nodes"]
    fabric = node["fabric"]
    ports = {(p["hca"], p["port"]): p for p in fabric["ports"]}
    assert sorted(ports) == [("hfi1_0", 1), ("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)]
    mlx5 = ports["mlx5_0", 1]
    assert mlx5["state"] == "ACTIVE" and mlx5["rate_gbps"] == 25.0 and mlx5["link_layer"] == "InfiniBand"
    assert mlx5["netdev"] == MLX5_NETDEV and mlx5["counters"]["port_xmit_data"] == 2880761508848
    assert mlx5["hw_counters"]["out_of_sequence"] == 1
    assert mlx5["rates"]["tx_bits_per_s"] == 0.0  # a still tree
    assert ports["mlx4_0", 2]["active"] is False and ports["mlx4_0", 2]["rates"]["tx_bits_per_s"] is None
    assert fabric["pfc"] == [] and fabric["totals"]["rx_bits_per_s"] == 0.0
    assert node["health"]["level"] == "critical"
    assert "mlx4_0/2 DOWN" in node["health"]["reasons"][0]


@pytest.mark.slow
def test_config_thresholds_apply_and_bad_ones_are_one_line(tmp_path):
    tree = copy_tree(tmp_path / "sys")
    config = tmp_path / "netui.toml"
    (tree / "class" / "infiniband" / "mlx4_0" / "ports" / "2" / "state").write_text("1: DOWN\n")
    args = ("snapshot", "--json", "--interval", "0.2", "--procfs", str(PROCFS_PROC), "--sysfs", str(tree))
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    (node,) = json.loads(netui(*args, "--config", str(empty)).stdout)["nodes"]
    assert node["health"]["level"] == "critical" and any("mlx4_0/2 DOWN" in r for r in node["health"]["reasons"])
    # a site whose second ports are unplugged everywhere makes a port down careful
    config.write_text("[thresholds]\nport_down = { careful = 1, warning = inf, critical = inf }\n")
    (node,) = json.loads(netui(*args, "--config", str(config)).stdout)["nodes"]
    assert node["health"]["level"] == "careful" and any("mlx4_0/2 DOWN" in r for r in node["health"]["reasons"])
    config.write_text("[thresholds]\npause_per_sec = { careful = 1 }\n")
    done = netui("snapshot", "--json", "--procfs", str(PROCFS_PROC), "--sysfs", str(tree), "--config", str(config))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith(f"netui: {config}: thresholds.pause_per_sec: unknown metric")
    done = netui("--config", str(tmp_path / "missing.toml"), "--procfs", str(PROCFS_PROC))
    assert done.returncode != 0 and "missing.toml: no such file" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_text_report_lists_the_ports(tmp_path):
    tree = copy_tree(tmp_path / "sys")
    done = netui("snapshot", "--interval", "0.2", "--procfs", str(PROCFS_PROC), "--sysfs", str(tree))
    lines = [line.split() for line in done.stdout.splitlines()]
    mlx5 = next(line for line in lines if line[0] == "mlx5_0/1")
    assert mlx5[1] == "ACTIVE" and "25" in mlx5 and "InfiniBand" in mlx5 and mlx5[-1] == MLX5_NETDEV
