"""A cockpit read at 80 columns: badges of netui's state, the keys in the footer, why each bad
node is bad, marks that stay on the node the user chose. Pilot tests that assert what is on
the screen."""

from __future__ import annotations

import re
import socket

import pytest
from textual import events

from netui.collectors.ssh import SshSource

from netui.collectors.ssh_connect import SshConnector, SshSettings
from netui.engine.monitor import Monitor
from netui.ui.app import make_app
from netui.ui.grid import FleetGrid
from tests.pilot import column, highlighted, on_screen, painted, plain, poll
from tests.synth import ScriptedSource, demo_sources, node_sample

SIZES = [(80, 24), (120, 40)]


def app_of(sources, **kw):
    return make_app(Monitor(sources, interval_s=1.0, history_s=120), **({"autostart": False} | kw))


def straggling_fleet():
    """Three busy nodes, one at a sliver of their throughput (a straggler with a long reason),
    and the demo's node that is down."""
    busy = [ScriptedSource(f"gpu0{i}", lambda k: node_sample(k, rx_bps=40e9, tx_bps=38e9)) for i in (1, 2, 5)]
    slow = ScriptedSource("gpu04", lambda k: node_sample(k, rx_bps=0.4e9, tx_bps=0.4e9))
    return busy + [slow, demo_sources()[2]]


def lines(app) -> list[str]:
    return on_screen(app).splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
async def test_badges_stay_in_sight_while_recording_paused_filtered_and_marked(size, tmp_path):
    app = app_of(straggling_fleet())
    app.record_dir = tmp_path
    async with app.run_test(size=size) as pilot:
        await poll(app, pilot, 4)
        head = lines(app)[0]
        assert "straggler gpu04" in head or "straggler" in head[: size[0]] or "…" in head
        assert "▼worst" in head and "bits/s" in head
        await pilot.press("w", "p", "slash", "g", "p", "u", "enter", "space", "down", "space")
        await pilot.pause()
        head = lines(app)[0]
        for badge in ("● REC", "PAUSED", "FILTER gpu", "2 marked", "▼worst", "bits/s"):
            assert badge in head, (badge, head)
        assert len(head.rstrip()) <= size[0]
        # the straggler outranks everything else on the left: its name stays whole; the
        # file's name is not there (● REC and its size are the badge)
        assert "straggler gpu04" in head, head
        assert "netui-" not in head and ".ndjson" not in head
        await pilot.press("b")
        await pilot.pause()
        assert "bytes/s" in lines(app)[0]
        app.monitor.stop_recording()


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
async def test_while_recording_the_straggler_keeps_its_place_and_the_file_is_named_in_help(size, tmp_path):
    app = app_of(straggling_fleet())
    app.record_dir = tmp_path
    async with app.run_test(size=size) as pilot:
        await poll(app, pilot, 4)
        await pilot.press("w")
        await poll(app, pilot, 1)
        head = lines(app)[0]
        # its numbers too, at 80 columns as at 120, whole (the Why column's words where the
        # sentence does not fit): the interval and the node count give way
        assert ("straggler gpu04: TX 400 Mb/s" in head or "straggler gpu04: TX 1% of median" in head) \
            and "● REC" in head and "…" not in head, head
        assert "netui-" not in head
        path = str(app.monitor.recorder.path)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert path in commands["Record / stop"]
        await pilot.press("question_mark")
        await pilot.pause()
        from textual.widgets import Static

        assert f"Recording to {path}" in plain(app.screen.query_one(Static))
        app.monitor.stop_recording()


@pytest.mark.slow
async def test_a_long_filter_is_cut_in_its_badge():
    app = app_of(demo_sources())
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 2)
        await pilot.press("slash", *"averyveryverylongname", "enter")
        await pilot.pause()
        head = lines(app)[0]
        assert "FILTER averyveryve…" in head and len(head.rstrip()) <= 80


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
async def test_the_footer_shows_the_main_keys_with_live_labels(size, tmp_path):
    app = app_of(demo_sources())
    app.record_dir = tmp_path
    async with app.run_test(size=size) as pilot:
        await poll(app, pilot, 2)
        foot = lines(app)[-1]
        for key in ("⏎ Open", "␣ Mark", "p Pause", "t Pair", "T Matrix", "l Latency", "D Doctor", "? Help", "q Quit"):
            assert key in foot, (key, foot)
        assert "RDMA" not in foot  # no RDMA in this fleet: r and R stay out of the way
        assert len(foot.rstrip()) <= size[0]
        await pilot.press("p")
        await pilot.pause()
        assert "p Resume" in lines(app)[-1] and "p Pause" not in lines(app)[-1]
        await pilot.press("p")
        if size[0] >= 120:
            foot = lines(app)[-1]
            assert "b Bytes" in foot and "w Record" in foot and "s Sort" in foot and "/ Filter" in foot
            await pilot.press("b", "w")
            await pilot.pause()
            foot = lines(app)[-1]
            assert "b Bits" in foot and "w Stop rec" in foot
            app.monitor.stop_recording()


