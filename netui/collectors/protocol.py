"""The wire protocol of the remote sampler: what the sampler on a node and the monitor must
agree on, declared once (the spec: docs/protocol.md).

collectors/ssh.py ships this text in front of the sampler's source to every node, so it is
Python 3.6, standard library only, constants only, and imports nothing from netui.
"""
import struct

VERSION = 2
MAGIC = b"NETUI2 "  # a frame: MAGIC, the payload's length in ASCII digits, b"\n", the payload
MAX_FRAME = 4 << 20  # the longest payload the monitor takes (a 1,024-CPU node sends < 1 MiB)
MAX_FIELDS = 16384  # the most fields a payload may hold (one per interface, RDMA port, netdev ...)
MAX_IFACES = 4096  # the interfaces the monitor keeps of a node (the first ones of /proc/net/dev)
MAX_RECORD_LINES = 4096  # the most lines of one record's text (an RDMA port has ~100 counters)
ETHTOOL_MAX_BYTES = 4 << 20  # more output than this is not ethtool -S: that run is dropped (sampler, local mode)

# key -> path under /proc: the files a sample is made of
PROC_FILES = {
    "net/dev": "net/dev",
    "net/snmp": "net/snmp",
    "net/netstat": "net/netstat",
    "stat": "stat",
    "softirqs": "softirqs",
    "net/softnet_stat": "net/softnet_stat",
    "boot_id": "sys/kernel/random/boot_id",
    "hostname": "sys/kernel/hostname",
}

# inside a record: fields joined by SEP, UNREADABLE for a file that could not be read
SEP = b"\x1f"
UNREADABLE = b"\x1e"

# fields whose values are bytes of little-endian number arrays, not text
TABLES = ("cpu", "netirq", "netdev", "softnet", "tcp", "cpusum")
# the per-CPU files, in the order the sampler reads them (stat first: its softirq line)
PERCPU = ("stat", "softirqs", "net/softnet_stat")
# record kinds: "if/<name>", "ib/<hca>/<port>", "ibd/<hca>", "ibn/<hca>", "eth/<netdev>"
RECORDS = ("if/", "ib/", "ibd/", "ibn/", "eth/")

# an interface record "if/<name>": these sysfs attributes, the class symlink, the markers
IFACE_ATTRS = ("mtu", "operstate", "carrier", "speed", "ifindex", "type")
IFACE_MARKERS = ("bridge", "bonding", "device")
IFACE_FIELDS = IFACE_ATTRS + ("link",) + IFACE_MARKERS

# "cpusum": a mask of what it holds (SUM_*), then the sums (see samples.CpuSums)
CPUSUM = struct.Struct("<10Qd")
SUM_STAT, SUM_IRQ, SUM_SOFTNET, SUM_HOT = 1, 2, 4, 8

# The TcpExt counters netui keeps: retransmission, loss recovery, receive-side drops.
# (Kernels name and order them differently; missing ones are simply absent.)
TCPEXT_FIELDS = frozenset((
    "TCPLostRetransmit", "TCPFastRetrans", "TCPSlowStartRetrans", "TCPTimeouts", "TCPSynRetrans",
    "TCPRetransFail", "TCPLossProbes", "TCPLossProbeRecovery", "TCPSpuriousRTOs",
    "TCPSpuriousRtxHostQueues", "TCPLossUndo", "TCPSackRecovery", "TCPRenoRecovery",
    "TCPForwardRetrans", "TCPLoss", "TCPAbortOnTimeout", "TCPDSACKRecv", "TCPDSACKRecvSegs",
    "TCPDSACKOldSent", "TCPSACKReorder", "TCPOFOQueue", "TCPOFODrop", "TCPRcvQDrop",
    "TCPBacklogDrop", "TCPZeroWindowDrop", "TCPRcvCollapsed", "ListenOverflows", "ListenDrops",
    "TCPMemoryPressures", "TCPAbortOnMemory", "PruneCalled",
))

# an RDMA port record "ib/<hca>/<port>": these attributes, then three blocks of counter lines
PORT_ATTRS = ("state", "phys_state", "rate", "link_layer")
# RDMA counter names sent as their index (a port has ~60 counters; names are most of the
# bytes). Append only: the monitor decodes with this same tuple (it ships this file to the node).
IB_NAMES = (
    "symbol_error", "port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_discards", "VL15_dropped", "link_error_recovery", "link_downed", "port_xmit_constraint_errors",
    "port_rcv_constraint_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
    "port_xmit_wait", "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
    "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets",
    "lifespan", "rx_write_requests", "rx_read_requests", "rx_atomic_requests", "rx_dct_connect",
    "out_of_buffer", "out_of_sequence", "duplicate_request", "rnr_nak_retry_err", "packet_seq_err",
    "implied_nak_seq_err", "local_ack_timeout_err", "resp_local_length_error", "resp_cqe_error",
    "req_cqe_error", "req_remote_invalid_request", "req_remote_access_errors", "resp_remote_access_errors",
    "resp_cqe_flush_error", "req_cqe_flush_error", "roce_adp_retrans", "roce_adp_retrans_to",
    "roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans", "rp_cnp_ignored",
    "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent", "rx_icrc_encapsulated",
)

