import functools

import pytest

pytest_plugins = ["tests.lab.pytest_plugin"]


@pytest.hookimpl(optionalhook=True)
def pytest_asyncio_loop_factories(config, item):
    """Async tests run on the event loop netui runs on (netui/engine/eventloop.py): uvloop
    where it is installed; ``NETUI_EVENT_LOOP=asyncio`` runs the suite on the stock loop."""
    from netui.engine import eventloop

    try:
        name = eventloop.choose()
    except eventloop.EventLoopChoiceError as exc:
        raise pytest.UsageError(str(exc)) from None
    return {name: functools.partial(eventloop.new_event_loop, name)}
