"""The doctor's rules about how a node's data-plane interfaces are set up: traffic shaping
(tc qdiscs), offloads (GRO, TSO) and ring sizes.

Pure: in, what ``tc -j qdisc show`` and ``ethtool -k`` / ``-g`` said about each interface
(parsed by ``checks/doctor/parse_nic.py``) and the monitor's sample of the interfaces;
out, findings (``checks.doctor.model``). Called by ``checks.doctor.rules.diagnose``.

- Traffic shaping: a tbf or netem qdisc on a data-plane interface caps or delays
  everything it sends (a warning: the usual leftover of a test, and what makes a node the
  straggler); htb and hfsc cap by class, usually on purpose (careful: look at the classes).
- Offloads: GRO or TSO off (and not ``[fixed]``: the device can do it) on a NIC — every
  segment then crosses the stack on its own, and a CPU, not the link, sets the rate.
  Software devices (veth, bridge…) are left out: a veth has GRO off by default.
- Rings: the current RX or TX ring below 1/8 of the pre-set maximum. The drivers' own
  defaults are 1/8 of their maximum or more (mlx5 1024 of 8192, ixgbe and i40e 512 of
  4096), so below that someone made the ring smaller; a short ring overflows in a burst
  before the CPU drains it (rx_missed/fifo errors).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

from netui.checks.doctor.rules_sysctl import size_text
from netui.checks.doctor.model import Finding
from netui.model import units
from netui.model.health import Level
from netui.model.samples import SOFTWARE_KINDS, InterfaceSample

# qdisc kind → (level, what it does): the ones that shape or impair what an interface sends
SHAPING: dict[str, tuple[Level, str]] = {
    "tbf": (Level.WARNING, "caps"),
    "netem": (Level.WARNING, "delays or drops"),
    "htb": (Level.CAREFUL, "shares out by class"),
    "hfsc": (Level.CAREFUL, "shares out by class"),
}
OFFLOADS = {"generic-receive-offload": ("GRO", "gro"), "tcp-segmentation-offload": ("TSO", "tso")}
RING_FRACTION = 8  # a ring below max / RING_FRACTION is "far below" (see the module's docstring)


@dataclass(frozen=True, slots=True)
class Qdisc:
    """One qdisc as ``tc -j qdisc show`` prints it; what is not printed is None."""

    kind: str
    handle: str = ""
    parent: str | None = None  # None: at the root
    rate_bytes_per_s: int | None = None  # tbf's rate, netem's rate
    burst_bytes: int | None = None  # tbf
    latency_us: int | None = None  # tbf's "lat"
    delay_s: float | None = None  # netem
    loss: float | None = None  # netem's random loss, a fraction

    @property
    def where(self) -> str:
        return "at the root" if self.parent is None else f"under {self.parent}"


@dataclass(frozen=True, slots=True)
class RingSizes:
    """``ethtool -g``: the rings' current sizes and their pre-set maximums (None: n/a)."""

    rx: int | None = None
    rx_max: int | None = None
    tx: int | None = None
    tx_max: int | None = None


@dataclass(frozen=True)
class NicSettings:
    """What tc and ethtool said about one interface. Each part is None when it was not read;
    its ``*_problem`` then says why ("not supported" for a device without it is no finding;
    anything else is output that could not be read)."""

    qdiscs: tuple[Qdisc, ...] | None = None
    qdisc_problem: str | None = None
    features: Mapping[str, tuple[bool, bool]] | None = None  # name → (on, fixed)
    features_problem: str | None = None
    ring: RingSizes | None = None
    ring_problem: str | None = None


NOT_SUPPORTED = "not supported"


class _Check(NamedTuple):
    """What one of the checks reads, and how it says that it could not."""

    tool: str  # the tool it needs on the node
    part: str  # the part of NicSettings it reads
    problem: str  # the part's ``*_problem``
    software: bool  # whether software devices (veth, bridge…) count
    unread: str  # "{name}: could not read <unread> (why): <unchecked> not checked"
    unchecked: str
    look: str  # the command to look with, before the interface's name


_CHECKS = {
    "traffic_shaping": _Check("tc", "qdiscs", "qdisc_problem", True, "tc's qdiscs", "shaping", "tc qdisc show dev"),
    "offloads": _Check("ethtool", "features", "features_problem", False, "ethtool -k", "offloads", "ethtool -k"),
    "rings": _Check("ethtool", "ring", "ring_problem", False, "ethtool -g", "rings", "ethtool -g"),
}


