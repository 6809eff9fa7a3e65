"""A test run removes the labs that test processes left behind (tests/lab/pytest_plugin.py),
never a lab someone made with `python -m tests.lab up --name NAME` whose name reads like a
test lab's (`mwalk`: "m", then process "alk" in base 36, long gone)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyroute2")

from tests.lab import cluster, pytest_plugin  # noqa: E402


def test_an_orphan_test_lab_goes_and_a_lab_made_by_hand_stays(tmp_path, monkeypatch):
    from pyroute2 import netns

    human = tmp_path / "netui-mwalk"
    human.mkdir()
    (human / cluster.STATE_FILE).write_text(json.dumps({"name": "mwalk", "n": 5, "nodes": []}))
    monkeypatch.setattr(pytest_plugin, "HUMAN_LABS", tmp_path, raising=False)
    monkeypatch.setattr(netns, "listnetns", lambda: ["netui-mwalk-node1", "netui-mwalk-node2",
                                                     "netui-tzzzzz-node1", "netui-lab-node1"])
    exists = pytest_plugin.os.path.exists
    monkeypatch.setattr(pytest_plugin.os.path, "exists",  # every test process gone ("alk": 13736)
                        lambda p: False if str(p).startswith("/proc/") else exists(p))
    removed = []
    monkeypatch.setattr(cluster, "remove_lab", lambda name, *a, **k: removed.append(name))

    pytest_plugin._remove_orphan_labs()

    assert removed == ["tzzzzz"]
