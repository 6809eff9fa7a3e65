"""Frames of the remote sampler (collectors/sampler.py) → NodeSample. Pure, no I/O.

A frame is ``b"NETUI1 <length>\\n"`` followed by ``length`` bytes of payload: NUL-separated
key/value pairs. Keys are those of collectors.assemble.PROC_FILES, ``wall``/``mono`` (the
node's clocks when it read the counters), ``cpu`` and ``softnet`` (the sampler's per-CPU
summaries of /proc/stat and softnet_stat) and ``if/<name>`` (an interface's sysfs texts,
packed in assemble.PACKED_ATTRS order).
"""

from __future__ import annotations

from netui.collectors.assemble import sample_from_texts, unpack_attrs
from netui.collectors.procfs import ParseError
from netui.model.samples import NodeSample

MAGIC = b"NETUI1 "
MAX_FRAME = 16 << 20  # a 1,024-CPU node sends well under 1 MiB


class FrameError(ParseError):
    """The stream from a node is not a sequence of sampler frames."""


def frame_length(header: bytes) -> int:
    """Payload length from a header line (``b"NETUI1 123\\n"``); FrameError otherwise."""
    if not header.startswith(MAGIC) or not header.endswith(b"\n"):
        raise FrameError(f"not a sampler frame: {header[:40]!r}")
    try:
        n = int(header[len(MAGIC) : -1])
    except ValueError:
        raise FrameError(f"bad frame length: {header[:40]!r}") from None
    if not 0 < n <= MAX_FRAME:
        raise FrameError(f"frame length out of range: {n}")
    return n


def decode_frame(payload: bytes) -> NodeSample:
    """The NodeSample carried by one payload. FrameError when it is not well formed."""
    parts = payload.decode("utf-8", "replace").split("\0")
    if len(parts) < 5 or parts[-1] != "" or len(parts) % 2 == 0:
        raise FrameError("truncated frame")
    texts: dict[str, str | None] = {}
    attrs: dict[str, tuple] = {}
    for i in range(0, len(parts) - 1, 2):
        key = parts[i]
        if key.startswith("if/"):
            packed = unpack_attrs(parts[i + 1])
            if packed is None:
                raise FrameError(f"bad interface record for {key[3:]!r}")
            attrs[key[3:]] = packed
        else:
            texts[key] = parts[i + 1]
    try:
        wall = float(texts.pop("wall"))  # type: ignore[arg-type]
        mono = float(texts.pop("mono"))  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError):
        raise FrameError("frame without node clocks") from None
    return sample_from_texts(texts, attrs, wall_s=wall, mono_s=mono)
