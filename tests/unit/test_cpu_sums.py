"""The per-CPU tables summed on the node: the remote sampler sends their sums ("cpusum")
unless the monitor asks for the tables, and the grid shows the same figures either way.

The sampler's own ``frame()`` runs here on texts served from memory (tests/bench/fake_fleet.py),
with its clock set per frame; the frames go through the monitor's decoder and Node.
"""

from __future__ import annotations

import math
import re
import types

import pytest

from netui.collectors import frame_tables, procfs
from netui.collectors.frames import FrameDecoder, FrameError
from netui.collectors.ssh import SshSource
from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.engine.recording.codec import sample_from_dict, sample_to_dict
from netui.model.node import Node
from netui.model.rates import node_rates
from netui.model.samples import CpuSums
from netui.speedups import frame_fields
from tests.bench.fake_fleet import _sampler_namespace
from tests.bench.node128 import FIXTURES, proc_texts, softirq_line

WRAP = 1 << 32


def _shift_row(text: str, row: str, cpu: int, offset: int) -> str:
    """/proc/softirqs with one CPU's counter in ``row`` moved by ``offset`` (mod 2**32)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip().startswith(row + ":"):
            name, rest = line.split(":", 1)
            values = rest.split()
            values[cpu] = str((int(values[cpu]) + offset) % WRAP)
            lines[i] = name + ":" + "".join(f" {v:>10}" for v in values)
    return "\n".join(lines)


def _shift_softnet(text: str, cpu: int, offset: int) -> str:
    """softnet_stat with one CPU's processed count moved by ``offset`` (mod 2**32)."""
    rows = text.split("\n")
    f = rows[cpu].split()
    f[0] = f"{(int(f[0], 16) + offset) % WRAP:08x}"
    rows[cpu] = " ".join(f)
    return "\n".join(rows)


def _without_cpu(stat: str, cpu: int) -> str:
    return "\n".join(line for line in stat.split("\n") if not line.startswith(f"cpu{cpu} "))


def node_texts(step: int) -> dict[str, str]:
    """node128's texts, with CPU 5's NET_RX and softnet counters wrapping at step 2, CPU 9
    hot in softirq from step 3, and CPU 3 offline at step 5."""
    texts = proc_texts(step)
    texts["softirqs"] = _shift_row(texts["softirqs"], "NET_RX", 5, WRAP - 55919 - 100)  # 2**32 - 100 at step 0
    texts["net/softnet_stat"] = _shift_softnet(texts["net/softnet_stat"], 5, WRAP - 0x358fe3 - 1000)
    if step >= 3:  # cpu9: 40 softirq ticks more per step
        texts["stat"] = re.sub(r"^(cpu9 (?:\d+ ){6})(\d+)", lambda m: m[1] + str(int(m[2]) + 40 * (step - 2)),
                               texts["stat"], flags=re.M)
        texts["stat"] = re.sub(r"^(cpu9 (?:\d+ ){3})(\d+)", lambda m: m[1] + str(int(m[2]) - 40 * (step - 2)),
                               texts["stat"], flags=re.M)  # out of idle: the same total
    if step == 5:  # offline: its softirq counts stand still
        texts["stat"] = _without_cpu(texts["stat"], 3)
        texts["softirqs"] = _shift_row(_shift_row(texts["softirqs"], "NET_RX", 3, -52), "NET_TX", 3, -52)
    # /proc/stat's softirq line: the sums of the table as it is now (a newer kernel's u64 sums
    # of the u32 counters: CPU 5's wrap takes 2**32 off the NET_RX sum)
    texts["stat"] = re.sub(r"^softirq .*$", softirq_line(texts["softirqs"].rstrip("\n").split("\n")),
                           texts["stat"], flags=re.M)
    return texts