@pytest.mark.slow
async def test_the_footer_offers_rdma_tests_with_rdma_and_unmark_with_marks():
    rdma = dict(rx_bps=80e9, tx_bps=60e9)
    app = app_of(demo_sources() + [ScriptedSource("gpu04", lambda k: node_sample(k, rx_bps=1e9, rdma=rdma))])
    async with app.run_test(size=(200, 30)) as pilot:
        await poll(app, pilot, 2)
        await pilot.pause()
        foot = lines(app)[-1]
        assert "r RDMA pair" in foot and "U Unmark" not in foot
        await pilot.press("space")
        await pilot.pause()
        assert "U Unmark" in lines(app)[-1]


@pytest.mark.slow
async def test_why_a_node_is_bad_at_80_columns():
    app = app_of(straggling_fleet() + [ScriptedSource("gpu06", lambda k: node_sample(
        k, rx_bps=40e9, tx_bps=38e9, drops_per_s=120, out_segs_per_s=0))])
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 4)
        why = dict(zip(column(app, "node"), column(app, "health")))
        assert why["gpu03"] == "refused" and why["gpu01"] == ""
        screen = on_screen(app)
        assert "Why" in screen
        assert re.search(r"gpu04 .*[RT]X \d+% of median", screen), screen
        assert re.search(r"gpu06 .*drops 120/s", screen), screen


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.slow
async def test_a_down_node_says_why_counts_down_and_ctrl_r_tries_it_again_now():
    """A real SSH source against a port where nothing listens: refused, and its collector
    waits (15 to 30 s here) before it tries again. The Why column says so at 80 columns and
    counts down; ctrl+r makes the collector try again at once."""
    connector = SshConnector(SshSettings(config_paths=["/dev/null"], backoff_first_s=30, backoff_max_s=30))
    source = SshSource("gpu09", "127.0.0.1", connector, port=closed_port())
    monitor = Monitor([ScriptedSource("gpu01", lambda k: node_sample(k, rx_bps=1e9)), source], interval_s=1.0)
    app = make_app(monitor)
    async with app.run_test(size=(80, 24)) as pilot:
        row = ""
        for _ in range(100):  # until the node is refused (a connect to 127.0.0.1: at once)
            await pilot.pause(0.05)
            row = next((line for line in lines(app) if line.startswith("gpu09")), "")
            if "retry" in row:
                break
        match = re.search(r"down .*refused, retry (\d+)s", row)
        assert match, row
        first = int(match.group(1))
        assert 10 <= first <= 30
        for _ in range(60):  # the countdown moves between ticks (a 1 s timer)
            await pilot.pause(0.1)
            row = next(line for line in lines(app) if line.startswith("gpu09"))
            if f"retry {first}s" not in row:
                break
        assert re.search(r"refused, retry (\d+)s", row) and f"retry {first}s" not in row, row
        assert "^r Retry" in lines(app)[-1]
        waited_since = source.retry_at
        await pilot.press("ctrl+r")
        for _ in range(100):  # tried again: refused again, a new wait
            await pilot.pause(0.05)
            if source.retry_at is not None and source.retry_at != waited_since:
                break
        assert source.retry_at is not None and source.retry_at != waited_since


@pytest.mark.slow
async def test_space_marks_the_node_under_the_cursor_while_rows_reorder():
    """Worst first, the rows change order every poll: space marks the node the cursor is on
    and the cursor stays on it, wherever its row moves."""
    def rotating(i):  # node i drops most at poll i, i+4, …: each poll another node is worst
        return lambda k: node_sample(k, rx_bps=1e9, drops_per_s=100 * ((k + i) % 4) + 1)

    app = app_of([ScriptedSource(f"n{i}", rotating(i)) for i in range(4)])
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 2)
        grid = app.screen.query_one(FleetGrid)
        await pilot.press("down")
        first = grid.selected
        await pilot.press("space")
        await poll(app, pilot, 1)  # reordered
        assert grid.selected == first
        assert highlighted(app)[0].startswith(f"● {first}")
        await pilot.press("down")
        second = grid.selected
        await pilot.press("space")
        await poll(app, pilot, 1)
        assert grid.marked == {first, second} and first != second
        marked_rows = sorted(line.split()[1] for line in painted(app)[1:] if line.startswith("●"))
        assert marked_rows == sorted([first, second])
        assert "2 marked" in lines(app)[0]
        await pilot.press("M")
        assert len([line for line in painted(app)[1:] if line.startswith("●")]) == 4
        await pilot.press("escape")
        await pilot.pause()
        assert not any(line.startswith("●") for line in painted(app)) and "marked" not in lines(app)[0]
        await pilot.press("space", "U")
        assert not grid.marked


