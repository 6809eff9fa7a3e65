"""Hostile input that must cost work in proportion to what netui keeps of it: files a user
names (topology.conf with continued lines, host files of repeated ranges, TOML nested without
end, names megabytes long), Prometheus discovery of more instances than --max-nodes, a
rotation size that is a typo, a snapshot of more nodes than it can reach before its deadline,
and a damaged part appended to a whole recording.

Each runs through the code a user meets (parsers on real files, ``netui`` as a command, a real
HTTP server on 127.0.0.1, loopback sockets); a subprocess's timeout only stops a hang.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from netui.collectors.node_exporter import HttpClient, HttpSettings, ScrapeFailure
from netui.collectors.prometheus import PrometheusReader
from netui.collectors.topology_files import TopologyFileError, parse_topology_conf, read_topology_file
from netui.config import ConfigError, parse_config
from netui.engine.recording.codec import header_record
from netui.engine.recording.reader import read_records
from netui.engine.recording.writer import MIN_ROTATE_BYTES, RecordingWriter, rotated_paths
from netui.inventory import InventoryError, build_targets, read_host_file
from netui.model.node import NodeState
from netui.readlimits import MAX_TOML_DEPTH, toml_too_deep
from tests.command import netui
from tests.factories import write_ticks
from tests.prometheus_api import Collected, fleet_answers, queried_instances

REPO = Path(__file__).resolve().parents[2]


def python(code: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=REPO)


# --- topology.conf ------------------------------------------------------------------------------


def test_continued_lines_join_into_one_line_numbered_by_its_first():
    text = "SwitchName=s1 \\\n  Nodes=n[1-2] \\\n\n# a comment\nSwitchName=s2 Switches=s1\n"
    topo = parse_topology_conf(text)
    assert {n: topo.leaf_of(n) for n in ("n1", "n2")} == {"n1": "s1", "n2": "s1"}
    with pytest.raises(TopologyFileError, match=r"^topology.conf:3: ") as err:
        parse_topology_conf("SwitchName=s0 Nodes=a\n\nSwitchName=s1 \\\n Bogus=1 \\\n Nodes=n1\n")
    assert "bogus" in str(err.value).lower()


@pytest.mark.slow
def test_a_line_continued_over_400000_lines_is_read_in_one_pass():
    """Joining each continued piece onto the whole line so far took time quadratic in the
    lines (40,000: 20 s; this file would take over 10 minutes): a bound of 120 s stops only
    a hang, the answer is the check."""
    code = ("from netui.collectors.topology_files import parse_topology_conf\n"
            "text = 'SwitchName=s1 \\\\\\n' + 'LinkSpeed=1 \\\\\\n' * 400000 + 'Nodes=n1\\n'\n"
            "try:\n    parse_topology_conf(text)\nexcept Exception as e:\n    print(e)\n")
    r = python(code, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("topology.conf:1: 'linkspeed' given twice on one line"), r.stdout


def test_a_node_name_megabytes_long_is_refused_with_its_length_not_echoed(tmp_path):
    name = "n" * (15 << 20)
    path = tmp_path / "topology.conf"
    path.write_text(f"SwitchName=s1 Nodes={name}\n")
    with pytest.raises(TopologyFileError) as err:
        read_topology_file(str(path))
    msg = str(err.value)
    assert msg.startswith(f"{path}:1: ") and "15,728,640 characters" in msg and "at most 253" in msg
    assert len(msg) < 400
    toml = tmp_path / "map.toml"
    toml.write_text(f'[switches.leaf1]\nnodes = "n1"\n[nodes.{"x" * 300}]\nswitch = "leaf1"\n')
    with pytest.raises(TopologyFileError, match="300 characters"):
        read_topology_file(str(toml))
    # a name within the limit is a name
    ok = tmp_path / "ok.conf"
    ok.write_text(f"SwitchName=s1 Nodes={'a' * 253}\n")
    assert read_topology_file(str(ok)).leaf_of("a" * 253) == "s1"


# --- TOML nested without end ------------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_TOML_DEPTH + 1, 500, 100_000])
def test_toml_nested_deeper_than_the_limit_is_refused_with_file_and_line(tmp_path, depth):
    deep = "[" * depth + "]" * depth
    with pytest.raises(ConfigError, match=rf"^config.toml:3: arrays or tables nested more than {MAX_TOML_DEPTH}"):
        parse_config(f"# netui\n[thresholds]\nx = {deep}\n")
    path = tmp_path / "map.toml"
    path.write_text(f'[switches.leaf1]\nnodes = "n1"\nodd = {deep}\n')
    with pytest.raises(TopologyFileError, match=rf"^{path}:3: arrays or tables nested more than"):
        read_topology_file(str(path))


def test_brackets_in_strings_and_comments_do_not_count_as_nesting():
    many = "[" * 1000
    text = (f'a = "{many}"\nb = \'{many}\'\nc = """\n{many}\n"""\n# {many}\n'
            f'd = "say \\"{many}\\""\ne = [[1, 2], {{ x = [3] }}]\n')
    assert toml_too_deep(text) is None
    assert toml_too_deep(text + "f = " + "[" * (MAX_TOML_DEPTH + 1)) == 9
    # a config that nests as configs do is read as before
    assert parse_config('[thresholds]\ndrops_per_s = { careful = 1, warning = 10, critical = 100 }\n')


# --- host files ---------------------------------------------------------------------------------


def test_a_host_file_of_repeated_ranges_stops_where_it_passes_the_limit(tmp_path):
    """A 100-line file of n[1-100000] listed and checked 10 million names (45 s) before any
    total limit: the names are counted as they come, across lines, and a repeated line is
    checked once."""
    path = tmp_path / "hosts"
    path.write_text("n[1-100000]\n" * 100)
    assert read_host_file(path) == ["n[1-100000]"]  # the same pattern, once
    path.write_text("".join(f"n{k}-[1-60000]\n" for k in range(100)))
    with pytest.raises(InventoryError, match=rf"^{path}:2: too many nodes: the file names more than 100,000"):
        read_host_file(path)
    with pytest.raises(InventoryError, match=rf"^{path}:1: too many nodes.*--max-nodes"):
        build_targets([], files=[str(path)], max_nodes=1000)
    small = tmp_path / "small"
    small.write_text("gpu[01-04]\ngpu[01-04]\nroot@gpu05:2222\n")
    targets = build_targets([], files=[str(small)])
    assert [(t.host, t.user, t.port) for t in targets] == [
        ("gpu01", None, None), ("gpu02", None, None), ("gpu03", None, None), ("gpu04", None, None),
        ("gpu05", "root", 2222)]


# --- Prometheus discovery ----------------------------------------------------------------------


@pytest.mark.slow
async def test_prometheus_discovery_honours_max_nodes(prometheus_api):
    url, state = prometheus_api
    result = [{"metric": {"instance": f"198.18.{i // 250}.{i % 250 + 1}:9100"}, "value": [1.0, "1"]}
              for i in range(150)]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
    state["raw"] = lambda promql: body  # the discovery answer: 150 instances

    async def snapshot(*args: str) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "netui", "snapshot", "--source", f"prometheus={url}", *args, cwd=REPO,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _out, err = await asyncio.wait_for(proc.communicate(), 120)
        return proc.returncode, err.decode()

    rc, err = await snapshot("--max-nodes", "100")
    assert rc == 2, err
    assert "knows 150 instances (more than 100)" in err and "--max-nodes" in err and "Traceback" not in err
    assert state["queries"] == 1  # refused after discovery: no poll of 150 nodes


@pytest.mark.slow
async def test_one_huge_prometheus_answer_is_refused_at_what_its_nodes_need(prometheus_api):
    """A 240 MB answer (the limit was 256 MiB whatever the batch) took netui to 4.4 GB: an
    answer may hold what the instances asked for can need (4 MiB + 256 KiB per instance),
    and past that their nodes say so, the answer read no further."""
    url, state = prometheus_api
    names, bodies = fleet_answers(4)
    doc = json.loads(bodies[frozenset(names)])
    pad = [{"metric": {"__name__": "node_network_receive_bytes_total", "device": f"veth{k:06d}",
                       "instance": "198.18.0.2:9100", "job": "node"}, "value": [1.0, "1"]} for k in range(90_000)]
    doc["data"]["result"].extend(pad)  # one exporter listing 90,000 interfaces: ~12 MB
    body = json.dumps(doc).encode()
    assert 10 << 20 < len(body) < 256 << 20
    state["raw"] = lambda promql: body
    http = HttpClient(HttpSettings(timeout_s=20))
    reader = PrometheusReader(url, http, instances=names)
    sink = Collected()
    try:
        await reader.poll(sink)
    finally:
        await http.close()
    assert not sink.samples
    assert set(sink.states) == set(names.values())
    assert all(st is NodeState.PARSE_ERROR and "batch of 4 instances is over 5 MiB" in why
               for st, why in sink.states.values()), sink.states


@pytest.mark.slow
async def test_a_poll_reads_no_more_than_its_total_across_batches(prometheus_api):
    """Each batch's answer within its own limit, but all of them together bounded too: once
    a poll has read max_poll_bytes, the nodes of the batches left say so, never asked."""
    url, state = prometheus_api
    names, bodies = fleet_answers(600)  # batches of 256, 256, 88 instances, ~2 MB each full one
    first = sorted(names)[:256]
    assert len(bodies[frozenset(first)]) < 3 << 20
    state["raw"] = lambda promql: bodies[queried_instances(promql)]
    http = HttpClient(HttpSettings(timeout_s=20, max_poll_bytes=3 << 20))
    reader = PrometheusReader(url, http, instances=names)
    sink = Collected()
    try:
        await reader.poll(sink)
    finally:
        await http.close()
    assert set(sink.samples) == {names[i] for i in first}
    assert len(sink.states) == 600 - 256
    assert all(st is NodeState.PARSE_ERROR and "reached 3 MiB in this poll" in why
               for st, why in sink.states.values()), sink.states
    assert state["queries"] == 2  # the third batch is not asked for


async def test_a_list_of_instances_over_what_100000_take_is_not_read(prometheus_api):
    url, state = prometheus_api
    body = b" " * (40 << 20) + b"{}"  # the list of instances: 40 MiB
    state["raw"] = lambda promql: body
    http = HttpClient(HttpSettings(timeout_s=20))
    try:
        with pytest.raises(ScrapeFailure, match=r"the list of instances is over 32 MiB .*: not read"):
            await PrometheusReader(url, http).discover()
    finally:
        await http.close()


# --- netui record --max-size ------------------------------------------------------------------


def test_a_rotation_size_below_one_file_is_refused_at_once(tmp_path):
    out = tmp_path / "r.ndjson.gz"
    r = netui("record", "-o", str(out), "--max-size", "100", "--procfs", "tests/data/prometheus-procfs/proc")
    assert r.returncode == 2 and "did you mean 100M?" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()
    with pytest.raises(ValueError, match="at least 1 KiB"):
        RecordingWriter(out, header_record(1.0, hosts=["a"], interval_s=1.0), max_size_bytes=MIN_ROTATE_BYTES - 1)
    assert not out.exists()


def test_rotation_with_a_huge_keep_moves_only_the_files_there_are(tmp_path, monkeypatch):
    """--keep 1000000 looked at a million names at every rotation; FILE.1 … FILE.m are all
    a rotation moves. The oldest goes once there are ``keep`` of them."""
    import netui.engine.recording.writer as recording

    looked: list[str] = []
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self: looked.append(self.name) or real_exists(self))
    path = tmp_path / "r.ndjson.gz"
    monkeypatch.setattr(recording, "MIN_ROTATE_BYTES", 1)
    w, _ = write_ticks(path, 12, max_size_bytes=1, keep=1_000_000)
    w.close()
    assert w.rotations == 12 and len(rotated_paths(path)) == 13
    assert len(looked) < 1000, len(looked)
    # every file is whole, oldest first
    assert [sum(r["type"] == "tick" for r in read_records(p)) for p in rotated_paths(path)] == [1] * 12 + [0]
    w, _ = write_ticks(tmp_path / "k.ndjson.gz", 12, max_size_bytes=1, keep=3)
    w.close()
    assert [p.name for p in rotated_paths(tmp_path / "k.ndjson.gz")] == [
        "k.ndjson.gz.3", "k.ndjson.gz.2", "k.ndjson.gz.1", "k.ndjson.gz"]


# --- a damaged part loses itself only -------------------------------------------------------


def test_a_line_over_the_limit_in_an_appended_member_keeps_every_tick_before_it(tmp_path):
    path = tmp_path / "run.ndjson.gz"
    w, _ = write_ticks(path, 5)
    w.close()
    with open(path, "ab") as f:  # another gzip member: one line of 17 MiB, no newline
        f.write(gzip.compress(b'{"type": "tick", "t": 1' + b"0" * (17 << 20)))
    notes: list[str] = []
    records = list(read_records(path, notes))
    assert sum(r["type"] == "tick" for r in records) == 5
    assert len(notes) == 1 and "recording damaged after tick 5; kept 5 ticks" in notes[0], notes
    assert "longer than 16 MiB" in notes[0]
    r = netui("export", str(path), "--format", "json", "-o", str(tmp_path / "out.json"))
    assert r.returncode == 0, r.stderr
    assert "kept 5 ticks" in r.stderr
    assert json.loads((tmp_path / "out.json").read_text())


# --- a snapshot of more nodes than it can try in time ----------------------------------------


@pytest.mark.slow
def test_a_snapshot_says_which_nodes_it_never_tried_and_which_did_not_answer(tmp_path):
    """Nodes that accept TCP and never speak SSH, 2 handshakes at once: the first each hold a
    slot until the connect timeout; those never reached before the snapshot's deadline are
    "not tried in time", never "no answer" (they were not asked)."""
    listeners = []
    try:
        port = None
        for k in range(1, 41):
            s = socket.socket()
            s.bind((f"127.3.0.{k}", port or 0))
            port = s.getsockname()[1]
            s.listen(64)  # the kernel completes the TCP handshake; nobody ever answers
            listeners.append(s)
        config = tmp_path / "ssh_config"
        config.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SSH_", "NETUI_"))}
        env["HOME"] = str(tmp_path)
        r = netui("snapshot", "--connect-timeout", "1", "--interval", "0.25", "--fanout", "2", "-F", str(config),
                  f"127.3.0.[1-40]:{port}", env=env, timeout=120)
    finally:
        for s in listeners:
            s.close()
    assert r.returncode == 1, r.stderr
    lines = [line for line in r.stdout.splitlines() if not line.startswith(" ")]
    assert len(lines) == 40, r.stdout
    untried = [line for line in lines if "not tried in time" in line]
    tried = [line for line in lines if "not tried in time" not in line]
    # the deadline (connect timeout + 3 intervals + 5 s) lets 2 slots try about a dozen
    assert untried and len(tried) >= 2, r.stdout
    assert all("--fanout" in line for line in untried)
    assert not any("no answer in time" in line for line in untried)


# --- a snapshot whose names the resolver never answers -------------------------------------


class SilentDns:
    """A DNS server on 127.53.x.y:53 that reads every query and answers none (a resolver
    that drops a burst of queries looks so); ``names`` are the names asked for."""

    def __init__(self) -> None:
        import random
        import threading

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(50):  # another test process may hold one: take a free address
            self.address = f"127.53.{random.randrange(256)}.{random.randrange(1, 255)}"
            try:
                self.sock.bind((self.address, 53))
                break
            except OSError:
                continue
        else:
            raise RuntimeError("no free 127.53.x.y:53")
        self.sock.settimeout(0.2)
        self.names: set[str] = set()
        self.queries = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                packet, _ = self.sock.recvfrom(512)
            except OSError:
                continue
            self.queries += 1
            labels, pos = [], 12  # the question's name follows the 12-byte header
            while pos < len(packet) and packet[pos]:
                labels.append(packet[pos + 1:pos + 1 + packet[pos]].decode("ascii", "replace"))
                pos += 1 + packet[pos]
            self.names.add(".".join(labels))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="needs root and unshare (a private /etc/resolv.conf in a mount namespace)")
@pytest.mark.parametrize(("loop", "source"), [("auto", "ssh"), ("asyncio", "ssh"), ("auto", "node-exporter")])
def test_a_snapshot_of_names_the_resolver_never_answers_ends_at_its_deadline(tmp_path, loop, source):
    """Each connection attempt used to leave a name lookup in the event loop's threads (libuv's
    pool, the default executor), and closing the loop waited for every one of them: with a
    resolver that answers after its timeout, an 18,000-node snapshot ended after ~2 minutes
    instead of ~10 s. netui's own lookups are left behind when netui ends, a node whose
    lookup outlived the connect timeout says so, and the lookups are bounded in number.

    netui runs with a resolv.conf of its own (a private mount namespace) naming a DNS server
    on 127.0.0.0/8 that never answers, each lookup waiting 150 s (30 s × 5 tries): netui
    waiting for even one of them would pass the hang stop."""
    dns = SilentDns()
    try:
        resolv = tmp_path / "resolv.conf"
        resolv.write_text(f"nameserver {dns.address}\noptions timeout:30 attempts:5\n")
        config = tmp_path / "ssh_config"
        config.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SSH_", "NETUI_"))}
        env.update(HOME=str(tmp_path), NETUI_EVENT_LOOP=loop)
        r = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --bind "$0" /etc/resolv.conf && exec "$@"', str(resolv),
             sys.executable, "-m", "netui", "snapshot", "--source", source, "--connect-timeout", "1",
             "--interval", "0.25", "--fanout", "8", "-F", str(config), "netui-unanswered-[1-300]"],
            capture_output=True, text=True, timeout=90, cwd=REPO, env=env)
    finally:
        dns.close()
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "exception was never retrieved" not in r.stderr, r.stderr
    assert dns.queries, "the lookups never reached the silent DNS server: the test tested nothing"
    lines = [line for line in r.stdout.splitlines() if not line.startswith(" ")]
    assert len(lines) == 300, r.stdout
    if source == "ssh":
        said = [line for line in lines if "name lookup of netui-unanswered-" in line]
        assert said and all("did not answer in 1 s" in line for line in said), r.stdout
        assert any("not tried in time" in line for line in lines), r.stdout
    else:  # every scrape gave up at its timeout, or was still waiting for its lookup
        assert all(": down (" in line and ("no answer within" in line or "no answer in time" in line)
                   for line in lines), r.stdout
    # 16 lookup threads at most, each held by its name for the rest of the run
    assert 1 <= len({name.split(".")[0] for name in dns.names}) <= 16, dns.names
