# netui remote sampler. Sent to each node as `python3 -c <this file> INTERVAL`; nothing is
# written on the node. Python 3.6+ standard library only.
#
# Every INTERVAL seconds it reads the node's /proc and /sys counters and writes one frame to
# stdout:   b"NETUI2 <length>\n" + payload
# payload:  fields, one after the other: key NUL <value length: u32, little-endian> value
#           (keys as in collectors/assemble.py; a file that cannot be read is left out)
# It sends only what the monitor uses, and big tables of numbers as little-endian u64 or
# u32 arrays ("u64s", "u32s"), which the monitor takes as they are instead of parsing text
# number by number (a 1,024-node fleet is a million numbers a second):
#   "cpusum"   what the grid needs of the three per-CPU files below, summed on the node:
#              see CPUSUM. Every frame has it.
#   "cpu"      /proc/stat summed per CPU: u64s of (CPU, SOFTIRQ, TOTAL) triples
#   "netirq"   the NET_RX and NET_TX rows of /proc/softirqs: u32s of (CPU, NET_RX, NET_TX)
#              (the kernel's counters are u32: a value that is not goes as raw text)
#   "softnet"  softnet_stat cut to PROCESSED DROPPED SQUEEZE CPU per row: u32s (the
#              kernel's columns are 8 hex digits)
#              These three per-CPU tables go only while the monitor asks for them (a node
#              screen is open, a recording runs): a 128-CPU node's are two thirds of the
#              monitor's work on its frame, and the grid needs a handful of their numbers.
#   "netdev"   /proc/net/dev: interface names (space-separated), a newline, then u64s of
#              their 16 counters each
#   "tcp"      the Tcp counters of snmp and the TcpExt counters of netstat netui keeps:
#              their names (one line each), then i64s of the Tcp values and u64s of the
#              TcpExt ones (when they do not read as expected: the Tcp lines of snmp and
#              the cut TcpExt lines of netstat, as "net/snmp" and "net/netstat")
# A table that does not read as the kernel writes it goes as its raw text under its own
# key ("net/dev", "stat", "softirqs", "net/softnet_stat"), and the monitor's careful
# parsers take it.
# An interface's sysfs texts go as one record, "if/<name>", fields in
# assemble.PACKED_ATTRS order joined by \x1f, \x1e for an unreadable one. They are read
# every frame, but sent only when one of them changed since the last frame: otherwise the
# frame says "ifsame" and the monitor keeps the records it has (the channel is one ordered
# stream, and a new sampler starts with them all). Files stay open between samples (pread
# at offset 0 makes the kernel produce them afresh): no fork, no open/close.
#
# RDMA (only where <sysfs>/class/infiniband exists; a node without it costs one listdir
# every LAYOUT_S):
# per port "ib/<hca>/<port>", fields joined by \x1f: state, phys_state, rate, link_layer
# (\x1e when unreadable), then counters/, hw_counters/ and the gid_attrs/ndevs fallback as
# "CODE VALUE" lines (CODE: the index of the name in IB_NAMES, or "=name" for a name not
# there; values as sysfs prints them, "N/A (no PMA)" included). "ibd/<hca>": device-level
# hw_counters, same lines. "ibn/<hca>": the PCI function's netdevs, "NAME DEV_ID DEV_PORT"
# lines ("-" when unreadable). The tree's layout is listed again every LAYOUT_S seconds or
# when the HCAs change; between, only the counter files are read.
# ethtool -S of the netdevs paired with ports (not VLAN/IPoIB children, not the VF
# representors of a switchdev PCI function), every ETHTOOL_S seconds and only where an
# ethtool binary exists: "eth/<netdev>" = its "name: value" lines without the per-queue ones
# (PER_QUEUE), "ethmono" = CLOCK_MONOTONIC when they were started. These are the sampler's
# only forks. The runs start together and are never waited for: their output is read
# between frames and goes out in the first frame after they all ended, or after
# ETHTOOL_BUDGET_S when one hangs (it is killed, and its netdev skipped for BACKOFF_S,
# doubling); the next reading is due ETHTOOL_S after that. Frames keep their interval.
#
# Usage: python3 -c <this file> INTERVAL [--sysfs ROOT] [--ethtool-every SECONDS] [--detail]
#
# stdin: "i SECONDS" changes the interval; "d 1" / "d 0" starts / stops the per-CPU tables
# (--detail: from the first frame); end of file (the SSH channel closed) ends the
# sampler at once, and so does a failed write: no sampler outlives its connection.
import array
import errno
import operator
import os
import re
import select
import stat
import struct
import sys
import time

