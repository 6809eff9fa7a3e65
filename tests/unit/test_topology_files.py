"""Topology files: Slurm's topology.conf (the man page's own example), ``scontrol show topology``
output, netui's TOML map; every malformed file names its file and line."""

from __future__ import annotations

import os
import subprocess

import pytest

from netui.collectors.topology_files import (
    MAX_TOPOLOGY_BYTES,
    TopologyFileError,
    looks_like_toml,
    parse_scontrol_topology,
    parse_topology_conf,
    parse_topology_toml,
    read_topology_file,
    scontrol_topology,
)
from tests.testdata import data_path, data_text

DEV = [f"dev{i}" for i in range(18)]


def _check_man_example(topo):
    assert topo.leaves() == ["s0", "s1", "s2"]
    assert [topo.leaf_of(n) for n in DEV] == ["s0"] * 6 + ["s1"] * 6 + ["s2"] * 6
    assert topo.switches["s3"].parent is None
    assert {topo.switches[s].parent for s in ("s0", "s1", "s2")} == {"s3"}
    assert topo.level("s3") == 1 and topo.level("s0") == 0
    assert topo.tree_order() == ["s3", "s0", "s1", "s2"]


def test_the_man_page_example_of_topology_conf():
    topo = parse_topology_conf(data_text("topology/slurm-topology.conf"), "topology.conf")
    _check_man_example(topo)
    assert topo.attachment("dev7").source == "topology.conf:6"  # the line that placed it
    assert topo.port_of("dev7") is None


def test_scontrol_show_topology_keeps_nodes_on_their_leaves():
    """The spine's line lists every node below it (Nodes=dev[0-17]): they stay on s0..s2."""
    topo = parse_scontrol_topology(data_text("topology/scontrol-show-topology.txt"))
    _check_man_example(topo)
    assert topo.switches["s0"].link_speed == 1
    assert topo.attachment("dev0").source == "scontrol:1"


def test_keys_are_case_insensitive_ranges_and_comma_lists_and_link_speed():
    text = ("switchname=a NODES=tux[0-3,12,18-20] linkspeed=40  # comment Nodes=x\n"
            "SwitchName=b Nodes=tux21,tux[30-31]\\\n"
            "  LinkSpeed=10\n"
            "SwitchName=top Switches=a,b\n")
    topo = parse_topology_conf(text, "t.conf")
    assert topo.nodes_on("a") == ["tux0", "tux1", "tux2", "tux3", "tux12", "tux18", "tux19", "tux20"]
    assert topo.nodes_on("b") == ["tux21", "tux30", "tux31"]
    assert topo.switches["a"].link_speed == 40 and topo.switches["b"].link_speed == 10
    assert topo.switches["a"].uplink_gbps is None  # LinkSpeed has arbitrary units: never Gbit/s


@pytest.mark.parametrize("text, line, words", [
    ("SwitchName=s0 Nodes=a[1-2]\nSwitchName=s1 Nodez=b1\n", 2, "unknown key 'nodez'"),
    ("SwitchName=s0 Nodes=a1\nNodes=b[1-2]\n", 2, "missing SwitchName"),
    ("SwitchName=s0 Nodes=a[3-1]\n", 1, "bad Nodes 'a[3-1]'"),
    ("SwitchName=s0 Nodes=a[1-2\n", 1, "bad Nodes"),
    ("SwitchName=s0 Nodes=\n", 1, "Nodes is empty"),
    ("SwitchName=s0 Nodes=a[1-99999999]\n", 1, "more than"),
    ("SwitchName=s0 Nodes=a1\nSwitchName=s1 Nodes=a2\nSwitchName=s2 Switches=s0\n"
     "SwitchName=s3 Switches=s[0-1]\n", 4, "switch s0 is under two parents: s2 (line 3) and s3"),
    ("SwitchName=s0 Nodes=a[1-4]\n# a comment\nSwitchName=s1 Nodes=a[4-6]\n", 3,
     "node a4 is under two switches: s0 (line 1) and s1"),
    ("SwitchName=s0 Switches=s1\nSwitchName=s1 Switches=s2\nSwitchName=s2 Switches=s0\n", None, "loop"),
    ("SwitchName=s0 Switches=s0\n", 1, "itself"),
    ("SwitchName=s0 Switches=s9\n", 1, "switch s9 (in Switches of s0) is not defined"),
    ("SwitchName=s0 Nodes=a1\nSwitchName=s0 Nodes=a2\n", 2, "defined twice (first at line 1)"),
    ("SwitchName=s0 Nodes=a1 Switches=s1\nSwitchName=s1 Nodes=a2\n", 1, "both child switches and nodes"),
    ("SwitchName=s0 Nodes=a1 LinkSpeed=fast\n", 1, "bad LinkSpeed"),
    ("SwitchName=s0 Nodes=a1 Nodes=a2\n", 1, "given twice"),
    ("SwitchName=s0 Nodes a1\n", 1, "is not Key=Value"),
    ("BlockName=block1 Nodes=node[1-32]\n", 1, "topology/block is not supported"),
    ("SwitchName=" + "x" * 65 + " Nodes=a1\n", 1, "bad SwitchName"),
    ("SwitchName=s0 Nodes=@group\n", 1, "node groups"),
    ("# nothing but comments\n\n", None, "no switch defined"),
    ("SwitchName=s0 Nodes=Node1\nSwitchName=s1 Nodes=node1\n", 2,
     "node node1 is under two switches: s0 (line 1) and s1 (as Node1)"),
    ("".join(f"SwitchName=s{i} Switches=s{i - 1}\n" if i else "SwitchName=s0 Nodes=a1\n" for i in range(20)), 4,
     "switch s3: more than 16 levels of switches"),
    ("".join(f"SwitchName=s{i} Nodes=p{i}x[1-30000]\n" for i in range(5)), 4,
     "the file names more than 100,000 nodes by this line"),
])
def test_a_malformed_topology_conf_names_file_and_line(text, line, words):
    with pytest.raises(TopologyFileError) as err:
        parse_topology_conf(text, "/etc/slurm/topology.conf")
    msg = str(err.value)
    prefix = "/etc/slurm/topology.conf:" + (f"{line}: " if line else "")
    assert msg.startswith(prefix), msg
    assert words in msg
    if words == "loop":
        assert err.value.lineno in (1, 2, 3) and "s0 → s" in msg and msg.count("→") == 3, msg


