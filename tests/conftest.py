"""The suite's tiers, one folder each (CONTRIBUTING.md, "Running part of the suite"):

- tests/unit/: pure tests of parsers, the model and the engine's logic: no subprocess, no
  socket, no SSH server, no Textual pilot.
- tests/integration/: local processes, loopback servers, the CLI as a subprocess.
- tests/ui/: Textual pilot tests, SVG snapshots, tmux.
- tests/lab/: the multi-node lab (network namespaces, sshd; needs root), next to its harness.

Every test is marked with its folder's tier here, so ``-m unit`` or ``-m "not lab"`` select
by tier without anyone remembering a marker; ``slow`` is set by hand on tests of more than
about half a second, which the fast loop (``-m "not lab and not slow"``) leaves to the full
run.
"""

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["tests.lab.pytest_plugin", "tests.prometheus_api"]

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "ui", "lab")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        try:
            folder = item.path.resolve().relative_to(TESTS).parts[0]
        except (ValueError, IndexError):
            continue
        if folder in TIERS:
            item.add_marker(getattr(pytest.mark, folder))


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


@pytest.fixture(scope="session", autouse=True)
def _tmux_of_the_suite():
    """The suite's tmux server, its own (TMUX_TMPDIR, inherited by every tmux the tests
    start), with one session kept for the whole run. A tmux server exits once its last session
    is gone, a moment after ``kill-session`` returns: the next test's ``new-session`` could meet
    it exiting and fail ("server exited unexpectedly"). The tests' sessions never meet a user's
    either. Ended, with its directory, at the end of the run."""
    if shutil.which("tmux") is None:
        yield
        return
    old = os.environ.get("TMUX_TMPDIR")
    directory = tempfile.mkdtemp(prefix="netui-tmux-")
    os.environ["TMUX_TMPDIR"] = directory
    try:
        subprocess.run(["tmux", "new-session", "-d", "-s", "netui-suite-keeper", "sleep", "infinity"],
                       capture_output=True, timeout=30)
        yield
    finally:
        subprocess.run(["tmux", "kill-server"], capture_output=True, timeout=30)
        if old is None:
            os.environ.pop("TMUX_TMPDIR", None)
        else:
            os.environ["TMUX_TMPDIR"] = old
        shutil.rmtree(directory, ignore_errors=True)