PROC = {
    "net/dev": "/proc/net/dev",
    "net/snmp": "/proc/net/snmp",
    "net/netstat": "/proc/net/netstat",
    "stat": "/proc/stat",
    "softirqs": "/proc/softirqs",
    "net/softnet_stat": "/proc/net/softnet_stat",
    "boot_id": "/proc/sys/kernel/random/boot_id",
    "hostname": "/proc/sys/kernel/hostname",
}
ATTRS = ("mtu", "operstate", "carrier", "speed", "ifindex", "type")  # then link, markers
MARKERS = ("bridge", "bonding", "device")
NONE = b"\x1e"
# == collectors.assemble.TCPEXT_FIELDS (a test holds them equal)
TCPEXT = frozenset((
    b"TCPLostRetransmit", b"TCPFastRetrans", b"TCPSlowStartRetrans", b"TCPTimeouts", b"TCPSynRetrans",
    b"TCPRetransFail", b"TCPLossProbes", b"TCPLossProbeRecovery", b"TCPSpuriousRTOs",
    b"TCPSpuriousRtxHostQueues", b"TCPLossUndo", b"TCPSackRecovery", b"TCPRenoRecovery",
    b"TCPForwardRetrans", b"TCPLoss", b"TCPAbortOnTimeout", b"TCPDSACKRecv", b"TCPDSACKRecvSegs",
    b"TCPDSACKOldSent", b"TCPSACKReorder", b"TCPOFOQueue", b"TCPOFODrop", b"TCPRcvQDrop",
    b"TCPBacklogDrop", b"TCPZeroWindowDrop", b"TCPRcvCollapsed", b"ListenOverflows", b"ListenDrops",
    b"TCPMemoryPressures", b"TCPAbortOnMemory", b"PruneCalled",
))
BIG = sys.byteorder == "big"
U32 = "I" if array.array("I").itemsize == 4 else "L"
U64_MAX = (1 << 64) - 1
SYS = "/sys"
MAX_FDS = 400  # files kept open (pread); beyond, open/read/close: stay far below ulimit -n
fds = {}
facts = {}  # interface name -> (ifindex text, read at, [link, markers]): see iface_facts
iface_paths = {}  # an interface name (bytes) -> (name, its sysfs dir, its attribute paths, its record key)
KEEP_ON_ERROR = (errno.EINVAL, errno.ENODATA, errno.EOPNOTSUPP, errno.EBUSY)  # the file is there
tcpext_cut = {}  # TcpExt names (the line without its prefix) -> (names kept, joined; their
# positions; an itemgetter of them; the number of names): see tcp_table
sizes = {}  # path -> bytes to ask for in one read (see read_all); 8 KB when not here
# files the kernel writes in one read (sysctl values: a read of N bytes makes it allocate N)
ONE_READ = ("boot_id", "hostname")

# counter names sent as their index (a port has ~60 counters; names are most of the bytes).
# Append only: the monitor decodes with the same tuple (it sends this file to the node).
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
IB_CODE = dict((n, ("%d" % i).encode()) for i, n in enumerate(IB_NAMES))
PORT_ATTRS = ("state", "phys_state", "rate", "link_layer")
MAX_DIR = 512  # more entries than this is not a counters directory
MAX_HCAS = 64
MAX_GIDS = 4  # the pairing fallback needs the first GIDs only
LAYOUT_S = 30.0
ETHTOOL_S = 5.0
# a sysfs name that may travel in a frame: printable ASCII, no space (a file named with a
# separator, a newline or bytes that are not UTF-8 is left out, not sent); a port or index: digits
NAME = re.compile(r"[!-~]{1,255}\Z")
DIGITS = re.compile(r"[0-9]{1,6}\Z")
NETDEV_NAME = re.compile(rb"^ *([^ :\n]+):", re.M)  # the name at the start of a /proc/net/dev line
# ethtool -S names of per-queue/per-channel counters (most of a multi-queue NIC's output)
PER_QUEUE = re.compile(
    rb"^(?:\[\d+\]: |(?:rx|tx)q\d+: |(?:rx|tx|ch|rq|sq|xdp)\d+_|(?:rx|tx)_queue_\d+_|queue_\d+_)")
ib = {"hcas": None, "at": 0.0, "ports": [], "devices": [], "netdevs": [], "absent_until": 0.0}
ETHTOOL_BUDGET_S = 2.0  # a reading's whole time: a run not done by then is killed
ETHTOOL_MAX_BYTES = 4 << 20  # more output than this is not ethtool -S: that run is dropped
BACKOFF_S = (30.0, 600.0)  # a netdev whose run timed out is skipped this long, doubling
# runs: [Run] in flight (started at "mono"); backoff: netdev -> (skip until, last pause);
# killed: runs killed but not yet reaped (a process stuck in the kernel dies when it returns)
ethtool = {"path": False, "due": 0.0, "runs": [], "mono": 0.0, "deadline": 0.0, "backoff": {}, "killed": []}


def read(path, one=False):
    """The file's bytes (None when unreadable); ``one``: a sysfs attribute, one short read."""
    fd = fds.get(path)
    try:
        if fd is None:
            # not blocking in open(), and regular files only (as procfs and sysfs files
            # are): a FIFO in a copied tree would block the sampler until a writer came
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError("not a regular file")
            if len(fds) < MAX_FDS:
                fds[path] = fd
            else:
                try:
                    return os.read(fd, 4096) if one else read_all(fd, path)
                finally:
                    os.close(fd)
        if one:
            return os.pread(fd, 4096, 0)
        return read_all(fd, path)
    except OSError as exc:
        if fd is not None and one and exc.errno in KEEP_ON_ERROR and fds.get(path) == fd:
            return None  # (speed of a link that is down): the same file answers when it is up
        if fd is not None:
            fds.pop(path, None)
            try:
                os.close(fd)
            except OSError:
                pass
        return None


def iface_facts(name, base, ifindex, now):
    """What the class symlink points to and which markers exist: fixed for an interface,
    so read again only every LAYOUT_S seconds or when its ifindex changed (made anew)."""
    known = facts.get(name)
    if known is not None and known[0] == ifindex and now - known[1] <= LAYOUT_S:
        return known[2]
    try:
        fields = [os.readlink(base[:-1]).encode()]
    except OSError:
        fields = [NONE]
    for marker in MARKERS:
        fields.append(b"" if os.path.exists(base + marker) else NONE)
    if len(facts) > 4 * MAX_FDS:
        facts.clear()
    facts[name] = (ifindex, now, fields)
    return fields


def read_all(fd, path):
    """The whole file, from offset 0. The reads ask for about what the file held last time:
    a 256 KB read costs the kernel and python3 more than the file's own few KB do."""
    size = sizes.get(path, 8192)
    chunks = []
    offset = 0
    while True:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    if offset > size:  # (a file that grew: the next reading asks for enough at once)
        if len(sizes) > 4 * MAX_FDS:
            sizes.clear()
        sizes[path] = min(offset + (offset >> 2) + 4096, 1 << 22) & ~4095
    return b"".join(chunks) if len(chunks) != 1 else chunks[0]