def sampler_frames(texts_seq, *, detail: bool, first_mono: float = 100.0) -> list[bytes]:
    """The payloads the sampler writes for ``texts_seq``, one frame a second of node clock."""
    ns = _sampler_namespace()
    ns["sampler"].detail = detail
    clock = [first_mono]
    ns["time"] = types.SimpleNamespace(time=lambda: 1.8e9 + clock[0], monotonic=lambda: clock[0])
    out = []
    for i, texts in enumerate(texts_seq):
        clock[0] = first_mono + i
        ns["_state"]["texts"] = texts
        whole = ns["sampler"].frame()
        out.append(whole[whole.index(b"\n") + 1:])
    return out


def observed(frames: list[bytes]) -> list[Node]:
    """A node's state after each frame (the summary of each interval)."""
    node = Node("gpu001", history_s=60, interval_s=1)
    decode = FrameDecoder().decode
    summaries = []
    for payload in frames:
        node.observe(decode(payload))
        summaries.append((node.summary, node.sample, node.rates))
    return summaries


GRID = ("hottest_cpu", "hottest_softirq_percent", "net_rx_per_s", "softnet_drops_per_s", "time_squeeze_per_s")


def test_the_grid_shows_the_same_figures_from_the_sums_as_from_the_tables():
    seq = [node_texts(s) for s in range(7)]
    sums = observed(sampler_frames(seq, detail=False))
    tables = observed(sampler_frames(seq, detail=True))
    for step, ((a, sa, _), (b, sb, rb)) in enumerate(zip(sums, tables)):
        assert sa.cpu is None and sa.softirqs is None and sa.softnet is None and sa.problems == ()
        assert sb.cpu is not None and sb.problems == ()
        for field in GRID:
            x, y = getattr(a, field), getattr(b, field)
            if step == 0:
                assert x is None and y is None, field
            else:
                assert x is not None and y is not None, (step, field)
                assert x == pytest.approx(y, rel=1e-12), (step, field)
    # the wraps at step 2 were counted, not taken for resets: NET_RX/s as the steps before
    rx = [s.net_rx_per_s for s, _, _ in sums[1:5]]
    assert max(rx) == pytest.approx(min(rx))
    assert sums[2][1].cpu_sums.net_rx > sum(procfs.parse_softirqs(seq[2]["softirqs"]).net_rx)  # the sum grew past the wrap
    # cpu9 is the hottest once it is: 40 more ticks of 100 in softirq
    assert [s.hottest_cpu for s, _, _ in sums[3:]] == [9, 9, 9, 9]
    assert sums[4][0].hottest_softirq_percent == pytest.approx(tables[4][2].cpu.hottest()[1])
    assert sums[5][1].cpu_sums.ncpus == 127  # cpu3 offline in that reading


def test_the_hottest_cpu_is_used_only_over_the_interval_it_was_measured_on():
    frames = sampler_frames([node_texts(s) for s in range(4)], detail=False)
    node = Node("gpu001", history_s=60, interval_s=1)
    decode = FrameDecoder().decode
    samples = [decode(p) for p in frames]
    node.observe(samples[0])
    node.observe(samples[1])
    assert node.summary.hottest_cpu is not None
    node.observe(samples[3])  # a sample in between was not seen: the sampler's hottest is over a later time
    assert samples[3].cpu_sums.hot_since_s == samples[2].mono_s
    assert node.summary.hottest_cpu is None and node.summary.hottest_softirq_percent is None
    assert node.summary.net_rx_per_s == pytest.approx(node_rates(samples[1], samples[2]).cpu_sums.net_rx_per_s)


def test_when_the_tables_start_the_sums_fill_the_first_interval():
    seq = [node_texts(s) for s in range(4)]
    plain, detailed = sampler_frames(seq, detail=False), sampler_frames(seq, detail=True)
    node = Node("gpu001", history_s=60, interval_s=1)
    decode = FrameDecoder().decode
    for payload in plain[:2] + detailed[2:]:  # the monitor asked for the tables at frame 2
        node.observe(decode(payload))
        if node.rates is not None:
            assert node.summary.hottest_cpu is not None and node.summary.net_rx_per_s is not None
            assert node.summary.softnet_drops_per_s is not None