@pytest.mark.slow
async def test_keys_typed_right_after_slash_go_to_the_filter():
    """A paste or a fast typist: '/', 'g', 'p', … all queued before the box has focus.
    None of them runs as a command (p would pause, s sort)."""
    app = app_of(demo_sources())
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 2)
        for ch in "/gpu02ps":  # as the terminal delivers them: all queued at once
            key = events.Key("slash" if ch == "/" else ch, ch)
            key.set_sender(app)
            app._driver.send_message(key)
        await pilot.pause()
        await pilot.pause()
        box = app.screen.query_one("#filter")
        assert box.value == "gpu02ps" and not app.paused and app.screen.grid.sort == "worst"


@pytest.mark.slow
async def test_totals_follow_the_filter():
    app = app_of(demo_sources())
    async with app.run_test(size=(120, 24)) as pilot:
        await poll(app, pilot, 2)
        await pilot.press("slash", *"gpu02", "enter")
        await pilot.pause()
        totals = next(line for line in lines(app) if line.startswith("Σ"))
        assert "1 of 3 nodes" in totals and "RX 9 Gb/s" in totals and "TX 8 Gb/s" in totals


@pytest.mark.slow
async def test_the_sorted_column_wears_an_arrow():
    app = app_of(demo_sources())
    async with app.run_test(size=(120, 24)) as pilot:
        await poll(app, pilot, 2)
        await pilot.press("s")  # by node, ascending
        assert painted(app)[0].startswith("Node▲")
        await pilot.press("s")  # RX, descending
        header = painted(app)[0]
        assert "RX▼" in header and "Node▲" not in header
        assert "▲Node" not in lines(app)[0] and "▼RX" in lines(app)[0]


@pytest.mark.slow
async def test_help_says_how_to_close_it_and_a_says_what_it_does():
    app = app_of(demo_sources())
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 2)
        await pilot.press("question_mark")
        await pilot.pause()
        assert "Esc, q or ? closes this" in on_screen(app)
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is not None and "Why" in on_screen(app)  # closed, not quit
        await pilot.press("a")
        await pilot.pause()
        notes = " ".join(str(n.message) for n in app._notifications)
        assert "2 hidden ones" in notes and "grid counts the data plane only" in notes  # lo on gpu01, gpu02


@pytest.mark.slow
async def test_while_typing_a_filter_the_footer_shows_no_command_keys():
    app = app_of(demo_sources())
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 2)
        await pilot.press("slash")
        await pilot.pause()
        assert "p Pause" not in lines(app)[-1] and "q Quit" not in lines(app)[-1]
        await pilot.press("g", "enter")
        await pilot.pause()
        assert "p Pause" in lines(app)[-1] and "FILTER g" in lines(app)[0]


def moving_fleet():
    """gpu01 faster at every sample (its counter grows as k²), gpu02 steady, gpu03 up until
    its sixth poll and down after it."""
    def gone(k):
        from netui.engine.sources import SourceError
        from netui.model.node import NodeState

        return node_sample(k, rx_bps=3e9, tx_bps=3e9) if k < 5 else SourceError(NodeState.DOWN, "connection refused")

    return [ScriptedSource("gpu01", lambda k: node_sample(k, rx_bps=1e9 * k, tx_bps=1e9)),
            ScriptedSource("gpu02", lambda k: node_sample(k, rx_bps=2e9, tx_bps=2e9)),
            ScriptedSource("gpu03", gone)]


@pytest.mark.slow
async def test_paused_the_frame_stays_whatever_is_sorted_filtered_or_opened():
    app = app_of(moving_fleet())
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 4)
        await pilot.press("p")
        await pilot.pause()
        rows = dict(zip(column(app, "node"), zip(column(app, "rx"), column(app, "state"))))
        totals = plain(app.screen.query_one("#totals"))
        head = lines(app)[0]
        await poll(app, pilot, 3)  # gpu01 speeds up, gpu03 goes down: sampling goes on
        assert app.monitor.fleet["gpu03"].state.value == "down"
        for keys in (("s",), ("s", "s"), ("slash", "g", "p", "u", "enter"), ("escape",)):
            await pilot.press(*keys)
            await pilot.pause()
            assert dict(zip(column(app, "node"), zip(column(app, "rx"), column(app, "state")))) == rows, keys
            assert plain(app.screen.query_one("#totals")) == totals
            assert "down" not in lines(app)[0] and "PAUSED" in lines(app)[0]
        grid = app.screen.query_one(FleetGrid)
        for _ in range(20):  # to RX: the frame's order, not the live one (gpu03 is at 0 now)
            if grid.sort == "rx":
                break
            await pilot.press("s")
        await pilot.pause()
        assert column(app, "node") == sorted(rows, key=lambda n: -float(rows[n][0].split()[0]) *
                                             {"Gb/s": 1e3, "Mb/s": 1}[rows[n][0].split()[1]])
        await pilot.press("home", "enter")
        await pilot.pause()
        node = app.screen.node_name
        assert f"RX {rows[node][0]}" in plain(app.screen.query_one("#node-head"))
        await pilot.press("escape", "p")
        await pilot.pause()
        live = dict(zip(column(app, "node"), column(app, "state")))
        assert live["gpu03"] == "down" and "PAUSED" not in lines(app)[0]
        assert head != lines(app)[0]