def test_scontrol_output_of_another_plugin_or_none():
    with pytest.raises(TopologyFileError, match="topology/block is not supported"):
        parse_scontrol_topology("BlockName=block1 BlockIndex=0 Nodes=node[1-32] BlockSize=30\n")
    with pytest.raises(TopologyFileError, match="TopologyPlugin"):
        parse_scontrol_topology("")
    with pytest.raises(TopologyFileError, match="Slurm has no topology"):
        parse_scontrol_topology("No topology information available\n")


def _runner(stdout="", stderr="", rc=0, exc=None):
    def run(argv, **kw):
        assert argv == ["scontrol", "show", "topology"]
        if exc is not None:
            raise exc
        return subprocess.CompletedProcess(argv, rc, stdout, stderr)
    return run


def test_scontrol_is_run_and_its_failures_are_words():
    topo = scontrol_topology(_runner(data_text("topology/scontrol-show-topology.txt")))
    assert topo.leaf_of("dev17") == "s2"
    with pytest.raises(TopologyFileError, match="scontrol not found"):
        scontrol_topology(_runner(exc=FileNotFoundError()))
    with pytest.raises(TopologyFileError, match="Unable to contact slurm controller"):
        scontrol_topology(_runner(stderr="slurm_load_topo error: Unable to contact slurm controller", rc=1))
    with pytest.raises(TopologyFileError, match="no answer"):
        scontrol_topology(_runner(exc=subprocess.TimeoutExpired("scontrol", 30)))


# --- TOML ----------------------------------------------------------------------------------------


def test_the_toml_map():
    topo = read_topology_file(data_path("topology/two-leaves.toml"))
    assert topo.leaves() == ["leaf1", "leaf2"]
    assert topo.switches["leaf1"].parent == "spine1" and topo.switches["leaf1"].uplink_gbps == 100.0
    assert topo.nodes_on("leaf2") == ["node5", "node6", "node7", "node8"]
    assert topo.port_of("node1") == "swp1" and topo.port_of("node2") is None
    a = topo.attachment("node1")
    assert a.source == "two-leaves.toml:4" and a.port_source == "two-leaves.toml:14"
    assert topo.path("node1", "node5").uplinks == ("leaf1", "leaf2")


def test_a_node_table_alone_places_a_node_and_inline_tables_work():
    text = ('[switches]\nleaf1 = { uplink = "core" }\ncore = {}\n'
            '[nodes]\ngpu1 = { switch = "leaf1", port = "Ethernet1/1" }\n')
    topo = parse_topology_toml(text, "m.toml")
    assert topo.leaf_of("gpu1") == "leaf1" and topo.port_of("gpu1") == "Ethernet1/1"
    assert topo.attachment("gpu1").source == "m.toml:5"