def lines_with(data, prefixes):
    return b"".join(line for line in data.splitlines(True) if line.startswith(prefixes))


def u64s(values):
    a = array.array("Q", values)
    if BIG:
        a.byteswap()
    return a.tobytes()


def u32s(a):
    """A U32 array as little-endian u32 values."""
    if BIG:
        a.byteswap()
    return a.tobytes()


def pack_fields(out):
    """[key, value, key, value, ...] as a frame's payload."""
    parts = []
    for i in range(0, len(out), 2):
        value = out[i + 1]
        parts += (out[i], b"\0", struct.pack("<I", len(value)), value)
    return b"".join(parts)


def stat_columns(data):
    """(cpus, softirq, total) of the cpuN lines of /proc/stat; total = user..steal (guest
    is inside user/nice). None when a line is not numbers: the monitor parses the text."""
    start = data.find(b"\ncpu")
    if start < 0:
        return None
    end = data.find(b"\n", data.rfind(b"\ncpu") + 1)
    block = data[start + 1:] if end < 0 else data[start + 1:end]  # the cpuN lines
    lines = block.count(b"\n") + 1
    if lines < 12:  # a few CPUs: line by line costs less
        return stat_lines(data)
    f = block.split()
    k = len(f) // lines
    if lines * k == len(f) and k >= 8 and all(x.startswith(b"cpu") for x in f[0::k]):
        # every line alike (as the kernel writes them): column by column, in C
        try:
            cpus = [int(x[3:]) for x in f[0::k]]
            cols = [list(map(int, f[j::k])) for j in range(1, min(k, 9))]
        except ValueError:
            return None
        if min(map(min, cols)) < 0:
            return None
        soft = cols[6] if len(cols) > 6 else [0] * lines
        return cpus, soft, list(map(sum, zip(*cols)))
    return stat_lines(data)


def stat_lines(data):
    """stat_columns line by line (lines of different lengths)."""
    cpus, soft, total = [], [], []
    for line in data.split(b"\n")[1:]:
        if not line.startswith(b"cpu"):
            break
        f = line.split()
        try:
            v = list(map(int, f[1:9]))
            cpus.append(int(f[0][3:]))
        except ValueError:
            return None
        if not v or min(v) < 0:
            return None
        soft.append(v[6] if len(v) > 6 else 0)
        total.append(sum(v))
    return (cpus, soft, total) if cpus else None


def cpu_pack(cols):
    """u64s of (CPU, SOFTIRQ, TOTAL) triples."""
    cpus, soft, total = cols
    out = [0] * (3 * len(cpus))
    out[0::3], out[1::3], out[2::3] = cpus, soft, total
    return u64s(out)


def netirq_columns(data):
    """(cpus, NET_RX, NET_TX) of /proc/softirqs; None when it is not as expected (the
    kernel's counters are u32: a value that is not goes as raw text)."""
    lines = data.split(b"\n")
    try:
        cpus = [int(label[3:]) for label in lines[0].split()]
        rows = {}
        for line in lines[1:]:
            name, _, rest = line.partition(b":")
            name = name.strip()
            if name in (b"NET_RX", b"NET_TX"):
                rows[name] = list(map(int, rest.split()))
        rx, tx = rows[b"NET_RX"], rows[b"NET_TX"]
    except (ValueError, KeyError):
        return None
    if not cpus or len(rx) != len(cpus) or len(tx) != len(cpus):
        return None
    if min(rx) < 0 or min(tx) < 0 or max(rx) > 0xFFFFFFFF or max(tx) > 0xFFFFFFFF:
        return None
    return cpus, rx, tx


def netirq_pack(cols):
    """u32s of (CPU, NET_RX, NET_TX) triples."""
    cpus, rx, tx = cols
    out = [0] * (3 * len(cpus))
    out[0::3], out[1::3], out[2::3] = cpus, rx, tx
    try:
        return u32s(array.array(U32, out))
    except OverflowError:  # a CPU number above 32 bits
        return None


def netdev_table(data):
    """(interface names, their 16 counters each as u64s) of /proc/net/dev; None when a line
    is odd. Column by column when every line is as the kernel writes it."""
    parts = data.split(b"\n", 2)
    if len(parts) < 3:
        return None
    body = parts[2]
    n = body.count(b"\n")
    f = body.replace(b":", b" ").split()  # (a name never holds ":"; a wide counter abuts it)
    names = None
    if n and len(f) == 17 * n and body.count(b":") == n and body.endswith(b"\n"):
        names = f[0::17]
        if NETDEV_NAME.findall(body) == names:  # each line's own name: no line short or long
            del f[0::17]
        else:
            names = None
    if names is None:  # line by line: blank lines skipped, an odd one refused
        names, f = [], []
        for line in body.split(b"\n"):
            if not line.strip():
                continue
            name, sep, rest = line.partition(b":")
            name = name.strip()
            v = rest.split()
            if not sep or not name or len(v) != 16:
                return None
            names.append(name)
            f += v
    if not names:
        return None
    try:
        a = array.array("Q", map(int, f))  # a negative value is odd too
    except (ValueError, OverflowError):
        return None
    if BIG:
        a.byteswap()
    return names, b" ".join(names) + b"\n" + a.tobytes()


def netdev_names(data):
    """The interface names of a /proc/net/dev that netdev_table refused."""
    return [line.partition(b":")[0].strip() for line in data.split(b"\n")[2:] if b":" in line]


def tcpext_lines(data):
    """The TcpExt name and value lines, cut to the fields netui keeps."""
    pair = [line for line in data.split(b"\n") if line.startswith(b"TcpExt:")]
    if len(pair) != 2:
        return b"".join(line + b"\n" for line in pair)
    names = pair[0].split()[1:]
    keep = [i for i, n in enumerate(names) if n in TCPEXT]
    cut = (b" ".join(names[i] for i in keep), keep)
    values = pair[1].split()[1:]
    try:
        kept = b" ".join(values[i] for i in cut[1])
    except IndexError:
        return pair[0] + b"\n" + pair[1] + b"\n"  # a torn pair: the monitor judges it
    return b"TcpExt: " + cut[0] + b"\nTcpExt: " + kept + b"\n"


