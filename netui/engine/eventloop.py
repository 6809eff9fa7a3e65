"""The one place that picks netui's asyncio event loop and runs a coroutine on it.

uvloop (libuv under the asyncio API) when it is importable, the stock asyncio loop when it
is not or when ``NETUI_EVENT_LOOP=asyncio`` asks for it. What it saves is measured by
tests/bench/bench_fleet.py (``+asyncio`` runs the stock loop side by side). Everything netui
does runs on either loop: asyncssh, aiohttp, Textual's driver, asyncio subprocesses, signal
handlers; the test suite runs on the loop chosen here (tests/conftest.py).

``NETUI_EVENT_LOOP``: unset, empty or ``auto`` = uvloop when importable; ``uvloop`` = uvloop
or a clear error; ``asyncio`` = the stock loop. Every command that runs a loop calls
:func:`run` (the TUI, snapshot, record, bench, doctor, Prometheus discovery).
"""

from __future__ import annotations

import os
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from netui.exits import InputError

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

ENV = "NETUI_EVENT_LOOP"
CHOICES = ("auto", "uvloop", "asyncio")

T = TypeVar("T")


class EventLoopChoiceError(InputError, ValueError):
    """NETUI_EVENT_LOOP names no loop netui can run on."""


def _uvloop_version() -> str | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.__version__


def choose(environ: Mapping[str, str] | None = None) -> str:
    """``"uvloop"`` or ``"asyncio"``: the loop netui runs on with this environment."""
    raw = (os.environ if environ is None else environ).get(ENV, "")
    wanted = raw.strip().lower() or "auto"
    if wanted not in CHOICES:
        raise EventLoopChoiceError(f"{ENV}={raw!r} is not a loop netui knows: "
                                   f"use {', '.join(CHOICES)} (unset = auto: uvloop when installed)")
    if wanted == "asyncio":
        return "asyncio"
    if _uvloop_version() is None:
        if wanted == "uvloop":
            raise EventLoopChoiceError(f"{ENV}=uvloop but uvloop is not installed "
                                       f"(pip install uvloop, or {ENV}=asyncio)")
        return "asyncio"
    return "uvloop"


def describe(environ: Mapping[str, str] | None = None) -> str:
    """The chosen loop for ``netui --version``: ``uvloop 0.21.0``, ``asyncio (NETUI_EVENT_LOOP=asyncio)``."""
    env = os.environ if environ is None else environ
    try:
        name = choose(env)
    except EventLoopChoiceError as exc:
        return f"none: {exc}"
    if name == "uvloop":
        return f"uvloop {_uvloop_version()}"
    if env.get(ENV, "").strip():
        return f"asyncio ({ENV}={env[ENV].strip()})"
    return "asyncio (uvloop not installed)"


def new_event_loop(name: str) -> AbstractEventLoop:
    """A new, not yet running loop of that kind (``choose()`` names one); for runners that
    take a loop factory, such as the test suite's."""
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    import asyncio

    return asyncio.new_event_loop()


def run(main: Coroutine[Any, Any, T], *, environ: Mapping[str, str] | None = None) -> T:
    """Run ``main`` to completion on a new loop of the chosen kind, as ``asyncio.run`` does
    (the loop is closed after, leftover tasks cancelled, async generators finalised).

    A bad ``NETUI_EVENT_LOOP`` is an EventLoopChoiceError (an InputError) with the reason,
    before anything runs.
    """
    try:
        name = choose(environ)
    except EventLoopChoiceError:
        main.close()  # never started: no "coroutine was never awaited" warning
        raise
    if name == "uvloop":
        import uvloop

        # uvloop.run: asyncio.Runner(loop_factory=uvloop.new_event_loop) on 3.11+, its own
        # equivalent on 3.10; no event loop policy (deprecated in 3.14)
        return uvloop.run(main)
    import asyncio

    return asyncio.run(main)


def running() -> str:
    """``"uvloop"`` or ``"asyncio"``: the kind of the loop running now (in a coroutine)."""
    import asyncio

    loop = asyncio.get_running_loop()
    return "uvloop" if type(loop).__module__.split(".")[0] == "uvloop" else "asyncio"
