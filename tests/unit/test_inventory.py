"""The list of nodes, from what a user types: targets, ranges, host files, Slurm jobs, refusals."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.inventory import (
    MAX_TARGETS,
    SHELL_METACHARACTERS,
    InventoryError,
    Target,
    build_targets,
    expand,
    parse_target,
    read_host_file,
    slurm_nodes,
)

# --- parse_target ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "host", "user", "port"), [
    ("gpu001", "gpu001", None, None),
    ("root@gpu001", "gpu001", "root", None),
    ("gpu001:2222", "gpu001", None, 2222),
    ("svc.ml-ops@gpu001.cluster.example.com:22", "gpu001.cluster.example.com", "svc.ml-ops", 22),
    ("10.0.0.7:65535", "10.0.0.7", None, 65535),
    ("bastion_alias", "bastion_alias", None, None),  # an ~/.ssh/config alias
    ("[fe80::1]:2222", "fe80::1", None, 2222),
    ("user@[::1]", "::1", "user", None),
    ("alice@[fe80::1%eth0]:22", "fe80::1%eth0", "alice", 22),
    ("fe80::1", "fe80::1", None, None),
    ("2001:db8::1:22", "2001:db8::1:22", None, None),  # bare IPv6: the last group is not a port
])
def test_parse_target_reads_user_host_port(text, host, user, port):
    t = parse_target(text)
    assert (t.host, t.user, t.port, t.local) == (host, user, port, False)
    assert t.name == host
    assert parse_target(t.spec) == t  # spec is the form to hand back to the parser


@pytest.mark.parametrize(("text", "reason"), [
    ("node1;rm -rf /", "shell metacharacter ';'"),
    ("$(id)", "shell metacharacter '$'"),
    ("`id`", "shell metacharacter '`'"),
    ("gpu1'", "shell metacharacter \"'\""),
    ('gpu"1', "shell metacharacter '\"'"),
    ("gpu1|nc", "shell metacharacter '|'"),
    ("gpu1&", "shell metacharacter '&'"),
    ("gpu*", "shell metacharacter '*'"),
    ("gpu[1-2]", "shell metacharacter '['"),
    ("gpu 1", "whitespace ' '"),
    ("gpu1\n", "control character U+000A"),
    ("gpu\x001", "control character U+0000"),
    ("gpu1\t", "control character U+0009"),
    ("", "empty"),
    ("gpu1:0", "port 0 is out of range 1-65535"),
    ("gpu1:70000", "port 70000 is out of range 1-65535"),
    ("gpu1:abc", "port 'abc' is not a number"),
    ("gpu1:", "empty port"),
    (":22", "no host before ':'"),
    ("root@", "no host after '@'"),
    ("a@b@gpu1", "more than one '@'"),
    ("@gpus", "node groups (@name) are not supported"),
    ("-oProxyCommand", "starts with '-'"),
    ("-l@gpu1", "starts with '-'"),
    ("a&b@gpu1", "user name 'a&b' contains shell metacharacter '&'"),
    ("dom\\bob@gpu1", "shell metacharacter '\\\\'"),
    ("bob$@gpu1", "shell metacharacter '$'"),
    ("gpü1", "non-ASCII character 'ü'"),
    ("gpu..1", "not a plausible host name"),
    ("gpu/1", "character '/'"),
    ("[10.0.0.1]:22", "shell metacharacter '['"),
    ("[fe80::1", "missing ']'"),
    ("[fe80::1]22", "unexpected '22' after ']'"),
    ("fe80::zz", "not an IPv6 address"),
    ("[fe80::1%eth;0]", "shell metacharacter ';'"),
    ("x" * 254, "longer than 253"),
])
def test_parse_target_refuses_what_is_not_a_plausible_host(text, reason):
    with pytest.raises(InventoryError) as err:
        parse_target(text)
    message = str(err.value)
    assert reason in message
    assert repr(text)[:40] in message  # the input is quoted


def test_inventory_error_is_a_value_error():
    assert issubclass(InventoryError, ValueError)


def test_long_input_is_quoted_short():
    with pytest.raises(InventoryError) as err:
        parse_target("gpu;" + "x" * 10_000)
    assert len(str(err.value)) < 200
    assert "10,004 characters" in str(err.value)


_HOSTISH = st.text(alphabet="abz09.-_:@[]%;$`'\" \n\\|&()!^,/", max_size=24)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.text(max_size=40), _HOSTISH))
def test_parse_target_never_lets_a_shell_metacharacter_through(text):
    try:
        t = parse_target(text)
    except InventoryError:
        return
    for part in (t.host, t.user or ""):
        assert not set(part) & SHELL_METACHARACTERS
        assert part.isascii() and part.isprintable() and not any(c.isspace() for c in part)
        assert not part.startswith("-")
    assert t.host


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.text(max_size=30), st.text(alphabet="ab01-[],!&^/@:%;$ ", max_size=20)))
def test_expand_gives_parseable_targets_or_refuses(pattern):
    # ClusterShell raises its own errors and plain ValueError; none may escape but InventoryError.
    try:
        specs = expand([pattern])
    except InventoryError:
        return
    for spec in specs:
        parse_target(spec)


# --- expand --------------------------------------------------------------------------------------


def test_expand_keeps_zero_padding():
    nodes = expand(["gpu[001-128]"])
    assert len(nodes) == 128
    assert nodes[:3] == ["gpu001", "gpu002", "gpu003"]
    assert nodes[-1] == "gpu128"


@pytest.mark.parametrize(("pattern", "nodes"), [
    ("node[1-4,7]", ["node1", "node2", "node3", "node4", "node7"]),
    ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
    ("node[0-10/2]", ["node0", "node2", "node4", "node6", "node8", "node10"]),
    ("node[1-5]!node3", ["node1", "node2", "node4", "node5"]),
    ("node[1-5]&node[4-9]", ["node4", "node5"]),
    ("node[1-3]^node[2-4]", ["node1", "node4"]),
    ("gpu1,gpu2", ["gpu1", "gpu2"]),
    ("n[09-11]", ["n09", "n10", "n11"]),
    ("ib-sw[1-2].fabric", ["ib-sw1.fabric", "ib-sw2.fabric"]),
])
def test_expand_follows_clustershell_syntax(pattern, nodes):
    assert expand([pattern]) == nodes


def test_expand_keeps_the_order_patterns_were_named_in():
    assert expand(["zeta[1-2]", "alpha1", "mid"]) == ["zeta1", "zeta2", "alpha1", "mid"]


def test_expand_keeps_the_order_of_a_comma_list():
    assert expand(["gpu9,gpu[1-2],cpu1"]) == ["gpu9", "gpu1", "gpu2", "cpu1"]


def test_expand_within_a_range_or_set_operation_is_nodesets_sorted_order():
    assert expand(["node[3,1,2]"]) == ["node1", "node2", "node3"]
    assert expand(["gpu9,gpu[1-3]!gpu2"]) == ["gpu1", "gpu3", "gpu9"]


def test_expand_lists_a_node_once_where_first_named():
    assert expand(["gpu2", "gpu[1-3]", "gpu2"]) == ["gpu2", "gpu1", "gpu3"]


def test_expand_gives_user_and_port_to_every_node_of_the_pattern():
    assert expand(["root@gpu[1-2]:2222", "gpu1"]) == ["root@gpu1:2222", "root@gpu2:2222", "gpu1"]


def test_expand_passes_ipv6_literals_through():
    assert expand(["root@[fe80::1]:22", "::1"]) == ["root@[fe80::1]:22", "::1"]


@pytest.mark.parametrize(("pattern", "reason"), [
    ("node[1-", "missing bracket"),
    ("node]", "illegal closing bracket"),
    ("node[5-1]", "invalid values in range"),
    ("node[a-b]", "cannot convert string to integer"),
    ("node[1-3,]", "empty range"),
    ("n[001-1000]", "padding length mismatch"),
    ("node1,,node2", "missing nodeset operand"),
    ("node[1-3]!node[1-3]", "names no node"),
    ("@gpus", "node groups (@name) are not supported"),
    ("gpu[1-2],@gpus", "node groups (@name) are not supported"),
    ("node[1-2];reboot", "shell metacharacter ';'"),
    ("gpu[1-2] cpu1", "whitespace"),
    ("gpu*", "shell metacharacter '*'"),
    ("-gpu[1-2]", "starts with '-'"),
    ("gpu[1-2]:0", "port 0 is out of range"),
    ("ro&ot@gpu[1-2]", "user name 'ro&ot'"),
    ("gpu[" + "9" * 30 + "-" + "9" * 31 + "]", "number too long"),
])
def test_expand_refuses_malformed_patterns_naming_them(pattern, reason):
    with pytest.raises(InventoryError) as err:
        expand(["good1", pattern])
    assert reason in str(err.value)
    assert repr(pattern)[:30] in str(err.value)


def test_expand_refuses_a_typo_sized_range_at_once():
    start = time.monotonic()
    with pytest.raises(InventoryError, match=r"names more than 100,000 \(a typo in a range\?\)"):
        expand(["node[1-10000000]"])
    with pytest.raises(InventoryError, match="names more than 100,000"):
        expand(["rack[1-1000]-n[1-1000]"])  # a cartesian product, counted not built
    with pytest.raises(InventoryError, match="names more than 100,000"):
        expand(["node[1-99999999999999999]"])
    assert time.monotonic() - start < 2.0


@pytest.mark.slow
def test_expand_limit_counts_all_patterns():
    assert len(expand([f"gpu[1-{MAX_TARGETS}]"])) == MAX_TARGETS
    with pytest.raises(InventoryError, match="more than 100,000 in all .*'cpu1'"):
        expand([f"gpu[1-{MAX_TARGETS}]", "cpu1"])


def test_expand_wants_a_list_not_a_string():
    with pytest.raises(TypeError):
        expand("gpu[1-2]")


# --- host files --------------------------------------------------------------------------------


def test_read_host_file_skips_comments_and_blank_lines(tmp_path):
    path = tmp_path / "hosts"
    path.write_text(
        "# training job 42\n"
        "gpu[001-004]\n"
        "\n"
        "   root@ib-sw1:2222   # the switch\n"
        "\t# indented comment\n"
        "[fe80::1]:22\n"
    )
    assert read_host_file(path) == ["gpu[001-004]", "root@ib-sw1:2222", "[fe80::1]:22"]


@pytest.mark.parametrize(("lines", "where", "reason"), [
    ("gpu1\n# ok\ngpu[1-\n", ":3:", "missing bracket"),
    ("gpu1\ngpu2;reboot\n", ":2:", "shell metacharacter ';'"),
    ("gpu1 gpu2\n", ":1:", "(one host or pattern per line)"),
    ("\n\n-gpu[1-2]\n", ":3:", "starts with '-'"),
])
def test_read_host_file_errors_name_file_and_line(tmp_path, lines, where, reason):
    path = tmp_path / "hosts.txt"
    path.write_text(lines)
    with pytest.raises(InventoryError) as err:
        read_host_file(path)
    assert str(err.value).startswith(f"{path}{where} ")
    assert reason in str(err.value)


def test_read_host_file_that_cannot_be_read(tmp_path):
    with pytest.raises(InventoryError, match="cannot read host file .*missing.*No such file"):
        read_host_file(tmp_path / "missing")
    binary = tmp_path / "binary"
    binary.write_bytes(b"gpu1\n\xff\xfe\n")
    with pytest.raises(InventoryError, match="is not UTF-8"):
        read_host_file(binary)


# --- Slurm ---------------------------------------------------------------------------------------

SHOW_JOB_RUNNING = """\
JobId=4242 JobName=llama-pretrain
   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A
   Priority=4294901757 Nice=0 Account=ml QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=02:10:02 TimeLimit=2-00:00:00 TimeMin=N/A
   SubmitTime=2024-05-01T10:00:00 EligibleTime=2024-05-01T10:00:00
   StartTime=2024-05-01T10:00:01 EndTime=2024-05-03T10:00:01 Deadline=N/A
   Partition=gpu AllocNode:Sid=login1:12345
   ReqNodeList=(null) ExcNodeList=gpu[100-101]
   NodeList=gpu[001-003],gpu010
   BatchHost=gpu001
   NumNodes=4 NumCPUs=256 NumTasks=32 CPUs/Task=8 ReqB:S:C:T=0:0:*:*
   TRES=cpu=256,mem=1000G,node=4,billing=256,gres/gpu=32
   Command=/home/alice/train.sh
   WorkDir=/home/alice
