"""The command line against the lab, as a user types it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from tests.command import netui


def test_snapshot_json_of_four_lab_nodes(lab):
    result = netui("snapshot", "--json", "-F", str(lab.ssh_config), lab.host_pattern())
    assert result.returncode == 0, result.stderr + result.stdout
    doc = json.loads(result.stdout)
    assert [n["name"] for n in doc["nodes"]] == [f"node{k}" for k in range(1, 5)]
    for node in doc["nodes"]:
        assert node["state"] == "up" and node["error"] is None
        assert node["hostname"] == node["name"]
        eth0 = next(i for i in node["interfaces"] if i["name"] == "eth0")
        assert eth0["hidden"] is False  # the only wire a lab node has
        assert eth0["counters"]["tx_bytes"] > 0
        assert eth0["rates"]["tx_bits_per_s"] > 0  # at least the sampler's own frames
        assert node["tcp"]["rates"]["retrans_segs_per_s"] is not None
        # a snapshot asks every node for its per-CPU tables; the grid's figures come beside them
        ncpus = node["cpu_totals"]["cpus"]
        assert ncpus >= 1 and len(node["cpus"]) == ncpus
        assert all(c["softirq_percent"] is not None for c in node["cpus"]) and len(node["softnet"]) >= ncpus
        assert node["cpu_totals"]["hottest_softirq_percent"] is not None and node["cpu_totals"]["net_rx_per_s"] is not None
    assert doc["totals"]["states"] == {"up": 4}
    # the probe mesh is on by default over SSH: each node says where it answers (no probe has
    # settled yet in a snapshot's few seconds)
    assert [(m["node"], m["available"]) for m in doc["mesh"]["nodes"]] == [(f"node{k}", True) for k in range(1, 5)]


def test_snapshot_reports_each_failure_and_still_prints_the_rest(lab, tmp_path):
    lab.node(3).stop_sshd()
    result = netui("snapshot", "--json", "--connect-timeout", "3", "-F", str(lab.ssh_config), lab.host_pattern())
    assert result.returncode == 1
    nodes = {n["name"]: n for n in json.loads(result.stdout)["nodes"]}
    assert nodes["node3"]["state"] == "down" and "connection refused" in nodes["node3"]["error"]
    assert all(nodes[f"node{k}"]["state"] == "up" for k in (1, 2, 4))


@pytest.mark.parametrize("bad", ["node1;touch /tmp/netui-pwned", "$(touch /tmp/netui-pwned)@node1",
                                 "node`id`", "node[1-"])
def test_bad_names_are_refused_before_any_connection(lab, bad):
    result = netui("snapshot", "-F", str(lab.ssh_config), bad, timeout=20)
    assert result.returncode != 0
    assert result.stderr.startswith("netui: ")
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_tui_shows_the_lab_live(lab):
    session = f"netui-lab-{uuid.uuid4().hex[:6]}"
    cmd = f"{sys.executable} -m netui -F {lab.ssh_config} '{lab.host_pattern()}'"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmd], check=True)
    try:
        deadline = time.monotonic() + 15
        screen = ""
        while time.monotonic() < deadline:
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
            if "4 up" in screen and "kb/s" in screen:
                break
            time.sleep(0.2)
        assert "4 nodes: 4 up" in screen, screen
        rows = [line for line in screen.splitlines() if line.startswith("node")]
        assert sorted(r.split()[0] for r in rows) == ["node1", "node2", "node3", "node4"]
        assert all(" up " in r for r in rows)
    finally:
        subprocess.run(["tmux", "send-keys", "-t", session, "q"])
        time.sleep(1)
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
