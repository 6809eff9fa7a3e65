"""The sampler's channel: frames cut out of the bytes as they arrive, handed to the sink,
and the caps on what one node may send per interval (frames, bytes, stderr).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import asyncssh

from netui.collectors.frames import FrameDecoder, FrameError, frame_length, size_text
from netui.collectors.protocol import MAX_FRAME
from netui.collectors.ssh_connect import Failure
from netui.model.node import NodeState

if TYPE_CHECKING:
    from netui.collectors.ssh import SshSource


HEADER_MAX = 64  # b"NETUI2 <length>\n" is far shorter

# What one node may send, per sampling interval (the sampler sends one frame of a few kB):
# counted over windows of WINDOW_INTERVALS intervals (WINDOW_MIN_S at least, so that the
# frames held up by a stall the keepalive tolerates pass), the session ends past them.
FRAMES_PER_INTERVAL = 4
BYTES_PER_INTERVAL = 2 * MAX_FRAME
STDERR_PER_INTERVAL = 64 << 10  # the sampler writes to stderr only as it dies
STDERR_KEPT = 4096  # the last bytes of stderr kept, for why_ended
WINDOW_INTERVALS = 8
WINDOW_MIN_S = 10.0


def binary_size(n: int) -> str:
    """A cap in words: ``8 MiB``, ``64 KiB``."""
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


class OverCap(Failure):
    """A node sent more than a cap allows: the session ends, retried with backoff."""

    def __init__(self, state: NodeState, reason: str) -> None:
        super().__init__(state, reason, backoff_reset=False)


class SamplerSession(asyncssh.SSHClientSession):
    """The sampler's channel: frames cut out of the bytes as they arrive and handed to the
    sink, queued with the other nodes' frames where the sink queues them (``queue_frame``:
    the monitor decodes and judges a fleet's frames in batches, engine/monitor.py), else at once.

    asyncssh calls ``data_received`` once per SSH packet, and a frame of a 128-CPU node is
    one packet: no stream reader, no coroutine woken per frame (bench_fleet measured the
    difference). A frame split over packets waits in ``_rest`` until it is whole.
    ``ended`` resolves when the channel closes: None at a clean end (``why_ended`` then
    says why the sampler stopped), else the exception that ended it — a bad frame (its
    FrameError), a cap passed (OverCap: frames, bytes or stderr per interval), a sink that
    failed, or the connection lost. ``first`` resolves with the first whole frame.
    """

    def __init__(self, source: SshSource, sink) -> None:
        self._source = source
        self._name = source.name
        self._sink = sink
        self._observe = sink.observe
        self._queue = getattr(sink, "queue_frame", None)  # (session, payload) → taken later, in a batch
        self._flush = getattr(sink, "take_frames", None) if self._queue is not None else None
        self._broken = False  # a frame did not decode, or the sink failed on it: the rest are not taken
        self._decode = FrameDecoder().decode  # the frames of this stream, in order
        self._rest: list[bytes] = []  # the pieces of a frame not yet whole
        self._have = 0  # their length
        self._want = 0  # the length they must reach before the frame can be whole
        self._stderr = b""
        self._channel: asyncssh.SSHClientChannel | None = None
        loop = asyncio.get_running_loop()
        self.ended: asyncio.Future = loop.create_future()
        self.first: asyncio.Future = loop.create_future()
        # this window's counts (see FRAMES_PER_INTERVAL), and when it began and ends
        self._window_start = self._window_end = 0.0
        self._window_intervals = 1.0
        self._frame_count = self._byte_count = self._stderr_count = 0

    def connection_made(self, chan) -> None:
        self._channel = chan

    def data_received(self, data: bytes, datatype) -> None:
        if self.ended.done():
            return  # (a node over a cap: what is still in flight is dropped unread)
        now = time.monotonic()
        if now >= self._window_end:
            self._new_window(now)
        if datatype is not None:  # stderr: counted, its last words kept for why_ended
            self._stderr_count += len(data)
            if (self._stderr_count > STDERR_PER_INTERVAL * self._window_intervals
                    and self._over("stderr flood", self._stderr_count, STDERR_PER_INTERVAL, now)):
                return
            self._stderr = data[-STDERR_KEPT:] if len(data) >= STDERR_KEPT else (self._stderr + data)[-STDERR_KEPT:]
            return
        self._byte_count += len(data)
        if (self._byte_count > BYTES_PER_INTERVAL * self._window_intervals
                and self._over("sending too much", self._byte_count, BYTES_PER_INTERVAL, now)):
            return
        if self._rest:  # pieces joined once, when whole: a big frame costs no quadratic copying
            self._rest.append(data)
            self._have += len(data)
            if self._have < self._want:
                return
            data = b"".join(self._rest)
            self._rest = []
        try:
            self._frames(data)
        except Exception as exc:  # noqa: BLE001 - a bad frame or a failing sink ends the stream
            self._end(exc)
            if self._channel is not None:
                self._channel.close()

    def _frames(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while pos < end:
            nl = data.find(b"\n", pos, pos + HEADER_MAX)
            if nl < 0:
                if end - pos >= HEADER_MAX:
                    raise FrameError(f"not a sampler frame: {data[pos:pos + 40]!r}")
                self._rest, self._have, self._want = [data[pos:]], end - pos, 0
                return
            start = nl + 1
            stop = start + frame_length(data[pos:start])
            if stop > end:
                self._rest, self._have, self._want = [data[pos:]], end - pos, stop - pos
                return
            self._frame_count += 1
            if (self._frame_count > FRAMES_PER_INTERVAL * self._window_intervals
                    and self._over("too many frames", self._frame_count, FRAMES_PER_INTERVAL, time.monotonic())):
                return
            self.frame(data[start:stop])
            self._source.frames += 1
            if not self.first.done():
                self.first.set_result(None)
            pos = stop

    def _new_window(self, now: float) -> None:
        interval_s = self._sink.interval_s
        window_s = max(WINDOW_MIN_S, WINDOW_INTERVALS * interval_s)
        self._window_start, self._window_end = now, now + window_s
        self._window_intervals = window_s / interval_s
        self._frame_count = self._byte_count = self._stderr_count = 0

    def _over(self, what: str, count: int, per_interval: int, now: float) -> bool:
        """A cap passed: the session ends with the cap in words (True), unless the interval
        was made shorter meanwhile and the count is within its caps (False)."""
        window_s = self._window_end - self._window_start
        shorter = window_s / self._sink.interval_s
        if shorter > self._window_intervals:
            self._window_intervals = shorter
            if count <= per_interval * shorter:
                return False
        elapsed = f"{max(now - self._window_start, 0.1):.1f} s"
        if what == "too many frames":
            reason = f"{what}: {count} in {elapsed} (at most {per_interval} an interval)"
        else:
            reason = f"{what}: {size_text(count)} in {elapsed} (at most {binary_size(per_interval)} an interval)"
        state = NodeState.DOWN if what == "stderr flood" else NodeState.PARSE_ERROR
        self._end(OverCap(state, reason))
        if self._channel is not None:
            self._channel.close()
        return True

    def frame(self, payload: bytes) -> None:
        """One whole frame's payload: queued with the sink, or taken at once."""
        if self._queue is not None:
            self._queue(self, payload)
        else:
            self.take(payload)

    def take(self, payload: bytes) -> None:
        """A frame of this session decoded and handed to the sink, now. A frame that does not
        decode, or a sink that fails, ends the session, and the frames after it are not taken."""
        if self._broken:
            return
        try:
            self._observe(self._name, self._decode(payload))
        except Exception as exc:  # noqa: BLE001 - a bad frame or a failing sink ends the stream
            self._broken = True
            self._end(exc)
            if self._channel is not None:
                self._channel.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is None and self._rest:
            exc = FrameError("stream ended inside a frame")
        self._end(exc)

    def _end(self, exc: BaseException | None) -> None:
        if not self.ended.done():
            if self._flush is not None:  # the frames that came whole before the end are taken before it is told
                self._flush()
            self.ended.set_result(exc)

    def why_ended(self) -> Failure:
        """Why the sampler's output ended cleanly: its exit status and its own words."""
        text = self._stderr.decode("utf-8", "replace").strip().splitlines()
        words = text[-1] if text else ""
        status = self._channel.get_exit_status() if self._channel is not None else None
        if status == 127 or "no python3" in words:
            return Failure(NodeState.UNSUPPORTED, words or "no python3 on this node")
        if status == 3:
            return Failure(NodeState.UNSUPPORTED, words or "no /proc/net/dev on this node")
        return Failure(NodeState.DOWN, f"sampler exited (status {status})" + (f": {words}" if words else ""))
