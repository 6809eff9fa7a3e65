"""Hostile input to the files netui reads and writes: recordings (export, replay, --replay),
host files (-f), ssh_config and key paths (-F, -i), and the pipes it writes to.

Every input the issue lists is here: export over its own input or an existing file, a
damaged gzip tail, NaN and infinities, deep nesting, a future format, a file that is no
recording, a FIFO, /dev/zero, a directory, a gzip bomb, a byte order mark, a reader that
goes away (| head). Each is run through the real command line where a user would meet it.
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from netui.engine.recording.codec import RecordingError, header_record
from netui.engine.recording.reader import read_records
from netui.engine.recording.writer import RecordingWriter
from netui.engine.recording.playback import load
from netui.engine.replay import ReplayMonitor
from netui.inventory import InventoryError, read_host_file
from tests.command import netui
from tests.factories import full_sample, write_ticks

REPO = Path(__file__).resolve().parents[2]
TICKS = 6


def refused(r: subprocess.CompletedProcess, *words: str) -> None:
    """Exit status 2, every word in the message, no traceback."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "Error:" not in r.stderr.replace("RecordingError", ""), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


def record(path: Path, ticks: int = TICKS, nodes=("gpu01", "gpu02")) -> list[int]:
    """A finished recording of ``ticks`` ticks; the file size after each tick's flush."""
    w, sizes = write_ticks(path, ticks, nodes=nodes)
    w.close()
    return sizes


def plain_lines(path: Path) -> list[bytes]:
    """The JSON lines of a recording (gzip) as bytes, each with its newline."""
    return gzip.decompress(path.read_bytes()).splitlines(keepends=True)


@pytest.fixture
def rec(tmp_path) -> Path:
    path = tmp_path / "run.ndjson.gz"
    record(path)
    return path


def csv_times(text: str) -> set[str]:
    return {line.split(",")[0] for line in text.splitlines()[1:]}


# --- export never loses a file ------------------------------------------------------------------


@pytest.mark.slow
def test_export_never_writes_over_its_own_input_by_any_name_even_with_force(rec, tmp_path):
    before = rec.read_bytes()
    (tmp_path / "link.gz").symlink_to(rec)
    os.link(rec, tmp_path / "hard.gz")
    sub = tmp_path / "sub"
    sub.mkdir()
    for out in (str(rec), str(tmp_path / "link.gz"), str(tmp_path / "hard.gz"), str(sub / ".." / rec.name),
                os.path.relpath(rec, REPO)):
        for force in ([], ["--force"]):
            r = netui("export", str(rec), "--format", "csv", "-o", out, *force)
            refused(r, "never writes over its input")
            assert rec.read_bytes() == before, (out, force)


@pytest.mark.slow
def test_export_never_overwrites_an_existing_file_without_force(rec, tmp_path):
    out = tmp_path / "rates.csv"
    out.write_text("my notes\n")
    r = netui("export", str(rec), "--format", "csv", "-o", str(out))
    refused(r, f"{out} exists", "--force")
    assert out.read_text() == "my notes\n"
    r = netui("export", str(rec), "--format", "csv", "-o", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("time,node,device,metric,value\n")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]  # no temporary file left


@pytest.mark.slow
def test_export_to_a_new_file_a_directory_and_dev_null(rec, tmp_path):
    out = tmp_path / "new.om"
    r = netui("export", str(rec), "--format", "prom", "-o", str(out))
    assert r.returncode == 0 and out.read_text().endswith("# EOF\n"), r.stderr
    refused(netui("export", str(rec), "-o", str(tmp_path)), f"{tmp_path}: is a directory")
    r = netui("export", str(rec), "-o", os.devnull)  # a character device takes the output: nothing is lost
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_export_appending_to_its_own_input_is_refused(rec):
    before = rec.read_bytes()
    with open(rec, "a") as out:
        r = subprocess.run([sys.executable, "-m", "netui", "export", str(rec)], stdout=out, stderr=subprocess.PIPE,
                           text=True, timeout=120, cwd=REPO)
    refused(r, "standard output is the recording being exported")
    assert rec.read_bytes() == before


# --- a damaged tail keeps every complete tick ------------------------------------------------