# ethtool -S names of per-queue/per-channel counters (mlx5 rx0_packets/ch0_events, virtio
# rx_queue_0_packets, bnx2x "[0]: ...", be2net "rxq0: ..."): left on the node, and dropped
# by the monitor's own parser by the same rule
PER_QUEUE_PATTERN = r"^(?:\[\d+\]: |(?:rx|tx)q\d+: |(?:rx|tx|ch|rq|sq|xdp)\d+_|(?:rx|tx)_queue_\d+_|queue_\d+_)"

# "peers": the node's TCP sockets from sock_diag, summed by remote address (docs/protocol.md#peers).
# A head, then PEER_ROW per peer (top by bytes), then PEER_ADDR per local address seen.
# head: status (PEERS_*), flags (PEERS_CAPPED: the dump was cut at the socket cap), errno
# when unavailable, sockets read, peers seen before the top-N cut, rows, local addresses,
# CLOCK_MONOTONIC of the reading (a frame between two readings repeats the last one)
PEER_HEAD = struct.Struct("<BBHIIIId")
# a peer: family (2 AF_INET, 10 AF_INET6), sockets, address (16 bytes: IPv4 in the first
# four), then running sums since the sampler started: bytes acked (sent), bytes received,
# segments retransmitted; then gauges: summed delivery rate (bytes/s) of the sockets that
# sent, smoothed RTT (µs, weighted by the bytes each socket moved), the largest RTT (µs)
PEER_ROW = struct.Struct("<B3xI16sQQQQII")
PEER_ADDR = struct.Struct("<B3x16s")
PEERS_OK, PEERS_UNAVAILABLE = 0, 1
PEERS_CAPPED = 1
MAX_PEERS = 32  # peers sent per node (top by bytes moved since the last reading)
MAX_SOCKETS = 4096  # sockets read per reading: the dump is cut beyond
MAX_LOCAL_ADDRS = 32  # local addresses sent (the monitor maps peers to nodes by them)

# The probe mesh (docs/protocol.md#mesh): every node probes its peers over UDP at a low rate and
# answers their probes. A probe and its answer are one MESH_PACKET each, the same size (never an
# amplifier): magic, the monitor's session token (16 bytes: a node answers only probes that carry
# it, from a peer on the list the monitor gave it), the prober's sequence number, and the
# prober's CLOCK_MONOTONIC in ns, echoed (RTT on the prober's own clock: no clock ever compared).
MESH_QUERY, MESH_ANSWER = b"NUq1", b"NUa1"
MESH_PACKET = struct.Struct("<4s16sIQ")
# "mesh": a head, then per peer whose probes settled since the last frame a MESH_ROW followed by
# `answered` u32 RTTs (µs, at most MESH_MAX_RTTS a row: the rest counted, not listed).
# head: status (MESH_*), errno when unavailable, the UDP port it answers on, peers on its list,
# probes answered for peers, probes refused (no token, a stranger, not a probe), rows,
# CLOCK_MONOTONIC of the frame; then the address the node was reached at (SSH_CONNECTION's
# server address, the one its peers are told to probe; family 0: unknown) as family, 16 bytes
MESH_HEAD = struct.Struct("<BxHHxxIIIIdB3x16s")
# a peer: family (2, 10), address (16 bytes, IPv4 in the first four), its port, probes answered
# and lost (no answer within MESH_TIMEOUT_S) since the last frame, RTTs listed
MESH_ROW = struct.Struct("<B3x16sHHHH")
MESH_ON, MESH_UNAVAILABLE = 0, 1
MESH_TIMEOUT_S = 2.0  # a probe not answered by then is lost (a late answer is not counted)
MESH_GRACE_S = 1.0  # no probe this long after new peers: their lists of this node are on the way
MESH_MAX_PEERS = 4096  # peers a node takes (the monitor gives at most this many)
MESH_MAX_RTTS = 64  # RTTs listed per peer per frame
MESH_ANSWERS_PER_S = 2000  # answers a node sends per second, at most, whoever asks
