"""The remote sampler gathers the RDMA tree and ethtool -S, run as a real process exactly
as a node runs it (`sh -c <sampler_command>`), with its sysfs root pointed at a COPY of the
captured prometheus-procfs tree whose counters this test bumps between frames."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from netui.collectors.frames import FrameDecoder, decode_frame, encode_fields, frame_length
from netui.speedups import frame_fields
from netui.collectors.infiniband import parse_infiniband, read_infiniband
from netui.collectors.ssh import sampler_command
from netui.model.fabric import fabric_rates
from tests.fabric_tree import MLX5_NETDEV, bump, copy_tree, set_text
from tests.testdata import ETHQ, data_path, data_text

SYNTH = data_path("fabric")
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")


class Sampler:
    def __init__(self, interval_s: float, sysfs: Path, *, ethtool_every_s: float | None = None, env=None,
                 hide_sbin: bool = False):
        command = ["sh", "-c", sampler_command(interval_s, sysfs=str(sysfs), ethtool_every_s=ethtool_every_s)]
        if hide_sbin:
            # a mount namespace of its own with empty sbin directories: a node without ethtool
            mounts = " && ".join(f"mount -t tmpfs netui-test {d}" for d in SBIN_DIRS if os.path.isdir(d)
                                 and not os.path.islink(d))
            command = ["unshare", "-m", "--propagation", "private", "sh", "-c", f'{mounts} && exec "$@"', "sh",
                       *command]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env)
        self.decode = FrameDecoder().decode  # the frames of one stream, in order

    def sample(self):
        return self.decode(self.payload())

    def payload(self) -> bytes:
        header = self.proc.stdout.readline()
        assert header, self.proc.stderr.read().decode(errors="replace")
        return self.proc.stdout.read(frame_length(header))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def tree(tmp_path):
    return copy_tree(tmp_path / "sys")


@pytest.mark.slow
def test_frames_carry_every_port_and_the_bumped_counters_give_the_right_rates(tree):
    s = Sampler(0.2, tree)
    try:
        first = s.sample()
        bump(tree, "mlx5_0", 1, "port_xmit_data", 2_500_000)  # words: 80 Mbit over 1 s
        bump(tree, "mlx5_0", 1, "port_rcv_data", 1_000_000)
        bump(tree, "mlx4_0", 2, "symbol_error", 3)
        bump(tree, "mlx5_0", 1, "out_of_sequence", 7, hw=True)
        second = s.sample()
    finally:
        s.close()
    assert first.fabric is not None and second.fabric is not None
    ports = second.fabric.ports
    assert sorted(ports) == [("hfi1_0", 1), ("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)]
    mlx5 = ports["mlx5_0", 1]
    assert mlx5.netdev == MLX5_NETDEV and mlx5.link_layer == "InfiniBand" and mlx5.rate_gbps == 25.0
    assert mlx5.state.name == "ACTIVE" and mlx5.hw_scope == "port" and mlx5.hw_lifespan_ms == 10
    # exactly what the local reader makes of the same files (the frame loses nothing)
    local = parse_infiniband(read_infiniband(str(tree)))
    for key, port in local.items():
        assert ports[key].counters == port.counters and ports[key].hw_counters == port.hw_counters
        assert (ports[key].state, ports[key].rate_gbps, ports[key].netdev) == (port.state, port.rate_gbps, port.netdev)
    dt = second.fabric.mono_s - first.fabric.mono_s
    assert 0.1 < dt < 1.0
    rates = fabric_rates(first.fabric, second.fabric)
    r = rates.ports["mlx5_0", 1]
    assert r.tx_bits_per_s == pytest.approx(2_500_000 * 32 / dt)
    assert r.rx_bits_per_s == pytest.approx(1_000_000 * 32 / dt)
    assert r.hw("out_of_sequence") == pytest.approx(7 / dt)
    assert rates.ports["mlx4_0", 2].errors_per_s == pytest.approx(3 / dt)
    assert rates.ports["hfi1_0", 1].tx_bits_per_s == 0.0


@pytest.mark.slow
def test_a_port_going_down_and_unreadable_counters_arrive_as_such(tree):
    s = Sampler(0.2, tree)
    try:
        s.sample()
        set_text(tree, "mlx4_0", 1, "state", "1: DOWN")
        (tree / "class/infiniband/hfi1_0/ports/1/counters/port_xmit_data").write_text("N/A (no PMA)\n")
        sample = s.sample()
    finally:
        s.close()
    assert sample.fabric.ports["mlx4_0", 1].active is False
    assert sample.fabric.ports["hfi1_0", 1].counters["port_xmit_data"] is None  # unknown, not 0


@pytest.mark.slow
def test_a_node_without_rdma_sends_nothing_more(tmp_path):
    bare = copy_tree(tmp_path / "sys", with_netdev=False)
    import shutil

    shutil.rmtree(bare / "class" / "infiniband")
    s = Sampler(0.2, bare)
    try:
        payload = s.payload()
    finally:
        s.close()
    keys = list(frame_fields(payload))
    assert not [k for k in keys if k.startswith(("ib", "eth"))]
    assert decode_frame(payload).fabric is None


@pytest.mark.slow
def test_the_rdma_part_of_a_frame_stays_small(tree):
    s = Sampler(0.2, tree)
    try:
        payload = s.payload()
    finally:
        s.close()
    rdma = sum(len(k) + len(v) + 5 for k, v in frame_fields(payload).items() if k.startswith("ib"))
    # 4 ports, 111 counters: about 8 bytes a counter (names travel as indexes)
    assert rdma < 1400, rdma


def _stand_in_ethtool(tmp_path: Path) -> tuple[Path, Path]:
    """This machine has no ethtool and no mlx5 NIC: an executable named ethtool that logs
    its arguments and prints the captured output the test puts in <dir>/<netdev>.txt."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "ethtool.log"
    script = bindir / "ethtool"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec cat {tmp_path}/"$2".txt\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bindir, log


