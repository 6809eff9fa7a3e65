"""Command line: ``netui`` (live TUI), ``netui snapshot``, ``netui record``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from netui import __version__
from netui.collectors.local import LiveReader, TreeReader
from netui.engine.document import fleet_document
from netui.engine.monitor import Monitor
from netui.engine.recording import RecordingError, dump_lines, load_recording
from netui.engine.sources import LocalSource, ReplaySource

COMMANDS = ("snapshot", "record")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--interval", "-n", type=_positive_float, default=1.0, metavar="S",
                   help="seconds between samples (default 1)")
    p.add_argument("--procfs", metavar="PATH", help="read /proc from PATH (a mounted or captured tree)")
    p.add_argument("--sysfs", metavar="PATH", help="read /sys from PATH (with --procfs)")
    p.add_argument("--replay", metavar="FILE", help="replay a recording (JSON lines) instead of live data")


def build_parser(command: str | None) -> argparse.ArgumentParser:
    if command == "snapshot":
        p = argparse.ArgumentParser(prog="netui snapshot",
                                    description="Take two samples one interval apart and print them once.")
        p.add_argument("--json", action="store_true", help="print the JSON document (see README)")
    elif command == "record":
        p = argparse.ArgumentParser(prog="netui record", description="Record raw samples to a file (JSON lines).")
        p.add_argument("-o", "--output", required=True, metavar="FILE")
        p.add_argument("--count", type=int, default=None, metavar="N", help="stop after N samples")
    else:
        p = argparse.ArgumentParser(
            prog="netui",
            description="A terminal cockpit for the network of a training cluster. "
                        "With no arguments it watches this host. Commands: snapshot, record.",
        )
        p.add_argument("--version", action="version", version=f"netui {__version__}")
        p.add_argument("--history", type=_positive_float, default=900.0, metavar="S",
                       help="seconds of history kept per node (default 900)")
    _common(p)
    return p


def build_sources(args) -> list:
    """The sources named by the arguments; raises SystemExit with a message on bad input."""
    if args.replay:
        try:
            recording = load_recording(args.replay)
        except (OSError, RecordingError) as exc:
            raise SystemExit(f"netui: cannot replay {args.replay}: {exc}") from None
        if not recording:
            raise SystemExit(f"netui: {args.replay} holds no samples")
        return [ReplaySource(name, samples) for name, samples in recording.items()]
    if args.procfs or args.sysfs:
        procfs = args.procfs or "/proc"
        sysfs = args.sysfs or "/sys"
        for path in (procfs, sysfs):
            if not os.path.isdir(path):
                raise SystemExit(f"netui: {path}: not a directory")
        return [LocalSource(TreeReader(procfs, sysfs))]
    return [LocalSource(LiveReader())]


async def _snapshot(monitor: Monitor) -> dict:
    await monitor.run(polls=2)
    await monitor.close()
    return fleet_document(monitor.fleet)


def _text_report(doc: dict) -> str:
    from netui.model import units

    lines = []
    for n in doc["nodes"]:
        lines.append(f"{n['name']}: {n['state']}" + (f" ({n['error']})" if n["error"] else "")
                     + f"  health {n['health']['level']}")
        for r in n["health"]["reasons"]:
            lines.append(f"  ! {r}")
        for i in n["interfaces"]:
            if i["hidden"]:
                continue
            r = i["rates"]
            lines.append(
                f"  {i['name']:<12} {i['operstate'] or '—':<8} RX {units.si(r['rx_bits_per_s'], 'b/s', width=11)}"
                f"  TX {units.si(r['tx_bits_per_s'], 'b/s', width=11)}"
                f"  drops {units.per_s(_add(r['rx_dropped_per_s'], r['tx_dropped_per_s']))}/s"
                f"  errors {units.per_s(_add(r['rx_errors_per_s'], r['tx_errors_per_s']))}/s"
            )
        if n["tcp"]:
            t = n["tcp"]["rates"]
            lines.append(f"  TCP retransmits {units.per_s(t['retrans_segs_per_s'])}/s"
                         f" ({units.ratio_percent(t['retrans_ratio'])} of segments)")
    return "\n".join(lines)


def _add(a, b):
    return None if a is None and b is None else (a or 0) + (b or 0)


async def _record(monitor: Monitor, path: str, count: int | None) -> int:
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        def write() -> None:
            nonlocal written
            records = [(n.name, n.sample) for n in monitor.fleet if n.sample is not None]
            out.writelines(dump_lines(records))
            out.flush()
            written += 1

        monitor.on_update = write
        try:
            await monitor.run(polls=count)
        finally:
            await monitor.close()
    return written


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(command).parse_args(argv[1:] if command else argv)
    sources = build_sources(args)
    if command == "snapshot":
        monitor = Monitor(sources, interval_s=args.interval, history_s=60)
        doc = asyncio.run(_snapshot(monitor))
        print(json.dumps(doc, indent=2) if args.json else _text_report(doc))
        return 0
    if command == "record":
        monitor = Monitor(sources, interval_s=args.interval, history_s=60)
        try:
            n = asyncio.run(_record(monitor, args.output, args.count))
        except KeyboardInterrupt:
            return 130
        print(f"netui: recorded {n} samples to {args.output}", file=sys.stderr)
        return 0
    from netui.ui.app import make_app

    monitor = Monitor(sources, interval_s=args.interval, history_s=args.history)
    make_app(monitor).run()
    return 0
