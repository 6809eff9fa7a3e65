"""``netui doctor``: the cluster's configuration checked, without a screen.

    netui doctor                          # this host
    netui doctor node[1-4]                # over SSH: per node and across nodes
    netui doctor gpu[001-128] --json      # the JSON document; "failing_nodes" names the mistuned
    netui doctor node[1-4] --latency netui-ping-….json   # buffer advice for the RTT a latency test measured

Connects to the nodes as ``netui`` does (the usual SSH options), waits until each node has
a sample (or has failed), probes every node once, prints the findings worst first — each
with its evidence and the command that fixes it — and exits 1 when any finding is a
warning or worse (2 on bad arguments).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from netui.cli.options import common, exit_epilog, positive_float, set_interval_default
from netui.engine import eventloop

EXIT_FAILED = 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netui doctor",
        description="Check MTU, link speeds, RDMA ports, sysctls, interface errors, IRQs, packet steering, "
                    "traffic shaping (tc), offloads and rings (ethtool) on every node and across nodes. "
                    "Exit status 1 when any finding is a warning or worse, or a node could not be examined.",
        epilog=exit_epilog("a finding is a warning or worse, or a node could not be examined"))
    p.add_argument("--json", action="store_true", help="print the JSON document instead of text")
    p.add_argument("--latency", metavar="JSON",
                   help="a latency test's JSON export (e in its screen): the buffer advice uses the RTT it "
                        "measured instead of an assumed 1 ms")
    p.add_argument("--timeout", type=positive_float, default=10.0, metavar="S",
                   help="seconds for each node's probe (default 10)")
    common(p)
    # two samples soon: errors "rising now" need a rate
    set_interval_default(p, 0.5, "seconds between samples (default 0.5: interface errors are judged over one interval)")
    return p


LATENCY_MAX_BYTES = 64 << 20


def _latency_rtts(parser: argparse.ArgumentParser, path: str | None) -> dict[str, float]:
    """Node → RTT (ms) from a latency test's export; a clear usage error when it is not one."""
    if path is None:
        return {}
    from netui.checks.latency import KIND as LATENCY_TEST
    from netui.checks.latency.report import load_report
    from netui.checks.doctor.rules import rtt_by_node

    from netui.readlimits import FileRefused, read_capped

    try:
        # a latency export of a thousand nodes is a few MB: a regular file of at most 64 MiB
        report = load_report(json.loads(read_capped(path, LATENCY_MAX_BYTES).decode("utf-8")))
    except FileRefused as exc:
        parser.error(f"--latency {exc}")  # "--latency PATH: a FIFO (named pipe), not a regular file"
    except OSError as exc:
        parser.error(f"--latency {path}: {exc.strerror or exc}")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        parser.error(f"--latency {path}: not a netui {LATENCY_TEST} export ({str(exc)[:80]})")
    return rtt_by_node(report.results)


async def _doctor(monitor, connect_timeout_s: float, probe_timeout_s: float, rtt_ms: dict[str, float]):
    from netui.cli.headless import say_abandoned, settled_states
    from netui.checks.doctor.runner import examine

    gave_up = settled_states()
    runner = asyncio.ensure_future(monitor.run())
    try:
        def settled() -> bool:
            return all(n.samples_seen >= 2 or n.state in gave_up for n in monitor.fleet)

        loop = asyncio.get_running_loop()
        deadline = loop.time() + connect_timeout_s + 3 * monitor.interval_s + 2
        while not settled() and loop.time() < deadline:
            await asyncio.sleep(0.05)
        return await examine(monitor, timeout_s=probe_timeout_s, rtt_ms=rtt_ms)
    finally:
        await monitor.close()
        say_abandoned(monitor)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


def main(argv: list[str]) -> int:
    from netui.cli.settings import SourceSettings
    from netui.cli.sources import build_sources
    from netui.checks.doctor.report import doctor_document, text_report
    from netui.engine.monitor import Monitor

    parser = build_parser()
    args = parser.parse_intermixed_args(argv)
    rtt_ms = _latency_rtts(parser, args.latency)
    sources, connector = build_sources(SourceSettings.from_options(args))
    monitor = Monitor(sources, interval_s=args.interval, history_s=60, connector=connector)
    try:
        report = eventloop.run(_doctor(monitor, args.connect_timeout, args.timeout, rtt_ms))
    except KeyboardInterrupt:
        print("netui doctor: interrupted", file=sys.stderr)
        return 130
    from netui.cli.headless import print_whole
    print_whole(json.dumps(doctor_document(report), indent=2) if args.json else text_report(report))
    return EXIT_FAILED if report.failed else 0