def line_pair(data, prefix):
    """The two lines that start with ``prefix``, without it; None unless there are exactly
    two lines that start with it even without its space, one after the other (and no
    carriage return, which the careful path would take as a line break)."""
    bare = prefix.rstrip()
    i = 0 if data.startswith(bare) else data.find(b"\n" + bare) + 1
    if (i == 0 and not data.startswith(bare)) or not data.startswith(prefix, i) or b"\r" in data:
        return None
    j = data.find(b"\n", i)
    k = data.find(b"\n", j + 1)
    if j < 0 or k < 0 or not data.startswith(prefix, j + 1) or data.find(b"\n" + bare, k) >= 0:
        return None
    n = len(prefix)
    return data[i + n:j], data[j + 1 + n:k]


def tcp_table(snmp, netstat):
    """tcp_summary's table straight from the two files, as the kernel writes them (their
    Tcp and TcpExt lines found, not every line split); None otherwise: the careful path."""
    tcp = line_pair(snmp, b"Tcp: ")
    ext = line_pair(netstat, b"TcpExt: ")
    if tcp is None or ext is None:
        return None
    cut = tcpext_cut.get(ext[0])
    if cut is None:
        names = ext[0].split()
        keep = [i for i, name in enumerate(names) if name in TCPEXT]
        if not keep:
            return None
        cut = tcpext_cut[ext[0]] = (b" ".join(names[i] for i in keep), keep, operator.itemgetter(*keep), len(names))
        if len(tcpext_cut) > 8:
            tcpext_cut.clear()
    values = ext[1].split()
    tn, tv = tcp[0].split(), tcp[1].split()
    if len(values) != cut[3] or not tn or len(tn) != len(tv):
        return None
    kept = cut[2](values)
    try:
        t = array.array("q", map(int, tv))
        e = array.array("Q", map(int, kept) if len(cut[1]) > 1 else (int(kept),))
    except (ValueError, OverflowError):
        return None
    if BIG:
        t.byteswap()
        e.byteswap()
    return b" ".join(tn) + b"\n" + cut[0] + b"\n" + t.tobytes() + e.tobytes()


def tcp_summary(snmp, netstat):
    """The Tcp counters' names, a newline, the kept TcpExt counters' names, a newline, then
    their values: i64s of the Tcp ones (MaxConn is -1), u64s of the TcpExt ones. None when
    a pair is not as the kernel writes it: the monitor then parses the lines."""
    if not snmp or not netstat:
        return None
    try:
        (tn, tv), (en, ev) = [[line.split()[1:] for line in text.split(b"\n") if line] for text in (snmp, netstat)]
        if not tn or len(tn) != len(tv) or len(en) != len(ev):
            return None
        tcp = array.array("q", list(map(int, tv)))
        ext = array.array("Q", list(map(int, ev)))
    except (ValueError, OverflowError):
        return None
    if BIG:
        tcp.byteswap()
        ext.byteswap()
    return b" ".join(tn) + b"\n" + b" ".join(en) + b"\n" + tcp.tobytes() + ext.tobytes()


def softnet_columns(data):
    """U32 array of (PROCESSED, DROPPED, SQUEEZE, CPU) per CPU row (the CPU is the row's
    number on kernels without that column); None when a row is not 8-digit hex columns."""
    rows = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    f = data.split()
    k = len(f) // rows if rows else 0
    if k >= 13 and rows * k == len(f):  # every row alike, with its CPU (kernel 5.10 on): column by column
        cols = (f[0::k], f[1::k], f[2::k], f[12::k])
        if set(map(len, cols[0] + cols[1] + cols[2] + cols[3])) != {8}:
            return None
        out = [None] * (4 * rows)
        out[0::4], out[1::4], out[2::4], out[3::4] = cols
        n = rows - 1
    else:
        out = []
        n = 0
        for n, line in enumerate(data.split(b"\n")):
            f = line.split()
            if len(f) >= 9:
                out += (f[0], f[1], f[2], f[12] if len(f) >= 13 else b"%08x" % n)
        if not out or n > 0xFFFFFFFF or any(len(x) != 8 for x in out):
            return None
    try:
        a = array.array(U32, bytes.fromhex(b"".join(out).decode("ascii")))
    except ValueError:
        return None
    if not BIG:
        a.byteswap()  # the hex digits are big-endian
    return a


def softnet_pack(a):
    return u32s(array.array(U32, a) if BIG else a)


