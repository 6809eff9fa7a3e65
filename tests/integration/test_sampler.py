"""The remote sampler, run here exactly as a node runs it: `sh -c <command>`."""

from __future__ import annotations

import io
import os
import sys
import subprocess
import threading
import time
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.collectors.frames import FrameDecoder, FrameError, decode_frame, encode_fields, frame_length
from netui.speedups import frame_fields
from netui.collectors.ssh import SAMPLER_SOURCE, sampler_command
from tests.testdata import PROCFS, data_bytes, data_path


def read_frames(stream, count: int) -> list[bytes]:
    frames = []
    for _ in range(count):
        header = stream.readline()
        if not header:
            break
        frames.append(stream.read(frame_length(header)))
    return frames


def start(interval: float, env=None, *, detail: bool = False) -> subprocess.Popen:
    return subprocess.Popen(["sh", "-c", sampler_command(interval, detail=detail)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


@pytest.mark.slow
def test_the_command_runs_the_sampler_through_a_shell_and_frames_decode():
    proc = start(0.2)
    try:
        frames = read_frames(proc.stdout, 3)
    finally:
        proc.kill()
        proc.wait()
    assert len(frames) == 3
    decode = FrameDecoder().decode  # one stream: its frames in order
    samples = [decode(f) for f in frames]
    s = samples[-1]
    assert s.problems == ()
    assert set(s.interfaces) == set(os.listdir("/sys/class/net"))
    assert s.hostname == open("/proc/sys/kernel/hostname").read().strip()
    # the per-CPU tables are not asked for: their sums stand in, and nothing is missing
    assert s.cpu is None and s.softirqs is None and s.softnet is None
    sums = s.cpu_sums
    assert sums.ncpus == os.cpu_count() and sums.hot_cpu in range(os.cpu_count())
    from netui.collectors import procfs

    softnet_now = procfs.parse_softnet_stat(open("/proc/net/softnet_stat").read())
    assert 0 <= sum(softnet_now.processed) - sums.processed < 10**7  # no wrap here since the sampler started
    irq_now = procfs.parse_softirqs(open("/proc/softirqs").read())
    assert 0 <= (sum(irq_now.net_rx) - sums.net_rx) % 2**32 < 10**6  # (from /proc/stat: modulo 2**32)
    assert sums.hot_since_s == samples[-2].mono_s  # the hottest CPU since the frame before
    assert "RetransSegs" in s.tcp.tcp and "TCPTimeouts" in s.tcp.ext
    tcp_now = procfs.parse_keyed_pairs(open("/proc/net/snmp").read(), ("Tcp",))["Tcp"]
    assert 0 <= tcp_now["OutSegs"] - s.tcp.tcp["OutSegs"] < 10**7
    gaps = [b.mono_s - a.mono_s for a, b in zip(samples, samples[1:])]
    assert all(0.15 < g < 0.5 for g in gaps)


@pytest.mark.slow
def test_the_monitor_turns_the_per_cpu_tables_on_and_off():
    proc = start(0.1)
    try:
        decode = FrameDecoder().decode
        first = decode(read_frames(proc.stdout, 1)[0])
        assert first.cpu is None and first.cpu_sums is not None and first.cpu_sums.hot_cpu is None  # no reading before
        proc.stdin.write(b"d 1\n")
        proc.stdin.flush()
        samples = [decode(f) for f in read_frames(proc.stdout, 4)]
        with_tables = [s for s in samples if s.cpu is not None]
        assert with_tables and samples[-1].cpu is not None  # from the next frame on
        assert all(s.softirqs is not None and s.softnet is not None and s.cpu_sums is not None for s in with_tables)
        last = samples[-1]
        assert last.cpu.cpus == tuple(range(os.cpu_count())) and last.problems == ()
        # the NET_RX sum comes from /proc/stat's softirq line, read a few microseconds before the
        # table of /proc/softirqs: the same counters, so the table's sum is that or a little more
        assert 0 <= sum(last.softirqs.net_rx) - last.cpu_sums.net_rx < 100_000
        assert last.cpu_sums.processed == sum(last.softnet.processed)  # (the same reading)
        proc.stdin.write(b"d 0\n")
        proc.stdin.flush()
        samples = [decode(f) for f in read_frames(proc.stdout, 4)]
        assert samples[-1].cpu is None and samples[-1].cpu_sums is not None and samples[-1].problems == ()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_lines_that_arrive_together_are_each_carried_out():
    """Two commands in one write (one SSH packet): the second is not left unread."""
    proc = start(0.1)
    try:
        decode = FrameDecoder().decode
        decode(read_frames(proc.stdout, 1)[0])
        proc.stdin.write(b"d 1\ni 0.3\n")
        proc.stdin.flush()
        samples = [decode(f) for f in read_frames(proc.stdout, 5)]
        assert samples[-1].cpu is not None  # d 1
        assert samples[-1].mono_s - samples[-2].mono_s == pytest.approx(0.3, abs=0.1)  # and i 0.3
        proc.stdin.write(b"d 0\nd")  # the last line not yet whole
        proc.stdin.flush()
        samples = [decode(f) for f in read_frames(proc.stdout, 2)]
        assert samples[-1].cpu is None
        proc.stdin.write(b" 1\n")
        proc.stdin.flush()
        samples = [decode(f) for f in read_frames(proc.stdout, 2)]
        assert samples[-1].cpu is not None
        proc.stdin.close()  # end of file: the sampler ends
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_it_reads_only_what_the_model_needs():
    from netui.collectors import frame_tables, procfs

    before = procfs.parse_stat_cpus(open("/proc/stat").read())
    proc = start(0.2, detail=True)
    try:
        (payload,) = read_frames(proc.stdout, 1)
    finally:
        proc.kill()
        proc.wait()
    texts = {k.encode(): v for k, v in frame_fields(payload).items()}
    # TCP: the Tcp and kept TcpExt counters as one table (no Udp, no IpExt)
    assert b"net/snmp" not in texts and b"net/netstat" not in texts
    tcp_names, ext_names = texts[b"tcp"].split(b"\n")[:2]
    assert b"RetransSegs" in tcp_names.split() and b"InDatagrams" not in tcp_names + ext_names
    # the tables arrive as u64 arrays, summarised per CPU where the kernel's file is wide
    assert not {b"stat", b"softirqs", b"net/dev", b"net/softnet_stat"} & set(texts)
    from netui.collectors.assemble import TCPEXT_FIELDS

    ext = frame_tables.parse_tcp_compact(texts[b"tcp"]).ext
    assert ext and set(ext) <= TCPEXT_FIELDS
    ncpu = os.cpu_count()
    assert len(frame_tables.parse_u64s(texts[b"cpu"], 3, "cpu")) == 3 * ncpu
    softnet = frame_tables.parse_softnet_compact(texts[b"softnet"])
    softnet_now = procfs.parse_softnet_stat(open("/proc/net/softnet_stat").read())
    assert len(softnet.cpus) == ncpu and softnet.cpus == softnet_now.cpus
    assert all(0 <= b - a < 10**7 for a, b in zip(softnet.processed, softnet_now.processed))
    # the summaries are the kernel's file as read between the two readings here (before the
    # sampler started, after its frame came): within them, however loaded the machine
    full = procfs.parse_stat_cpus(open("/proc/stat").read())
    compact = frame_tables.parse_cpu_compact(texts[b"cpu"])
    assert compact.cpus == full.cpus == before.cpus
    assert all(a <= c <= b for a, c, b in zip(before.total, compact.total, full.total))
    assert all(a <= c <= b for a, c, b in zip(before.softirq, compact.softirq, full.softirq))
    irq = frame_tables.parse_netirq_compact(texts[b"netirq"])
    irq_now = procfs.parse_softirqs(open("/proc/softirqs").read())
    assert irq.cpus == irq_now.cpus
    assert all(0 <= b - a < 100_000 for a, b in zip(irq.net_rx, irq_now.net_rx))
    dev = frame_tables.parse_netdev_compact(texts[b"netdev"])
    dev_now = procfs.parse_net_dev(open("/proc/net/dev").read())
    assert set(dev) == set(dev_now)
    assert all(0 <= dev_now[n].rx_bytes - dev[n].rx_bytes < 10**9 for n in dev)


def _sampler_functions() -> dict:
    from netui.collectors.ssh import SAMPLER_SOURCE

    ns: dict = {"__name__": "netui_sampler_under_test"}
    exec(compile(SAMPLER_SOURCE, "sampler.py", "exec"), ns)  # noqa: S102 - our own source
    ns["sampler"] = ns["Sampler"]()  # its state: open files, caches, running sums
    return ns


def packed(ns: dict, key: str, text: bytes) -> bytes | None:
    """The table the sampler sends for a file's text (the per-CPU ones as with --detail),
    or None: the text goes as it is."""
    if key == "net/dev":
        table = ns["netdev_table"](text)
        return None if table is None else table[1]
    columns, pack = {"stat": ("stat_columns", "cpu_pack"), "softirqs": ("netirq_columns", "netirq_pack"),
                     "net/softnet_stat": ("softnet_columns", "softnet_pack")}[key]
    cols = ns[columns](text)
    return None if cols is None else ns[pack](cols)


def test_the_sampler_keeps_the_tcpext_fields_the_model_keeps():
    from netui.collectors.assemble import TCPEXT_FIELDS

    assert {n.decode() for n in _sampler_functions()["TCPEXT"]} == TCPEXT_FIELDS


@pytest.mark.parametrize("key, text", [
    ("stat", b"cpu  1 2 3 4\ncpu0 1 2 x 4 5 6 7 8\n"),
    ("stat", b"intr 1\n"),
    ("softirqs", b"    CPU0 CPU1\nNET_RX: 1\nNET_TX: 1 2\n"),
    ("softirqs", b"    CPU0 CPUx\nNET_RX: 1 2\nNET_TX: 1 2\n"),
    ("net/dev", b"h1\nh2\n eth0: 1 2 3\n"),
    ("net/dev", b"h1\nh2\n eth0: " + b"1 " * 15 + b"-1\n"),
    ("softirqs", b"    CPU0 CPU1\nNET_RX: 1 4294967296\nNET_TX: 1 2\n"),  # not a u32
    ("softirqs", b"    CPU0 CPU1\nNET_RX: 1 -2\nNET_TX: 1 2\n"),
    ("net/softnet_stat", b" ".join([b"0000001"] + [b"00000000"] * 8) + b"\n"),  # 7 digits
    ("net/softnet_stat", b" ".join([b"0000000g"] + [b"00000000"] * 8) + b"\n"),
    ("net/softnet_stat", b"00000001 00000002\n"),
])
def test_odd_tables_go_as_raw_text_for_the_careful_parsers(key, text):
    ns = _sampler_functions()
    assert packed(ns, key, text) is None


def test_the_tables_round_trip_through_the_monitors_parsers():
    from netui.collectors import frame_tables, procfs
    from tests.bench.node128 import proc_texts

    ns = _sampler_functions()
    texts = proc_texts(7)
    for key, parse_full, parse_compact in (
        ("stat", procfs.parse_stat_cpus, frame_tables.parse_cpu_compact),
        ("softirqs", procfs.parse_softirqs, frame_tables.parse_netirq_compact),
        ("net/dev", procfs.parse_net_dev, frame_tables.parse_netdev_compact),
        ("net/softnet_stat", procfs.parse_softnet_stat, frame_tables.parse_softnet_compact),
    ):
        table = packed(ns, key, texts[key].encode())
        full, compact = parse_full(texts[key]), parse_compact(table)
        if key == "stat":
            assert (compact.cpus, tuple(compact.softirq), tuple(compact.total)) == (full.cpus, tuple(full.softirq), tuple(full.total))
        elif key == "softirqs":  # the counters stay the arrays they were decoded into
            assert (compact.cpus, tuple(compact.net_rx), tuple(compact.net_tx)) == (full.cpus, tuple(full.net_rx), tuple(full.net_tx))
            assert compact.cpus is full.cpus  # CPUs 0..n-1: one shared tuple, compared by identity
        elif key == "net/softnet_stat":
            assert full.cpus == tuple(range(128)) and compact.cpus is full.cpus
            assert [tuple(getattr(compact, c)) for c in ("processed", "dropped", "time_squeeze")] == \
                [tuple(getattr(full, c)) for c in ("processed", "dropped", "time_squeeze")]
        else:
            assert compact == full
    cut = ns["tcpext_lines"](texts["net/netstat"].encode()).decode()
    from netui.collectors.assemble import TCPEXT_FIELDS

    want = procfs.parse_keyed_pairs(texts["net/netstat"], ("TcpExt",), TCPEXT_FIELDS)
    assert procfs.parse_keyed_pairs(cut) == want


@pytest.mark.parametrize("snmp, netstat", [
    ("tests/bench", None),  # node128's texts
    ("pid_26231_net", "pid_26231_net"),
])
def test_the_tcp_table_round_trips_through_the_monitors_parser(snmp, netstat):
    from netui.collectors import frame_tables
    from netui.collectors.assemble import TCPEXT_FIELDS, sample_from_texts
    from tests.bench.node128 import FIXTURES, proc_texts

    ns = _sampler_functions()
    if snmp == "tests/bench":
        texts = proc_texts(3)
    else:
        texts = {"net/snmp": (FIXTURES / snmp / "snmp").read_text(), "net/netstat": (FIXTURES / netstat / "netstat").read_text()}
    snmp_lines = ns["lines_with"](texts["net/snmp"].encode(), (b"Tcp:",))
    ext_lines = ns["tcpext_lines"](texts["net/netstat"].encode())
    table = ns["tcp_summary"](snmp_lines, ext_lines)
    compact = frame_tables.parse_tcp_compact(table)
    full = sample_from_texts({k: texts[k] for k in ("net/snmp", "net/netstat")}, {}, wall_s=0.0, mono_s=0.0).tcp
    assert compact == full and dict(compact.tcp)["MaxConn"] == -1 and set(compact.ext) <= TCPEXT_FIELDS
    assert compact.ext and compact.tcp["RetransSegs"] == full.tcp["RetransSegs"]
    again = frame_tables.parse_tcp_compact(table)
    assert again.tcp.keys_ is compact.tcp.keys_ and again.ext.keys_ is compact.ext.keys_  # one layout, shared


@pytest.mark.parametrize("snmp, netstat", [
    (b"Tcp: A B\nTcp: 1 2\n", b"TcpExt: X\nTcpExt: -3\n"),  # a TcpExt counter below 0
    (b"Tcp: A B\nTcp: 1\n", b"TcpExt: X\nTcpExt: 3\n"),  # torn
    (b"Tcp: A B\n", b"TcpExt: X\nTcpExt: 3\n"),
    (b"Tcp: A B\nTcp: 1 x\n", b"TcpExt: X\nTcpExt: 3\n"),
    (b"Tcp: A\nTcp: 99999999999999999999\n", b"TcpExt: X\nTcpExt: 3\n"),
    (b"Tcp: A\nTcp: 1\n", None),
])
def test_odd_tcp_counters_go_as_their_lines(snmp, netstat):
    assert _sampler_functions()["tcp_summary"](snmp, netstat) is None


def test_a_frame_with_odd_tcp_counters_still_gives_them():
    """The raw lines reach the careful parsers: the sample has its TCP counters."""
    ns = _sampler_functions()
    ns["sampler"].read = lambda path, one=False: {"/proc/net/snmp": b"Tcp: RetransSegs OutSegs\nTcp: 5 100\n",
                                         "/proc/net/netstat": b"TcpExt: TCPTimeouts\nTcpExt: -1\n",
                                         "/proc/net/dev": open("/proc/net/dev", "rb").read()}.get(path)
    payload = ns["sampler"].frame()
    fields = frame_fields(payload[payload.index(b"\n") + 1:])
    assert "tcp" not in fields and fields["net/snmp"].startswith(b"Tcp:")
    sample = decode_frame(payload[payload.index(b"\n") + 1:])
    assert sample.tcp.tcp == {"RetransSegs": 5, "OutSegs": 100}
    assert dict(sample.tcp.ext) == {"TCPTimeouts": -1}  # as the careful parser reads the line


@pytest.mark.slow
def test_stdin_changes_the_interval_and_its_end_stops_the_sampler():
    proc = start(1.0)
    try:
        read_frames(proc.stdout, 1)
        proc.stdin.write(b"i 0.1\n")
        proc.stdin.flush()
        t0 = time.monotonic()
        read_frames(proc.stdout, 5)
        assert time.monotonic() - t0 < 2.0  # at 1 s per frame this would take 5 s
        proc.stdin.close()  # the SSH channel closed
        assert proc.wait(timeout=3) == 0
    finally:
        proc.kill()


def _open_files(pid: int) -> set[str]:
    """What the process ``pid`` and its children hold open."""
    pids = {pid}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rpartition(")")[2].split()[1]) == pid:
                        pids.add(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    found = set()
    for p in pids:
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                found.add(os.readlink(f"/proc/{p}/fd/{fd}"))
            except OSError:
                pass
    return found


@pytest.mark.slow
def test_proc_softirqs_is_read_for_the_sums_only_at_intervals_over_ten_seconds():
    """At up to 10 s a frame, /proc/stat's softirq line gives the NET_RX/NET_TX sums and
    /proc/softirqs is not read (the sampler keeps what it read open); at longer intervals
    a node's increase could pass 2**32 between two frames, and the table gives them."""
    with open("/proc/stat", "rb") as f:
        if b"\nsoftirq " not in f.read():
            pytest.skip("this kernel's /proc/stat has no softirq line")
    held = {}
    for interval in (1.0, 30.0):
        proc = start(interval)
        try:
            assert len(read_frames(proc.stdout, 2 if interval < 10 else 1)) >= 1
            held[interval] = _open_files(proc.pid)
        finally:
            proc.kill()
            proc.wait()
    assert "/proc/stat" in held[1.0] and "/proc/softirqs" not in held[1.0]
    assert "/proc/stat" in held[30.0] and "/proc/softirqs" in held[30.0]


def test_an_interval_set_on_stdin_chooses_the_source_of_the_sums_too():
    ns = {"__name__": "netui_sampler_under_test"}
    exec(compile(SAMPLER_SOURCE, "sampler.py", "exec"), ns)  # noqa: S102 - our own source
    ns["sampler"] = ns["Sampler"]()  # its state: open files, caches, running sums
    r, w = os.pipe()
    out_r, out_w = os.pipe()  # the frames: drained as they come
    sink = io.BytesIO()

    def drain() -> None:
        while chunk := os.read(out_r, 65536):
            sink.write(chunk)

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    ns["sys"] = types.SimpleNamespace(stdout=types.SimpleNamespace(fileno=lambda: out_w),
                                      stdin=types.SimpleNamespace(fileno=lambda: r))
    seen = []
    loop = threading.Thread(target=ns["sampler"].loop, args=(1.0,), daemon=True)
    loop.start()
    try:
        for line, expected in ((b"i 30\n", False), (b"i 0.5\n", True), (b"i 10\n", True), (b"i 10.5\n", False)):
            os.write(w, line)
            deadline = time.monotonic() + 3
            while ns["sampler"].line_ok != expected and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(ns["sampler"].line_ok)
    finally:
        os.close(w)  # the channel closed: the loop ends
        loop.join(5)
        os.close(r)
        os.close(out_w)
        drainer.join(5)
        os.close(out_r)
    assert seen == [False, True, True, False]
    assert not loop.is_alive() and sink.getvalue().startswith(b"NETUI2 ")


def test_a_closed_output_stops_the_sampler():
    proc = start(0.1)
    read_frames(proc.stdout, 1)
    proc.stdout.close()
    try:
        proc.wait(timeout=3)
    finally:
        proc.kill()
    assert proc.returncode is not None


def test_without_python3_it_says_so():
    env = dict(os.environ, PATH="/nonexistent")
    proc = subprocess.run(["/bin/sh", "-c", sampler_command(1.0)], env=env, capture_output=True, timeout=10)
    assert proc.returncode == 127
    assert b"no python3" in proc.stderr


@pytest.mark.parametrize("interval", [0.5, 1.0, 30.0])
def test_the_command_line_carries_only_a_number_after_the_quoted_script(interval):
    cmd = sampler_command(interval)
    assert cmd.endswith(f" {interval!r}")
    assert subprocess.run(["sh", "-n", "-c", cmd]).returncode == 0


def test_frame_errors():
    with pytest.raises(FrameError):
        frame_length(b"HELLO 12\n")
    with pytest.raises(FrameError):
        frame_length(b"NETUI2 99999999999\n")
    with pytest.raises(FrameError):
        decode_frame(encode_fields([("wall", b"1.0"), ("mono", b"2.0")])[:-2])  # truncated
    with pytest.raises(FrameError):
        decode_frame(encode_fields([("net/dev", b"x"), ("stat", b"y")]))  # no clocks
    with pytest.raises(FrameError):
        decode_frame(b"\0" + encode_fields([("wall", b"1.0"), ("mono", b"2.0")]))  # no key


def _sysfs_net(root, names: list[str], operstate: str = "up") -> None:
    """A /sys/class/net of plain files for ``names`` (the sampler's --sysfs)."""
    for name in names:
        d = root / "class" / "net" / name
        d.mkdir(parents=True, exist_ok=True)
        for attr, text in (("mtu", "1500"), ("operstate", operstate), ("carrier", "1"), ("speed", "1000"),
                           ("ifindex", "7"), ("type", "1")):
            (d / attr).write_text(text + "\n")


@pytest.mark.slow
def test_interface_records_travel_only_when_they_change(tmp_path):
    """On a fixed /proc and /sys (the host's interfaces come and go as other programs make
    veths): the records of the interfaces travel in the first frame, then ``ifsame`` until
    the test changes one, then once again."""
    from netui.collectors import procfs

    proc_tree = data_path(f"{PROCFS}/proc")
    names = sorted(procfs.parse_net_dev((proc_tree / "net" / "dev").read_text()))
    assert len(names) >= 2  # one changes, the others stay
    _sysfs_net(tmp_path, names)
    proc = subprocess.Popen(["sh", "-c", sampler_command(0.1, sysfs=str(tmp_path), procfs=str(proc_tree))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    decode = FrameDecoder().decode
    try:
        first, second = read_frames(proc.stdout, 2)
        _sysfs_net(tmp_path, names[:1], operstate="down")
        frames = read_frames(proc.stdout, 3)  # the change lands within a frame or two
    finally:
        proc.kill()
        proc.wait()
    keys = [{k.encode() for k in frame_fields(f)} for f in (first, second, *frames)]
    assert {b"if/" + n.encode() for n in names} <= keys[0] and b"ifsame" not in keys[0]
    assert b"ifsame" in keys[1] and not any(k.startswith(b"if/") for k in keys[1])
    resent = [i for i, k in enumerate(keys[2:]) if b"ifsame" not in k]
    assert len(resent) == 1 and {b"if/" + n.encode() for n in names} <= keys[2 + resent[0]]
    samples = [decode(f) for f in (first, second, *frames)]
    assert all(set(s.interfaces) == set(names) for s in samples)  # the tree's, not this host's
    assert samples[1].interfaces[names[0]].operstate == "up" and samples[1].interfaces[names[0]].mtu == 1500
    assert samples[-1].interfaces[names[0]].operstate == "down"
    assert all(samples[-1].interfaces[n].operstate == "up" for n in names[1:])


@pytest.mark.slow
@pytest.mark.parametrize("unbuffered", [True, False], ids=["PYTHONUNBUFFERED", "buffered"])
def test_frames_reach_a_reader_whole_through_a_full_non_blocking_pipe(tmp_path, unbuffered):
    """The sampler's stdout is a pipe of one page, non-blocking, read only once full: its
    writes come back short or refused, and every frame still arrives whole, in order (a raw
    stdout took a short write as whole: the stream broke mid-frame; a buffered one raised and
    the sampler ended)."""
    import fcntl
    import termios
    import time

    from netui.collectors import procfs

    proc_tree = data_path(f"{PROCFS}/proc")
    names = sorted(procfs.parse_net_dev(
        (proc_tree / "net" / "dev").read_text()))
    _sysfs_net(tmp_path, names)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    read_end, write_end = os.pipe()
    pipe_bytes = fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    os.set_blocking(write_end, False)
    proc = subprocess.Popen(["sh", "-c", sampler_command(0.05, sysfs=str(tmp_path), procfs=str(proc_tree))],
                            stdin=subprocess.PIPE, stdout=write_end, stderr=subprocess.PIPE, env=env)
    os.close(write_end)
    try:
        queued = bytearray(4)
        deadline = time.monotonic() + 20  # a bound, not a timing: the pipe fills in well under a second
        while proc.poll() is None and time.monotonic() < deadline:
            fcntl.ioctl(read_end, termios.FIONREAD, queued)
            if int.from_bytes(queued, sys.byteorder) >= pipe_bytes:
                break
            time.sleep(0.05)
        time.sleep(0.3)  # and the sampler meets it full a few more times
        assert proc.poll() is None, proc.stderr.read()
        with os.fdopen(read_end, "rb", closefd=False) as stream:
            frames = read_frames(stream, 12)
    finally:
        proc.kill()
        proc.wait()
        os.close(read_end)
    assert sum(len(f) for f in frames) > pipe_bytes
    decode = FrameDecoder().decode
    samples = [decode(f) for f in frames]
    assert all(set(s.interfaces) == set(names) for s in samples)
    assert all(a.mono_s < b.mono_s for a, b in zip(samples, samples[1:]))


def test_ifsame_needs_the_records_it_refers_to():
    clocks = encode_fields([("wall", b"1.0"), ("mono", b"2.0")])
    netdev = encode_fields([("netdev", b"eth0\n" + bytes(128))])
    record = encode_fields([("if/eth0", b"\x1f".join([b"9000\n", b"up\n", b"1\n", b"100000\n", b"3\n", b"1\n",
                                                      b"../../devices/pci0000:00/net/eth0", b"\x1e", b"\x1e", b""]))])
    ifsame = encode_fields([("ifsame", b"")])
    with pytest.raises(FrameError, match="ifsame"):
        decode_frame(clocks + netdev + ifsame)
    decoder = FrameDecoder()
    first = decoder.decode(clocks + netdev + record)
    again = decoder.decode(clocks.replace(b"2.0", b"3.0") + netdev + ifsame)
    assert first.interfaces["eth0"] == again.interfaces["eth0"]
    assert again.interfaces["eth0"].mtu == 9000 and again.interfaces["eth0"].kind == "physical"
    with pytest.raises(FrameError, match="ifsame"):
        decoder.decode(clocks + netdev + record + ifsame)  # both: not a sampler's frame
    with pytest.raises(FrameError, match="unknown record"):
        decoder.decode(clocks + netdev + encode_fields([("ifnot", b"x")]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_payload_is_a_sample_or_a_frame_error(data):
    try:
        decode_frame(data)
    except FrameError:
        pass


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.builds(lambda n, b: b"eth0 lo\n"[:n] + b, st.integers(0, 8), st.binary(max_size=300)))
def test_the_summaries_parse_or_raise_parse_error(text):
    from netui.collectors import frame_tables, procfs

    for parse in (frame_tables.parse_cpu_compact, frame_tables.parse_softnet_compact, frame_tables.parse_netirq_compact,
                  frame_tables.parse_netdev_compact, frame_tables.parse_tcp_compact):
        try:
            result = parse(text)
        except procfs.ParseError:
            continue
        if parse is frame_tables.parse_tcp_compact:
            assert len(result.tcp) >= 1 and dict(result.tcp) and dict(result.ext) is not None
        else:
            assert (len(result) if isinstance(result, dict) else len(result.cpus)) >= 1


def test_the_usual_frame_decodes_as_the_careful_path_does():
    """FrameDecoder's direct path (every table packed, no RDMA) gives the very sample that
    sample_from_texts gives for the same fields."""
    from netui.collectors.assemble import sample_from_texts
    from netui.collectors.frames import TABLES
    from tests.bench.fake_fleet import NodeFrames

    frames = NodeFrames()
    decoder = FrameDecoder()
    for step in range(6):
        detail = step >= 3  # the sums alone, then with the per-CPU tables
        payload = frames.frame(step, 100.0 + step, 5.0 + step, 4.0 + step, detail).split(b"\n", 1)[1]
        sample = decoder.decode(payload)
        fields = frame_fields(payload)
        texts = {k: (v if k in TABLES else v.decode()) for k, v in fields.items()
                 if k not in ("wall", "mono", "ifsame") and not k.startswith("if/")}
        careful = sample_from_texts(texts, decoder._attrs, wall_s=100.0 + step, mono_s=5.0 + step)
        assert sample == careful and sample.problems == () and sample.fabric is None
        assert sample.hostname == "gpu001" and len(sample.interfaces) == 16
        assert sample.cpu_sums.ncpus == 128 and (sample.cpu_sums.hot_since_s == 4.0 + step) == (step != 0)
        assert (sample.cpu is not None and len(sample.cpu.cpus) == 128) == detail


def test_a_steady_node_costs_no_open_and_no_stat_per_frame():
    """Files stay open, even one that answers EINVAL (lo's speed here), and an interface's
    symlink and markers are read again only when it changes: the second frame of a steady
    node opens, stats and readlinks nothing."""
    import os as real_os

    ns = _sampler_functions()
    ns["sampler"].frame()
    calls = []

    def spied(name, fn):
        return lambda *a, **k: (calls.append((name, a[0])), fn(*a, **k))[1]

    class Path:
        def __getattr__(self, name):
            attr = getattr(real_os.path, name)
            return spied(name, attr) if name in ("exists", "isdir", "isfile") else attr

    class Spy:
        path = Path()

        def __getattr__(self, name):
            attr = getattr(real_os, name)
            return spied(name, attr) if name in ("open", "stat", "lstat", "readlink") else attr

    ns["os"] = Spy()
    ns["sampler"].frame()
    assert calls == []


def test_interface_facts_are_read_again_when_the_interface_is_made_anew(tmp_path):
    import types

    names = ["eth0"]
    _sysfs_net(tmp_path, names)
    ns = _sampler_functions()
    ns["sampler"].sys = str(tmp_path)
    clock = [100.0]
    ns["time"] = types.SimpleNamespace(time=lambda: clock[0], monotonic=lambda: clock[0])
    base = str(tmp_path / "class" / "net" / "eth0") + "/"
    assert ns["sampler"].iface_facts("eth0", base, b"7\n", clock[0])[1:] == [b"\x1e"] * 3  # no marker
    (tmp_path / "class" / "net" / "eth0" / "bridge").mkdir()
    clock[0] += 5
    assert ns["sampler"].iface_facts("eth0", base, b"7\n", clock[0])[1] == b"\x1e"  # the same interface: kept
    assert ns["sampler"].iface_facts("eth0", base, b"9\n", clock[0])[1] == b""  # a new ifindex: read again
    (tmp_path / "class" / "net" / "eth0" / "bridge").rmdir()
    clock[0] += ns["LAYOUT_S"] + 1
    assert ns["sampler"].iface_facts("eth0", base, b"9\n", clock[0])[1] == b"\x1e"  # and every LAYOUT_S


def test_many_cpus_are_read_column_by_column_as_line_by_line():
    """/proc/stat and softnet_stat of 128 CPUs take the column path: the same result as
    line by line, and an odd line still sends the text to the careful parsers."""
    from tests.bench.node128 import proc_texts

    ns = _sampler_functions()
    stat = proc_texts(5)["stat"].encode()
    assert ns["stat_columns"](stat) == ns["stat_lines"](stat) and len(ns["stat_columns"](stat)[0]) == 128
    assert ns["stat_columns"](stat.replace(b"\ncpu77 ", b"\ncpu77 x ", 1)) is None
    assert ns["stat_columns"](stat.replace(b"\ncpu77 44", b"\ncpu77 -44", 1)) is None
    short = stat.replace(b"\ncpu9 ", b"\ncpu9 1 2 3 4 5 6 7 ", 1)  # a longer line: line by line
    assert ns["stat_columns"](short) == ns["stat_lines"](short)
    softnet = proc_texts(5)["net/softnet_stat"].encode()
    a = ns["softnet_columns"](softnet)
    assert len(a) == 4 * 128 and list(a[3::4]) == list(range(128))
    assert ns["softnet_columns"](softnet.replace(b"\n", b" 0000001\n", 1)) is not None  # a longer row: row by row
    odd = softnet.split(b"\n")
    odd[3] = b"0000001 " + odd[3].split(b" ", 1)[1]  # 7 digits
    assert ns["softnet_columns"](b"\n".join(odd)) is None


def test_a_file_larger_than_one_read_is_read_whole_and_the_next_read_asks_for_enough(tmp_path):
    """The sampler asks for about what a file held last time (8 KB at first): a bigger
    file (a 128-CPU node's /proc/stat with its intr line) still comes whole, and the next
    reading takes one read and the one that finds the end."""
    from tests.bench.node128 import proc_texts

    ns = _sampler_functions()
    big = tmp_path / "stat"
    text = proc_texts(3)["stat"].encode() + b"intr " + b" ".join(b"%d" % i for i in range(4000)) + b"\n"
    assert len(text) > 2 * 8192
    big.write_bytes(text)
    assert ns["sampler"].read(str(big)) == text
    asked = ns["sampler"].sizes[str(big)]
    assert asked >= len(text) and asked % 4096 == 0
    calls = []
    real = ns["os"].pread
    ns["os"] = type("os", (), {"pread": staticmethod(lambda fd, n, off: calls.append((n, off)) or real(fd, n, off))})
    try:
        assert ns["sampler"].read(str(big)) == text
    finally:
        ns["os"] = __import__("os")
    assert calls == [(asked, 0), (asked, len(text))]  # the file, then its end


def test_proc_dev_column_by_column_equals_line_by_line():
    """/proc/net/dev as the kernel writes it goes through the column path; with a blank
    line (or another layout) through the line loop: the same table either way."""
    from tests.bench.node128 import proc_texts

    ns = _sampler_functions()
    fixture = data_bytes(f"{PROCFS}/proc/net/dev")
    for text in (proc_texts(5)["net/dev"].encode(), fixture, open("/proc/net/dev", "rb").read()):
        names, table = ns["netdev_table"](text)
        lines = text.split(b"\n")
        spaced = b"\n".join(lines[:3] + [b""] + lines[3:])  # a blank line: line by line
        assert ns["netdev_table"](spaced) == (names, table)
        assert names == [ln.partition(b":")[0].strip() for ln in lines[2:] if ln.strip()]
        assert ns["netdev_names"](text) == names
    wide = b"h1\nh2\n  eth0:" + b" ".join([b"18446744073709551615"] * 16) + b"\n"  # a counter abutting the colon
    names, table = ns["netdev_table"](wide)
    assert names == [b"eth0"] and table.endswith(b"\xff" * 8 * 16)
    # one line short of a counter, another with one too many: refused, not misread (even
    # when the totals add up and a shifted value would pass for a name)
    odd = b"h1\nh2\n a: " + b"1 " * 15 + b"\n b: " + b"1 " * 17 + b"\n"
    assert ns["netdev_table"](odd) is None
    shifted = b"h1\nh2\n 1: " + b" ".join(b"%d" % v for v in range(1, 18)) + b"\n 2: " + b"1 " * 15 + b"\n"
    assert ns["netdev_table"](shifted) is None
    moved = b"h1\nh2\n a 1: " + b"1 " * 15 + b"\n b: " + b"1 " * 16 + b"\n"  # a colon in another place
    assert ns["netdev_table"](moved) is None


def test_the_tcp_fast_path_gives_the_careful_paths_table():
    """tcp_table finds the Tcp and TcpExt lines without splitting every line: on real texts
    its table is the one the line-by-line path makes, and on odd ones it declines."""
    from tests.bench.node128 import FIXTURES as BENCH_FIXTURES, proc_texts

    ns = _sampler_functions()
    pairs = [(proc_texts(3)["net/snmp"].encode(), proc_texts(3)["net/netstat"].encode()),
             ((BENCH_FIXTURES / "pid_26231_net" / "snmp").read_bytes(), (BENCH_FIXTURES / "pid_26231_net" / "netstat").read_bytes()),
             (open("/proc/net/snmp", "rb").read(), open("/proc/net/netstat", "rb").read())]
    for snmp, netstat in pairs:
        careful = ns["tcp_summary"](ns["lines_with"](snmp, (b"Tcp:",)), ns["tcpext_lines"](netstat))
        assert careful is not None and ns["sampler"].tcp_table(snmp, netstat) == careful
        assert ns["sampler"].tcp_table(snmp, netstat) == careful  # its cut of the TcpExt names, cached
    snmp, netstat = pairs[0]
    tcp_names = snmp.split(b"\nTcp: ")[1].split(b"\n")[0]
    for odd_snmp, odd_netstat in (  # each: the fast path declines, and the careful path decides
        (snmp + b"Tcp: 1\n", netstat),  # a third Tcp line
        (snmp + b"Tcp:1\n", netstat),  # (even without the space)
        (snmp.replace(b"\nTcp: " + tcp_names, b"\nUdp: " + tcp_names), netstat),  # the names line gone
        (snmp, netstat.replace(b"TcpExt: ", b"TcpExt:  ", 1) + b"TcpExt: 1 2\n"),
        (snmp, b"TcpExt: TCPTimeouts TCPLoss\nTcpExt: 1\n"),  # torn
        (b"Tcp:x 1\n" + snmp, netstat),  # a Tcp line without the space, before the pair
        (snmp, b"TcpExt:x 1\n" + netstat),
        (snmp.replace(b"\nTcp: ", b"\r\nTcp: ", 1), netstat),  # (the careful path splits at \r)
        (b"Tcp: A B\nTcp: 1 x\n", netstat),
        (snmp, b"TcpExt: TCPTimeouts\nTcpExt: -1\n"),
    ):
        assert ns["sampler"].tcp_table(odd_snmp, odd_netstat) is None
