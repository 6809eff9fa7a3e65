"""The two-tier lab's `ip -batch` runner: one batch that hangs fails the lab's set-up with a
clear error and leaves none of the other `ip` processes running (a stand-in `ip` on PATH;
no namespace is touched). ~1 s."""

from __future__ import annotations

import os

import pytest

from tests.lab import fabric, network

pytestmark = pytest.mark.slow  # waits out a hung stand-in ip


def test_a_hung_batch_leaves_no_ip_process_behind(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pids = tmp_path / "pids"
    fake = bin_dir / "ip"
    fake.write_text(f"#!/bin/sh\necho $$ >> '{pids}'\nexec sleep 31.5\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(fabric, "IP_TIMEOUT_S", 0.5)
    with pytest.raises(network.LabNetworkError, match="ns1: ip -batch gave no answer"):
        fabric._ip_batches({"ns1": ["link set lo up"], "ns2": ["link set lo up"], "ns3": ["link set lo up"]})
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 3
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # gone and reaped, not a zombie