# --- the per-CPU tables summed on the node -------------------------------------------------
# Unless the monitor asks for the per-CPU tables ("d 1" on stdin, or --detail: a node screen
# is open, a recording runs), a frame carries only what the grid needs of them, "cpusum"
# (CPUSUM, little-endian): a mask of what it holds (SUM_* bits), the number of CPUs of
# /proc/stat, the NET_RX and NET_TX softirqs, the softnet processed, dropped and squeezed
# counts, each summed over the CPUs, and the hottest CPU since the last reading of
# /proc/stat: its number, its softirq and total ticks in that time, and when (CLOCK_MONOTONIC)
# that reading was. The kernel's softirq and softnet counters are u32 and wrap one CPU at a
# time: each sum grows by its CPUs' increases (a wrap counted as one), starting from their
# plain sum, so the monitor makes rates of the sums as of any u64 counter. With the tables,
# a frame carries "cpusum" too: the grid's figures never depend on who is looking.
# The NET_RX and NET_TX sums come from the "softirq" line of /proc/stat, the kernel's own
# sums over the CPUs, read anyway: /proc/softirqs (ten rows of every CPU, ~14 KB on a
# 128-CPU node) is read only for its table. That line's sums are u32 on older kernels and
# u64 sums of the u32 counters on newer ones; both are right modulo 2**32, so each sum grows
# by the line's increase modulo 2**32. That holds while a whole node's increase in one
# interval stays below 2**32: at most LINE_MAX_S a frame (429 M softirqs/s at 10 s). At
# longer intervals, or without a usable line, the table gives the sums as before (2**32 a
# CPU-interval). The two count the same counters (every possible CPU), so a switch from one
# to the other goes on from the other's last reading: no jump, no interval lost.
CPUSUM = struct.Struct("<10Qd")
SUM_STAT, SUM_IRQ, SUM_SOFTNET, SUM_HOT = 1, 2, 4, 8
WRAP = 1 << 32
sums = {}  # name -> running sum (see add_u32)
last_cols = {}  # "stat": (mono, cpus, softirq, total); "softirqs"/"softnet": (cpus, columns)
detail = [False]  # the per-CPU tables too
irq_from_stat = [False]  # this frame's NET_RX/NET_TX sums came from /proc/stat's softirq line
LINE_MAX_S = 10.0
line_ok = [True]  # the interval is at most LINE_MAX_S: the line may give the sums
U32_MAX = WRAP - 1


def add_u32(key, names, cpus, cols):
    """Add to the running sums ``names`` the increase of u32 per-CPU columns since the last
    reading of ``key`` (by CPU number when the CPUs changed)."""
    prev = last_cols.get(key)
    last_cols[key] = (cpus, cols)
    if names[0] not in sums:
        for name, col in zip(names, cols):
            sums[name] = sum(col)
        return
    if prev is None:  # (no reading of this table to go on from: from here, no jump)
        return
    pcpus, pcols = prev
    if pcpus == cpus:
        for name, col, pcol in zip(names, cols, pcols):
            sums[name] = (sums[name] + sum(col) - sum(pcol) + WRAP * sum(map(operator.lt, col, pcol))) & U64_MAX
    else:  # CPUs came or went: the ones in both readings
        at = dict((c, i) for i, c in enumerate(pcpus))
        for name, col, pcol in zip(names, cols, pcols):
            grew = sum((v - pcol[at[c]]) % WRAP for c, v in zip(cpus, col) if c in at)
            sums[name] = (sums[name] + grew) & U64_MAX


def softirq_sums(data):
    """(NET_RX, NET_TX) of the "softirq" line of /proc/stat, or None."""
    i = data.find(b"\nsoftirq ")
    if i < 0:
        return None
    end = data.find(b"\n", i + 9)
    f = (data[i + 9:] if end < 0 else data[i + 9:end]).split(None, 5)  # total HI TIMER NET_TX NET_RX ...
    if len(f) < 5 or not (f[3].isdigit() and f[4].isdigit()):
        return None
    return int(f[4]), int(f[3])


def add_totals(rx_tx):
    """Add the increase (modulo 2**32) of /proc/stat's NET_RX and NET_TX sums since their
    last reading, or since the table's when it gave the sums last, to the running sums."""
    prev = last_cols.get("irqtotal")
    last_cols["irqtotal"] = rx_tx
    table = last_cols.pop("softirqs", None)
    if prev is None and table is not None:  # the table gave them last: the same counters
        prev = (sum(table[1][0]), sum(table[1][1]))
    if "net_rx" not in sums:
        sums["net_rx"], sums["net_tx"] = rx_tx
    elif prev is not None:
        grow_irq(rx_tx, prev)


def grow_irq(now, before):
    """The NET_RX and NET_TX sums grow by ``now - before`` (each pair of sums) modulo 2**32."""
    sums["net_rx"] = (sums["net_rx"] + ((now[0] - before[0]) & U32_MAX)) & U64_MAX
    sums["net_tx"] = (sums["net_tx"] + ((now[1] - before[1]) & U32_MAX)) & U64_MAX


def add_table(cpus, cols):
    """The NET_RX and NET_TX sums from the table of /proc/softirqs (``cols``: NET_RX, NET_TX
    per CPU), going on from the line of /proc/stat when it gave them last."""
    line = last_cols.pop("irqtotal", None)
    if line is not None and "softirqs" not in last_cols and "net_rx" in sums:
        last_cols["softirqs"] = (cpus, cols)
        grow_irq((sum(cols[0]), sum(cols[1])), line)
        return
    add_u32("softirqs", ("net_rx", "net_tx"), cpus, cols)


def hottest(cpus, soft, total, prev):
    """(cpu, softirq ticks, total ticks) of the CPU with the largest share of softirq time
    since the ``prev`` reading (the first of equals), or None. As the monitor's rates: a
    CPU whose ticks did not advance, or went back, is not counted."""
    _, pcpus, psoft, ptotal = prev
    if pcpus != cpus:
        at = dict((c, i) for i, c in enumerate(pcpus))
        keep = [i for i, c in enumerate(cpus) if c in at]
        psoft = [psoft[at[cpus[i]]] for i in keep]
        ptotal = [ptotal[at[cpus[i]]] for i in keep]
        cpus = [cpus[i] for i in keep]
        soft = [soft[i] for i in keep]
        total = [total[i] for i in keep]
    ds = list(map(operator.sub, soft, psoft))
    dt = list(map(operator.sub, total, ptotal))
    if ds and min(dt) > 0 and min(ds) >= 0 and all(map(operator.le, ds, dt)):  # every CPU ticked: in C
        shares = list(map(operator.truediv, ds, dt))  # (a share is exact enough to order them)
        i = shares.index(max(shares))
        return cpus[i], ds[i], dt[i]
    best, bs, bt = None, 0, 1
    for c, d, t in zip(cpus, ds, dt):
        if t > 0 and 0 <= d <= t and (best is None or d * bt > bs * t):
            best, bs, bt = c, d, t
    return None if best is None else (best, bs, bt)