@pytest.mark.slow
async def test_at_80_columns_the_sort_by_a_hidden_column_is_named_and_the_totals_keep_retransmits():
    app = app_of(demo_sources())
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 3)
        grid = app.screen.query_one(FleetGrid)
        shown = [c.key for c in grid.columns]
        assert "retrans" not in shown  # Retr/s does not fit at 80 columns
        for _ in range(20):
            if grid.sort == "retrans":
                break
            await pilot.press("s")
        await pilot.pause()
        header = painted(app)[0]
        assert "by Retr/s▼" in header and len(header) <= 80, header
        assert column(app, "node")[0] == "gpu02"  # the one retransmitting, first
        await pilot.press("s")  # Retr%: not shown either
        await pilot.pause()
        assert "by Retr%▼" in painted(app)[0]
        for _ in range(20):
            if grid.sort == "rx":
                break
            await pilot.press("s")
        await pilot.pause()
        assert "RX▼" in painted(app)[0] and " by " not in painted(app)[0]  # shown: its own ▼ says it
        totals = lines(app)[-2]
        assert re.search(r"(retr|retransmits) 2\.4 k/s\s*$", totals) and "0/s" in totals, totals
        assert len(totals.rstrip()) <= 80


def _head(app) -> list[str]:
    """The node screen's head, line by line (at 200 cells: no wrapping)."""
    return [line.rstrip() for line in plain(app.screen.query_one("#node-head")).splitlines()]


def dropping_then_clean(k: int):
    """A node dropping 250 packets/s for its first five samples, none after (its counter stays)."""
    if k < 5:
        return node_sample(k, rx_bps=40e9, tx_bps=38e9, drops_per_s=250)
    sample = node_sample(k, rx_bps=40e9, tx_bps=38e9)
    eth0 = sample.interfaces["eth0"]
    eth0 = eth0._replace(counters=eth0.counters._replace(rx_dropped=250 * 4))
    from dataclasses import replace

    return replace(sample, interfaces={**sample.interfaces, "eth0": eth0})


@pytest.mark.slow
async def test_the_node_screen_says_first_why_the_node_is_flagged():
    app = app_of(straggling_fleet())
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 5)
        app.open_node("gpu04")  # the straggler
        await pilot.pause()
        head = _head(app)
        assert head[1].startswith("warning · straggler: TX 400 Mb/s, 1 % of the busy nodes' median 38 Gb/s"), head
        await pilot.press("escape")
        app.open_node("gpu03")  # down
        await pilot.pause()
        head = _head(app)
        assert re.fullmatch(r"critical · down: failed at \d\d:\d\d:\d\d: connection refused", head[1]), head
        await pilot.press("escape")
        app.open_node("gpu01")  # nothing wrong: no flag line
        await pilot.pause()
        assert len(_head(app)) == 1, _head(app)
    app = app_of([ScriptedSource("gpu06", dropping_then_clean)])  # alone: no straggler, its own health
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 6)  # its drops stop at the sixth sample: its level holds a few intervals
        assert app.monitor.fleet["gpu06"].level > 0
        app.open_node("gpu06")
        await pilot.pause()
        head = _head(app)
        assert re.match(r"(careful|warning|critical) · eth0 drops 250/s", head[1]), head
        assert head[1].endswith("held: the last interval alone is ok"), head


@pytest.mark.slow
async def test_the_node_screen_of_a_pair_test_suspect_says_what_the_test_found():
    import json

    from tests.replayed import PAIR_TEST

    app = app_of([ScriptedSource(f"node{i}", lambda k: node_sample(k)) for i in range(1, 5)])
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 4)
        app.record_test("pair-test", json.loads(PAIR_TEST.read_text()))
        await poll(app, pilot, 1)
        await pilot.press("home", "enter")
        await pilot.pause()
        assert app.screen.node_name == "node3"
        head = _head(app)
        assert head[1].startswith("warning · pair test suspect: receives slowly, 3 of 3 receives fail"), head