def test_a_file_the_sampler_could_not_read_is_a_problem_and_an_odd_one_goes_as_text():
    texts = [node_texts(s) for s in range(3)]
    for t in texts:
        del t["net/softnet_stat"]
    texts[2]["stat"] = texts[2]["stat"].replace("cpu7 ", "cpu7 x ", 1)  # odd: its text goes
    frames = sampler_frames(texts, detail=False)
    fields = frame_fields(frames[2])
    assert "stat" in fields and "cpu" not in fields and "softnet" not in fields
    sums = frame_tables.parse_cpusum(fields["cpusum"])
    assert sums.ncpus is None and sums.dropped is None and sums.net_rx is not None
    decode = FrameDecoder().decode
    samples = [decode(p) for p in frames]
    assert samples[1].problems == ("net/softnet_stat: not readable",)
    assert samples[1].cpu_sums.ncpus == 128 and samples[1].cpu is None
    # the careful parser took the text: the CPUs it could read
    assert samples[2].cpu is not None and len(samples[2].cpu.cpus) == 127 and 7 not in samples[2].cpu.cpus


@pytest.mark.parametrize("raw", [
    b"",
    b"\0" * 87,
    frame_tables._CPUSUM.pack(16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0),  # an unknown bit
    frame_tables._CPUSUM.pack(8, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0.0),  # a hottest CPU without /proc/stat
    frame_tables._CPUSUM.pack(15, 4, 0, 0, 0, 0, 0, 1, 5, 3, 0.0),  # more softirq ticks than ticks
    frame_tables._CPUSUM.pack(15, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0.0),  # no ticks
])
def test_bad_sums_are_a_parse_error(raw):
    with pytest.raises(procfs.ParseError):
        frame_tables.parse_cpusum(raw)


def test_bad_sums_in_a_frame_are_a_problem_of_the_sample_not_of_the_stream():
    frames = sampler_frames([node_texts(0)], detail=False)
    fields = frame_fields(frames[0])
    from netui.collectors.frames import encode_fields

    fields["cpusum"] = b"\0" * 5
    sample = FrameDecoder().decode(encode_fields(fields.items()))
    assert sample.cpu_sums is None and any(p.startswith("cpusum:") for p in sample.problems)
    with pytest.raises(FrameError):
        FrameDecoder().decode(frames[0][:-3])


def test_the_sampler_and_the_monitor_agree_on_the_layout_of_the_sums():
    ns = _sampler_functions_only()
    assert ns["CPUSUM"].format == frame_tables._CPUSUM.format
    assert (ns["SUM_STAT"], ns["SUM_IRQ"], ns["SUM_SOFTNET"], ns["SUM_HOT"]) == (
        frame_tables._SUM_STAT, frame_tables._SUM_IRQ, frame_tables._SUM_SOFTNET, frame_tables._SUM_HOT)


def _sampler_functions_only() -> dict:
    from netui.collectors.ssh import SAMPLER_SOURCE

    ns: dict = {"__name__": "netui_sampler_under_test"}
    exec(compile(SAMPLER_SOURCE, "sampler.py", "exec"), ns)  # noqa: S102 - our own source
    ns["sampler"] = ns["Sampler"]()  # its state: open files, caches, running sums
    return ns


def test_the_sampler_counts_each_wrap_once_and_follows_cpus_by_number():
    ns = _sampler_functions_only()
    add = ns["sampler"].add_u32
    add("softirqs", ("net_rx",), [0, 1, 2], ([WRAP - 5, 10, 20],))
    assert ns["sampler"].sums["net_rx"] == WRAP - 5 + 30
    add("softirqs", ("net_rx",), [0, 1, 2], ([3, 11, 20],))  # cpu0 wrapped: +8; cpu1 +1
    assert ns["sampler"].sums["net_rx"] == WRAP - 5 + 30 + 9
    add("softirqs", ("net_rx",), [0, 2], ([4, 25],))  # cpu1 went offline: cpu0 +1, cpu2 +5
    assert ns["sampler"].sums["net_rx"] == WRAP - 5 + 30 + 15
    add("softirqs", ("net_rx",), [0, 1, 2], ([4, 7, 25],))  # cpu1 back: nothing to compare it with
    assert ns["sampler"].sums["net_rx"] == WRAP - 5 + 30 + 15


