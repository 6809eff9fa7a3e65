"""Exit statuses, one convention for every command (the words of each --help: netui/cli/options.py)."""

from __future__ import annotations

OK = 0
FAILED = 1  # done, and a failure was found
USAGE = 2  # bad arguments, or a file netui cannot read or will not write
INCONCLUSIVE = 3  # netui bench: the data cannot decide


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
