"""Cancellation that always wins over a retry loop.

A node's task is cancelled once, when the monitor closes. On Python 3.11 a cancellation
that arrives while an awaited operation is finishing can come back as that operation's
result or exception instead (``asyncio.wait_for``'s race, inside asyncssh's connect): a
loop that reports every exception as a node failure and retries would then retry forever,
and the monitor's close would wait for it forever. The task still knows it was asked to
stop (``Task.cancelling()``), so every retry loop asks before it carries on.
"""

from __future__ import annotations

import asyncio


def cancel_requested() -> bool:
    """Whether the running task has been asked to stop (and has not withdrawn it)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    return bool(cancelling is not None and cancelling())


def raise_if_cancelled() -> None:
    """CancelledError when the running task has been asked to stop: call it where a retry
    loop is about to report a failure or sleep."""
    if cancel_requested():
        raise asyncio.CancelledError
