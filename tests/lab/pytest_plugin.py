"""pytest fixtures for the multi-node lab.

Load with `pytest_plugins = ["tests.lab.pytest_plugin"]` in tests/conftest.py.

- `lab`: a 4-node `Lab`, one per test module. After every test that used it, the fault
  helpers are undone (`Lab.heal`), so each test starts from a healthy cluster.
- `make_lab(n)`: more labs inside one test (each ~0.1 s + 0.05 s per node), closed after it.

Both skip, with the reason, when the machine cannot host a lab: not root, no `ip`, no
`/usr/sbin/sshd`, no pyroute2, or network namespaces cannot be created. Tests using
them are marked `lab` automatically (`pytest -m "not lab"` leaves them out).
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
from collections.abc import Callable, Iterator

import pytest

LAB_NODES = 4
_active_labs: list = []
_make_lab_serial = itertools.count(1)


@functools.cache
def lab_unavailable_reason() -> str | None:
    """Why this machine cannot host a lab, or None when it can."""
    if os.geteuid() != 0:
        return "the lab needs root (network namespaces, veths, sshd)"
    for tool, package in [("ip", "iproute2"), ("/usr/sbin/sshd", "openssh-server"),
                          ("ssh-keygen", "openssh-client"), ("ssh", "openssh-client"),
                          ("unshare", "util-linux")]:
        if shutil.which(tool) is None:
            return f"the lab needs {tool} (Debian package {package})"
    try:
        from pyroute2 import netns
    except ImportError as e:
        return f"the lab needs pyroute2: {e}"
    probe = f"netui-probe{os.getpid()}"
    try:
        netns.create(probe)
        netns.remove(probe)
    except Exception as e:  # noqa: BLE001 — any failure means "no namespaces here"
        return f"cannot create a network namespace: {e}"
    return None


def _skip_unless_possible() -> None:
    reason = lab_unavailable_reason()
    if reason:
        pytest.skip(reason)


def _worker_digits() -> str:
    """'3' under pytest-xdist worker gw3, '' otherwise: parallel workers get own labs."""
    return "".join(c for c in os.environ.get("PYTEST_XDIST_WORKER", "") if c.isdigit())


def pytest_configure(config: pytest.Config) -> None:
    if not any(m.startswith("lab:") for m in config.getini("markers")):
        config.addinivalue_line(
            "markers", "lab: needs root, network namespaces and OpenSSH (the multi-node lab)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if {"lab", "make_lab"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(scope="module")
def lab() -> Iterator:
    """A started 4-node Lab (node1 … node4, ssh_config at `lab.ssh_config`)."""
    _skip_unless_possible()
    from .cluster import Lab

    with Lab(LAB_NODES, name=f"pt{_worker_digits()}") as started:
        _active_labs.append(started)
        try:
            yield started
        finally:
            _active_labs.remove(started)


@pytest.fixture(autouse=True)
def _heal_lab_after_test(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "lab" in request.fixturenames:
        for started in _active_labs:
            started.heal()


@pytest.fixture
def make_lab() -> Iterator[Callable[..., object]]:
    """Factory: `make_lab(n)` returns a started Lab of n nodes, closed after the test."""
    from .cluster import Lab

    made: list[Lab] = []

    def make(n: int = 2) -> Lab:
        _skip_unless_possible()
        serial = next(_make_lab_serial) % 100
        new = Lab(n, name=f"m{serial:02d}{_worker_digits()}")
        made.append(new)
        return new.start()

    yield make
    errors = []
    for each in reversed(made):
        try:
            each.close()
        except Exception as e:  # noqa: BLE001 — close the others, then report
            errors.append(e)
    if errors:
        raise errors[0]
