"""What the doctor asks a node, beside what the sampler already streams: sysctls, CPUs,
irqbalance, receive queues and their packet steering, NIC interrupts and the CPUs they go
to, and RDMA ports.

``doctor_script`` is one POSIX ``sh`` script per node (a handful of processes: each
``grep -H`` reads many files at once); ``parse_doctor_probe`` is a pure function of its
output, so captured probes are unit tests. The output is sections, each opened by a line
``@name``, and ``@end`` last:

    @sysctl
    /proc/sys/net/ipv4/tcp_rmem:4096<TAB>131072<TAB>6291456
    @cpus
    0-127                                   (/sys/devices/system/cpu/online)
    @irqbalance
    yes | no
    @rps
    /sys/class/net/eth0/queues/rx-0/rps_cpus:00000000
    @irqs
    irq eth0 45                             (/sys/class/net/eth0/device/msi_irqs/45)
    /proc/irq/45/effective_affinity_list:3
    @rdma                                   (only where /sys/class/infiniband exists)
    /sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE
    netdev /sys/class/infiniband/mlx5_0/device/net/eth2
    @tools                                  (on a live node: which of tc and ethtool it has)
    tc yes
    ethtool no
    @qdisc eth0                             (per data-plane interface: tc -j qdisc show dev eth0)
    [{"kind":"tbf","handle":"1:","root":true,"refcnt":3,"options":{"rate":12500000,…}}]
    @exit 0
    @features eth0                          (ethtool -k eth0, where ethtool exists)
    @ring eth0                              (ethtool -g eth0)
    @end

Nothing from a user or a node is evaluated: the roots and the interface names (which come
from the node's own sample) are quoted, the rest is constant.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from netui.checks.doctor.parse_nic import parse_ethtool_features, parse_ethtool_ring, parse_tc_qdiscs
from netui.collectors.procfs import ParseError
from netui.checks.doctor.rules import DoctorProbe, NicQueues, RdmaPortState
from netui.checks.doctor.rules_nic import NOT_SUPPORTED, NicSettings
from netui.checks.doctor.rules_sysctl import SYSCTL_KEYS
from netui.model.text import safe_lines

Parsed = TypeVar("Parsed")  # what a section's parser returns

_SCRIPT = r"""PATH=$PATH:/usr/sbin:/sbin; LC_ALL=C; export PATH LC_ALL
echo @sysctl
grep -H . @SYSCTL_FILES@ 2>/dev/null
echo @cpus
cat @SYS@/devices/system/cpu/online 2>/dev/null
echo @irqbalance
grep -qsx irqbalance @PROC@/[0-9]*/comm && echo yes || echo no
echo @rps
grep -H . @SYS@/class/net/*/queues/rx-*/rps_cpus 2>/dev/null
echo @irqs
set --
for f in @SYS@/class/net/*/device/msi_irqs/*; do
  [ -e "$f" ] || continue
  n=${f%/device/msi_irqs/*}; n=${n##*/}; i=${f##*/}
  echo "irq $n $i"
  set -- "$@" @PROC@/irq/$i/effective_affinity_list @PROC@/irq/$i/smp_affinity_list
done
[ $# -gt 0 ] && grep -H . "$@" 2>/dev/null
if [ -d @SYS@/class/infiniband ]; then
  echo @rdma
  grep -H . @SYS@/class/infiniband/*/ports/*/state @SYS@/class/infiniband/*/ports/*/phys_state \
    @SYS@/class/infiniband/*/ports/*/rate @SYS@/class/infiniband/*/ports/*/link_layer 2>/dev/null
  for n in @SYS@/class/infiniband/*/device/net/*; do [ -e "$n" ] && echo "netdev $n"; done
fi
@NICS@echo @end
"""

# tc and ethtool on the data-plane interfaces (a live node only: a copied tree has no tc)
_NICS = r"""echo @tools
tc=; command -v tc >/dev/null 2>&1 && tc=yes; echo "tc ${tc:-no}"
et=; command -v ethtool >/dev/null 2>&1 && et=yes; echo "ethtool ${et:-no}"
for i in @IFACES@; do
  if [ -n "$tc" ]; then printf '@qdisc %s\n' "$i"; tc -j qdisc show dev "$i" 2>&1; s=$?; echo; echo "@exit $s"; fi
  if [ -n "$et" ]; then
    printf '@features %s\n' "$i"; ethtool -k "$i" 2>&1; echo "@exit $?"
    printf '@ring %s\n' "$i"; ethtool -g "$i" 2>&1; echo "@exit $?"
  fi
done
"""
MAX_INTERFACES = 32  # data-plane interfaces asked about per node (each costs up to 3 processes)


def doctor_script(proc: str = "/proc", sys: str = "/sys", interfaces: Sequence[str] | None = None) -> str:
    """The probe script; ``proc`` and ``sys`` are for a copied tree (tests, ``--procfs``).

    ``interfaces``: the node's data-plane interfaces, whose qdiscs (tc) and offloads and
    rings (ethtool) it asks about (at most ``MAX_INTERFACES``); None: none of that is asked
    (a copied tree: tc and ethtool would describe this host, not the tree).
    """
    p, s = shlex.quote(proc.rstrip("/") or "/"), shlex.quote(sys.rstrip("/") or "/")
    files = " ".join(f"{p}/sys/{key.replace('.', '/')}" for key in SYSCTL_KEYS)
    nics = ""
    if interfaces is not None:
        names = " ".join(shlex.quote(n) for n in list(interfaces)[:MAX_INTERFACES] if n and "\n" not in n)
        nics = _NICS.replace("@IFACES@", names)
    values = {"PROC": p, "SYS": s, "SYSCTL_FILES": files, "NICS": nics}
    return re.sub(r"@(PROC|SYS|SYSCTL_FILES|NICS)@", lambda m: values[m.group(1)], _SCRIPT)


# paths as grep -H prints them, under a root that may hold spaces
_SYSCTL = re.compile(r"^.*?/sys/(net/[^:]+):(.*)$")
_RPS = re.compile(r"^.*/class/net/([^/]+)/queues/rx-(\d+)/rps_cpus:(.*)$")
_IRQ = re.compile(r"^irq (\S+) (\d+)$")
_AFFINITY = re.compile(r"^.*/irq/(\d+)/(effective_affinity_list|smp_affinity_list):(.*)$")
_RDMA = re.compile(r"^.*/infiniband/([^/]+)/ports/(\d+)/(state|phys_state|rate|link_layer):(.*)$")
_NETDEV = re.compile(r"^netdev .*/infiniband/([^/]+)/device/net/([^/]+)$")


def cpu_list(text: str) -> frozenset[int] | None:
    """"0-3,8,10-11" → {0, 1, 2, 3, 8, 10, 11}; None when it is not a CPU list."""
    cpus: set[int] = set()
    try:
        for part in text.strip().split(","):
            low, _, high = part.partition("-")
            first, last = int(low), int(high or low)
            if last < first or last - first > 1 << 16:
                return None
            cpus.update(range(first, last + 1))
    except ValueError:
        return None
    return frozenset(cpus)


def _named(value: str) -> str:
    """"4: ACTIVE" → "ACTIVE"; "LinkUp" stays."""
    return value.partition(": ")[2].strip() if ": " in value else value.strip()


def parse_doctor_probe(text: str) -> DoctorProbe:
    """Parse ``doctor_script``'s output; never raises (what it cannot read is a problem)."""
    text = safe_lines(text)  # the node's words (interface names, tc and ethtool output): shown, never obeyed
    section = None
    sysctls: dict[str, str] = {}
    cpus = None
    irqbalance = None
    rx_queues: dict[str, int] = {}
    rps_on: dict[str, bool] = {}
    irqs: dict[str, list[int]] = {}
    effective: dict[int, frozenset[int]] = {}
    configured: dict[int, frozenset[int]] = {}
    ports: dict[tuple[str, int], dict[str, str]] = {}
    netdevs: dict[str, list[str]] = {}
    problems: list[str] = []
    complete = rdma_present = False
    tools: dict[str, bool] = {}
    blocks: list[tuple[str, str, list[str], list[int]]] = []  # (section, interface, lines, exit status)
    for raw in (text if isinstance(text, str) else "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("@"):
            head, _, arg = line[1:].partition(" ")
            if head == "exit" and section in _BLOCKS:
                blocks[-1][3].append(int(arg) if arg.isdigit() else -1)
                continue
            section = head
            if section in _BLOCKS:
                blocks.append((section, arg, [], []))
            complete = complete or section == "end"
            rdma_present = rdma_present or section == "rdma"
            continue
        if section in _BLOCKS:
            if len(blocks[-1][2]) < _MAX_BLOCK_LINES:
                blocks[-1][2].append(raw)
        elif section == "tools" and (m := _TOOL.match(line)):
            tools[m.group(1)] = m.group(2) == "yes"
        elif section == "sysctl" and (m := _SYSCTL.match(line)):
            sysctls[m.group(1).replace("/", ".")] = " ".join(m.group(2).split())
        elif section == "cpus" and (found := cpu_list(line)) is not None:
            cpus = len(found)
        elif section == "irqbalance" and line in ("yes", "no"):
            irqbalance = line == "yes"
        elif section == "rps" and (m := _RPS.match(line)):
            name = m.group(1)
            rx_queues[name] = rx_queues.get(name, 0) + 1
            mask = m.group(3).replace(",", "").strip()
            rps_on[name] = rps_on.get(name, False) or (bool(mask) and any(c not in "0" for c in mask))
        elif section == "irqs" and (m := _IRQ.match(line)):
            irqs.setdefault(m.group(1), []).append(int(m.group(2)))
        elif section == "irqs" and (m := _AFFINITY.match(line)):
            found = cpu_list(m.group(3))
            if found is not None:
                (effective if m.group(2).startswith("effective") else configured)[int(m.group(1))] = found
        elif section == "rdma" and (m := _RDMA.match(line)):
            ports.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = m.group(4).strip()
        elif section == "rdma" and (m := _NETDEV.match(line)):
            netdevs.setdefault(m.group(1), []).append(m.group(2))
        else:
            problems.append(line[:200])
    nics: dict[str, NicQueues] = {}
    for name in sorted(set(rx_queues) | set(irqs)):
        numbers = tuple(sorted(set(irqs.get(name, ()))))
        on: set[int] = set()
        for irq in numbers:
            on |= effective.get(irq) or configured.get(irq) or frozenset()
        nics[name] = NicQueues(rx_queues.get(name, 0), rps_on.get(name, False), numbers, frozenset(on))
    rdma = tuple(
        RdmaPortState(device, port, _named(attrs.get("state", "")), _named(attrs.get("phys_state", "")),
                      attrs.get("rate", ""), attrs.get("link_layer", ""), tuple(sorted(netdevs.get(device, ()))))
        for (device, port), attrs in sorted(ports.items())
    )
    if not complete:
        problems.append("the probe's output ended early")
    return DoctorProbe(sysctls=sysctls, cpus=cpus, irqbalance=irqbalance, nics=nics, rdma=rdma,
                       rdma_present=rdma_present, complete=complete, problems=tuple(problems),
                       nic_settings=_nic_settings(blocks), tc=tools.get("tc"), ethtool=tools.get("ethtool"))


_BLOCKS = ("qdisc", "features", "ring")  # the per-interface sections (_nic_settings reads each)
_MAX_BLOCK_LINES = 20_000
_TOOL = re.compile(r"^(tc|ethtool) (yes|no)$")


def _read_block(parse: Callable[[str], Parsed], lines: list[str], status: list[int]) -> tuple[Parsed | None, str | None]:
    """(what ``parse`` reads in the block, None) or (None, why it could not be read): "not supported" when
    the tool says the device has no such thing (a veth's rings)."""
    body = "\n".join(lines)
    if not status:
        return None, "its output ended early"
    if status[0] != 0:
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        if "not supported" in body.lower():
            return None, NOT_SUPPORTED
        return None, (last[:120] or f"exit status {status[0]}")
    try:
        return parse(body), None
    except ParseError as exc:
        return None, f"unreadable output: {exc}"[:160]


def _nic_settings(blocks: Sequence[tuple[str, str, list[str], list[int]]]) -> dict[str, NicSettings]:
    settings: dict[str, NicSettings] = {}
    for section, name, lines, status in blocks:
        if not name:
            continue
        nic = settings.get(name, NicSettings())
        if section == "qdisc":
            qdiscs, problem = _read_block(parse_tc_qdiscs, lines, status)
            nic = replace(nic, qdiscs=qdiscs, qdisc_problem=problem)
        elif section == "features":
            features, problem = _read_block(parse_ethtool_features, lines, status)
            nic = replace(nic, features=features, features_problem=problem)
        else:  # "ring"
            ring, problem = _read_block(parse_ethtool_ring, lines, status)
            nic = replace(nic, ring=ring, ring_problem=problem)
        settings[name] = nic
    return settings