def _read(check: str, node: str, dataplane: Mapping[str, InterfaceSample], settings: Mapping[str, NicSettings],
          out: list[Finding]) -> Iterator[tuple[str, InterfaceSample, object]]:
    """The data-plane interfaces ``check`` looks at, in order, with the part of their
    NicSettings it reads: (name, interface, part). One whose part could not be read is not
    yielded but adds a careful finding to ``out`` (none when the device lacks it: "not
    supported"); one with no NicSettings at all is passed over."""
    c = _CHECKS[check]
    for name, iface in dataplane.items():
        s = settings.get(name)
        if s is None or not (c.software or _nic(iface)):
            continue
        part = getattr(s, c.part)
        if part is None:
            problem = getattr(s, c.problem)
            if problem and problem != NOT_SUPPORTED:
                out.append(Finding(check, Level.CAREFUL, node, name,
                                   f"{name}: could not read {c.unread} ({problem}): {c.unchecked} not checked",
                                   look=f"{c.look} {name}"))
            continue
        yield name, iface, part


def _rate_text(bytes_per_s: int) -> str:
    return units.bits_per_s(bytes_per_s)


def _qdisc_text(q: Qdisc, name: str) -> str:
    does = SHAPING[q.kind][1]
    what = f"what {name} sends" if q.parent is None else f"the traffic of class {q.parent}"
    parts = [f"{q.kind} {q.where} {does} {what}"]
    if q.kind == "tbf" and q.rate_bytes_per_s:
        parts.append(f"at {_rate_text(q.rate_bytes_per_s)}")
        extra = []
        if q.burst_bytes:
            extra.append(f"burst {size_text(q.burst_bytes)}")
        if q.latency_us:
            extra.append(f"latency {q.latency_us / 1000:.3g} ms")
        if extra:
            parts.append(f"({', '.join(extra)})")
    if q.kind == "netem":
        if q.delay_s:
            parts.append(f"delay {q.delay_s * 1000:.3g} ms")
        if q.loss:
            parts.append(f"loss {q.loss * 100:.3g} %")
        if q.rate_bytes_per_s:
            parts.append(f"rate {_rate_text(q.rate_bytes_per_s)}")
    return " ".join(parts)


def shaping(node: str, dataplane: Mapping[str, InterfaceSample], settings: Mapping[str, NicSettings]) -> list[Finding]:
    """Traffic shaping on the data-plane interfaces: one finding per interface, at the level
    of its worst qdisc; tc output that could not be read is a careful finding."""
    out: list[Finding] = []
    for name, iface, qdiscs in _read("traffic_shaping", node, dataplane, settings, out):
        found = [q for q in qdiscs if q.kind in SHAPING]
        if not found:
            continue
        level = max(SHAPING[q.kind][0] for q in found)
        words = f"{name}: " + "; ".join(_qdisc_text(q, name) for q in found)
        speed = iface.speed_mbps
        if speed and iface.kind not in SOFTWARE_KINDS:
            words += f" — the link is {units.mbps(speed)}"
        roots = [q for q in found if q.parent is None]
        if roots:
            fix = f"tc qdisc del dev {name} root"
        else:
            fix = " && ".join(f"tc qdisc del dev {name} parent {q.parent}" for q in found)
        hard = level >= Level.WARNING
        out.append(Finding("traffic_shaping", level, node, name, words, fix=fix if hard else None,
                           look=f"tc -s qdisc show dev {name}" if hard else f"tc -s class show dev {name}"))
    return out


CAP_TOLERANCE = 0.05  # root tbf rates this close are one cap (set by the same hand)


def root_caps(dataplane: Mapping[str, InterfaceSample], settings: Mapping[str, NicSettings]) -> dict[str, int | None]:
    """Interface → the rate (bytes/s) a root tbf caps it at, None where its qdiscs were read
    and none caps it; interfaces whose qdiscs were not read are left out."""
    out: dict[str, int | None] = {}
    for name in dataplane:
        s = settings.get(name)
        if s is None or s.qdiscs is None:
            continue
        out[name] = next((q.rate_bytes_per_s for q in s.qdiscs
                          if q.kind == "tbf" and q.parent is None and q.rate_bytes_per_s), None)
    return out


def _alike(a: int, b: int) -> bool:
    return abs(a - b) <= CAP_TOLERANCE * max(a, b)