def test_the_softirq_sums_are_read_from_proc_stat_on_the_fixture_and_on_this_host():
    softirq_sums = _sampler_functions_only()["softirq_sums"]
    fixture = (FIXTURES / "stat").read_bytes()  # softirq 5057579 250191 1481983 1647 211099 ...
    assert softirq_sums(fixture) == (211099, 1647)
    assert softirq_sums(fixture.replace(b"\nsoftirq ", b"\nsoftirqs ")) is None
    assert softirq_sums(re.sub(rb"\nsoftirq ([0-9 ]+)", rb"\nsoftirq 1 2 3", fixture)) is None  # too short
    assert softirq_sums(fixture.replace(b" 211099 ", b" -211099 ")) is None
    assert softirq_sums(b"cpu  1 2 3\nsoftirq 10 0 1 22 333") == (333, 22)  # the last line, no newline
    try:
        with open("/proc/stat", "rb") as f:
            stat = f.read()
        with open("/proc/softirqs") as f:
            table = procfs.parse_softirqs(f.read())
    except OSError:
        pytest.skip("no /proc/stat or /proc/softirqs here")
    if softirq_sums(stat) is None:
        pytest.skip("this kernel's /proc/stat has no softirq line")
    rx, tx = softirq_sums(stat)
    # the kernel's sums (modulo 2**32 on older kernels) of the table read just after them
    for line_sum, column in ((rx, table.net_rx), (tx, table.net_tx)):
        grew = (sum(column) - line_sum) % WRAP
        assert 0 <= grew < 1_000_000, (line_sum, sum(column))


def _sums_over(ns, stat_lines: list[str]) -> list[int]:
    """The running NET_RX sum after each of these /proc/stat softirq lines."""
    out = []
    for line in stat_lines:
        ns["sampler"].add_totals(ns["softirq_sums"](b"cpu  1 2 3\n" + line.encode() + b"\n"))
        out.append(ns["sampler"].sums["net_rx"])
    return out


def test_the_stat_sums_grow_by_their_increase_modulo_2_to_the_32_on_old_and_new_kernels():
    # an older kernel: the sums are u32 and wrap as a whole
    old = _sums_over(_sampler_functions_only(), [f"softirq 0 0 0 7 {WRAP - 10}", "softirq 0 0 0 9 20",
                                                  "softirq 0 0 0 9 50"])
    assert old == [WRAP - 10, WRAP + 20, WRAP + 50]
    # a newer kernel: u64 sums of u32 counters, one CPU's wrap takes 2**32 off
    new = _sums_over(_sampler_functions_only(), [f"softirq 0 0 0 7 {3 * WRAP - 10}",
                                                  f"softirq 0 0 0 9 {2 * WRAP + 20}", f"softirq 0 0 0 9 {2 * WRAP + 50}"])
    assert new == [3 * WRAP - 10, 3 * WRAP + 20, 3 * WRAP + 50]


def test_the_sums_go_on_from_one_source_to_the_other_without_a_jump_or_a_lost_interval():
    """Both sources count the same counters: were /proc/stat's softirq line missing in one
    frame (or the interval over 10 s), the table gives that frame's sums from the line's last
    reading, and the line goes on from the table's: the sums follow the counters throughout."""
    ns = _sampler_functions_only()

    def table(rx0, rx1):
        text = f"  CPU0 CPU1\n NET_TX: 2 3\n NET_RX: {rx0} {rx1}\n".encode()
        assert ns["sampler"].percpu("softirqs", text, 0.0, [])
        return ns["sampler"].sums["net_rx"]

    # NET_RX over both CPUs: 1000, 1100, 1130, 1200, 1205
    got = _sums_over(ns, ["softirq 0 0 0 5 1000"])
    got += [table(400, 700), table(410, 720)]
    got += _sums_over(ns, ["softirq 0 0 0 5 1200", "softirq 0 0 0 5 1205"])
    got += [table(500, 706)]
    assert got == [1000, 1100, 1130, 1200, 1205, 1206]