@pytest.mark.parametrize("text, line, words", [
    ('[switches.leaf1]\nnodes = "n[1-2]"\ncolour = "red"\n', 1, "unknown key 'colour'"),
    ('[switches.leaf1]\nnodes = "n[2-1]"\n', 1, "bad switch leaf1's nodes"),
    ('[switches.leaf1]\nnodes = "n[1-2]"\n[switches.leaf2]\nnodes = "n2"\n', 3,
     "node n2 is under two switches: leaf1 (line 1) and leaf2"),
    ('[switches.leaf1]\nuplink = "spine"\n', 1, "uplink 'spine' is not a switch of this file"),
    ('[switches.a]\nuplink = "b"\n[switches.b]\nuplink = "a"\n', None, "switches loop"),
    ('[switches.a]\nnodes = "n1"\n[switches.b]\n[nodes.n1]\nswitch = "b"\n', 4, "under two switches"),
    ('[switches.a]\n[nodes.n1]\nswitch = "b"\n', 2, "switch 'b' is not a switch of this file"),
    ('[switches.a]\nnodes = "n1"\n[nodes.n2]\nport = "swp2"\n', 3, "node n2: no switch"),
    ('[switches.a]\nuplink_gbps = -5\n', 1, "uplink_gbps must be a positive number"),
    ('[switches.a]\nnodes = "n1"\n[nodes.n1]\nspeed = 3\n', 3, "unknown key 'speed'"),
    ('[switch.a]\n', 1, "unknown key 'switch'"),
    ('[switches.a]\nnodes = [1, 2]\n', 1, "nodes must be a hostlist"),
    ('[switches.a]\nnodes = "n1\n', 2, "not valid TOML"),
    ('"a(b" = 1\n', 1, "unknown key 'a(b'"),
    ('["sw(" ]\nx=1\n', 1, "unknown key 'sw('"),
    ('["[" ]\n', 1, "unknown key '['"),
    ('[switches.leaf1]\nnodes="n[1-2]"\n[nodes.n1.cluster]\nport = "x"\n', 3,
     'nodes.n1.cluster: a name with a dot must be quoted: [nodes."n1.cluster"]'),
    ('[switches.leaf1.example.com]\nnodes="n[1-2]"\n', 1, 'quoted: [switches."leaf1.example.com"]'),
    ('[switches.leaf1]\nnodes="n[1-2]"\n[nodes.N1]\nport = "x"\n[nodes.n1]\nport = "y"\n', 5,
     "node n1 is given twice (as N1, line 3)"),
    ("".join(f'[switches.s{i}]\nnodes = "p{i}x[1-30000]"\n' for i in range(5)), 7, "more than 100,000 nodes"),
])
def test_a_malformed_toml_map_names_file_and_line(text, line, words):
    with pytest.raises(TopologyFileError) as err:
        parse_topology_toml(text, "map.toml")
    msg = str(err.value)
    assert msg.startswith("map.toml:" + (f"{line}: " if line else "")), msg
    assert words in msg, msg


# --- files ---------------------------------------------------------------------------------------


def test_the_format_is_told_by_extension_or_content(tmp_path):
    assert looks_like_toml("x.toml", "") and looks_like_toml("map", "# c\n\n[switches.a]\n")
    assert not looks_like_toml("topology.conf", "SwitchName=s0 Nodes=a1\n")
    p = tmp_path / "map"
    p.write_text('# no extension\n[switches.leaf]\nnodes = "a[1-2]"\n')
    assert read_topology_file(p).leaf_of("a2") == "leaf"
    q = tmp_path / "topology.conf"
    q.write_bytes(data_path("topology/slurm-topology.conf").read_bytes())
    assert read_topology_file(q).leaf_of("dev12") == "s2"


def test_unreadable_and_oversized_files_are_refused_with_the_name(tmp_path):
    with pytest.raises(TopologyFileError, match=r"^.*nope\.conf: cannot read: no such file"):
        read_topology_file(tmp_path / "nope.conf")
    with pytest.raises(TopologyFileError, match="is a directory"):
        read_topology_file(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(TopologyFileError, match="FIFO"):
        read_topology_file(fifo)
    big = tmp_path / "big.conf"
    big.write_bytes(b"#" * (MAX_TOPOLOGY_BYTES + 1))
    with pytest.raises(TopologyFileError, match="larger than"):
        read_topology_file(big)
    bad = tmp_path / "latin1.conf"
    bad.write_bytes(b"SwitchName=s0 Nodes=a1\nSwitchName=s\xe9 Nodes=a2\n")
    with pytest.raises(TopologyFileError, match=r"latin1\.conf:2: not UTF-8"):
        read_topology_file(bad)


def test_a_deep_but_allowed_tree_and_a_long_chain_are_quick():
    """16 levels are read; /tmp-sized chains of 3,000 switches are refused at once, never recursed."""
    ok = "".join(f"SwitchName=s{i} Switches=s{i - 1}\n" if i else "SwitchName=s0 Nodes=a1\n" for i in range(16))
    topo = parse_topology_conf(ok)
    assert topo.level("s15") == 15 and topo.ancestry("s0")[-1] == "s15"
    chain = "".join(f"SwitchName=s{i} Switches=s{i - 1}\n" if i else "SwitchName=s0 Nodes=a1\n" for i in range(3000))
    with pytest.raises(TopologyFileError, match="more than 16 levels"):
        parse_topology_conf(chain)
    loop = "".join(f"SwitchName=s{i} Switches=s{(i + 1) % 3000}\n" for i in range(3000))
    with pytest.raises(TopologyFileError, match="loop"):
        parse_topology_conf(loop)


def test_random_toml_keys_never_trace_back():
    import random
    rng = random.Random(5)
    chars = "ab.[](){}*+?^$|\\'\" =-_1"
    for _ in range(400):
        key = "".join(rng.choice(chars) for _ in range(rng.randint(1, 8)))
        for text in (f'"{key}" = 1\n', f'[switches."{key}"]\nx = 1\n', f'[nodes."{key}"]\nport = 1\n',
                     f"['{key}']\nx=1\n"):
            try:
                parse_topology_toml(text, "r.toml")
            except TopologyFileError:
                pass