def shared_caps(findings: list[Finding], caps: Mapping[str, Mapping[str, int | None]]) -> list[Finding]:
    """The traffic-shaping ``findings`` judged across nodes (``caps``: node → ``root_caps``):
    a root tbf at the rate most of the nodes share on that interface is the fleet's own cap
    (a lab, a cloud's shaping, a policy), careful; a node capped below it, or capped where
    most are not, stays a warning, said against the others — the outlier is the news."""
    by_iface: dict[str, dict[str, int | None]] = {}
    for node, per_iface in caps.items():
        for name, rate in per_iface.items():
            by_iface.setdefault(name, {})[node] = rate
    common: dict[str, tuple[int, int, int]] = {}  # interface → (the shared rate, nodes at it, nodes read)
    for name, rates in by_iface.items():
        capped = [r for r in rates.values() if r]
        for rate in sorted(set(capped)):
            alike = sum(_alike(rate, r) for r in capped)
            if 2 * alike > len(rates) and alike >= 2:
                common[name] = (rate, alike, len(rates))
                break
    out = []
    for f in findings:
        rate = caps.get(f.node or "", {}).get(f.subject)
        shared = common.get(f.subject)
        if shared is None or not rate or f.severity < Level.WARNING:
            out.append(f)
            continue
        top, alike, read = shared
        if _alike(rate, top):
            out.append(replace(f, severity=Level.CAREFUL, fix=None,
                               evidence=f"{f.evidence}; the same cap as on {alike} of {read} nodes: the fleet's "
                                        "own shaping, not one node's"))
        else:
            how = f"{top / rate:.3g}× below" if rate < top else f"{rate / top:.3g}× above"
            out.append(replace(f, evidence=f"{f.evidence}; {how} the {_rate_text(top)} cap of {alike} of the "
                                           f"{read} nodes"))
    return out


def _nic(iface: InterfaceSample) -> bool:
    return iface.kind is not None and iface.kind not in SOFTWARE_KINDS


def offloads(node: str, dataplane: Mapping[str, InterfaceSample], settings: Mapping[str, NicSettings]) -> list[Finding]:
    """GRO or TSO off (and not fixed) on a NIC: one warning per interface."""
    out: list[Finding] = []
    for name, _, features in _read("offloads", node, dataplane, settings, out):
        off = [(short, flag) for key, (short, flag) in OFFLOADS.items()
               if key in features and not features[key][0] and not features[key][1]]
        if not off:
            continue
        names = " and ".join(short for short, _ in off)
        out.append(Finding("offloads", Level.WARNING, node, name,
                           f"{name}: {names} off — every segment crosses the stack on its own: more CPU per byte, "
                           f"and one CPU, not the link, may set the rate",
                           fix=f"ethtool -K {name} " + " ".join(f"{flag} on" for _, flag in off),
                           look=f"ethtool -k {name}"))
    return out


def rings(node: str, dataplane: Mapping[str, InterfaceSample], settings: Mapping[str, NicSettings]) -> list[Finding]:
    """A NIC's RX or TX ring below 1/``RING_FRACTION`` of its maximum: careful."""
    out: list[Finding] = []
    for name, _, r in _read("rings", node, dataplane, settings, out):
        small = [(what, now, top) for what, now, top in (("RX", r.rx, r.rx_max), ("TX", r.tx, r.tx_max))
                 if now and top and now * RING_FRACTION < top]
        if not small:
            continue
        words = " and ".join(f"{what} ring {now} of a possible {top}" for what, now, top in small)
        out.append(Finding("rings", Level.CAREFUL, node, name,
                           f"{name}: {words} — below 1/{RING_FRACTION} of the maximum (drivers' defaults are 1/8 or "
                           f"more): a burst overflows it before the CPU drains it",
                           fix=f"ethtool -G {name} " + " ".join(f"{what.lower()} {top}" for what, _, top in small),
                           look=f"ethtool -S {name} | grep -iE 'miss|fifo|discard|drop'"))
    return out


def checked(kind: str, settings: Iterable[NicSettings]) -> bool:
    """Whether ``kind`` ("qdiscs", "features", "ring") was read for any of the interfaces."""
    return any(getattr(s, kind) is not None for s in settings)


def coverage(check: str, nodes: Iterable[tuple[bool | None, Mapping[str, InterfaceSample],
                                               Mapping[str, NicSettings]]]) -> tuple[int, dict[str, int]]:
    """How many nodes ``check`` looked at, and why it did not look at the others:
    {"no tc": 2, "a copied tree": 1}. Each node is (has the tool, its data-plane
    interfaces, its NicSettings); a node with nothing to look at (no NIC) counts nowhere."""
    tool, part, software = _CHECKS[check].tool, _CHECKS[check].part, _CHECKS[check].software
    seen = 0
    skipped: dict[str, int] = {}
    for has_tool, dataplane, settings in nodes:
        names = [n for n, i in dataplane.items() if software or _nic(i)]
        if not names:
            continue
        if has_tool is None:
            why = "a captured tree"
        elif not has_tool:
            why = f"no {tool}"
        elif any(getattr(settings.get(n), part, None) is not None for n in names):
            seen += 1
            continue
        else:
            continue  # asked, and the device has nothing to say (a ring "not supported")
        skipped[why] = skipped.get(why, 0) + 1
    return seen, skipped
