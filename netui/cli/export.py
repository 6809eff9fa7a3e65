"""``netui export FILE --format csv|json|prom``: a recording's rates for plots and notebooks
(the formats: netui/engine/export.py)."""

from __future__ import annotations

import argparse
import sys

from netui.cli.options import exit_epilog
from netui.engine.export import FORMATS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="netui export",
                                description="Rates of a recording, computed again from its raw samples, "
                                            "as CSV (long/tidy), JSON or OpenMetrics text.",
                                epilog=exit_epilog())
    p.add_argument("file", metavar="FILE", help="a recording (FILE.1 … of a rotated set are read too)")
    p.add_argument("--format", choices=FORMATS, default="csv", help="csv (default), json or prom (OpenMetrics)")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="write to OUT (default: standard output); an existing file is never overwritten")
    p.add_argument("--config", metavar="PATH",
                   help="health thresholds and rules to judge by, as live (TOML; default "
                        "~/.config/netui/config.toml)")
    p.add_argument("--force", action="store_true",
                   help="replace OUT when it exists (never the recording being exported)")
    return p


def main(argv: list[str]) -> int:
    """``netui export``: 0 written, 2 a usage or input error (said on standard error). A
    broken pipe on standard output is raised for the command line to end quietly."""
    args = build_parser().parse_args(argv)
    from netui.config import ConfigError, load_config
    from netui.engine.export import open_recording, write_export
    from netui.exits import InputError

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"netui: {exc}", file=sys.stderr)
        return 2
    try:
        recording = open_recording(args.file, output=args.output, force=args.force)
        for note in recording.notes:
            print(f"netui: {note}", file=sys.stderr)
        if args.output:
            write_export(recording, args.format, output=args.output, config=config)
        else:
            from netui.cli.streams import whole_stdout

            write_export(recording, args.format, output=None, config=config, stdout=whole_stdout())
    except InputError as exc:
        print(f"netui: {exc}", file=sys.stderr)
        return 2
    return 0
