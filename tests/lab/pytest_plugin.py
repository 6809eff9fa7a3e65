"""pytest fixtures for the multi-node lab.

Load with `pytest_plugins = ["tests.lab.pytest_plugin"]` in tests/conftest.py.

- `lab`: a 4-node `Lab`, one per test module. After every test that used it, the fault
  helpers are undone (`Lab.heal`), so each test starts from a healthy cluster.
- `make_lab(n)`: more labs inside one test (each ~0.1 s + 0.05 s per node), closed after it.
- `two_tier_lab`: 2 leaves × 2 nodes under a spine (node1, node2 on leaf1; node3, node4 on
  leaf2), lldpd in every switch and node, one per test module; healed after every test
  (shaped uplinks cleared too). Skips without lldpd.

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
from pathlib import Path

import pytest

LAB_NODES = 4
TWO_TIER_LEAVES = 2
TWO_TIER_NODES_PER_LEAF = 2
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


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def _run_token(width: int) -> str:
    """This test process in base 36: labs of two test runs at once never share a name."""
    return _base36(os.getpid() % 36**width)


HUMAN_LABS = Path("/tmp")  # where `python -m tests.lab up --name NAME` keeps its lab: NAME's netui-NAME


def _remove_orphan_labs() -> None:
    """Labs left by test processes that are gone (a crash, a kill -9): removed at start. A
    lab that `python -m tests.lab up` made is someone's, whatever its name (`mwalk` reads as
    a test lab of process "alk"): left alone; `python -m tests.lab down` removes it."""
    import re

    from pyroute2 import netns

    from .cluster import read_state, remove_lab

    names = set()
    for ns in netns.listnetns():
        m = re.match(r"^netui-([tf][0-9a-z]{1,5}|m[0-9a-z][0-9a-z]{1,4})-node\d+$", ns)
        if m:
            names.add(m.group(1))
    for name in names:
        if read_state(HUMAN_LABS / f"netui-{name}"):
            continue
        token = name[1:] if name[0] in "tf" else name[2:]
        if not os.path.exists(f"/proc/{int(token, 36)}"):
            remove_lab(name)


def pytest_configure(config: pytest.Config) -> None:
    if not any(m.startswith("lab:") for m in config.getini("markers")):
        config.addinivalue_line(
            "markers", "lab: needs root, network namespaces and OpenSSH (the multi-node lab)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if {"lab", "make_lab", "two_tier_lab"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(scope="module")
def lab() -> Iterator:
    """A started 4-node Lab (node1 … node4, ssh_config at `lab.ssh_config`)."""
    _skip_unless_possible()
    from .cluster import Lab

    _remove_orphan_labs()
    with Lab(LAB_NODES, name=f"t{_run_token(5)}") as started:
        _active_labs.append(started)
        try:
            yield started
        finally:
            _active_labs.remove(started)


@pytest.fixture(scope="module")
def two_tier_lab() -> Iterator:
    """A started two-tier Lab: leaf1 (node1, node2), leaf2 (node3, node4), a spine, lldpd."""
    _skip_unless_possible()
    from . import lldp
    from .cluster import Lab

    if not lldp.available():
        pytest.skip("the two-tier lab needs lldpd (Debian package lldpd)")
    _remove_orphan_labs()
    with Lab(name=f"f{_run_token(5)}", leaves=TWO_TIER_LEAVES,
             nodes_per_leaf=TWO_TIER_NODES_PER_LEAF, lldp=True) as started:
        _active_labs.append(started)
        try:
            yield started
        finally:
            _active_labs.remove(started)


@pytest.fixture(autouse=True)
def _heal_lab_after_test(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if {"lab", "two_tier_lab"} & set(request.fixturenames):
        for started in _active_labs:
            started.heal()


@pytest.fixture
def make_lab() -> Iterator[Callable[..., object]]:
    """Factory: `make_lab(n)` returns a started Lab of n nodes, closed after the test;
    `make_lab(leaves=2, nodes_per_leaf=1)` a two-tier one."""
    from .cluster import Lab

    made: list[Lab] = []

    def make(n: int | None = 2, **kw) -> Lab:
        _skip_unless_possible()
        serial = next(_make_lab_serial) % 36
        if kw.get("leaves") is not None:
            n = None  # two-tier: leaves × nodes_per_leaf
        new = Lab(n, name=f"m{_base36(serial)}{_run_token(4)}", **kw)
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