def percpu(key, data, now, out):
    """A per-CPU table: into the sums, and into the frame when the monitor wants it.
    False when it does not read as the kernel writes it."""
    if key == "stat":
        rx_tx = softirq_sums(data) if line_ok[0] else None
        if rx_tx is not None:
            add_totals(rx_tx)
            irq_from_stat[0] = True
        cols = stat_columns(data)
        if cols is None:
            return False
        prev = last_cols.get("stat")
        last_cols["stat"] = (now,) + cols
        sums["hot"] = None if prev is None else hottest(cols[0], cols[1], cols[2], prev)
        sums["hot_since"] = None if prev is None else prev[0]
        sums["ncpus"] = len(cols[0])
        if detail[0]:
            out += [b"cpu", cpu_pack(cols)]
        return True
    if key == "softirqs":
        cols = netirq_columns(data)
        if cols is None:
            return False
        packed = netirq_pack(cols) if detail[0] else b""
        if packed is None:
            return False
        if not irq_from_stat[0]:
            add_table(cols[0], cols[1:])
        if detail[0]:
            out += [b"netirq", packed]
        return True
    a = softnet_columns(data)
    if a is None:
        return False
    add_u32("softnet", ("processed", "dropped", "squeeze"), a[3::4], (a[0::4], a[1::4], a[2::4]))
    if detail[0]:
        out += [b"softnet", softnet_pack(a)]
    return True


def cpusum(done):
    """The "cpusum" field of the per-CPU tables read in this frame (``done``: their keys)."""
    mask, hot = 0, None
    if "stat" in done:
        mask |= SUM_STAT
        hot = sums.get("hot")
        if hot is not None:
            mask |= SUM_HOT
    if "softirqs" in done:
        mask |= SUM_IRQ
    if "net/softnet_stat" in done:
        mask |= SUM_SOFTNET
    g = sums.get
    return CPUSUM.pack(mask, g("ncpus", 0) if mask & SUM_STAT else 0,
                       g("net_rx", 0) if mask & SUM_IRQ else 0, g("net_tx", 0) if mask & SUM_IRQ else 0,
                       g("processed", 0) if mask & SUM_SOFTNET else 0, g("dropped", 0) if mask & SUM_SOFTNET else 0,
                       g("squeeze", 0) if mask & SUM_SOFTNET else 0,
                       *(hot if hot is not None else (0, 0, 0)), g("hot_since") if hot is not None else 0.0)


def listdir(path):
    try:
        names = os.listdir(path)
    except OSError:
        return []
    return [] if len(names) > MAX_DIR else sorted(names)


def one_line(data):
    """A sysfs value as one clean line, or None (the frame's separators never get in)."""
    v = data.strip()
    if b"\n" in v or b"\0" in v or b"\x1e" in v or b"\x1f" in v:
        return None
    return v


def counter_files(path):
    """[(code, file)] of a counters directory, by name."""
    return [(IB_CODE.get(n) or ("=" + n).encode(), path + "/" + n) for n in listdir(path) if NAME.match(n)]


def small_int(path):
    """dev_id (hex) or dev_port (decimal) of a netdev; None when unreadable or odd."""
    data = read(path, True)
    v = None if data is None else one_line(data)
    if not v or len(v) > 10:
        return None
    try:
        n = int(v, 0)
    except ValueError:
        return None
    return n if n >= 0 else None


def paired(port, ids):
    """The netdev of a port as the monitor pairs them (collectors/infiniband.py): the one
    whose max(dev_id, dev_port) + 1 is the port number, or the only one when that is unknown."""
    names = sorted(ids, key=lambda n: (len(n), n))
    for name in names:
        known = [v for v in ids[name] if v is not None]
        if known and max(known) + 1 == port:
            return name
    if len(names) == 1 and ids[names[0]] == [None, None]:
        return names[0]
    return None


def gid_netdev(files):
    """The netdev of the lowest GID that names one (pairing without device/net)."""
    for _, path in files:
        data = read(path, True)
        v = None if data is None else one_line(data)
        if v and NAME.match(v.decode("ascii", "replace")):
            return v.decode("ascii")
    return None


def ib_layout(root, hcas):
    """What to read: per port its files, per HCA its device hw_counters and netdevs; and
    the netdevs paired with a port (where ethtool -S runs: not every netdev of the PCI
    function, which in switchdev mode has one per VF representor)."""
    ports, devices, netdevs = [], [], []
    for hca in hcas:
        base = root + "/" + hca
        nets = [n for n in listdir(base + "/device/net") if NAME.match(n)]
        devices.append((hca, counter_files(base + "/hw_counters"),
                        [(n, base + "/device/net/" + n + "/") for n in nets]))
        ids = {}
        for n in nets:
            net = base + "/device/net/" + n + "/"
            ids[n] = [small_int(net + "dev_id"), small_int(net + "dev_port")]
        for port in listdir(base + "/ports"):
            if not DIGITS.match(port):
                continue
            pb = base + "/ports/" + port
            gids = []
            if not nets:  # pairing falls back to the netdevs of the first GIDs
                idx = sorted((i for i in listdir(pb + "/gid_attrs/ndevs") if DIGITS.match(i)), key=int)
                gids = [(i.encode(), pb + "/gid_attrs/ndevs/" + i) for i in idx[:MAX_GIDS]]
                netdev = gid_netdev(gids)
            else:
                netdev = paired(int(port), ids)
            if netdev and "." not in netdev and netdev not in netdevs:  # not VLAN or IPoIB children
                netdevs.append(netdev)
            ports.append((("ib/" + hca + "/" + port).encode(), [pb + "/" + a for a in PORT_ATTRS],
                          counter_files(pb + "/counters"), counter_files(pb + "/hw_counters"), gids))
    return ports, devices, netdevs


