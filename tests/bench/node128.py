"""Texts of a big training node (128 CPUs, 16 interfaces), scaled up from the real fixtures.

Shared by the benchmarks: the layout of every file is the kernel's own; only the number of
rows grows, and counters advance between ``step`` values so rates are real work.
"""

from __future__ import annotations

import random

from tests.testdata import PROCFS, data_path

FIXTURES = data_path(f"{PROCFS}/proc")
NCPU = 128
NIFACE = 16

_SOFTIRQ_NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU")


def _wobble(step: int) -> float:
    """0 ≤ x < 1, its own at every step (seeded by it: the same frames in every run); the
    counters advance by their rate plus up to two fifths of it more or less from one second to
    the next, as a busy node's do, so every frame's rates and the words of its findings are new."""
    return random.Random(step).random()  # noqa: S311 - a fixed wobble, no secret


# TcpExt counters that move on a busy, healthy node every second, by these per second (of those
# the sampler keeps, collectors/protocol.py TCPEXT_FIELDS: out-of-order segments queued on a
# multipath fabric, tail-loss probes, reordering seen; none a health finding); the others stay
_TCPEXT_MOVING = {"TCPOFOQueue": 300, "TCPLossProbes": 4, "TCPSACKReorder": 2, "TCPDSACKRecv": 3}


def _moving(text: str, prefix: str, moving: dict[str, int], step: int, w: float) -> str:
    """``text``'s ``prefix`` lines (names, then values) with ``moving``'s counters advanced."""
    lines = text.splitlines(keepends=True)
    for i in range(len(lines) - 1):
        if lines[i].startswith(prefix) and lines[i + 1].startswith(prefix):
            names, values = lines[i].split(), lines[i + 1].split()
            for j, name in enumerate(names):
                if name in moving:
                    values[j] = str(int(values[j]) + moving[name] * step + int(moving[name] * 0.4 * w))
            lines[i + 1] = " ".join(values) + "\n"
            break
    return "".join(lines)


def proc_texts(step: int, wobble: bool = False) -> dict[str, str]:
    """The /proc texts of the node at second ``step``, keyed as collectors.protocol.PROC_FILES.
    Every counter that moves advances by its rate; ``wobble``: plus a wobble (``_wobble``, never
    backwards) and the TcpExt counters of a busy node moving too, as the fake fleet sends them
    (a steady node's every frame alike would flatter what netui keeps from one frame to the next).
    Without it every rate is the same at every step (what the tests that compare two ways of
    reading them need)."""
    s = step
    w = _wobble(s) if wobble else 0.0

    def at(rate: int) -> int:  # a counter moving at ``rate`` a second, wobbling: never backwards
        return rate * s + int(rate * 0.4 * w)

    stat = ["cpu  " + " ".join(str(x * NCPU) for x in (at(3000), 6, at(1100), at(89000), 35, 0, at(400), 0, 0, 0))]
    for c in range(NCPU):
        stat.append(f"cpu{c} {44490 + at(30)} 19 {21045 + at(11)} {1087069 + at(55)} 220 1 {3410 + at(4) + c % 7} 0 0 0")
    header = " " * 20 + "".join(f"CPU{c:<8d}" for c in range(NCPU))
    rows = [header]
    for name in _SOFTIRQ_NAMES:
        base = 55919 if name == "NET_RX" else 2419
        rows.append(f"{name:>12}:" + "".join(f" {base + at((c + 1) * 13):10d}" for c in range(NCPU)))
    stat += ["intr 1 2 3", "ctxt 12345", "btime 1700000000", "processes 100", "procs_running 2", "procs_blocked 0",
             softirq_line(rows)]
    softnet = [
        " ".join(f"{v:08x}" for v in (0x358fe3 + at(900), s // 50, c % 3 * s + (int(2 * w) if c % 3 else 0),
                                      0, 0, 0, 0, 0, 0, 0x855fc, 0x76, 0, c, 0, 0))
        for c in range(NCPU)
    ]
    dev = ["Inter-|   Receive                                                |  Transmit",
           " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed"]
    for i in range(NIFACE):
        rx, tx = 874354587 + i * 10**9 + at(1_250_000_000), 563352563 + at(1_200_000_000)
        dev.append(f"enp{i}s0f0np0: {rx} {rx // 1500} 0 {s // 10} 0 0 0 12 {tx} {tx // 1500} 0 0 0 0 0 0")
    snmp = (FIXTURES / "pid_26231_net" / "snmp").read_text()
    netstat = (FIXTURES / "pid_26231_net" / "netstat").read_text()
    snmp = snmp.replace(" 20 ", f" {20 + s * 3} ")  # move some counters
    if wobble:
        netstat = _moving(netstat, "TcpExt:", _TCPEXT_MOVING, s, w)
    return {
        "net/dev": "\n".join(dev) + "\n",
        "net/snmp": snmp,
        "net/netstat": netstat,
        "stat": "\n".join(stat) + "\n",
        "softirqs": "\n".join(rows) + "\n",
        "net/softnet_stat": "\n".join(softnet) + "\n",
        "boot_id": "697aabc0-ca93-41ab-bd37-3d206273eaad\n",
        "hostname": "gpu001\n",
    }


def softirq_line(rows: list[str]) -> str:
    """The "softirq" line of /proc/stat for these /proc/softirqs rows (header first): the
    kernel's sums over the CPUs, the total first."""
    sums = [sum(map(int, row.partition(":")[2].split())) for row in rows[1:]]
    return "softirq " + " ".join(map(str, [sum(sums)] + sums))


def iface_attrs() -> dict[str, dict[str, str | None]]:
    return {
        f"enp{i}s0f0np0": {"mtu": "9000\n", "speed": "200000\n", "operstate": "up\n", "carrier": "1\n",
                           "ifindex": f"{i + 2}\n", "type": "1\n", "link": f"../../devices/pci0000:00/0000:{i:02x}:00.0/net/enp{i}s0f0np0",
                           "device": "", "bridge": None, "bonding": None}
        for i in range(NIFACE)
    }
