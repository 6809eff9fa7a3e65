"""Frames of the remote sampler (collectors/sampler.py) → NodeSample. Pure, no I/O.

A frame is ``b"NETUI1 <length>\\n"`` followed by ``length`` bytes of payload: NUL-separated
key/value pairs. Keys are those of collectors.assemble.PROC_FILES, ``wall``/``mono`` (the
node's clocks when it read the counters) and ``if/<name>/<attr>`` for /sys/class/net.
"""

from __future__ import annotations

from netui.collectors.assemble import sample_from_texts
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
    parts = payload.split(b"\0")
    if len(parts) < 5 or parts[-1] != b"" or len(parts) % 2 == 0:
        raise FrameError("truncated frame")
    texts: dict[str, str | None] = {}
    attrs: dict[str, dict[str, str | None]] = {}
    for i in range(0, len(parts) - 1, 2):
        key = parts[i].decode("ascii", "replace")
        value = parts[i + 1].decode("utf-8", "replace")
        if key.startswith("if/"):
            _, name, attr = key.split("/", 2) if key.count("/") >= 2 else ("", "", "")
            if name and attr:
                attrs.setdefault(name, {})[attr] = value
        else:
            texts[key] = value
    try:
        wall = float(texts.pop("wall"))  # type: ignore[arg-type]
        mono = float(texts.pop("mono"))  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError):
        raise FrameError("frame without node clocks") from None
    return sample_from_texts(texts, attrs, wall_s=wall, mono_s=mono)
