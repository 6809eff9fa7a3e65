"""Writes the SYNTHETIC fabric trees next to this file (run: python make_trees.py).

Nothing here was captured from a machine: the values are made up to exercise the traps
described in shared/reference/network-facts.md, sections B and C. Layout and formats follow
the kernel's sysfs.c / mlx5 en_stats.c format strings as quoted there.

node-t0/ and node-t1/ are the same made-up node one second apart (sys/class/infiniband):

- mlx5_0 port 1: RoCE, extended counters, hw_counters with congestion counters; the 32-bit
  q-counter out_of_sequence wraps (4294967000 → 704: +1000); paired with enp1s0f0np0 on the
  PCI function (dev_id 0x0, dev_port 0); GIDs 0..3 (RoCE v1/v2 pairs).
- mlx5_1 port 1: RoCE, ACTIVE at t0, DOWN / Polling at t1.
- mlx4_0 ports 1 and 2: InfiniBand, legacy 32-bit PortCounters (no unicast_*, all values
  below 2**32). Port 1: symbol_error (16-bit) reaches 65535 and port_xmit_data (32-bit)
  reaches 4294967295 at t1 -> saturated. PCI function netdevs: ib0 (dev_id 0x0), ib1
  (dev_id 0x1) and the IPoIB child ib0.8001 (dev_id 0x0).
- i40iw0 port 1: iWARP with an old kernel: every counters/ file reads "N/A (no PMA)".

ethtool-S_mlx5_pfc_t0.txt / _t1.txt: "ethtool -S" of enp1s0f0np0 with PFC on priority 3
(and global pause off, so no rx_global_pause lines), header and 5-space indentation as
ethtool prints them. ethtool-S_queue_prefixes.txt: bnx2x/be2net-style "[0]: " and "rxq0: "
prefixed names plus junk lines.
"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent

IBA_ERRORS = (
    "symbol_error", "port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_discards", "VL15_dropped", "link_error_recovery", "link_downed",
    "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def port(root: Path, hca: str, n: int, *, state: str, phys: str, rate: str, layer: str,
         counters: dict[str, object], hw: dict[str, int] | None = None, gids: dict[int, tuple[str, str]] | None = None):
    base = f"sys/class/infiniband/{hca}/ports/{n}"
    write(root, f"{base}/state", state)
    write(root, f"{base}/phys_state", phys)
    write(root, f"{base}/rate", rate)
    write(root, f"{base}/link_layer", layer)
    for name, value in counters.items():
        write(root, f"{base}/counters/{name}", str(value))
    if hw is not None:
        write(root, f"{base}/hw_counters/lifespan", "10")
        for name, value in hw.items():
            write(root, f"{base}/hw_counters/{name}", str(value))
    for index, (gid_type, ndev) in (gids or {}).items():
        write(root, f"{base}/gid_attrs/types/{index}", gid_type)
        write(root, f"{base}/gid_attrs/ndevs/{index}", ndev)


def netdev(root: Path, hca: str, name: str, dev_id: str, dev_port: int) -> None:
    # real trees reach device/ through a symlink to the PCI device; a plain dir reads the same
    write(root, f"sys/class/infiniband/{hca}/device/net/{name}/dev_id", dev_id)
    write(root, f"sys/class/infiniband/{hca}/device/net/{name}/dev_port", str(dev_port))


def node(t: int) -> None:
    root = HERE / f"node-t{t}"
    if root.exists():
        shutil.rmtree(root)
    errors0 = dict.fromkeys(IBA_ERRORS, 0)
    # mlx5_0: RoCE, busy, 64-bit; out_of_sequence wraps
    port(root, "mlx5_0", 1, state="4: ACTIVE", phys="5: LinkUp", rate="100 Gb/sec (4X EDR)", layer="Ethernet",
         counters=errors0 | {
             "port_xmit_data": 5_000_000_000_000 + t * 2_500_000_000,  # +2.5e9 words = 80 Gbit/s
             "port_rcv_data": 4_000_000_000_000 + t * 1_250_000_000,  # 40 Gbit/s
             "port_xmit_packets": 10_000_000_000 + t * 2_400_000,
             "port_rcv_packets": 9_000_000_000 + t * 1_200_000,
             "unicast_xmit_packets": 10_000_000_000 + t * 2_400_000,
             "unicast_rcv_packets": 9_000_000_000 + t * 1_200_000,
             "multicast_xmit_packets": 0, "multicast_rcv_packets": 0,
             "port_xmit_wait": 1_000_000 + t * 5_000,
         } | {"symbol_error": 3 + t * 2, "link_downed": 1},
         hw={
             "out_of_sequence": [4294967000, 704][t],
             "packet_seq_err": 10 + t * 7,
             "local_ack_timeout_err": 2,
             "out_of_buffer": 0,
             "rnr_nak_retry_err": 0,
             "np_cnp_sent": 5_000_000_000 + t * 300,
             "rp_cnp_handled": 7_000_000_000 + t * 120,
             "np_ecn_marked_roce_packets": 6_000_000_000 + t * 310,
             "rp_cnp_ignored": 0,
             "rx_icrc_encapsulated": 0,
         },
         gids={0: ("IB/RoCE v1", "enp1s0f0np0"), 1: ("RoCE v2", "enp1s0f0np0"),
               2: ("IB/RoCE v1", "enp1s0f0np0"), 3: ("RoCE v2", "enp1s0f0np0")})
    netdev(root, "mlx5_0", "enp1s0f0np0", "0x0", 0)
    # mlx5_1: goes down
    port(root, "mlx5_1", 1, state=["4: ACTIVE", "1: DOWN"][t], phys=["5: LinkUp", "2: Polling"][t],
         rate="100 Gb/sec (4X EDR)", layer="Ethernet",
         counters=errors0 | {"port_xmit_data": 100 + t, "port_rcv_data": 100 + t, "port_xmit_packets": 10,
                             "port_rcv_packets": 10, "unicast_xmit_packets": 10, "unicast_rcv_packets": 10,
                             "port_xmit_wait": 0, "link_downed": t},
         hw={"out_of_sequence": 0, "np_cnp_sent": 0, "rp_cnp_handled": 0})
    netdev(root, "mlx5_1", "enp1s0f1np1", "0x0", 0)
    # mlx4_0: legacy 32-bit PortCounters, two ports
    port(root, "mlx4_0", 1, state="4: ACTIVE", phys="5: LinkUp", rate="40 Gb/sec (4X QDR)", layer="InfiniBand",
         counters=errors0 | {
             "symbol_error": [65000, 65535][t],
             "port_xmit_data": [4_294_000_000, 4_294_967_295][t],
             "port_rcv_data": 1_000_000 + t * 500_000_000,  # 16 Gbit/s
             "port_xmit_packets": 2_000_000 + t * 1000,
             "port_rcv_packets": 3_000_000 + t * 1000,
             "port_xmit_wait": 7,
         })
    port(root, "mlx4_0", 2, state="4: ACTIVE", phys="5: LinkUp", rate="40 Gb/sec (4X QDR)", layer="InfiniBand",
         counters=errors0 | {"port_xmit_data": 1000, "port_rcv_data": 1000, "port_xmit_packets": 10,
                             "port_rcv_packets": 10, "port_xmit_wait": 0})
    netdev(root, "mlx4_0", "ib0", "0x0", 0)
    netdev(root, "mlx4_0", "ib0.8001", "0x0", 0)
    netdev(root, "mlx4_0", "ib1", "0x1", 0)
    # i40iw0: "N/A (no PMA)"
    port(root, "i40iw0", 1, state="4: ACTIVE", phys="5: LinkUp", rate="10 Gb/sec (4X)", layer="Ethernet",
         counters=dict.fromkeys(IBA_ERRORS + ("port_xmit_data", "port_rcv_data", "port_xmit_packets",
                                              "port_rcv_packets", "port_xmit_wait"), "N/A (no PMA)"))


def ethtool_text(t: int) -> str:
    lines = ["NIC statistics:"]
    stats: list[tuple[str, int]] = [
        ("rx_packets", 845320277 + t * 1000), ("rx_bytes", 2195783498134 + t * 1_000_000),
        ("rx_out_of_buffer", 12 + t * 3),
        ("rx_pause_ctrl_phy", 500 + t * 150), ("tx_pause_ctrl_phy", 40 + t * 20),
        ("rx_discards_phy", 9 + t * 4), ("tx_discards_phy", 0),
    ]
    for p in range(8):
        stats += [(f"rx_prio{p}_bytes", 1000 * p), (f"rx_prio{p}_packets", 10 * p),
                  (f"tx_prio{p}_bytes", 1000 * p), (f"tx_prio{p}_packets", 10 * p)]
        if p == 3:  # PFC on priority 3 only: en_stats.c prints pause counters for it alone
            stats += [(f"rx_prio{p}_pause", 500 + t * 150), (f"rx_prio{p}_pause_duration", 80_000 + t * 250_000),
                      (f"tx_prio{p}_pause", 40 + t * 20), (f"tx_prio{p}_pause_duration", 3_000 + t * 10_000),
                      (f"rx_prio{p}_pause_transition", 200 + t * 60)]
    stats += [("tx_pause_storm_warning_events", 0), ("tx_pause_storm_error_events", 0)]
    lines += [f"     {name}: {value}" for name, value in stats]
    return "\n".join(lines) + "\n"


QUEUE_PREFIXES = """\
NIC statistics:
     [0]: rx_bytes: 1234
     [0]: rx_ucast_packets: 12
     [1]: rx_bytes: 5678
     rxq0: rx_bytes: 42
     rx_bytes: 6912
     tx_errors: 0
     rx_csum_offload_errors: 3
     link_mode: full duplex
     bogus line without a separator
     truncated_last_l"""


def main() -> None:
    for t in (0, 1):
        node(t)
        (HERE / f"ethtool-S_mlx5_pfc_t{t}.txt").write_text(ethtool_text(t))
    (HERE / "ethtool-S_queue_prefixes.txt").write_text(QUEUE_PREFIXES)


if __name__ == "__main__":
    main()