@pytest.mark.slow
def test_ethtool_runs_on_the_rdma_netdevs_at_its_own_cadence(tree, tmp_path):
    bindir, log = _stand_in_ethtool(tmp_path)
    (tmp_path / f"{MLX5_NETDEV}.txt").write_text((SYNTH / "ethtool-S_mlx5_pfc_t0.txt").read_text())
    env = dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin")
    s = Sampler(0.1, tree, ethtool_every_s=0.5, env=env)
    try:
        samples = [s.sample()]
        while samples[-1].fabric.ethtool_mono_s is None:  # ethtool runs on, the frames go on
            samples.append(s.sample())
        assert len(samples) <= 3
        (tmp_path / f"{MLX5_NETDEV}.txt").write_text((SYNTH / "ethtool-S_mlx5_pfc_t1.txt").read_text())
        while len(samples) < 12:
            samples.append(s.sample())
    finally:
        s.close()
    readings = [x.fabric for x in samples if x.fabric.ethtool_mono_s is not None]
    calls = log.read_text().splitlines()
    # one fork per RDMA netdev per reading (mlx5_0's; the capture's other HCAs have none)
    assert set(calls) == {f"-S {MLX5_NETDEV}"} and len(calls) == len(readings)
    assert 2 <= len(readings) <= 4  # 12 frames at 0.1 s, one reading every 0.5 s
    first, later = readings[0], readings[1]
    assert first.ethtool_mono_s == pytest.approx(samples[0].fabric.mono_s, abs=0.05)
    assert first.pfc[MLX5_NETDEV].priorities[3].rx_pause == 500
    assert "rx_prio3_pause" in first.ethtool[MLX5_NETDEV]
    rates = fabric_rates(first, later)
    dt = later.ethtool_mono_s - first.ethtool_mono_s
    assert rates.pfc_interval_s == pytest.approx(dt)
    assert rates.pfc[MLX5_NETDEV].priorities[3].rx_pause_per_s == pytest.approx(150 / dt)


@pytest.mark.slow
def test_without_ethtool_nothing_is_forked(tree, tmp_path):
    env = dict(os.environ, PATH=f"{tmp_path}:/usr/bin:/bin")  # no ethtool on PATH
    # the sampler also looks in the sbin directories: where this machine has one there, the
    # sampler runs with them hidden (root: a mount namespace of its own)
    hide = any(os.path.exists(f"{d}/ethtool") for d in SBIN_DIRS)
    if hide and (os.geteuid() != 0 or shutil.which("unshare") is None):
        pytest.skip("this machine has an ethtool in sbin, and hiding it needs root and unshare")
    s = Sampler(0.1, tree, ethtool_every_s=0.1, env=env, hide_sbin=hide)
    try:
        samples = [s.sample() for _ in range(3)]
    finally:
        s.close()
    assert all(x.fabric.ethtool == {} and x.fabric.ethtool_mono_s is None for x in samples)


