"""The ``netui`` command: the one place where options become settings.

``netui`` (live TUI) and every subcommand start here. Each subcommand is a module of this
package with a ``main(argv) -> int``, named once in ``COMMANDS``; the modules below the
command line (collectors, model, engine, ui) never see argparse, a Namespace or SystemExit:
they take typed settings and raise ``netui.exits.InputError``, which ``main`` turns into
``netui: <message>`` on standard error and the exit status.

The collectors, the engine and asyncio are imported when a command needs them, not with
this package: ``netui --help`` and a bad argument answer at once (tests/integration/test_startup.py).
"""

from __future__ import annotations

import importlib
import os
import sys

# subcommand → "module:function" taking the arguments after the subcommand's name and
# returning the exit status; no subcommand: the live TUI
COMMANDS = {
    "snapshot": "netui.cli.watch:snapshot",
    "record": "netui.cli.watch:record",
    "replay": "netui.cli.watch:replay",
    "export": "netui.cli.export:main",  # rates for plots and notebooks
    "bench": "netui.cli.bench:main",  # pair bandwidth and latency tests
    "doctor": "netui.cli.doctor:main",  # configuration checks
    "topology": "netui.cli.topology:main",  # the ring order against the switches
}
WATCH = "netui.cli.watch:watch"

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + 13  # what a shell shows for a tool ended by SIGPIPE


def main(argv: list[str] | None = None) -> int:
    """The ``netui`` command. From the command line (no ``argv``) it behaves as a Unix tool:
    a closed standard stream is opened on /dev/null first (cli/streams.py), a SystemExit
    message goes to standard error with exit status 2 (every usage or input error), standard
    output that cannot be written (a full disk, a closed descriptor) is said as ``netui:
    cannot write to standard output: <why>`` with status 2, and a reader that goes away
    (``netui snapshot --json | head -1``) ends it quietly with status 141, no traceback.
    Given ``argv`` (tests), exceptions pass through."""
    if argv is not None:
        return _run(list(argv))
    from netui.cli.streams import open_standard_streams
    from netui.exits import OutputError

    stdout = open_standard_streams()  # before anything opens a file (an event loop's descriptors)
    try:
        try:
            status = _run(sys.argv[1:])
        except SystemExit as exc:
            status = _exit_status(exc)
        try:
            sys.stdout.flush()  # here, not at exit, so that a broken pipe is caught
        except OSError:
            pass  # the error is kept: below
        if stdout.error is not None and status != EXIT_USAGE:  # a failed write not said yet
            if isinstance(stdout.error, BrokenPipeError):
                raise stdout.error
            raise OutputError(stdout.error)
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OutputError as exc:
        print(f"netui: {exc}", file=sys.stderr)
        _silence_stdout()
        return EXIT_USAGE
    return status


def _exit_status(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return EXIT_USAGE


def _silence_stdout() -> None:
    """Standard output to /dev/null, so that the flush at exit has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def command_of(argv: list[str]):
    """The function that runs ``argv``'s subcommand (or the live TUI), and its arguments."""
    if argv and argv[0] in COMMANDS:
        target, rest = COMMANDS[argv[0]], argv[1:]
    else:
        target, rest = WATCH, argv
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function), rest


def _run(argv: list[str]) -> int:
    from netui.exits import InputError, OutputError

    run, rest = command_of(argv)
    try:
        return run(rest)
    except OutputError:
        raise  # said once, by main
    except InputError as exc:  # bad input found below the command line: said here
        from netui.model.text import TEXT_CHARS, safe_text  # only on this path: --help stays light

        said = safe_text(str(exc), TEXT_CHARS, multiline=True)  # it may quote a file or a server
        if exc.status != EXIT_USAGE:
            print(f"netui: {said}", file=sys.stderr)
            return exc.status
        raise SystemExit(f"netui: {said}") from None
