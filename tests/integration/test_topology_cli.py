"""`netui topology` run as a user runs it: the ring order check of a host order against a
topology file or scontrol, its exit statuses, its hostfile, its JSON; bad input is a message."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from tests.command import netui
from tests.testdata import data_path

pytestmark = pytest.mark.slow  # netui started as a command

CONF = str(data_path("topology/slurm-topology.conf"))
TOML = str(data_path("topology/two-leaves.toml"))


def test_a_shuffled_order_is_worse_and_the_better_order_is_printed():
    r = netui("topology", "dev0,dev6,dev12,dev1,dev7,dev13", "--topology", CONF)
    assert r.returncode == 1, r.stderr
    assert "cross-switch hops: 6 of 6 (fewest possible: 3)" in r.stdout
    assert "rank    0 dev0 (s0) → dev6 (s1) via s3" in r.stdout
    tail = r.stdout.split("hostfile", 1)[1].splitlines()[1:]
    assert tail == ["# s0", "dev0", "dev1", "# s1", "dev6", "dev7", "# s2", "dev12", "dev13"]


def test_the_hostfile_is_the_hosts_only_and_feeds_back_as_a_good_order(tmp_path):
    r = netui("topology", "dev13", "dev0", "dev7", "dev1", "dev12", "dev6", "--topology", CONF, "--hostfile")
    assert r.returncode == 1
    assert r.stdout.split() == ["dev0", "dev1", "dev7", "dev6", "dev13", "dev12"]
    hostfile = tmp_path / "hosts"
    hostfile.write_text(r.stdout)
    again = netui("topology", "-f", str(hostfile), "--topology", CONF)
    assert again.returncode == 0, again.stdout
    assert "The order already keeps each leaf's hosts together" in again.stdout


def test_json_document():
    r = netui("topology", "node1,node5,node2,node6,ghost", "--topology", TOML, "--json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["kind"] == "netui-topology-ring"
    assert doc["cross_switch_hops"] == 4 and doc["minimum_cross_switch_hops"] == 2
    assert doc["worse_than_minimum"] is True
    assert doc["crossing"] == [{"switch": "spine1", "level": 1, "hops": 4, "minimum": 2}]
    assert doc["unplaced"] == ["ghost"]
    assert doc["better_order"] == ["node1", "node2", "node5", "node6", "ghost"]
    assert doc["cross_switch"][0] == {"rank": 0, "from": "node1", "to": "node5", "from_leaf": "leaf1",
                                      "to_leaf": "leaf2", "via": "spine1", "uplinks": ["leaf1", "leaf2"]}
    assert {"name": "node1", "leaf": "leaf1", "port": "swp1"} in doc["placement"]


def test_without_hosts_the_tree_is_shown():
    r = netui("topology", "--topology", TOML)
    assert r.returncode == 0
    assert "spine1" in r.stdout and "leaf1  (uplink 100 Gb/s, two-leaves.toml:4)" in r.stdout
    assert "node1:swp1 node2 node3 node4" in r.stdout
    doc = json.loads(netui("topology", "--topology", CONF, "--json").stdout)
    assert [s["name"] for s in doc["switches"]] == ["s3", "s0", "s1", "s2"]


def test_bad_input_is_a_message_and_exit_2(tmp_path):
    bad = tmp_path / "topology.conf"
    bad.write_text("SwitchName=s0 Nodes=a[1-2]\nSwitchName=s1 Nodes=a[3-1]\n")
    for args, words in [
        (("a1", "--topology", str(bad)), f"netui topology: --topology {bad}:2: bad Nodes 'a[3-1]'"),
        (("a1", "--topology", str(tmp_path / "none.toml")), "none.toml: cannot read: no such file"),
        (("a1",), "no topology: give --topology FILE"),
        (("x[1-3]", "--topology", CONF), "none of the 3 hosts is in the topology"),
        (("a;b", "--topology", CONF), "bad pattern"),
        (("--topology", CONF, "--hostfile"), "--hostfile needs the job's hosts"),
    ]:
        r = netui("topology", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert words in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_slurm_asks_scontrol_for_the_switches_and_the_job_for_its_order(tmp_path):
    """A stand-in scontrol on PATH answers as Slurm's does; a missing one is a clear message."""
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\n"
                    f"[ \"$1 $2\" = \"show topology\" ] && exec cat {data_path('topology/scontrol-show-topology.txt')}\n"
                    "exit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "dev[6-7],dev[0-1]"}
    r = netui("topology", "--slurm", env=env)
    assert r.returncode == 0, r.stderr
    assert "topology from scontrol show topology" in r.stdout
    assert "cross-switch hops: 2 of 4 (fewest possible: 2)" in r.stdout
    env["SLURM_JOB_NODELIST"] = "dev[0-1],dev6,dev2"
    assert netui("topology", "--slurm", "--hostfile", env=env).stdout.split() == ["dev0", "dev1", "dev2", "dev6"]
    env["PATH"] = str(tmp_path / "nowhere")
    r = subprocess.run([sys.executable, "-m", "netui", "topology", "--slurm"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 2 and "scontrol not found" in r.stderr and "Traceback" not in r.stderr


def test_snapshot_json_and_text_name_the_leaf_and_port(tmp_path):
    from netui.collectors.local import LiveReader

    me = LiveReader().name
    mapping = tmp_path / "map.toml"
    mapping.write_text(f'[switches.spine]\n[switches.leaf7]\nuplink = "spine"\nnodes = "{me}"\n'
                       f'[nodes."{me}"]\nport = "swp12"\n')
    run = [sys.executable, "-m", "netui", "snapshot", "--interval", "0.2", "--topology", str(mapping)]
    doc = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=60).stdout)
    node = doc["nodes"][0]
    assert node["switch"] == {"leaf": "leaf7", "port": "swp12", "leaf_source": "map.toml:2",
                              "port_source": "map.toml:5"}
    assert doc["topology_source"] == str(mapping)
    assert "interfaces" in node and "health" in node  # the other fields stay
    text = subprocess.run(run, capture_output=True, text=True, timeout=60).stdout
    assert "  switch leaf7 port swp12" in text
    plain = json.loads(subprocess.run([sys.executable, "-m", "netui", "snapshot", "--interval", "0.2", "--json"],
                                      capture_output=True, text=True, timeout=60).stdout)
    assert plain["nodes"][0]["switch"] is None and plain["topology_source"] is None


