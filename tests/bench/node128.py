"""Texts of a big training node (128 CPUs, 16 interfaces), scaled up from the real fixtures.

Shared by the benchmarks: the layout of every file is the kernel's own; only the number of
rows grows, and counters advance between ``step`` values so rates are real work.
"""

from __future__ import annotations

from tests.testdata import PROCFS, data_path

FIXTURES = data_path(f"{PROCFS}/proc")
NCPU = 128
NIFACE = 16

_SOFTIRQ_NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU")


def proc_texts(step: int) -> dict[str, str]:
    """The /proc texts of the node at second ``step``, keyed as collectors.protocol.PROC_FILES."""
    s = step
    stat = ["cpu  " + " ".join(str(x * NCPU) for x in (3000 * s, 6, 1100 * s, 89000 * s, 35, 0, 400 * s, 0, 0, 0))]
    for c in range(NCPU):
        stat.append(f"cpu{c} {44490 + 30 * s} 19 {21045 + 11 * s} {1087069 + 55 * s} 220 1 {3410 + 4 * s + c % 7} 0 0 0")
    header = " " * 20 + "".join(f"CPU{c:<8d}" for c in range(NCPU))
    rows = [header]
    for name in _SOFTIRQ_NAMES:
        base = 55919 if name == "NET_RX" else 2419
        rows.append(f"{name:>12}:" + "".join(f" {base + (c + 1) * s * 13:10d}" for c in range(NCPU)))
    stat += ["intr 1 2 3", "ctxt 12345", "btime 1700000000", "processes 100", "procs_running 2", "procs_blocked 0",
             softirq_line(rows)]
    softnet = [
        " ".join(f"{v:08x}" for v in (0x358fe3 + 900 * s, s // 50, c % 3 * s, 0, 0, 0, 0, 0, 0, 0x855fc, 0x76, 0, c, 0, 0))
        for c in range(NCPU)
    ]
    dev = ["Inter-|   Receive                                                |  Transmit",
           " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed"]
    for i in range(NIFACE):
        rx, tx = 874354587 + i * 10**9 + s * 1_250_000_000, 563352563 + s * 1_200_000_000
        dev.append(f"enp{i}s0f0np0: {rx} {rx // 1500} 0 {s // 10} 0 0 0 12 {tx} {tx // 1500} 0 0 0 0 0 0")
    snmp = (FIXTURES / "pid_26231_net" / "snmp").read_text()
    netstat = (FIXTURES / "pid_26231_net" / "netstat").read_text()
    snmp = snmp.replace(" 20 ", f" {20 + s * 3} ")  # move some counters
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
