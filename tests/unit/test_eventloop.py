"""netui/engine/eventloop.py: which loop netui runs on, and that it really runs there."""

from __future__ import annotations

import asyncio
import sys

import pytest

from netui.engine import eventloop
from netui.engine.eventloop import ENV, EventLoopChoiceError, choose, describe, run, running
from netui.exits import InputError

uvloop = pytest.importorskip("uvloop", reason="uvloop is a dependency of netui on CPython outside Windows")


@pytest.fixture
def without_uvloop(monkeypatch):
    """uvloop not installed, as Python sees it: ``import uvloop`` raises ImportError."""
    monkeypatch.setitem(sys.modules, "uvloop", None)
    with pytest.raises(ImportError):
        import uvloop  # noqa: F401


@pytest.mark.parametrize("value", [None, "", "  ", "auto", "AUTO", "uvloop", " UVLoop "])
def test_uvloop_when_importable(value):
    environ = {} if value is None else {ENV: value}
    assert choose(environ) == "uvloop"
    assert describe(environ) == f"uvloop {uvloop.__version__}"


@pytest.mark.parametrize("value", ["asyncio", "Asyncio", " asyncio\n"])
def test_the_opt_out_is_the_stock_loop(value):
    assert choose({ENV: value}) == "asyncio"
    assert describe({ENV: value}) == f"asyncio ({ENV}={value.strip()})"


def test_without_uvloop_auto_falls_back_and_uvloop_asked_for_is_an_error(without_uvloop):
    assert choose({}) == "asyncio" and choose({ENV: "auto"}) == "asyncio"
    assert describe({}) == "asyncio (uvloop not installed)"
    with pytest.raises(EventLoopChoiceError, match="uvloop is not installed"):
        choose({ENV: "uvloop"})


@pytest.mark.parametrize("value", ["tokio", "uv-loop", "0", "asyncio,uvloop"])
def test_an_unknown_value_is_a_clear_error(value):
    with pytest.raises(EventLoopChoiceError) as caught:
        choose({ENV: value})
    assert str(caught.value) == (f"{ENV}={value!r} is not a loop netui knows: use auto, uvloop, asyncio "
                                 "(unset = auto: uvloop when installed)")
    assert describe({ENV: value}).startswith("none: ")


async def _where() -> tuple[str, type, bool]:
    loop = asyncio.get_running_loop()
    return running(), type(loop), asyncio.get_event_loop() is loop


def test_run_runs_on_the_chosen_loop():
    name, cls, current = run(_where(), environ={})
    assert (name, cls, current) == ("uvloop", uvloop.Loop, True)
    name, cls, current = run(_where(), environ={ENV: "asyncio"})
    assert name == "asyncio" and cls.__module__.startswith("asyncio") and current
    # no event loop policy was installed for it: the stock policy is still in place
    assert type(asyncio.get_event_loop_policy()).__module__.startswith("asyncio")


def test_run_closes_its_loop_and_cancels_leftover_tasks():
    seen: dict = {}

    async def main():
        async def forever():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                seen["cancelled"] = True
                raise

        seen["loop"] = asyncio.get_running_loop()
        asyncio.ensure_future(forever())
        await asyncio.sleep(0)
        return 42

    assert run(main(), environ={}) == 42
    assert seen["cancelled"] and seen["loop"].is_closed()


def test_run_with_a_bad_value_exits_with_the_reason_and_never_starts_the_coroutine():
    async def main():
        raise AssertionError("must not run")

    coro = main()
    with pytest.raises(InputError) as caught:  # the command line says "netui: <reason>" and exits 2
        run(coro, environ={ENV: "bogus"})
    assert str(caught.value).startswith(f"{ENV}='bogus' is not a loop netui knows")
    assert coro.cr_frame is None  # closed: no "never awaited" warning


async def test_the_suite_runs_on_the_loop_netui_runs_on():
    """tests/conftest.py hands pytest-asyncio netui's loop: the lab and pilot tests exercise
    asyncssh, aiohttp, subprocesses and Textual on uvloop (NETUI_EVENT_LOOP=asyncio: stock)."""
    assert running() == choose()