def damaged_variants(rec: Path, tmp_path: Path, sizes: list[int]) -> dict[str, Path]:
    """Recordings of TICKS ticks whose tail after tick 3 is damaged in several ways."""
    lines = plain_lines(rec)
    after3 = 1 + 3 * 3  # the header, then 3 ticks of (2 samples, a tick mark)
    out = {}

    def put(name: str, data: bytes) -> None:
        out[name] = tmp_path / name
        out[name].write_bytes(data)

    full = rec.read_bytes()
    # garbage bytes over the compressed stream just after tick 3's flush
    put("garbage.gz", full[:sizes[3] + 3] + b"\xff" * 64 + full[sizes[3] + 67:])
    # a second gzip member whose text is broken JSON (the "t.gz:9: Expecting ',' delimiter")
    put("badline.gz", gzip.compress(b"".join(lines[:after3])) + gzip.compress(b'{"type":"sample" "t":1}\n'
                                                                              + b"".join(lines[after3:])))
    # a record cut in the middle, then the rest (a torn write in a plain file)
    put("torn.jsonl", b"".join(lines[:after3]) + lines[after3][:30] + b"\n" + b"".join(lines[after3 + 1:]))
    # bytes that are not UTF-8
    put("binary.gz", gzip.compress(b"".join(lines[:after3]) + b"\x80\xfe\x00junk\n" + b"".join(lines[after3:])))
    # the gzip checksum at the end is wrong
    bad_crc = bytearray(full)
    bad_crc[-8] ^= 0xFF
    put("crc.gz", bytes(bad_crc))
    return out


@pytest.mark.slow
def test_a_damaged_tail_keeps_every_complete_tick_and_says_where_it_stopped(tmp_path):
    rec = tmp_path / "run.ndjson.gz"
    sizes = record(rec)
    for name, path in damaged_variants(rec, tmp_path, sizes).items():
        notes: list[str] = []
        records = list(read_records(path, notes))
        ticks = sum(r["type"] == "tick" for r in records)
        expected = TICKS if name == "crc.gz" else 3
        assert ticks == expected, (name, notes)
        assert len(notes) == 1 and f"recording damaged after tick {ticks}; kept {ticks} ticks" in notes[0], notes
        assert notes[0].startswith(f"{path}:"), notes  # file:line
        if name != "garbage.gz" and name != "crc.gz":
            assert notes[0].startswith(f"{path}:11:"), notes  # the line after tick 3

        # export keeps them and says so; replay plays them
        r = netui("export", str(path), "--format", "csv")
        assert r.returncode == 0, (name, r.stderr)
        assert f"kept {ticks} ticks" in r.stderr and "Traceback" not in r.stderr
        assert len(csv_times(r.stdout)) == ticks - 1  # rates from the second tick on, as for any recording
        replay = ReplayMonitor(load(path))
        assert len(replay.recording.frames) == ticks
        assert any(f"kept {ticks} ticks" in n for n in replay.recording.notes)


@pytest.mark.slow
def test_damage_before_the_first_tick_refuses_the_file_naming_file_and_line(tmp_path):
    rec = tmp_path / "run.ndjson.gz"
    record(rec)
    lines = plain_lines(rec)
    path = tmp_path / "early.gz"
    path.write_bytes(gzip.compress(lines[0] + lines[1][:40] + b"\n" + b"".join(lines[2:])))
    refused(netui("export", str(path)), f"{path}:2:")


# --- records netui never writes ------------------------------------------------------------------


def with_line(rec: Path, tmp_path: Path, name: str, line: bytes, at: int) -> Path:
    """The recording with ``line`` put in as line ``at`` (1-based)."""
    lines = plain_lines(rec)
    path = tmp_path / name
    path.write_bytes(gzip.compress(b"".join(lines[:at - 1]) + line + b"\n" + b"".join(lines[at - 1:])))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"123456789012345678901234567890"])