def test_the_grid_figures_do_not_move_when_the_source_of_the_sums_changes_mid_stream():
    seq = [node_texts(s) for s in range(7)]
    tables = observed(sampler_frames(seq, detail=True))
    ns = _sampler_namespace()
    clock = [100.0]
    ns["time"] = types.SimpleNamespace(time=lambda: 1.8e9 + clock[0], monotonic=lambda: clock[0])
    frames = []
    for i, texts in enumerate(seq):
        clock[0] = 100.0 + i
        ns["sampler"].line_ok = i not in (2, 3, 5)  # the table at steps 2, 3 and 5 (CPU 5 wraps at 2)
        ns["_state"]["texts"] = texts
        whole = ns["sampler"].frame()
        frames.append(whole[whole.index(b"\n") + 1:])
    switched = observed(frames)
    for step in range(1, 7):
        assert switched[step][0].net_rx_per_s == pytest.approx(tables[step][0].net_rx_per_s, rel=1e-12), step


@pytest.mark.slow
def test_the_sampler_reads_proc_softirqs_only_for_its_table_or_when_stat_has_no_softirq_line():
    def reads(detail: bool, texts: dict) -> list[str]:
        ns = _sampler_namespace()
        ns["sampler"].detail = detail
        ns["_state"]["texts"] = texts
        fake, seen = ns["sampler"].read, []

        def read(path, one=False):
            seen.append(path)
            return fake(path, one)

        ns["sampler"].read = read
        for _ in range(2):
            ns["sampler"].frame()
        return seen

    texts = proc_texts(0)
    assert "/proc/softirqs" not in reads(False, texts)
    assert reads(True, texts).count("/proc/softirqs") == 2
    texts["stat"] = re.sub(r"^softirq .*\n", "", texts["stat"], flags=re.M)
    assert reads(False, texts).count("/proc/softirqs") == 2
    frames = sampler_frames([node_texts(s) for s in range(3)], detail=False)
    decode = FrameDecoder().decode
    decoded = [decode(p) for p in frames]
    assert all(d.cpu_sums is not None and d.cpu_sums.net_rx is not None for d in decoded)


def test_the_sampler_picks_the_hottest_cpu_as_the_monitor_does():
    ns = _sampler_functions_only()
    hottest = ns["hottest"]
    prev = (0.0, [0, 1, 2, 3], [10, 10, 10, 10], [100, 100, 100, 100])
    assert hottest([0, 1, 2, 3], [20, 30, 30, 10], [200, 200, 200, 200], prev) == (1, 20, 100)  # ties: the first
    assert hottest([0, 1, 2, 3], [15, 5, 10, 10], [200, 200, 100, 100], prev) == (0, 5, 100)  # backwards: not counted
    assert hottest([0, 1, 2, 3], [10, 10, 10, 10], [100, 100, 100, 100], prev) is None  # no tick anywhere
    assert hottest([1, 3], [12, 60], [110, 200], prev) == (3, 50, 100)  # by CPU number


def test_the_sums_survive_a_recording():
    frames = sampler_frames([node_texts(s) for s in range(2)], detail=False)
    decode = FrameDecoder().decode
    for sample in (decode(p) for p in frames):
        again = sample_from_dict(sample_to_dict(sample))
        assert again.cpu_sums == sample.cpu_sums and isinstance(again.cpu_sums, CpuSums)
    assert sample_from_dict(sample_to_dict(sample) | {"cpu_sums": None}).cpu_sums is None  # older recordings


