"""How an interface is set up, as tc and ethtool print it: ``tc -j qdisc show dev IF``
(iproute2's JSON), ``ethtool -k IF`` (features) and ``ethtool -g IF`` (rings).

Pure functions of text, run by the doctor's probe parser (``checks/doctor/probe.py``);
real captures are in tests/data/doctor/. A node's text is untrusted: anything that is not
the expected shape raises ``ParseError`` with a short reason, never anything else.
"""

from __future__ import annotations

import json
import re

from netui.collectors.procfs import ParseError
from netui.checks.doctor.rules_nic import Qdisc, RingSizes

_MAX_QDISCS = 4096  # more qdiscs on one interface than anyone sets up: not tc's output


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value >= 0 else None


def parse_tc_qdiscs(text: str) -> tuple[Qdisc, ...]:
    """``tc -j qdisc show [dev IF]`` → its qdiscs, in printed order.

    Rates are bytes per second (tc's JSON prints them so: ``"rate":12500000`` is 100 Mbit/s),
    tbf's ``lat`` microseconds, netem's delay seconds and loss a fraction (q_netem.c).
    Raises ParseError when the text is not a JSON list of qdiscs (cut off, garbled).
    """
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"not JSON: {str(exc)[:80]}") from None
    if not isinstance(doc, list) or len(doc) > _MAX_QDISCS:
        raise ParseError("not a list of qdiscs")
    out = []
    for entry in doc:
        if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
            raise ParseError("a qdisc without a kind")
        opts = entry.get("options") if isinstance(entry.get("options"), dict) else {}
        delay = opts.get("delay") if isinstance(opts.get("delay"), dict) else {}
        loss = opts.get("loss-random") if isinstance(opts.get("loss-random"), dict) else {}
        rate = opts.get("rate")
        if isinstance(rate, dict):  # netem: "rate": {"rate": bytes/s, …}
            rate = rate.get("rate")
        parent = entry.get("parent")
        root = entry.get("root") is True or not isinstance(parent, str)
        out.append(Qdisc(
            kind=entry["kind"][:32],
            handle=str(entry.get("handle", ""))[:16],
            parent=None if root else parent[:16],
            rate_bytes_per_s=_int(rate),
            burst_bytes=_int(opts.get("burst")),
            latency_us=_int(opts.get("lat")),
            delay_s=_float(delay.get("delay")),
            loss=_float(loss.get("loss")),
        ))
    return tuple(out)


_FEATURE = re.compile(r"^[ \t]*([A-Za-z0-9_-]+): (on|off)(?: \[(fixed|requested on|requested off)\])?[ \t]*$")


def parse_ethtool_features(text: str) -> dict[str, tuple[bool, bool]]:
    """``ethtool -k IF`` → {feature: (on, fixed)}; ``[fixed]``: the device cannot change it.

    Raises ParseError when no line is a feature (an error message, empty output).
    """
    features: dict[str, tuple[bool, bool]] = {}
    for line in text.splitlines():
        m = _FEATURE.match(line)
        if m and m.group(1) not in features:
            features[m.group(1)] = (m.group(2) == "on", m.group(3) == "fixed")
    if not features:
        raise ParseError("no 'feature: on|off' line")
    return features


_RING = re.compile(r"^(RX|TX):[ \t]+(\d{1,9}|n/a)[ \t]*$")


def parse_ethtool_ring(text: str) -> RingSizes:
    """``ethtool -g IF`` → the RX and TX rings, current and maximum (None where "n/a").

    Raises ParseError without both the "Pre-set maximums:" and the "Current hardware
    settings:" parts.
    """
    part = None
    seen: dict[str, dict[str, int | None]] = {}
    for line in text.splitlines():
        line = line.rstrip()
        if line.startswith("Pre-set maximums:"):
            part = "max"
        elif line.startswith("Current hardware settings:"):
            part = "now"
        elif part and (m := _RING.match(line)):
            seen.setdefault(part, {}).setdefault(m.group(1), None if m.group(2) == "n/a" else int(m.group(2)))
    if set(seen) != {"max", "now"}:
        raise ParseError("no 'Pre-set maximums' and 'Current hardware settings'")
    now, top = seen["now"], seen["max"]
    return RingSizes(now.get("RX"), top.get("RX"), now.get("TX"), top.get("TX"))