def counter_lines(files):
    lines = []
    for code, path in files:
        data = read(path, True)
        if data is not None:
            v = one_line(data)
            if v is not None:
                lines.append(code + b" " + v)
    return b"\n".join(lines)


def infiniband(out):
    root = SYS + "/class/infiniband"
    if not ethtool["runs"] and time.monotonic() < ib["absent_until"]:
        return  # no RDMA here a moment ago: looked for again every LAYOUT_S
    try:
        hcas = os.listdir(root)
    except OSError:
        ib["absent_until"] = time.monotonic() + LAYOUT_S
        if ethtool["runs"]:  # the RDMA devices went away while ethtool ran
            ethtool_collect(out, time.monotonic())
        return  # no RDMA here: that listdir was all
    hcas = sorted(h for h in hcas if NAME.match(h))[:MAX_HCAS]
    now = time.monotonic()
    if hcas != ib["hcas"] or now - ib["at"] > LAYOUT_S:
        ib["ports"], ib["devices"], ib["netdevs"] = ib_layout(root, hcas)
        ib["hcas"], ib["at"] = hcas, now
    for hca, hw, nets in ib["devices"]:
        if hw:
            out += [("ibd/" + hca).encode(), counter_lines(hw)]
        if nets:
            lines = []
            for name, base in nets:
                ids = []
                for attr in ("dev_id", "dev_port"):
                    data = read(base + attr, True)
                    v = None if data is None else one_line(data)
                    ids.append(v if v and b" " not in v else b"-")
                lines.append(b" ".join([name.encode()] + ids))
            out += [("ibn/" + hca).encode(), b"\n".join(lines)]
    for key, attrs, counters, hw, gids in ib["ports"]:
        fields = []
        for path in attrs:
            data = read(path, True)
            v = None if data is None else one_line(data)
            fields.append(NONE if v is None else v)
        fields.append(counter_lines(counters))
        fields.append(counter_lines(hw))
        fields.append(counter_lines(gids))
        out += [key, b"\x1f".join(fields)]
    if ethtool["runs"]:
        ethtool_collect(out, time.monotonic())
    elif ib["netdevs"] and now >= ethtool["due"]:
        ethtool_start(ib["netdevs"], now)


def find_ethtool():
    dirs = os.environ.get("PATH", "").split(":") + ["/usr/sbin", "/sbin", "/usr/local/sbin"]
    for d in dirs:
        path = os.path.join(d or ".", "ethtool")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


class Run(object):
    """One ethtool -S in flight: its output is read as it comes (main's select), never waited for."""
    __slots__ = ("name", "proc", "fd", "chunks", "size", "eof")

    def __init__(self, name, proc):
        self.name, self.proc, self.fd = name, proc, proc.stdout.fileno()
        self.chunks, self.size, self.eof = [], 0, False


def ethtool_start(netdevs, now):
    """Start ethtool -S on every netdev not backing off, all at once; no waiting here."""
    if ethtool["path"] is False:
        ethtool["path"] = find_ethtool()
    if ethtool["path"] is None:
        return
    import subprocess

    runs = []
    for name in netdevs:
        backoff = ethtool["backoff"].get(name)
        if backoff is not None and now < backoff[0]:
            continue
        try:
            proc = subprocess.Popen([ethtool["path"], "-S", name], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, close_fds=True)
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
        runs.append(Run(name, proc))
    ethtool["runs"], ethtool["mono"], ethtool["deadline"] = runs, now, now + ETHTOOL_BUDGET_S
    if not runs:
        ethtool["due"] = now + ETHTOOL_S


def ethtool_read(run):
    """Read what a run wrote (its pipe is readable: this does not block)."""
    try:
        chunk = os.read(run.fd, 262144)
    except OSError:
        chunk = b""
    if chunk:
        run.chunks.append(chunk)
        run.size += len(chunk)
        if run.size <= ETHTOOL_MAX_BYTES:
            return
    run.eof = True
    run.proc.stdout.close()


def ethtool_collect(out, now):
    """Once every run has ended, or the reading's budget is spent: the readings of the runs
    that ended well go out ("ethmono": when they started); the others are killed and their
    netdevs back off. The next reading is due ETHTOOL_S after this one ended."""
    runs = ethtool["runs"]
    for run in runs:
        while not run.eof and select.select([run.fd], [], [], 0)[0]:
            ethtool_read(run)
    done = [run.eof and run.proc.poll() is not None for run in runs]
    if not all(done) and now < ethtool["deadline"]:
        return
    got = False
    for run, ended in zip(runs, done):
        if ended and run.size <= ETHTOOL_MAX_BYTES:
            ethtool["backoff"].pop(run.name, None)
            if run.proc.returncode != 0:
                continue
            lines = [line.strip() for line in b"".join(run.chunks).split(b"\n")]
            kept = b"\n".join(line for line in lines if line and not PER_QUEUE.match(line)
                              and b"\0" not in line and b"\x1f" not in line)
            out += [("eth/" + run.name).encode(), kept]
            got = True
        else:
            ethtool_kill(run)
            last = ethtool["backoff"].get(run.name, (0.0, 0.0))[1]
            pause = min(BACKOFF_S[1], last * 2) if last else BACKOFF_S[0]
            ethtool["backoff"][run.name] = (now + pause, pause)
    if got:
        out += [b"ethmono", repr(ethtool["mono"]).encode()]
    ethtool["runs"] = []
    ethtool["due"] = now + ETHTOOL_S
    ethtool["killed"] = [p for p in ethtool["killed"] if p.poll() is None]


def ethtool_kill(run):
    if not run.eof:
        run.eof = True
        run.proc.stdout.close()
    if run.proc.poll() is None:
        try:
            run.proc.kill()
        except OSError:
            pass
        if run.proc.poll() is None:
            ethtool["killed"].append(run.proc)