def test_a_non_finite_number_is_refused_by_line_like_any_record_netui_never_writes(rec, tmp_path, number):
    sample = json.loads(plain_lines(rec)[1])
    text = json.dumps(sample).replace('"rx_bytes": 0', '"rx_bytes": ' + number.decode())
    assert number.decode() in text
    # after tick 3: the ticks before are kept, export json is valid JSON, replay plays
    late = with_line(rec, tmp_path, "late.gz", text.encode(), 11)
    r = netui("export", str(late), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert f"{late}:11: recording damaged after tick 3; kept 3 ticks" in r.stderr, r.stderr
    doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the export"))
    assert len(doc["intervals"]) == 3
    replay = ReplayMonitor(load(late))
    replay.seek(replay.recording.end_t)
    assert replay.at_end and replay.fleet["gpu01"].rates is not None
    # before the first tick: refused, naming file and line (replay refuses before any screen)
    early = with_line(rec, tmp_path, "early.gz", text.encode(), 2)
    refused(netui("export", str(early), "--format", "json"), f"{early}:2:")
    refused(netui("replay", str(early)), f"{early}:2:", "cannot replay")


@pytest.mark.slow
@pytest.mark.parametrize("depth", [100, 900, 100_000])
def test_deeply_nested_json_is_a_clear_error_not_a_recursion_error(rec, tmp_path, depth):
    deep = b'{"type":"test","t":101,"kind":"pair-test","report":{"x":' + b"[" * depth + b"]" * depth + b"}}"
    for at, words in ((11, ["kept 3 ticks", "nested"]), (2, [":2:", "nested"])):
        path = with_line(rec, tmp_path, f"deep{at}.gz", deep, at)
        r = netui("export", str(path), "--format", "json")
        assert "RecursionError" not in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert r.returncode == (0 if at == 11 else 2), r.stderr
        for w in words:
            assert w in r.stderr, (w, r.stderr)


def test_nesting_hidden_behind_a_bracket_in_a_string_is_still_found(rec, tmp_path):
    deep = b'{"type":"test","t":101,"kind":"x","report":{"x":' + b"[" * 80 + b'"{"' + b"]" * 80 + b"}}"
    path = with_line(rec, tmp_path, "sly.gz", deep, 2)
    with pytest.raises(RecordingError, match="nested more than 64 deep"):
        load(path)


@pytest.mark.slow
def test_a_future_format_is_refused_naming_the_formats_this_netui_reads(rec, tmp_path):
    lines = plain_lines(rec)
    header = json.loads(lines[0])
    for version in (3, "2", None):
        header["format"] = version
        path = tmp_path / f"future-{version}.gz"
        path.write_bytes(gzip.compress(json.dumps(header).encode() + b"\n" + b"".join(lines[1:])))
        r = netui("export", str(path))
        refused(r, f"{path}:1:", "reads formats 1, 2")
        refused(netui("replay", str(path)), "reads formats 1, 2")


@pytest.mark.slow
@pytest.mark.parametrize("content", [
    b"time,node,value\n1,a,2\n",  # a CSV export
    b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,  # binary
    b"[1, 2, 3]\n",  # JSON, not a record
    b'{"hello": "world"}\n',
    b"just one line with no newline",
    gzip.compress(b"a,b\n1,2\n"),  # gzip, not of a recording
    b"\x1f\x8b" + bytes(range(256)) * 8,  # gzip magic, then nonsense
])
def test_a_file_that_is_no_recording_says_so(tmp_path, content):
    path = tmp_path / "other.file"
    path.write_bytes(content)
    r = netui("export", str(path))
    refused(r, f"{path}:", "not a netui recording")
    assert "line 1" in r.stderr or f"{path}:1:" in r.stderr or "gzip" in r.stderr
    with pytest.raises(RecordingError, match="not a netui recording"):
        load(path)


# --- reads are capped: regular files only, bounded sizes -------------------------------------


@pytest.mark.slow
def test_a_fifo_dev_zero_and_a_directory_are_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1\n")
    for path, words in ((fifo, "FIFO (named pipe), not a regular file"),
                        ("/dev/zero", "a character device, not a regular file"),
                        (tmp_path, "is a directory")):
        for argv in (["export", str(path)], ["replay", str(path)], ["--replay", str(path)]):
            refused(netui(*argv, timeout=60), str(path), words)  # the timeout catches the old hang
        refused(netui("snapshot", "-f", str(path), timeout=60), "host file", words)
        refused(netui("doctor", "--local", "--latency", str(path), timeout=60), f"--latency {path}", words)
        with pytest.raises(InventoryError, match=words.replace("(", r"\(").replace(")", r"\)")):
            read_host_file(path)
    # -F and -i name the option and the reason, not "no such file"
    refused(netui("snapshot", "-F", str(tmp_path), "127.0.0.1", timeout=60), f"-F {tmp_path}: is a directory")
    refused(netui("snapshot", "-i", str(fifo), "127.0.0.1", timeout=60), f"-i {fifo}: a FIFO")
    refused(netui("snapshot", "-F", str(tmp_path / "nope"), "127.0.0.1", timeout=60), "nope: no such file")


def peak_rss_mb(*args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``netui ARGS`` from a fresh Python whose only child it is: (result, the child's peak RSS in MB)."""
    code = ("import json, resource, subprocess, sys\n"
            "r = subprocess.run([sys.executable, '-m', 'netui', *sys.argv[1:]], capture_output=True, text=True)\n"
            "print(json.dumps([r.returncode, r.stderr, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    rc, stderr, rss_kb = json.loads(done.stdout)
    return subprocess.CompletedProcess(args, rc, "", stderr), rss_kb / 1024


def gzip_bomb(path: Path, pattern: bytes, expanded_bytes: int) -> None:
    """A gzip file of ``pattern`` repeated to ``expanded_bytes`` (about 1 MB per GB). Built
    without compressing it all: once the window is full of the pattern, each flushed MiB
    compresses to the same bytes, which are repeated; the trailer has the true checksum."""
    block = pattern * ((1 << 20) // len(pattern))
    z = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = z.compress(block) + z.flush(zlib.Z_SYNC_FLUSH)
    steady = z.compress(block) + z.flush(zlib.Z_SYNC_FLUSH)
    assert steady == z.compress(block) + z.flush(zlib.Z_SYNC_FLUSH)
    blocks = expanded_bytes // len(block)
    crc = 0
    for _ in range(blocks):
        crc = zlib.crc32(block, crc)
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")  # gzip header: deflate, no name
        f.write(first + steady * (blocks - 1) + z.flush(zlib.Z_FINISH))
        f.write(struct.pack("<II", crc, (blocks * len(block)) & 0xFFFFFFFF))


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_far_below_its_expanded_size(tmp_path):
    zeros = tmp_path / "zeros.gz"
    gzip_bomb(zeros, b"\0", 1 << 30)  # 1 GiB of zeros, one line
    assert zeros.stat().st_size < 1_100_000
    r, rss = peak_rss_mb("export", str(zeros))
    refused(r, f"{zeros}:1: not a netui recording: line 1 is longer than 16 MiB", "NETUI_MAX_READ")
    print(f"1 GiB zero bomb: peak RSS {rss:.0f} MB")
    assert rss < 400

    newlines = tmp_path / "newlines.gz"
    gzip_bomb(newlines, b"\n", 1 << 30)  # a billion blank lines
    r, rss = peak_rss_mb("export", str(newlines))
    refused(r, "not a netui recording", "blank lines")
    print(f"1 GiB newline bomb: peak RSS {rss:.0f} MB")
    assert rss < 400


@pytest.mark.slow
def test_the_total_read_and_the_records_are_capped_and_netui_max_read_raises_the_cap(rec, tmp_path):
    lines = plain_lines(rec)
    big = tmp_path / "big.gz"
    big.write_bytes(gzip.compress(b"".join(lines) + lines[-1] * 20_000))  # many tick marks
    refused(netui("export", str(big), env={**os.environ, "NETUI_MAX_READ": "256k"}), "more than", "NETUI_MAX_READ")
    assert netui("export", str(big), env={**os.environ, "NETUI_MAX_READ": "64M"}).returncode == 0
    refused(netui("export", str(big), env={**os.environ, "NETUI_MAX_READ": "lots"}), "NETUI_MAX_READ", "not a size")
    # a tiny limit on the total reads no more than it
    r, _ = peak_rss_mb("export", str(rec), env={**os.environ, "NETUI_MAX_READ": "1k"})
    refused(r, "more than 1 KiB of data")


# --- host files ----------------------------------------------------------------------------------


def test_a_host_file_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "hosts.txt"
    path.write_bytes("\ufeffgpu01\r\ngpu[02-03]\r\n# a comment\r\n".encode())
    assert read_host_file(path) == ["gpu01", "gpu[02-03]"]


@pytest.mark.slow
def test_a_host_file_too_large_is_refused(tmp_path):
    path = tmp_path / "hosts.txt"
    with open(path, "wb") as f:
        f.truncate(17 << 20)  # sparse: 17 MiB of zeros, no disk used
    with pytest.raises(InventoryError, match="larger than 16 MiB"):
        read_host_file(path)
    refused(netui("snapshot", "-f", str(path), timeout=60), "larger than 16 MiB")


# --- pipes and exit statuses -----------------------------------------------------------------------


def piped_to_head(*args: str) -> tuple[int, str, str]:
    """``netui ARGS | head -1`` with real pipes: (netui's exit status, its stderr, head's output)."""
    netui_p = subprocess.Popen([sys.executable, "-m", "netui", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=REPO)
    head = subprocess.Popen(["head", "-1"], stdin=netui_p.stdout, stdout=subprocess.PIPE)
    netui_p.stdout.close()  # head alone holds the read end: when it exits, netui's writes break
    out, _ = head.communicate(timeout=120)
    err = netui_p.stderr.read().decode()
    netui_p.stderr.close()
    return netui_p.wait(timeout=120), err, out.decode()


@pytest.mark.slow
def test_export_into_head_ends_quietly_every_time(tmp_path):
    path = tmp_path / "long.ndjson.gz"
    record(path, ticks=200, nodes=("a", "b", "c", "d"))  # more CSV than a pipe holds
    for _ in range(5):
        rc, err, out = piped_to_head("export", str(path), "--format", "csv")
        assert out == "time,node,device,metric,value\n"
        assert rc in (0, 141) and err == "", (rc, err)


@pytest.mark.slow
def test_snapshot_json_into_head_ends_quietly_every_time():
    for _ in range(6):
        rc, err, out = piped_to_head("snapshot", "--json", "--interval", "0.05")
        assert out == "{\n"
        assert rc in (0, 141) and "Traceback" not in err and "Broken pipe" not in err, (rc, err)
        assert "BrokenPipe" not in err and "Exception ignored" not in err, err


@pytest.mark.slow
def test_help_into_head_ends_quietly():
    for command in ("", "export", "snapshot"):
        rc, err, out = piped_to_head(*([command] if command else []), "--help")
        assert out.startswith("usage: netui") and rc in (0, 141) and err == "", (command, rc, err)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["", "snapshot", "record", "replay", "export", "bench", "doctor"])
def test_every_help_says_the_exit_statuses(command):
    r = netui(*([command] if command else []), "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "Exit status: 0 ok" in text and "2 a usage or input error" in text, text
    if command == "bench":
        assert "3 inconclusive" in text


@pytest.mark.slow
def test_usage_errors_exit_2_whether_argparse_or_netui_finds_them(tmp_path):
    refused(netui("snapshot", "--interval", "zero"), "--interval")  # argparse
    refused(netui("snapshot", "--procfs", str(tmp_path / "nope")), "not a directory")  # netui's own check
    refused(netui("replay", str(tmp_path / "nope")), "no such file")
    refused(netui("snapshot", "bad;host"), "bad;host")
    (tmp_path / "r.gz").write_bytes(b"x")
    refused(netui("record", "-o", str(tmp_path / "r.gz"), "--count", "1"), "never overwrites")


def test_a_record_too_long_for_a_reader_is_left_out_and_the_recording_goes_on(tmp_path):
    from netui.engine.recorder import Recorder
    from netui.model.fleet import Fleet

    path = tmp_path / "r.ndjson.gz"
    clock = iter(float(1_800_000_000 + k) for k in range(100))
    rec = Recorder(path, hosts=["a"], interval_s=1.0, clock=lambda: next(clock))
    fleet = Fleet(["a"])
    rec.sample("a", full_sample(0.0))
    rec.tick(fleet)
    rec.test("pair-test", {"pairs": ["x" * (17 << 20)]})  # a report longer than a line a reader takes
    rec.sample("a", full_sample(1.0))
    rec.tick(fleet)
    rec.close()
    assert rec.active is False and rec.error is None and rec.skipped == 1
    notes: list[str] = []
    kinds = [r["type"] for r in read_records(path, notes)]
    assert kinds == ["header", "sample", "tick", "sample", "tick"] and notes == []


@pytest.mark.slow
def test_names_and_numbers_of_nodes_are_bounded(rec, tmp_path):
    lines = plain_lines(rec)
    header = json.loads(lines[0])
    for hosts, words in ((["n"] * 100_001, "100,001 hosts"), (["x" * 10_000], "10,000 characters"),
                         ("gpu01", "a list of names")):
        path = tmp_path / "many.gz"
        path.write_bytes(gzip.compress(json.dumps(header | {"hosts": hosts}).encode() + b"\n" + b"".join(lines[1:])))
        with pytest.raises(RecordingError, match=words):
            load(path)
    # nodes met in the records count too
    path = tmp_path / "states.gz"
    states = b"".join(b'{"type":"state","t":100.5,"node":"n%d","state":"down"}\n' % k for k in range(100_001))
    path.write_bytes(gzip.compress(b"".join(lines[:4]) + states + b"".join(lines[4:])))
    with pytest.raises(RecordingError, match="more than 100,000 nodes"):
        load(path)


def test_a_recording_is_never_started_over_an_existing_file(rec):
    before = rec.read_bytes()
    with pytest.raises(FileExistsError, match="never overwrites a recording"):
        RecordingWriter(rec, header_record(1.0, hosts=["a"], interval_s=1.0))
    assert rec.read_bytes() == before
