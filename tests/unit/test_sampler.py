"""The remote sampler, run here exactly as a node runs it: `sh -c <command>`."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.collectors.frames import FrameError, decode_frame, frame_length
from netui.collectors.ssh import sampler_command


def read_frames(stream, count: int) -> list[bytes]:
    frames = []
    for _ in range(count):
        header = stream.readline()
        if not header:
            break
        frames.append(stream.read(frame_length(header)))
    return frames


def start(interval: float, env=None) -> subprocess.Popen:
    return subprocess.Popen(["sh", "-c", sampler_command(interval)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def test_the_command_runs_the_sampler_through_a_shell_and_frames_decode():
    proc = start(0.2)
    try:
        frames = read_frames(proc.stdout, 3)
    finally:
        proc.kill()
        proc.wait()
    assert len(frames) == 3
    samples = [decode_frame(f) for f in frames]
    s = samples[-1]
    assert s.problems == ()
    assert set(s.interfaces) == set(os.listdir("/sys/class/net"))
    assert s.hostname == open("/proc/sys/kernel/hostname").read().strip()
    assert s.cpu is not None and s.softirqs is not None and s.softnet is not None
    assert "RetransSegs" in s.tcp.tcp and "TCPTimeouts" in s.tcp.ext
    gaps = [b.mono_s - a.mono_s for a, b in zip(samples, samples[1:])]
    assert all(0.15 < g < 0.5 for g in gaps)


def test_it_reads_only_what_the_model_needs():
    proc = start(0.2)
    try:
        (payload,) = read_frames(proc.stdout, 1)
    finally:
        proc.kill()
        proc.wait()
    parts = payload.split(b"\0")
    texts = dict(zip(parts[0::2], parts[1::2]))
    assert b"Udp:" not in texts[b"net/snmp"] and b"Tcp:" in texts[b"net/snmp"]
    assert b"IpExt:" not in texts[b"net/netstat"]
    assert b"TIMER" not in texts[b"softirqs"] and b"NET_RX" in texts[b"softirqs"]
    # /proc/stat and softnet_stat arrive summarised per CPU: 3 and 4 numbers a CPU
    assert b"stat" not in texts and b"net/softnet_stat" not in texts
    ncpu = os.cpu_count()
    cpu_lines = texts[b"cpu"].split(b"\n")
    assert len(cpu_lines) == ncpu and all(len(line.split()) == 3 for line in cpu_lines)
    softnet_lines = texts[b"softnet"].split(b"\n")
    assert len(softnet_lines) == ncpu and all(len(line) == 35 for line in softnet_lines)
    # the summaries agree with the kernel's files read here at the same moment, within a tick
    from netui.collectors import procfs

    full = procfs.parse_stat_cpus(open("/proc/stat").read())
    compact = procfs.parse_cpu_compact(texts[b"cpu"].decode())
    assert compact.cpus == full.cpus
    assert all(abs(a - b) <= 5 for a, b in zip(compact.total, full.total))
    assert all(abs(a - b) <= 5 for a, b in zip(compact.softirq, full.softirq))


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
        frame_length(b"NETUI1 99999999999\n")
    with pytest.raises(FrameError):
        decode_frame(b"wall\x001.0\x00mono")
    with pytest.raises(FrameError):
        decode_frame(b"net/dev\x00x\x00stat\x00y\x00")  # no clocks


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_payload_is_a_sample_or_a_frame_error(data):
    try:
        decode_frame(data)
    except FrameError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789abcdef \n-x", max_size=300))
def test_the_summaries_parse_or_raise_parse_error(text):
    from netui.collectors import procfs

    for parse in (procfs.parse_cpu_compact, procfs.parse_softnet_compact):
        try:
            result = parse(text)
        except procfs.ParseError:
            continue
        assert len(result.cpus) >= 1