def ethtool_stop():
    """The sampler ends: its runs end with it."""
    for run in ethtool["runs"]:
        ethtool_kill(run)
    ethtool["runs"] = []


PERCPU = ("stat", "softirqs", "net/softnet_stat")
last_ifs = [None]  # the interface records of the last frame, joined


def frame():
    now = time.monotonic()
    out = [b"wall", repr(time.time()).encode(), b"mono", repr(now).encode()]
    names = None  # of the interfaces in /proc/net/dev
    data = read(PROC["net/dev"])
    if data is not None:
        table = netdev_table(data)
        if table is not None:
            names = table[0]
            out += [b"netdev", table[1]]
        else:
            names = netdev_names(data)
            out += [b"net/dev", data]
    done = []  # the per-CPU tables read and summed
    irq_from_stat[0] = False
    for key in PERCPU:  # (stat first: it may give the softirq sums)
        if key == "softirqs" and irq_from_stat[0] and not detail[0]:
            continue  # the sums came from /proc/stat, and nobody wants the table
        data = read(PROC[key])
        if data is not None:
            if percpu(key, data, now, out):
                done.append(key)
            else:
                out += [key.encode(), data]
    if irq_from_stat[0] and "softirqs" not in done:
        done.append("softirqs")  # (its sums)
    if done:
        out += [b"cpusum", cpusum(done)]
    snmp, netstat = read(PROC["net/snmp"]), read(PROC["net/netstat"])
    tcp = None if snmp is None or netstat is None else tcp_table(snmp, netstat)
    if tcp is None:  # not as the kernel writes them: the lines, or the table the careful way
        snmp = None if snmp is None else lines_with(snmp, (b"Tcp:",))
        netstat = None if netstat is None else tcpext_lines(netstat)
        tcp = tcp_summary(snmp, netstat)
    if tcp is not None:
        out += [b"tcp", tcp]
    else:
        if snmp is not None:
            out += [b"net/snmp", snmp]
        if netstat is not None:
            out += [b"net/netstat", netstat]
    for key in ONE_READ:
        data = read(PROC[key], True)
        if data is not None:
            out += [key.encode(), data]
    if names:
        records = []
        for raw in names:
            known = iface_paths.get(raw)
            if known is None:
                name = raw.decode("ascii", "replace")
                if not name or "/" in name or name in (".", ".."):
                    continue
                base = SYS + "/class/net/" + name + "/"
                if len(iface_paths) > 4 * MAX_FDS:
                    iface_paths.clear()
                known = iface_paths[raw] = (name, base, [base + attr for attr in ATTRS], ("if/" + name).encode())
            name, base, paths, key = known
            fields = []
            for path in paths:
                fd = fds.get(path)
                if fd is not None:  # open already: read() without its call (24 a frame on a 4-interface node)
                    try:
                        fields.append(os.pread(fd, 4096, 0))
                        continue
                    except OSError as exc:
                        if exc.errno in KEEP_ON_ERROR:
                            fields.append(NONE)
                            continue
                data = read(path, True)
                fields.append(NONE if data is None else data)
            fields += iface_facts(name, base, fields[4], now)  # after ifindex
            records += [key, b"\x1f".join(fields)]
        joined = b"\0".join(records)
        if joined == last_ifs[0]:
            out += [b"ifsame", b""]
        else:
            last_ifs[0] = joined
            out += records
    infiniband(out)
    payload = pack_fields(out)
    return b"NETUI2 %d\n" % len(payload) + payload


def main():
    global SYS, ETHTOOL_S
    args = sys.argv[1:]
    interval = float(args[0]) if args else 1.0
    detail[0] = "--detail" in args
    line_ok[0] = interval <= LINE_MAX_S
    for i, arg in enumerate(args[:-1]):
        if arg == "--sysfs":
            SYS = args[i + 1].rstrip("/") or "/"
        elif arg == "--ethtool-every":
            ETHTOOL_S = max(0.1, float(args[i + 1]))
    if not os.path.exists("/proc/net/dev"):
        sys.stderr.write("netui-sampler: no /proc/net/dev on this node\n")
        sys.exit(3)
    try:
        loop(interval)
    finally:
        ethtool_stop()


def loop(interval):
    out = sys.stdout.buffer
    stdin = sys.stdin.fileno()  # read as it comes: a buffered reader could hold a second line unseen
    waiting = select.poll()
    waiting.register(stdin, select.POLLIN)
    pending = b""  # a line not yet whole
    due = time.monotonic()
    while True:
        try:
            out.write(frame())
            out.flush()
        except (BrokenPipeError, OSError):
            return
        due += interval
        while True:
            wait = due - time.monotonic()
            if wait <= 0:
                break
            runs = ethtool["runs"]
            if runs:  # read ethtool's output as it comes (a full pipe would stall it)
                pipes = dict((run.fd, run) for run in runs if not run.eof)
                ready, _, _ = select.select([stdin] + list(pipes), [], [], wait)
                for fd in ready:
                    if fd != stdin:
                        ethtool_read(pipes[fd])
                if stdin not in ready:
                    continue
            elif not waiting.poll(wait * 1000.0):
                continue
            try:
                data = os.read(stdin, 4096)
            except OSError:
                data = b""
            if not data:
                return  # the channel closed
            lines = (pending + data).split(b"\n")
            pending = lines.pop()[-4096:]
            for line in lines:
                if line.startswith(b"d "):  # the per-CPU tables: "d 1" on, "d 0" off
                    detail[0] = line[2:].strip() == b"1"
                elif line.startswith(b"i "):
                    try:
                        new = float(line[2:])
                    except ValueError:
                        continue
                    if 0.05 <= new <= 3600:
                        due += new - interval
                        interval = new
                        line_ok[0] = interval <= LINE_MAX_S
        if time.monotonic() - due > interval:
            due = time.monotonic()  # we were stopped (SIGSTOP): do not burst to catch up


if __name__ == "__main__":
    main()