"""

SHOW_JOB_PENDING = """\
JobId=4243 JobName=llama-eval
   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A
   JobState=PENDING Reason=Resources Dependency=(null)
   Partition=gpu AllocNode:Sid=login1:12345
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=(null)
   NumNodes=8-8 NumCPUs=512 NumTasks=64 CPUs/Task=8 ReqB:S:C:T=0:0:*:*
"""


class FakeScontrol:
    """Stands in for subprocess.run: answers scontrol argv with canned (rc, stdout, stderr)."""

    def __init__(self, answers: dict[tuple[str, ...], tuple[int, str, str]] | None = None,
                 raises: BaseException | None = None):
        self.answers = answers or {}
        self.raises = raises
        self.calls: list[list[str]] = []

    def __call__(self, argv, **kwargs):
        self.calls.append(list(argv))
        assert kwargs.get("timeout"), "scontrol must not be able to hang netui"
        if self.raises is not None:
            raise self.raises
        rc, out, err = self.answers[tuple(argv)]
        return subprocess.CompletedProcess(argv, rc, out, err)


def running_job() -> FakeScontrol:
    return FakeScontrol({
        ("scontrol", "show", "job", "4242"): (0, SHOW_JOB_RUNNING, ""),
        ("scontrol", "show", "hostnames", "gpu[001-003],gpu010"): (0, "gpu001\ngpu002\ngpu003\ngpu010\n", ""),
    })


def test_slurm_nodes_inside_a_job_come_from_the_environment():
    env = {"SLURM_JOB_NODELIST": "gpu-[001-003],cpu07", "SLURM_JOB_ID": "4242"}
    run = FakeScontrol(raises=AssertionError("no command should run"))
    assert slurm_nodes(None, env=env, run=run) == ["gpu-001", "gpu-002", "gpu-003", "cpu07"]
    assert run.calls == []


def test_slurm_nodes_of_a_job_id_ask_scontrol():
    run = running_job()
    assert slurm_nodes("4242", env={}, run=run) == ["gpu001", "gpu002", "gpu003", "gpu010"]
    assert run.calls == [["scontrol", "show", "job", "4242"],
                         ["scontrol", "show", "hostnames", "gpu[001-003],gpu010"]]


def test_slurm_nodes_without_nodelist_use_the_job_id_from_the_environment():
    run = running_job()
    assert slurm_nodes(None, env={"SLURM_JOB_ID": "4242"}, run=run)[0] == "gpu001"


def test_slurm_nodes_outside_a_job_say_what_to_do():
    with pytest.raises(InventoryError, match=r"SLURM_JOB_NODELIST.*--slurm 1234"):
        slurm_nodes(None, env={}, run=FakeScontrol(raises=AssertionError))


def test_slurm_nodes_of_a_pending_job():
    run = FakeScontrol({("scontrol", "show", "job", "4243"): (0, SHOW_JOB_PENDING, "")})
    with pytest.raises(InventoryError, match=r"job 4243 has no nodes allocated \(state PENDING\)"):
        slurm_nodes("4243", env={}, run=run)


def test_slurm_nodes_of_an_unknown_job_quote_slurm():
    run = FakeScontrol({("scontrol", "show", "job", "999"):
                        (1, "", "slurm_load_jobs error: Invalid job id specified\n")})
    with pytest.raises(InventoryError, match="job 999.*slurm_load_jobs error: Invalid job id specified"):
        slurm_nodes("999", env={}, run=run)


def test_slurm_nodes_without_scontrol():
    with pytest.raises(InventoryError, match=r"scontrol not found \(is this a Slurm cluster\?\)"):
        slurm_nodes("4242", env={}, run=FakeScontrol(raises=FileNotFoundError(2, "No such file")))


def test_slurm_nodes_when_scontrol_hangs():
    hang = FakeScontrol(raises=subprocess.TimeoutExpired(["scontrol"], 30))
    with pytest.raises(InventoryError, match="scontrol gave no answer in 30 s"):
        slurm_nodes("4242", env={}, run=hang)


@pytest.mark.parametrize("jobid", ["", "abc", "12;reboot", "$(id)", "123_", "_4", "12 3", "-1"])
def test_slurm_job_id_must_be_digits(jobid):
    run = FakeScontrol(raises=AssertionError("no command should run"))
    with pytest.raises(InventoryError, match="bad Slurm job id"):
        slurm_nodes(jobid, env={}, run=run)
    assert run.calls == []


def test_slurm_array_task_id_is_accepted():
    run = FakeScontrol({
        ("scontrol", "show", "job", "4242_7"): (0, SHOW_JOB_RUNNING.replace("JobId=4242", "JobId=4249"), ""),
        ("scontrol", "show", "hostnames", "gpu[001-003],gpu010"): (0, "gpu001\ngpu002\ngpu003\ngpu010\n", ""),
    })
    assert len(slurm_nodes("4242_7", env={}, run=run)) == 4


def test_slurm_host_names_are_checked_too():
    run = FakeScontrol({
        ("scontrol", "show", "job", "4242"): (0, SHOW_JOB_RUNNING, ""),
        ("scontrol", "show", "hostnames", "gpu[001-003],gpu010"): (0, "gpu001\n-oProxyCommand\n", ""),
    })
    with pytest.raises(InventoryError, match="Slurm job 4242: scontrol gave .*starts with '-'"):
        slurm_nodes("4242", env={}, run=run)
    with pytest.raises(InventoryError, match=r"SLURM_JOB_NODELIST.*missing bracket"):
        slurm_nodes(None, env={"SLURM_JOB_NODELIST": "gpu[001-003"})


# --- build_targets -----------------------------------------------------------------------------


def test_build_targets_from_every_source_in_order(tmp_path, monkeypatch):
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text("ib-sw1\ngpu002  # also named on the command line\n")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[003-004]")
    targets = build_targets(["gpu[001-002]"], files=[str(hosts_file)], slurm=None, local=True)
    assert [t.name for t in targets] == ["gpu001", "gpu002", "ib-sw1", "gpu003", "gpu004",
                                         socket.gethostname()]
    assert targets[-1] == Target(host="localhost", user=None, port=None,
                                 name=socket.gethostname(), local=True)
    assert not any(t.local for t in targets[:-1])


def test_build_targets_local_alone():
    assert [t.local for t in build_targets([], local=True)] == [True]


def test_build_targets_default_user_and_port_only_where_none_given():
    targets = build_targets(["gpu1", "bob@gpu2", "gpu3:2222"], user="alice", port=22)
    assert [(t.user, t.port) for t in targets] == [("alice", 22), ("bob", 22), ("alice", 2222)]
    assert [t.name for t in targets] == ["gpu1", "gpu2", "gpu3"]


def test_build_targets_same_host_twice_is_one_target():
    targets = build_targets(["gpu1", "gpu[1-2]", "GPU1", "alice@gpu1"], user="alice")
    assert [(t.host, t.user, t.name) for t in targets] == [("gpu1", "alice", "gpu1"),
                                                           ("gpu2", "alice", "gpu2")]


def test_build_targets_names_unique_with_users_and_ports_where_needed():
    targets = build_targets(["gpu1", "root@gpu1", "gpu1:2222", "root@gpu1:2222", "gpu2",
                             "[fe80::1]:22", "[fe80::1]:2200"])
    names = [t.name for t in targets]
    assert names == ["gpu1", "root@gpu1", "gpu1:2222", "root@gpu1:2222", "gpu2",
                     "[fe80::1]:22", "[fe80::1]:2200"]
    assert len(set(names)) == len(names)


def test_build_targets_local_name_never_clashes_with_a_remote_one():
    me = socket.gethostname()
    targets = build_targets([me], local=True)
    assert [t.name for t in targets] == [me, f"{me} (local)"]


def test_build_targets_with_nothing_to_watch():
    with pytest.raises(InventoryError, match="no nodes to watch"):
        build_targets([])


def test_build_targets_refuses_bad_input_anywhere(tmp_path):
    bad_file = tmp_path / "hosts"
    bad_file.write_text("gpu1\n$(reboot)\n")
    with pytest.raises(InventoryError, match=r"hosts:2: .*shell metacharacter '\$'"):
        build_targets(["gpu[1-4]"], files=[str(bad_file)])
    with pytest.raises(InventoryError, match=r"-l 'x;y'.*shell metacharacter ';'"):
        build_targets(["gpu1"], user="x;y")
    with pytest.raises(InventoryError, match="bad port 0"):
        build_targets(["gpu1"], port=0)
    with pytest.raises(InventoryError, match="bad Slurm job id"):
        build_targets(["gpu1"], slurm="latest")
    with pytest.raises(InventoryError, match="too many nodes"):
        build_targets(["gpu[1-100000]", "cpu[1-2]"])


def test_build_targets_wants_a_list_not_a_string():
    with pytest.raises(TypeError):
        build_targets("gpu1")
