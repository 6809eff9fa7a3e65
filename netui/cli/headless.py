"""What the commands without a screen (snapshot, record, bench, doctor) share: when a node is
worth no more waiting, the line said when closing gave up on some, and how a report reaches
standard output whole."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netui.engine.monitor import Monitor


def settled_states() -> frozenset:
    """The node states that no waiting will change: a failure to report (``NodeState.failed``)."""
    from netui.model.node import FAILED_STATES

    return FAILED_STATES


def say_abandoned(monitor: Monitor) -> None:
    """One line on stderr when closing gave up waiting for some nodes (engine/monitor.py)."""
    names = monitor.abandoned
    if names:
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5:,} more" if len(names) > 5 else "")
        print(f"netui: stopped without waiting for {len(names):,} node(s) that did not end in time: {shown}",
              file=sys.stderr)


def print_whole(text: str) -> None:
    """``text`` and a newline on standard output, every byte of it, as ``print`` would; or
    BrokenPipeError when the reader has gone, OutputError (``cannot write to standard
    output: …``) when the write fails otherwise (a full disk, a closed standard output).

    ``print`` can lose the tail of a long report: under PYTHONUNBUFFERED (``python -u``)
    sys.stdout hands each text to the file in one write and takes a short write as whole. A
    write to a pipe is short when the pipe (64 KiB) fills before the reader comes and the
    write is interrupted, or at once when the pipe is non-blocking (a parent can make it so:
    the flag belongs to the pipe, shared by every process that writes to it). Here each
    short write goes on from where it stopped, and a full non-blocking pipe is waited on
    until the reader makes room, as a blocking write waits (cli/streams.py)."""
    from netui.cli.streams import write_whole
    from netui.exits import OutputError

    stream = sys.stdout
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): its own write
        print(text, file=stream)
        return
    try:
        stream.flush()  # what print wrote before goes first
        write_whole(fd, (text + "\n").encode(stream.encoding or "utf-8", stream.errors or "strict"))
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(exc) from None
