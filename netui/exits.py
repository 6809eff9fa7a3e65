"""Exit statuses, one convention for every command (the words of each --help: netui/cli/options.py)."""

from __future__ import annotations

OK = 0
FAILED = 1  # done, and a failure was found
USAGE = 2  # bad arguments, or a file netui cannot read or will not write
INCONCLUSIVE = 3  # netui bench: the data cannot decide
INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell shows a tool it ended: 128 + 2


def ended_by(signum: int) -> int:
    """The status of a command that a signal ended (after finishing what it does on one), as
    a shell shows it: 128 + the signal's number (SIGINT 130, SIGHUP 129, SIGTERM 143)."""
    return 128 + int(signum)


class InputError(Exception):
    """Bad input that netui will not go on with — an option, a file it cannot read or will not
    write, an environment variable — raised anywhere below the command line. The message says
    why for a user (without the ``netui: `` every message starts with); the command line
    (netui/cli) prints it on standard error and ends with ``status``."""

    status = USAGE


class OutputError(InputError):
    """Standard output does not take what netui writes to it (a full disk, a closed
    descriptor; a reader gone away is a BrokenPipeError instead): said as ``cannot write to
    standard output: <why>``, status USAGE (netui/cli/streams.py)."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write to standard output: {exc.strerror or exc}")
