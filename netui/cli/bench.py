"""``netui bench``: pair bandwidth and latency tests without a screen.

    netui bench iperf3 node1 node2                    # one pair: node1 sends to node2
    netui bench iperf3 node[1-4] --matrix --json      # all pairs, in rounds
    netui bench ib_write_bw gpu[01-16] --matrix --test-net 10.10.0.0/16
    netui bench latency node[1-4] --matrix --count 20  # RTT and loss, every node to every other
    netui bench iperf3 gpu[01-16] --matrix --topology topology.conf   # the matrix by leaf; uplinks judged

Connects to the nodes as ``netui`` does (the usual SSH options), waits until they are up,
runs the test over those connections, prints the matrix and the verdict (or the JSON
document). Each verb is a check's (checks/__init__.py: pairs iperf3 and ib_write_bw,
latency, and ``ping``, the latency test's first name, still); the options of each check are
here. Exit status: 0 every pair passes, 1 a pair fails, 2 bad arguments or a test
that cannot run (no node able to run the tool), 3 inconclusive (the data cannot decide:
link speeds unknown and every pair alike, or pairs that could not be tested). With a
topology (--topology FILE, or --slurm) the matrix is ordered leaf by leaf and the verdict
names an uplink, switch or path when every pair through it fails (docs/topology.md): exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from netui.cli.options import (common, exit_epilog, percent, positive_float, positive_int, set_interval_default,
                               topology_option, whole)
from netui import checks
from netui.engine import eventloop
from netui.checks.pairs.tools import DIRECTIONS, PATTERNS, SHIFT, PairSettings, default_direction
from netui.checks.latency.tools import PING_TOOLS, LatencySettings
from netui.exits import INTERRUPTED

if TYPE_CHECKING:
    from netui.engine.monitor import Monitor

EXIT_FAILED = 1
EXIT_USAGE = 2  # bad arguments, or a test that cannot run at all
EXIT_INCONCLUSIVE = 3
EXIT_STATUS = {checks.PASS: 0, checks.FAIL: EXIT_FAILED, checks.INCONCLUSIVE: EXIT_INCONCLUSIVE,
               checks.UNTESTED: EXIT_FAILED}

def _pair_settings(args) -> PairSettings:
    return PairSettings(
        tool=args.tool, duration_s=args.duration, streams=args.parallel,
        direction=args.direction or default_direction(args.matrix),
        one_at_a_time=args.one_at_a_time, pattern=args.pattern, confirm=not args.no_confirm,
        test_net=args.test_net or "", size_bytes=args.size, qps=args.qps,
        device=args.device or "", ib_port=args.ib_port, gid_index=args.gid_index,
        threshold_gbps=args.threshold_gbps, threshold_percent=args.threshold_percent, port=args.port,
    )


def _latency_settings(args) -> LatencySettings:
    return LatencySettings(count=args.count, interval_s=args.ping_interval, test_net=args.test_net or "",
                        tool=args.ping_tool, max_loss_percent=args.max_loss, rtt_factor=args.rtt_factor,
                        threshold_ms=args.threshold_ms)


# a check's settings from its options below; a check not named here runs with its defaults
SETTINGS = {"pairs": _pair_settings, "latency": _latency_settings}


def settings_of(check: checks.Check, args):
    """The settings ``check`` runs with under ``args`` (not yet checked)."""
    if check.name in SETTINGS:
        return SETTINGS[check.name](args)
    return checks.load(check.settings)()


def _verbs_help() -> str:
    words = {"iperf3": "iperf3 (TCP)", "ib_write_bw": "ib_write_bw (RDMA, perftest)",
             "latency": "latency (RTT and loss: fping, else ping)"}
    shown = [words.get(v, f"{v} (the {c.title})") for c in checks.all_checks() for v in c.verbs]
    aliases = [f"{a} is {c.verbs[0]}'s older name" for c in checks.all_checks() for a in c.aliases]
    return ", ".join(shown[:-1]) + " or " + shown[-1] + ("; " + ", ".join(aliases) if aliases else "")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netui bench",
        description="Pair bandwidth or latency tests over SSH: the first two hosts, or every pair with "
                    "--matrix. Exit status: 0 pass, 1 a pair fails, 2 bad arguments or a test that "
                    "cannot run, 3 inconclusive (the data cannot decide).",
        epilog=exit_epilog("a pair fails", "3 inconclusive (the data cannot decide)"))
    p.add_argument("tool", choices=checks.bench_verbs(), metavar="{" + ",".join(checks.bench_verbs(aliases=False)) + "}",
                   help=_verbs_help())
    test = p.add_argument_group("the test")
    test.add_argument("--matrix", action="store_true",
                      help="every pair of the hosts, both ways, in rounds (see --pattern)")
    test.add_argument("--json", action="store_true", help="print the JSON document instead of text")
    test.add_argument("--duration", "-t", type=positive_int, default=10, metavar="S",
                      help="seconds per test (default 10)")
    test.add_argument("-P", "--parallel", type=positive_int, default=1, metavar="N",
                      help="parallel streams per test (iperf3 -P, default 1)")
    test.add_argument("--direction", choices=DIRECTIONS, default=None,
                      help="oneway, both (each direction its own test; the default with --matrix, so "
                           "every node is tested sending and receiving, as T and R do in the app) or bidir "
                           "(iperf3 --bidir); default without --matrix: oneway, as t does")
    test.add_argument("--pattern", choices=PATTERNS, default=SHIFT,
                      help="a matrix both ways: shift (the default: in round k every node i sends to i+k "
                           "and receives from i-k at once, every ordered pair in N-1 rounds) or pairs "
                           "(disjoint one-way pairs, 2(N-1) rounds)")
    test.add_argument("--one-at-a-time", action="store_true",
                      help="one test at a time (nodes behind a shared uplink)")
    test.add_argument("--no-confirm", action="store_true",
                      help="do not rerun, each alone, the pairs that decide a failing verdict (those of a node "
                           "or link it names, or a few failing pairs that name no one; by default they are, "
                           "and the verdict is reached on the confirmed numbers)")
    test.add_argument("--test-net", metavar="CIDR|IFACE",
                      help="test on this subnet or interface (default: the fastest subnet all nodes share)")
    test.add_argument("--threshold-gbps", type=positive_float, metavar="X",
                      help="a pair passes at X Gb/s or more")
    test.add_argument("--port", type=positive_int, metavar="N",
                      help="first TCP port tried for the servers (default: iperf3 5201, ib_write_bw 18515); "
                           "ports something already listens on are skipped")
    test.add_argument("--threshold-percent", type=positive_float, default=90.0, metavar="P",
                      help="... else at P %% of the slower end's link speed; where speeds are unknown "
                           "or nominal (veth), at the middle of a gap of 4x or more in the rates, else at P %% "
                           "of the best pairs (default 90)")
    ping = p.add_argument_group("latency (a pair fails on any loss, or as an RTT outlier)")
    ping.add_argument("--count", "-c", type=positive_int, default=20, metavar="N",
                      help="probes per pair (default 20)")
    ping.add_argument("--ping-interval", type=positive_float, default=0.2, metavar="S",
                      help="seconds between probes (default 0.2)")
    ping.add_argument("--ping-tool", choices=PING_TOOLS, default="auto",
                      help="auto (default: fping where the node has it, else ping), fping or ping")
    ping.add_argument("--max-loss", type=percent, default=0.0, metavar="P",
                      help="a pair fails above P %% loss (default 0: any loss fails)")
    ping.add_argument("--rtt-factor", type=positive_float, default=5.0, metavar="X",
                      help="... or with an average RTT above X times the typical one (default 5)")
    ping.add_argument("--threshold-ms", type=positive_float, metavar="MS",
                      help="... or, when given, above MS milliseconds instead")
    rdma = p.add_argument_group("ib_write_bw (perftest); unset: suggested from /sys/class/infiniband")
    rdma.add_argument("--size", type=positive_int, default=65536, metavar="BYTES", help="message size (-s)")
    rdma.add_argument("--qps", type=positive_int, default=1, metavar="N", help="queue pairs (-q)")
    rdma.add_argument("--device", metavar="DEV", help="RDMA device (-d), e.g. mlx5_0")
    rdma.add_argument("--ib-port", type=positive_int, metavar="N", help="RDMA port (-i)")
    rdma.add_argument("--gid-index", type=whole(low=0, high=255), metavar="N",
                      help="GID index (-x); RoCE v2 is preferred")
    common(p)
    topology_option(p)
    # the counters beside each result: samples twice a second
    set_interval_default(p, 0.5, "seconds between samples (default 0.5, for the counters beside each result)")
    return p


class Interrupt:
    """Ctrl-C (SIGINT) during a bench: set once; ``on_set`` (the running test's cancel) is
    called when it comes."""

    def __init__(self) -> None:
        self._set = False
        self.on_set = None

    def set(self) -> None:
        self._set = True
        if self.on_set is not None:
            self.on_set()

    def is_set(self) -> bool:
        return self._set


async def _interruptible(coro, interrupted: Interrupt):
    """``coro`` with SIGINT turned into ``interrupted`` (the stock KeyboardInterrupt would
    lose every result measured so far)."""
    import contextlib
    import signal

    from netui.cli.watch import stopping_signals

    loop = asyncio.get_running_loop()
    handled = stopping_signals(signal.SIGINT)  # none when started with SIGINT ignored (a background job)
    for signum in handled:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, interrupted.set)
    try:
        return await coro
    finally:
        for signum in handled:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)


async def _bench(monitor: Monitor, check: checks.Check, nodes: list[str], settings, *, matrix: bool,
                 connect_timeout_s: float, quiet: bool, interrupted: Interrupt | None = None) -> checks.Report:
    """``check``'s test over ``nodes`` once they are up (or have failed), with ``settings``;
    its report."""
    from netui.cli.headless import say_abandoned, settled_states

    gave_up = settled_states()
    runner = asyncio.ensure_future(monitor.run())
    try:
        def settled() -> bool:
            return all(monitor.fleet[n].samples_seen >= 1 or monitor.fleet[n].state in gave_up for n in nodes)

        deadline = asyncio.get_running_loop().time() + connect_timeout_s + 5
        while not settled() and asyncio.get_running_loop().time() < deadline and not (
                interrupted is not None and interrupted.is_set()):
            await asyncio.sleep(0.05)
        last = [""]

        def progress(p) -> None:
            line = p.words.split(" · ")[0]
            if not quiet and line != last[0]:
                last[0] = line
                print(f"netui bench: {p.words}", file=sys.stderr)

        test: checks.Test = checks.load(check.runner)(monitor, nodes, settings, matrix=matrix, on_progress=progress)
        if interrupted is not None and interrupted.is_set():
            raise KeyboardInterrupt  # Ctrl-C while connecting: nothing measured
        if interrupted is not None:
            interrupted.on_set = test.cancel  # Ctrl-C now: the test stops, its report says so
        return await test.run()
    finally:
        await monitor.close()
        say_abandoned(monitor)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


def main(argv: list[str]) -> int:
    from netui.cli.settings import SourceSettings
    from netui.cli.sources import build_sources
    from netui.engine.monitor import Monitor

    args = build_parser().parse_intermixed_args(argv)
    check = checks.by_verb(args.tool)
    assert check is not None  # argparse took only a verb of a check
    try:
        settings = settings_of(check, args).check()
    except ValueError as exc:
        print(f"netui bench: {exc}", file=sys.stderr)
        return 2
    sources, connector = build_sources(SourceSettings.from_options(args))
    names = [s.name for s in sources]
    if len(names) < 2:
        print("netui bench: name at least two hosts", file=sys.stderr)
        return 2
    nodes = names if args.matrix else names[:2]
    monitor = Monitor(sources, interval_s=args.interval, history_s=60, connector=connector)
    from netui.cli.topology import attach_topology

    # read (and refused with file and line) before any test
    attach_topology(monitor.fleet, args.topology, args.slurm is not False)
    interrupted = Interrupt()
    try:
        report = eventloop.run(_interruptible(_bench(monitor, check, nodes, settings, matrix=args.matrix,
                                                     connect_timeout_s=args.connect_timeout, quiet=False,
                                                     interrupted=interrupted), interrupted))
    except KeyboardInterrupt:
        print("netui bench: interrupted before any test started", file=sys.stderr)
        return INTERRUPTED
    from netui.cli.headless import print_whole
    if interrupted.is_set():
        # what was measured before Ctrl-C, marked so: "Cancelled after N of M tests" in the
        # text, "cancelled": true in the JSON document
        print(f"netui bench: interrupted after {report.tests_done} of {report.tests_total} tests; "
              "the results so far follow", file=sys.stderr)
    documents = check.documents()
    print_whole(json.dumps(documents.report_document(report), indent=2) if args.json
                else documents.text_report(report))
    return INTERRUPTED if interrupted.is_set() else exit_status(report)


def exit_status(report: checks.Report) -> int:
    """0 pass, 1 fail (or nothing judged, or nothing tested), 2 refused (nothing could run),
    3 inconclusive: the same for every check's report."""
    if report.refused:
        return EXIT_USAGE
    verdict = report.verdict
    if verdict is None:
        return EXIT_FAILED
    return EXIT_STATUS.get(verdict.status, EXIT_FAILED)
