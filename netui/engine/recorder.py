"""The recorder: watches a Monitor and appends what happens to a recording.

Samples are written as they arrive (raw counters); at the end of each tick the changes the
tick made (node states with their reason, health levels, stragglers flagged or cleared),
then a tick mark (with the new interval when it changed during the tick), then the stream
is flushed so that everything so far survives a SIGKILL. Pair and latency test reports are written when they finish. A write that fails (a full
disk) stops the recording with the reason in ``error``; monitoring goes on. A record longer
than a reader takes in one line (16 MiB: a huge test report) is left out and counted in
``skipped``; the recording goes on. So is a record whose numbers a reader would refuse (NaN,
an infinity, an integer beyond 64 bits): only what reads back is written, and a node's
sample of that kind is refused (``sample`` says why) while the other nodes are recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from netui.engine.recording.codec import header_record, mesh_answered_to_dict, sample_record
from netui.engine.recording.writer import RecordingWriter, RecordRefused, RecordTooLarge
from netui.model import units
from netui.model.events import EventTracker
from netui.model.fleet import Fleet
from netui.model.samples import NodeSample


class Recorder:
    def __init__(self, path: str | Path, *, hosts: list[str], interval_s: float,
                 max_size_bytes: int | None = None, keep: int = 5,
                 clock: Callable[[], float] = time.time, fleet: Fleet | None = None) -> None:
        """``fleet``: the fleet recorded, whose probe mesh's pairs answered so far each file's
        header keeps (a replay of it then judges them as live mode did)."""
        self.clock = clock
        self.started_s = clock()  # wall time of the first record
        self.ended_s: float | None = None  # set by close
        self.path = Path(path)
        self._fleet = fleet
        self.writer = RecordingWriter(path, header_record(clock(), hosts=hosts, interval_s=interval_s,
                                                          mesh_answered=self._mesh_answered()),
                                      max_size_bytes=max_size_bytes, keep=keep)
        self.writer.next_header = self._next_header
        self.tracker = EventTracker()
        self.samples = 0
        self.ticks = 0
        self.error: str | None = None
        self.skipped = 0  # records too long for a reader's line, left out
        self.skipped_reason: str | None = None
        self._interval_s: float | None = None  # changed since the last tick mark: written with the next

    @property
    def active(self) -> bool:
        return self.error is None and not self.writer.closed

    @property
    def size_bytes(self) -> int:
        """Compressed bytes written to the current file."""
        return self.writer.size

    def _write(self, record: dict) -> str | None:
        """Write one record; the reason when it was left out (the recording goes on)."""
        if not self.active:
            return None
        try:
            self.writer.write(record)
        except (RecordTooLarge, RecordRefused) as exc:  # one record left out; the recording goes on
            self.skipped += 1
            self.skipped_reason = str(exc)
            return str(exc)
        except (OSError, ValueError) as exc:
            self._fail(exc)
        return None

    def _fail(self, exc: Exception) -> None:
        self.error = f"{type(exc).__name__}: {exc}"
        self.ended_s = self.clock()
        try:
            self.writer.close()
        except (OSError, ValueError):
            pass

    def _mesh_answered(self) -> dict | None:
        mesh = self._fleet.mesh if self._fleet is not None else None
        return mesh_answered_to_dict(*mesh.answered()) if mesh is not None else None

    def _next_header(self, header: dict) -> dict:
        """A rotated file's header: the last one's, with the mesh's pairs answered by now."""
        answered = self._mesh_answered()
        header = {k: v for k, v in header.items() if k != "mesh_answered"}
        return header | {"mesh_answered": answered} if answered else header

    def sample(self, node: str, sample: NodeSample) -> str | None:
        """Record one node's sample; None, or why it was refused (not written: a number a
        reader would refuse, or a record too long): the other nodes' samples go on."""
        refused = self._write(sample_record(self.clock(), node, sample))
        if refused is None:
            self.samples += 1
        return refused

    def interval(self, interval_s: float) -> None:
        """The monitor samples every ``interval_s`` from now on: the next tick mark says so,
        and a file started after it (rotation) has it in its header."""
        self._interval_s = interval_s

    def tick(self, fleet: Fleet) -> None:
        """The end of a tick: what changed, a tick mark, and a flush to the file."""
        if not self.active:
            return
        self._fleet = fleet
        t = self.clock()
        for rec in self.tracker.changes(fleet):
            self._write({"type": rec.pop("type"), "t": t, **rec})
        if self._interval_s is not None:
            self._write({"type": "tick", "t": t, "interval_s": self._interval_s})
            self.writer.header = dict(self.writer.header, interval_s=self._interval_s)
            self._interval_s = None
        else:
            self._write({"type": "tick", "t": t})
        self.ticks += 1
        if self.active:
            try:
                self.writer.sync()
            except (OSError, ValueError) as exc:
                self._fail(exc)

    def test(self, kind: str, report: dict) -> None:
        """A finished pair test ("pair-test") or latency test ("latency-test"), as its JSON document."""
        self._write({"type": "test", "t": self.clock(), "kind": kind, "report": report})
        if self.active:
            try:
                self.writer.sync()
            except (OSError, ValueError) as exc:
                self._fail(exc)

    @property
    def duration_s(self) -> float:
        """Seconds recorded: from the start to the close (to now while it records)."""
        return max(0.0, (self.ended_s if self.ended_s is not None else self.clock()) - self.started_s)

    def summary(self) -> str:
        """Where the recording went, in one line: "recorded 120 samples in 60 ticks (1 min 0 s,
        14.2 kB) to /path/run.ndjson.gz", and why it stopped early or what it left out."""
        words = (f"recorded {self.samples} samples in {self.ticks} ticks ({duration_words(self.duration_s)}, "
                 f"{units.si(self.size_bytes, 'B')}) to {self.path}")
        rotated = min(self.writer.rotations, self.writer.keep)
        if rotated:
            words += f" (the older parts in {self.path.name}.1 … .{rotated})"
        if self.error:
            words += f"; it stopped early: {self.error}"
        if self.skipped:
            words += f"; {self.skipped} record(s) left out: {self.skipped_reason}"
        return words

    def close(self) -> None:
        if self.ended_s is None:
            self.ended_s = self.clock()
        if not self.writer.closed:
            try:
                self.writer.close()
            except OSError as exc:
                self.error = self.error or f"{type(exc).__name__}: {exc}"


def duration_words(seconds: float) -> str:
    """"42 s", "1 min 5 s", "2 h 3 min": a recording's length."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"