def test_the_monitor_asks_for_the_tables_while_anyone_wants_them():
    from netui.engine.monitor import Monitor

    connector = SshConnector(SshSettings())
    sources = [SshSource(n, n, connector) for n in ("a", "b", "c")]
    m = Monitor(sources, interval_s=1.0, history_s=10)
    detail = lambda: {s.name for s in sources if s.detail}  # noqa: E731
    m.want_detail(["a"], True)
    m.want_detail(["a", "b"], True)  # a node screen and a pair test
    assert detail() == {"a", "b"}
    m.want_detail(["a"], False)
    assert detail() == {"a", "b"}
    m.want_detail(["a", "b"], False)
    assert detail() == set()
    m.want_detail(["c"], False)  # more releases than wants: nothing goes below zero
    m.want_detail(["c"], True)
    assert detail() == {"c"}
    m.set_detail_all(True)  # a recording
    assert detail() == {"a", "b", "c"}
    m.set_detail_all(False)
    assert detail() == {"c"}
    from netui.collectors.ssh import sampler_command

    assert sampler_command(1.0, detail=True).endswith(" 1.0 --detail") and not sampler_command(1.0).endswith("--detail")


def test_the_sums_are_what_the_cpu_panel_says_while_the_tables_come():
    from netui.ui.panels import _hottest_meanwhile, _softnet_meanwhile, _waiting

    frames = sampler_frames([node_texts(s) for s in range(4)], detail=False)
    node = Node("gpu001", history_s=60, interval_s=1)
    decode = FrameDecoder().decode
    for p in frames:
        node.observe(decode(p))
    words = _waiting(node, "per-CPU softirq", _hottest_meanwhile)
    assert "asked the node" in words and "of 128 CPUs the hottest: cpu9" in words
    assert not math.isnan(node.summary.hottest_softirq_percent)
    words = _waiting(node, "per-CPU softnet", _softnet_meanwhile)
    assert "meanwhile, all CPUs: backlog drops 0/s   time squeezes 127/s" in words
    words = _waiting(node, "per-CPU softirq", _hottest_meanwhile, replay=True)
    assert "the recording has no per-CPU tables" in words and "hottest: cpu9" in words


@pytest.mark.slow
async def test_a_pair_test_waits_for_the_tables_of_its_nodes_that_are_up_and_no_longer():
    """The first round waits for the per-CPU tables it asked for, from the nodes of its
    pairs that are up; a node down (its last sample sums only) does not hold it up, and
    the wait ends with the first sample that has them, or after two intervals."""
    import asyncio
    import time

    from netui.engine.monitor import Monitor
    from netui.checks.pairs.runner import PairTest
    from netui.checks.pairs.tools import PairSettings
    from netui.model.node import NodeState

    connector = SshConnector(SshSettings())
    m = Monitor([SshSource(n, n, connector) for n in ("a", "b")], interval_s=0.2, history_s=10)
    texts = [node_texts(s) for s in range(3)]
    plain, detailed = sampler_frames(texts, detail=False), sampler_frames(texts, detail=True)
    decode = {n: FrameDecoder().decode for n in "ab"}
    for name in "ab":
        m.fleet[name].observe(decode[name](plain[0]))
    test = PairTest(m, ["a", "b"], PairSettings(duration_s=1))

    m.fleet["b"].set_state(NodeState.DOWN, "connection lost")
    m.fleet["a"].observe(decode["a"](detailed[1]))
    t0 = time.monotonic()
    await test._tables_arrived({"a", "b"})
    assert time.monotonic() - t0 < 0.5  # b is down: nothing to wait for (not two intervals: 0.9 s)

    m.fleet["b"].set_state(NodeState.UP)
    t0 = time.monotonic()
    await test._tables_arrived({"a", "b"})
    assert 0.85 <= time.monotonic() - t0 < 1.5  # b sends sums only: two intervals and a half, no more

    async def tables_come():
        await asyncio.sleep(0.2)
        m.fleet["b"].observe(decode["b"](detailed[1]))

    t0 = time.monotonic()
    await asyncio.gather(test._tables_arrived({"a", "b"}), tables_come())
    assert 0.2 <= time.monotonic() - t0 < 0.85  # the sample with the tables ends the wait, before the 0.9 s
