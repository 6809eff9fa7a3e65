"""A local read that hangs (a FIFO in a --sysfs copy; on real nodes a firmware MAD or an
``ethtool -S`` that does not answer) never freezes netui: the readers do not wait on a FIFO,
and a read that hangs in the kernel anyway makes its node stale while the app ticks on.
Real files, real FIFOs, real blocked threads."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest

from netui.collectors.local import TreeReader
from netui.engine.monitor import Monitor
from netui.engine.sources import LocalSource
from netui.model.node import NodeState
from tests.fabric_tree import IB, PROCFS_PROC, copy_tree


def release(fifo: Path) -> None:
    """Unblock whoever waits to read ``fifo`` (a writer opens it, writes, closes)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # nobody is reading it
        return
    try:
        os.write(fd, b"7\n")
    finally:
        os.close(fd)


def fifo_in_place_of(path: Path) -> Path:
    path.unlink()
    os.mkfifo(path)
    return path


@pytest.fixture
def fifo_tree(tmp_path):
    tree = copy_tree(tmp_path / "sys")
    fifos = [fifo_in_place_of(tree / IB / "mlx5_0/ports/1/counters/symbol_error"),
             fifo_in_place_of(tree / IB / "mlx5_0/ports/1/state"),
             fifo_in_place_of(tree / "class/net/eth0/mtu")]
    yield tree, fifos
    for fifo in fifos:  # a reader that waits on one (before the fix) is let go
        release(fifo)


def test_the_tree_reader_does_not_wait_on_a_fifo(fifo_tree):
    tree, fifos = fifo_tree
    reader = TreeReader(str(PROCFS_PROC), str(tree))
    got = []
    thread = threading.Thread(target=lambda: got.append(reader.sample()), daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "the reader blocked on a FIFO"
    sample = got[0]
    port = sample.fabric.ports["mlx5_0", 1]
    assert port.counters.get("symbol_error") is None and port.state is None  # unreadable: unknown
    assert port.counters["port_xmit_data"] is not None
    assert sample.interfaces["eth0"].mtu is None and sample.interfaces["eth0"].counters.rx_bytes > 0


@pytest.mark.slow
def test_the_sampler_does_not_wait_on_a_fifo(fifo_tree):
    import select
    import subprocess

    from netui.collectors.frames import FrameDecoder, frame_length
    from netui.collectors.ssh import sampler_command

    tree, _ = fifo_tree
    proc = subprocess.Popen(["sh", "-c", sampler_command(0.1, sysfs=str(tree))], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    decode = FrameDecoder().decode  # one stream: its frames in order
    try:
        samples = []
        for _ in range(3):
            assert select.select([proc.stdout], [], [], 5)[0], "no frame: the sampler blocked on a FIFO"
            header = proc.stdout.readline()
            samples.append(decode(proc.stdout.read(frame_length(header))))
    finally:
        proc.kill()
        proc.wait()
    port = samples[-1].fabric.ports["mlx5_0", 1]
    assert port.counters.get("symbol_error") is None and port.state is None
    assert port.counters["port_xmit_data"] is not None


class StuckReader(TreeReader):
    """A TreeReader whose read, once ``stuck`` exists, also reads a FIFO with a plain blocking
    open(): the thread blocks in the kernel exactly as on a hung sysfs file, until a writer
    comes. ``reads`` counts the reads begun."""

    def __init__(self, name: str, tree: Path, gate: Path, fifo: Path) -> None:
        super().__init__(str(PROCFS_PROC), str(tree))
        self.name, self.gate, self.fifo, self.reads = name, gate, fifo, 0

    def sample(self):
        self.reads += 1
        if self.gate.exists():
            with open(self.fifo, "rb") as f:
                f.read()
        return super().sample()


@pytest.mark.slow
async def test_a_read_that_hangs_makes_its_node_stale_and_the_app_ticks_on(tmp_path):
    tree = copy_tree(tmp_path / "sys")
    gate, fifo = tmp_path / "stuck", tmp_path / "hang.fifo"
    os.mkfifo(fifo)
    stuck = StuckReader("gpu-stuck", tree, gate, fifo)
    fine = TreeReader(str(PROCFS_PROC), str(tree))
    fine.name = "gpu-fine"
    m = Monitor([LocalSource(stuck), LocalSource(fine)], interval_s=0.2, history_s=30)
    try:
        await asyncio.wait_for(m.run(polls=3), 5)
        assert m.fleet["gpu-stuck"].state is m.fleet["gpu-fine"].state is NodeState.UP
        gate.touch()  # the next read of gpu-stuck hangs in open()
        reads_before, seen_before = stuck.reads, m.fleet["gpu-fine"].samples_seen
        t0 = time.monotonic()
        ticks = 0
        while time.monotonic() - t0 < 1.5:
            await asyncio.wait_for(m.tick(), 1.0)  # a tick that waited on the hung read fails here
            ticks += 1
            await asyncio.sleep(0.05)
        assert ticks >= 5
        node = m.fleet["gpu-stuck"]
        assert node.state is NodeState.STALE and node.error.startswith("read not answering for "), node.error
        assert stuck.reads == reads_before + 1  # one read in flight, never a second one
        assert m.fleet["gpu-fine"].state is NodeState.UP
        assert m.fleet["gpu-fine"].samples_seen >= seen_before + 5
        gate.unlink()
        release(fifo)  # the hung read ends: its sample is taken, the node is up again
        deadline = time.monotonic() + 3
        while m.fleet["gpu-stuck"].state is not NodeState.UP and time.monotonic() < deadline:
            await asyncio.wait_for(m.tick(), 1.0)
            await asyncio.sleep(0.05)
        assert m.fleet["gpu-stuck"].state is NodeState.UP
        assert m.fleet["gpu-stuck"].samples_seen >= 4
    finally:
        gate.unlink(missing_ok=True)
        release(fifo)
        await m.close()


@pytest.mark.slow
async def test_closing_with_a_read_still_hung_does_not_wait_for_it(tmp_path):
    tree = copy_tree(tmp_path / "sys")
    gate, fifo = tmp_path / "stuck", tmp_path / "hang.fifo"
    os.mkfifo(fifo)
    gate.touch()
    stuck = StuckReader("gpu-stuck", tree, gate, fifo)
    m = Monitor([LocalSource(stuck)], interval_s=0.2, history_s=30)
    try:
        # ticks until the read is seen hung (a loaded host may need more than one): bounded
        for _ in range(40):
            await asyncio.wait_for(m.tick(), 1.0)
            if m.fleet["gpu-stuck"].state is NodeState.STALE:
                break
            await asyncio.sleep(0.05)
        assert m.fleet["gpu-stuck"].state is NodeState.STALE, m.fleet["gpu-stuck"].error
        assert stuck.reads == 1  # the read still hangs, in its thread
        await asyncio.wait_for(m.close(), 2.0)  # a close that waited for it would time out
    finally:
        release(fifo)