def test_a_bad_topology_stops_the_other_commands_before_any_connection(tmp_path):
    bad = tmp_path / "t.conf"
    bad.write_text("SwitchName=s0 Nodes=a1\nSwitchName=s1 Nodes=a1\n")
    for command in (["snapshot"], ["bench", "iperf3", "a1", "a2"]):
        r = subprocess.run([sys.executable, "-m", "netui", *command, "--topology", str(bad)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2, (command, r.stderr)
        assert f"--topology {bad}:2: node a1 is under two switches: s0 (line 1) and s1" in r.stderr


def test_watching_under_slurm_without_a_tree_goes_on_without_switches(tmp_path, monkeypatch, capsys):
    """`netui --slurm` on a cluster whose Slurm has no topology/tree: a note, never a failure;
    a --topology FILE that cannot be read stops it (exit 2 with the reason)."""

    from netui.cli.topology import attach_topology
    from netui.exits import InputError
    from netui.model.fleet import Fleet

    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\necho 'BlockName=b1 BlockIndex=0 Nodes=n[1-4] BlockSize=4'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    fleet = Fleet(["n1"])
    attach_topology(fleet, None, True)
    assert fleet.topology is None
    err = capsys.readouterr().err
    assert "topology/block is not supported" in err and "going on without switches" in err
    attach_topology(fleet, None, False)  # no --slurm: scontrol not asked
    assert capsys.readouterr().err == ""
    with pytest.raises(InputError, match="--topology .*nope.conf: cannot read"):
        attach_topology(fleet, str(tmp_path / "nope.conf"), True)
    attach_topology(fleet, CONF, True)
    assert fleet.placement("dev3").switch == "s0" and fleet.topology_source == CONF


def test_an_empty_host_file_is_said_in_this_commands_words(tmp_path):
    empty = tmp_path / "hosts"
    empty.write_text("# nothing yet\n")
    r = netui("topology", "--topology", str(data_path("topology/two-leaves.toml")), "-f", str(empty))
    assert r.returncode == 2 and "no hosts to check" in r.stderr and str(empty) in r.stderr, r.stderr
    assert "watch" not in r.stderr