def test_per_queue_counters_are_left_on_the_node_by_the_same_rule_as_locally():
    from netui.collectors import ethtool, sampler

    assert sampler.PER_QUEUE.pattern.decode() == ethtool.PER_QUEUE.pattern
    stats = ethtool.parse_ethtool_stats(data_text(f"{ETHQ}/ethtool-S_mlx5_core.txt"))
    kept = ethtool.without_per_queue(stats)
    assert "rx0_packets" not in kept and "ch0_events" not in kept
    assert {"rx_pause_ctrl_phy", "rx_discards_phy", "rx_out_of_buffer", "tx_global_pause"} <= kept.keys()


@pytest.mark.slow
def test_the_tree_reader_gathers_the_same_ports_and_rates(tree):
    from netui.collectors.local import TreeReader

    from tests.fabric_tree import PROCFS_PROC

    reader = TreeReader(str(PROCFS_PROC), str(tree))
    a = reader.sample()
    bump(tree, "mlx5_0", 1, "port_rcv_data", 3_000_000)

    b = reader.sample()
    assert sorted(b.fabric.ports) == [("hfi1_0", 1), ("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)]
    assert b.fabric.ports["mlx5_0", 1].netdev == MLX5_NETDEV
    rates = fabric_rates(a.fabric, b.fabric)
    dt = b.mono_s - a.mono_s
    assert rates.ports["mlx5_0", 1].rx_bits_per_s == pytest.approx(3_000_000 * 32 / dt)
    assert b.fabric.mono_s == b.mono_s


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_field = st.text(alphabet="0123456789 =abc_\n\x1e/:N(A)", max_size=40)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["ib/mlx5_0/1", "ib/x/y", "ib/", "ibd/mlx5_0", "ibn/mlx5_0", "ibn/a/b", "ibz/q"]),
       st.lists(_field, max_size=9), st.booleans())
def test_any_rdma_record_is_a_sample_or_a_frame_error(key, fields, with_eth):
    from netui.collectors.frames import FrameError

    parts = [("wall", b"1.0"), ("mono", b"2.0"), (key, "\x1f".join(fields).encode())]
    if with_eth:
        parts += [("eth/eth2", "\n".join(fields).encode()), ("ethmono", b"1.5")]
    try:
        sample = decode_frame(encode_fields(parts))
    except FrameError:
        return
    assert sample.fabric is None or isinstance(sample.fabric.ports, dict)


def _odd_names(tree: Path, kind: str) -> None:
    """Files with names no kernel driver makes but a --sysfs copy (or a broken driver) can:
    the frame's own separators ("separators"), or bytes that are not UTF-8 and digits that
    are not ASCII ("unicode")."""
    ib = tree / "class/infiniband"
    raw = os.fsencode(ib)
    for port in ("1", "2"):  # mlx4_0 has no device/net: pairing reads gid_attrs/ndevs
        ndevs = ib / "mlx4_0/ports" / port / "gid_attrs/ndevs"
        ndevs.mkdir(parents=True)
        (ndevs / "0").write_text(f"ib{port}\n")
    if kind == "separators":
        names = [b"/mlx5_0/ports/1/hw_counters/we\x1fird", b"/mlx5_0/ports/1/hw_counters/rs\x1erec",
                 b"/mlx4_0/ports/1/counters/tab\tbed"]
        os.mkdir(raw + b"/mlx5_0/device/net/n\x1fet")
    else:
        names = [b"/mlx5_0/ports/1/counters/bad\xffname", b"/mlx4_0/ports/1/counters/uni\xc2\xb2"]
        for port in ("1", "2"):
            (ib / "mlx4_0/ports" / port / "gid_attrs/ndevs/\u00b2").write_text("odd\n")  # "²".isdigit()
        os.mkdir(raw + b"/mlx5_0/ports/\xc2\xb2")
        os.mkdir(raw + b"/mlx\xff_9")
    for rel in names:
        with open(raw + rel, "w") as f:
            f.write("5\n")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["separators", "unicode"])
