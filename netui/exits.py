"""Exit statuses, one convention for every command (and the words its --help ends with)."""

from __future__ import annotations

OK = 0
FAILED = 1  # done, and a failure was found
USAGE = 2  # bad arguments, or a file netui cannot read or will not write
INCONCLUSIVE = 3  # netui bench: the data cannot decide


def exit_epilog(failure: str | None = None, extra: str = "") -> str:
    """The exit statuses, for a command's --help: the same convention everywhere."""
    return ("Exit status: 0 ok" + (f", 1 {failure}" if failure else "")
            + ", 2 a usage or input error (bad arguments, a file netui cannot read or will not write)"
            + (f", {extra}" if extra else "") + ".")