def test_odd_file_names_in_the_rdma_tree_are_left_out_and_the_node_stays_readable(tree, kind):
    _odd_names(tree, kind)
    s = Sampler(0.1, tree)
    try:
        samples = [s.sample() for _ in range(3)]  # a FrameError or a dead sampler fails
        assert s.proc.poll() is None
    finally:
        s.close()
    ports = samples[-1].fabric.ports
    assert sorted(ports) == [("hfi1_0", 1), ("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)]
    mlx5 = ports["mlx5_0", 1]
    assert "port_xmit_data" in mlx5.counters and "out_of_sequence" in mlx5.hw_counters
    names = [n for p in ports.values() for n in (*p.counters, *p.hw_counters)]
    assert not [n for n in names if not (n.isascii() and n.isprintable())]
    assert ports["mlx4_0", 1].netdev == "ib1" and ports["mlx4_0", 2].netdev == "ib2"
    assert mlx5.netdev == MLX5_NETDEV
    # the local reader, same files: the same ports, no exception
    local = parse_infiniband(read_infiniband(str(tree)))
    assert sorted(local) == sorted(ports)
    assert local["mlx4_0", 1].netdev == "ib1"
    for key, port in local.items():
        assert ports[key].counters == port.counters and ports[key].hw_counters == port.hw_counters


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["separators", "unicode"])
def test_the_tree_reader_reads_a_tree_with_odd_names(tree, kind):
    from netui.collectors.local import TreeReader

    from tests.fabric_tree import PROCFS_PROC

    _odd_names(tree, kind)
    sample = TreeReader(str(PROCFS_PROC), str(tree)).sample()
    assert sorted(sample.fabric.ports) == [("hfi1_0", 1), ("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)]
    assert not sample.fabric.problems and sample.interfaces


def _slow_ethtool_tree(tree: Path, tmp_path: Path, hang: tuple[str, ...] = ("eth4b",)) -> tuple[Path, Path, Path]:
    """Four RDMA netdevs paired with ports (mlx5_0's, two of mlx4_0, hfi1_0's) plus twenty VF
    representors on mlx5_0's PCI function (switchdev) that pair with no port; a stand-in
    ethtool that answers at once, but hangs on the netdevs in ``hang`` (mlx4_0's second one)."""
    ib = tree / "class/infiniband"

    def netdev(hca: str, name: str, dev_port: int) -> None:
        d = ib / hca / "device/net" / name
        d.mkdir(parents=True)
        (d / "dev_id").write_text("0x0\n")
        (d / "dev_port").write_text(f"{dev_port}\n")

    netdev("mlx4_0", "eth4a", 0)
    netdev("mlx4_0", "eth4b", 1)
    netdev("hfi1_0", "hfi0", 0)
    for i in range(20):
        netdev("mlx5_0", f"{MLX5_NETDEV}f0vf{i}", 0)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log, pids = tmp_path / "ethtool.log", tmp_path / "ethtool.pids"
    script = bindir / "ethtool"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\necho $$ >> {pids}\n'
                      f'case "$2" in {"|".join(hang)}) exec sleep 20;; esac\n'
                      f'exec cat {SYNTH}/ethtool-S_mlx5_pfc_t0.txt\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bindir, log, pids


def _kill_left(pids: Path) -> list[int]:
    """Stand-in ethtools of this test still alive (killed here); their pids."""
    left = []
    for line in pids.read_text().split() if pids.exists() else ():
        pid = int(line)
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    continue
            os.kill(pid, 9)
            left.append(pid)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return left


@pytest.mark.slow
def test_a_hanging_ethtool_does_not_slow_the_stream(tree, tmp_path):
    import time

    bindir, log, pids = _slow_ethtool_tree(tree, tmp_path)
    env = dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin")
    s = Sampler(0.2, tree, ethtool_every_s=0.5, env=env)
    try:
        samples = [s.sample()]
        started = time.monotonic()
        while len(samples) < 21:
            samples.append(s.sample())
        took = time.monotonic() - started
    finally:
        s.close()
        _kill_left(pids)
    # 20 intervals of 0.2 s: the frames keep their pace (the old serial runs: 2 s each reading)
    assert took < 20 * 0.2 + 1.0, took
    gaps = [b.mono_s - a.mono_s for a, b in zip(samples, samples[1:])]
    assert max(gaps) < 0.5, gaps
    calls = log.read_text().splitlines()
    # only the netdevs paired with ports, never the representors
    assert set(calls) == {f"-S {n}" for n in (MLX5_NETDEV, "eth4a", "eth4b", "hfi0")}
    assert calls.count("-S eth4b") == 1  # timed out after the budget (2 s), then backs off
    readings = [x.fabric for x in samples if x.fabric.ethtool_mono_s is not None]
    assert len(readings) >= 2
    for r in readings:
        assert set(r.ethtool) == {MLX5_NETDEV, "eth4a", "hfi0"}
        assert r.pfc[MLX5_NETDEV].priorities[3].rx_pause == 500
    # a reading goes out when its runs are done or its budget (2 s) is spent: the first one
    # waited for the hanging run until the budget; the next ones, without it, at once
    arrived = [x for x in samples if x.fabric.ethtool_mono_s is not None]
    assert arrived[0].fabric.ethtool_mono_s == pytest.approx(samples[0].mono_s, abs=0.05)
    assert 2.0 <= arrived[0].mono_s - samples[0].mono_s < 2.5
    assert arrived[1].mono_s - arrived[1].fabric.ethtool_mono_s < 0.5
    ports = samples[-1].fabric.ports
    assert (ports["mlx4_0", 1].netdev, ports["mlx4_0", 2].netdev, ports["hfi1_0", 1].netdev) == ("eth4a", "eth4b", "hfi0")


@pytest.mark.slow
def test_the_sampler_ends_at_once_when_its_channel_closes_while_ethtool_hangs(tree, tmp_path):
    import time

    bindir, log, pids = _slow_ethtool_tree(tree, tmp_path)
    env = dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin")
    s = Sampler(0.2, tree, ethtool_every_s=0.5, env=env)
    try:
        s.sample()
        s.sample()
        assert "-S eth4b" in log.read_text().splitlines()  # in flight, hanging
        closed = time.monotonic()
        s.proc.stdin.close()
        s.proc.wait(timeout=5)
        assert time.monotonic() - closed < 0.6
        time.sleep(0.2)
        assert _kill_left(pids) == []  # its ethtool runs ended with it
    finally:
        s.close()
        _kill_left(pids)


@pytest.mark.slow
def test_the_local_ethtool_reader_runs_in_parallel_within_a_budget_and_backs_off(tree, tmp_path, monkeypatch):
    import time

    from netui.collectors.local import EthtoolReader

    bindir, log, pids = _slow_ethtool_tree(tree, tmp_path, hang=("eth4b", "hfi0"))
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    reader = EthtoolReader(every_s=0.1)
    assert reader.path == str(bindir / "ethtool")
    ib = read_infiniband(str(tree))
    try:
        started = time.monotonic()
        texts, mono = reader.read(ib)
        took = time.monotonic() - started
        # two hanging netdevs: one budget (2 s) for both, not 2 s each
        assert 2.0 <= took < 3.0, took
        assert set(texts) == {MLX5_NETDEV, "eth4a"} and mono == pytest.approx(started, abs=0.05)
        time.sleep(0.15)
        started = time.monotonic()
        texts, _ = reader.read(ib)
        assert time.monotonic() - started < 1.0  # the hung ones back off
        assert set(texts) == {MLX5_NETDEV, "eth4a"}
    finally:
        _kill_left(pids)
    calls = log.read_text().splitlines()
    assert sorted(calls) == sorted([f"-S {MLX5_NETDEV}", "-S eth4a"] * 2 + ["-S eth4b", "-S hfi0"])


def test_the_local_ethtool_reader_drops_a_run_that_floods_as_the_sampler_does(tree, tmp_path, monkeypatch):
    """A stand-in ethtool that writes more than ETHTOOL_MAX_BYTES for one netdev: that run is
    cut off, killed and dropped; the other netdevs' texts come as before."""
    from netui.collectors.local import EthtoolReader
    from netui.collectors.protocol import ETHTOOL_MAX_BYTES

    bindir, log, pids = _slow_ethtool_tree(tree, tmp_path, hang=("nothing",))
    script = bindir / "ethtool"
    script.write_text(script.read_text().replace(
        'exec cat', f'case "$2" in eth4b) exec head -c {ETHTOOL_MAX_BYTES + 65536} /dev/zero;; esac\nexec cat', 1))
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    reader = EthtoolReader(every_s=0.1)
    try:
        texts, _ = reader.read(read_infiniband(str(tree)))
    finally:
        _kill_left(pids)
    assert "eth4b" not in texts and {MLX5_NETDEV, "eth4a", "hfi0"} <= set(texts)
    assert all(len(t) < ETHTOOL_MAX_BYTES for t in texts.values())
