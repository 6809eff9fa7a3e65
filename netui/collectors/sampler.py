# netui remote sampler: sent to each node as `python3 -c <protocol.py + this file> INTERVAL`
# (collectors/ssh.py); nothing is written on the node. Python 3.6+ standard library only.
# What it sends, and how to run it by hand: docs/protocol.md.
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

# MAGIC, UNREADABLE, IFACE_*, CPUSUM, SUM_*, TCPEXT_FIELDS, PORT_ATTRS, IB_NAMES, PER_QUEUE_PATTERN
from netui.collectors.protocol import *  # noqa: F403 (shipped: protocol.py's text stands here)

PROC = dict((key, "/proc/" + path) for key, path in PROC_FILES.items())
NONE = UNREADABLE
TCPEXT = frozenset(name.encode() for name in TCPEXT_FIELDS)
BIG = sys.byteorder == "big"
U32 = "I" if array.array("I").itemsize == 4 else "L"
U64_MAX = (1 << 64) - 1
MAX_FDS = 400  # files kept open (pread); beyond, open/read/close: stay far below ulimit -n
KEEP_ON_ERROR = (errno.EINVAL, errno.ENODATA, errno.EOPNOTSUPP, errno.EBUSY)  # the file is there
# files the kernel writes in one read (sysctl values: a read of N bytes makes it allocate N)
ONE_READ = ("boot_id", "hostname")
IB_CODE = dict((n, ("%d" % i).encode()) for i, n in enumerate(IB_NAMES))
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
PER_QUEUE = re.compile(PER_QUEUE_PATTERN.encode())  # ethtool -S per-queue counters
ETHTOOL_BUDGET_S = 2.0  # a reading's whole time: a run not done by then is killed
BACKOFF_S = (30.0, 600.0)  # a netdev whose run timed out is skipped this long, doubling
WRAP = 1 << 32
U32_MAX = WRAP - 1
LINE_MAX_S = 10.0  # the longest interval at which /proc/stat's softirq line may give the sums


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


# --- TCP peers: the node's sockets from sock_diag, summed by remote address ------------------
# One netlink dump per address family (SOCK_DIAG_BY_FAMILY, INET_DIAG_INFO: struct tcp_info),
# no root needed. Listening, TIME_WAIT and SYN_RECV sockets are not asked for (no tcp_info
# worth reading); loopback peers are left out by the kernel (a bytecode filter) and again
# here. Per socket, keyed by its 4-tuple and cookie, the increase of bytes_acked,
# bytes_received and total_retrans since the last reading goes into its peer's running
# sums; a socket that closed between two readings takes its last increase with it.
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
TCPDIAG_GETSOCK = 18  # the older request: one dump of both families, one walk of the kernel's hash
NLMSG_ERROR, NLMSG_DONE = 2, 3
NL_HEAD = struct.Struct("=IHHII")
NL_ATTR = struct.Struct("=HH")
DIAG_REQ = struct.Struct("=BBBBI48x")  # inet_diag_req_v2 with a zero inet_diag_sockid
DIAG_EXACT = struct.Struct("=BBBBI48s")  # inet_diag_req_v2 naming one socket (its sockid)
DIAG_REQ_ALL = struct.Struct("=BBBB48xII")  # inet_diag_req: family 0 (both), ext, sockid, states, dbs
INET_DIAG_INFO = 2
INET_DIAG_REQ_BYTECODE = 1
IPPROTO_TCP = 6
# ESTABLISHED, SYN_SENT, FIN_WAIT1, FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING
TCP_STATES = sum(1 << s for s in (1, 2, 4, 5, 8, 9, 11))
# tcp_info: rtt (µs) at 68, total_retrans at 100, bytes_acked at 120, bytes_received at 128;
# delivery_rate at 160 (kernels before 4.1 stop before bytes_acked: those sockets count, no bytes)
TCPI_MAIN = struct.Struct("=68xI28xI16xQQ")
TCPI_RATE = struct.Struct("=160xQ")
TCPI_RTT = struct.Struct("=68xI28xI")
LOOP4 = b"\x7f"
LOOP6 = b"\0" * 15 + b"\x01"
MAPPED = b"\0" * 10 + b"\xff\xff"
PEER_KEEP_S = 60.0  # a peer without sockets keeps its sums this long (then it starts again)
# A dump walks the kernel's whole TCP hash table (256 K buckets on a 8 GB host: ~2.5 ms,
# whatever the sockets); between two dumps the sockets it found are read one by one (a hash
# lookup each, requests batched), new ones found at the next dump, PEER_DISCOVER_S later
PEER_DISCOVER_S = 10.0
# readings are paced to cost the node at most this share of its time on average (200 µs a
# second): a few dozen sockets are read every interval, a dump waits longer than 10 s when it
# costs more than 2 ms, and a node with thousands of sockets is read every few tens of seconds
PEER_SHARE = 0.0002
PEER_MAX_WAIT_S = 60.0  # the longest a reading waits, whatever it costs
EXACT_MAX = 128  # more known sockets than this: read one by one they cost about a dump (~8 µs each)
EXACT_BATCH = 64
EARLY_DUMPS = 2  # dumps brought forward by new connections, per PEER_DISCOVER_S at most


def diag_bytecode():
    """inet_diag bytecode that rejects sockets whose remote address is 127.0.0.0/8 (IPv4, and
    IPv4-mapped in IPv6) or ::1. A condition's "yes" goes on, its "no" jumps; a jump past the
    end rejects: (D_COND 127/8 ? JMP past the end : on) (D_COND ::1 ? JMP past the end : accept)."""
    cond4 = struct.pack("=BBxxi4s", 2, 8, -1, LOOP4 + b"\0\0\0")
    cond6 = struct.pack("=BBxxi16s", 10, 128, -1, LOOP6)
    n4, n6 = 4 + len(cond4), 4 + len(cond6)  # 16 and 28 bytes
    total = n4 + 4 + n6 + 4
    return (struct.pack("=BBH", 8, n4, n4 + 4) + cond4 + struct.pack("=BBH", 1, 4, total - n4 + 4)
            + struct.pack("=BBH", 8, n6, n6 + 4) + cond6 + struct.pack("=BBH", 1, 4, 8))


def diag_request(family, seq, bytecode=b""):
    """A SOCK_DIAG_BY_FAMILY dump request for the TCP sockets of ``family`` with their tcp_info."""
    body = DIAG_REQ.pack(family, IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0, TCP_STATES)
    if bytecode:
        body += NL_ATTR.pack(4 + len(bytecode), INET_DIAG_REQ_BYTECODE) + bytecode
    return NL_HEAD.pack(NL_HEAD.size + len(body), SOCK_DIAG_BY_FAMILY, 0x301, seq, 0) + body


def diag_request_all(seq, bytecode=b""):
    """A TCPDIAG_GETSOCK dump request for the TCP sockets of both families with their tcp_info."""
    body = DIAG_REQ_ALL.pack(0, 0, 0, 1 << (INET_DIAG_INFO - 1), TCP_STATES, 0)
    if bytecode:
        body += NL_ATTR.pack(4 + len(bytecode), INET_DIAG_REQ_BYTECODE) + bytecode
    return NL_HEAD.pack(NL_HEAD.size + len(body), TCPDIAG_GETSOCK, 0x301, seq, 0) + body


def diag_exact(family, key, seq):
    """A request for one socket, named by its 4-tuple, interface and cookie (``key``)."""
    body = DIAG_EXACT.pack(family, IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0, TCP_STATES, key)
    return NL_HEAD.pack(NL_HEAD.size + len(body), SOCK_DIAG_BY_FAMILY, 1, seq, 0) + body


def is_loopback(family, dst):
    if family == 2:
        return dst[:1] == LOOP4
    return dst == LOOP6 or (dst[:12] == MAPPED and dst[12:13] == LOOP4)


def diag_sockets(buf, out, limit, loopback=False):
    """The sockets of one recv of a dump: appends (family, 4-tuple and cookie, src, dst,
    tcp_info or None) to ``out`` up to ``limit`` of them. Returns (done, error): done when
    the dump's NLMSG_DONE came; error an errno when it answered with one."""
    at, end = 0, len(buf)
    while at + 16 <= end:
        length, kind = NL_HEAD.unpack_from(buf, at)[:2]
        if length < 16 or at + length > end:
            return True, errno.EPROTO
        if kind == NLMSG_DONE:
            return True, 0
        if kind == NLMSG_ERROR:
            code = -struct.unpack_from("=i", buf, at + 16)[0] if length >= 20 else errno.EPROTO
            return True, code or errno.EPROTO
        if (kind == SOCK_DIAG_BY_FAMILY or kind == TCPDIAG_GETSOCK) and length >= 16 + 72:
            m = at + 16
            family = buf[m]
            dst = buf[m + 24:m + 40]
            if loopback or not is_loopback(family, dst):
                if len(out) >= limit:
                    return False, 0
                info = None
                a, stop = m + 72, at + length
                while a + 4 <= stop:
                    alen, atype = NL_ATTR.unpack_from(buf, a)
                    if alen < 4:
                        break
                    if atype == INET_DIAG_INFO:
                        info = buf[a + 4:a + alen]
                        break
                    a += (alen + 3) & ~3
                out.append((family, buf[m + 4:m + 52], buf[m + 8:m + 24], dst, info))
        at += (length + 3) & ~3
    return False, 0


class Peers(object):
    """The node's TCP peers: each reading dumps the sockets (or reads the known ones one by
    one between dumps), adds each one's increase to its peer's running sums, and packs the
    "peers" field (protocol.PEER_*). Readings are paced by their CPU cost (``share``): the
    frames between repeat the last reading."""

    def __init__(self, max_peers=MAX_PEERS, max_sockets=MAX_SOCKETS, loopback=False, discover_s=PEER_DISCOVER_S,
                 share=PEER_SHARE):
        self.max_peers, self.max_sockets, self.loopback = max_peers, max_sockets, loopback
        self.discover_s = discover_s  # between two dumps, at least
        self.share = share  # of the node's time that readings may take
        self.sock = None
        self.error = 0  # errno of the last failure to open or dump (0: none)
        self.bytecode = b"" if loopback else diag_bytecode()
        self.seq = 0
        self.socks = {}  # 4-tuple and cookie -> (bytes_acked, bytes_received, total_retrans)
        self.sums = {}  # (family, address) -> [sent, received, retransmitted, last seen mono]
        self.first = True  # no reading yet: every socket's counters are a baseline
        self.complete = False  # the last reading saw every socket (not cut at the cap)
        self.due = 0.0
        self.last = None  # the last field packed
        self.compat = True  # the kernel takes TCPDIAG_GETSOCK (one walk for both families)
        self.known = None  # [(family, key)] of the last dump's sockets, read one by one until ...
        self.discover_due = 0.0  # ... the next dump
        self.opens = None  # the node's TCP opens at the last dump: connections opened since
        self.early = 0  # bring the next dump forward, EARLY_DUMPS times per discover_s at most
        self.early_from = 0.0  # (the time those dumps are counted from)

    def open(self):
        if self.sock is None:
            import socket

            try:
                self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
            except (OSError, AttributeError, ValueError) as exc:
                self.error = getattr(exc, "errno", None) or errno.EAFNOSUPPORT
                return None
        return self.sock

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def dump(self):
        """Every TCP socket of the namespace (up to max_sockets) as diag_sockets gives them;
        None when netlink does not answer (self.error says why), and whether it was cut.
        One walk for both families (TCPDIAG_GETSOCK); a kernel that refuses it, one per family."""
        if self.compat:
            got = self.dump_one(diag_request_all)
            if got[0] is not None:
                return got
            self.compat = False
        return self.dump_families()

    def dump_one(self, request):
        """The answers to one dump request (``request(seq, bytecode)``), as ``dump``."""
        out = []
        sock = self.open()
        if sock is None:
            return None, False
        self.seq += 1
        try:
            sock.send(request(self.seq, self.bytecode))
            while True:
                done, error = diag_sockets(sock.recv(262144), out, self.max_sockets, self.loopback)
                if error:
                    self.error = error
                    self.close()
                    return None, False
                if done:
                    self.error = 0
                    return out, False
                if len(out) >= self.max_sockets:
                    self.close()  # the rest of this dump is left unread: a new socket next time
                    return out, True
        except OSError as exc:
            self.error = exc.errno or errno.EIO
            self.close()
            return None, False

    def exact(self, known):
        """The sockets ``known`` [(family, key)] read one by one (a hash lookup each in the
        kernel), EXACT_BATCH requests a send; a socket that closed answers ENOENT and is
        left out. None when netlink fails (a dump comes next)."""
        sock = self.open()
        if sock is None:
            return None
        out = []
        try:
            for i in range(0, len(known), EXACT_BATCH):
                batch = known[i:i + EXACT_BATCH]
                self.seq += 1
                sock.send(b"".join(diag_exact(family, key, self.seq) for family, key in batch))
                for _ in batch:
                    done, error = diag_sockets(sock.recv(8192), out, self.max_sockets, self.loopback)
                    if error and error != errno.ENOENT:
                        self.close()
                        return None
        except OSError:
            self.close()
            return None
        return out

    def dump_families(self):
        out = []
        for family in (2, 10):
            sock = self.open()
            if sock is None:
                return None, False
            self.seq += 1
            try:
                sock.send(diag_request(family, self.seq, self.bytecode))
                while True:
                    done, error = diag_sockets(sock.recv(262144), out, self.max_sockets, self.loopback)
                    if error == errno.EINVAL and self.bytecode:  # a kernel that refuses the filter
                        self.bytecode = b""
                        self.close()
                        return self.dump_families()
                    if error:
                        self.error = error
                        self.close()
                        return None, False
                    if done:
                        break
                    if len(out) >= self.max_sockets:
                        self.close()  # the rest of this dump is left unread: a new socket next time
                        return out, True
            except OSError as exc:
                self.error = exc.errno or errno.EIO
                self.close()
                return None, False
        self.error = 0
        return out, False

    def field(self, now, opens=None):
        """The "peers" field's value at ``now`` (CLOCK_MONOTONIC): a new reading when due,
        else the last one again. A dump is due every ``discover_s`` seconds (later when
        it costs more than ``share`` of that time); between, the known sockets one by one,
        paced by their own cost the same way. ``opens``: the kernel's TCP ActiveOpens +
        PassiveOpens. When they grew since the last dump, the dump comes at once, not at its
        time: a new flow is seen in the frame after it opens. At most EARLY_DUMPS such dumps
        every ``discover_s`` (a job's connections open over a frame or two), so a node whose
        connections churn costs at most 1 + EARLY_DUMPS times the periodic dumps."""
        if opens is not None and self.opens is not None and opens != self.opens:
            if now >= self.early_from + self.discover_s:
                self.early, self.early_from = 0, now
            if self.early < EARLY_DUMPS:
                self.early += 1
                self.discover_due = min(self.discover_due, now)
        if self.last is not None and now < self.due and now < self.discover_due:
            return self.last
        self.open()  # (not in the reading's cost: the first one imports socket)
        started, cpu = time.monotonic(), time.process_time()  # (its cost: CPU, not a busy host's waits)
        socks, capped, whole, dumped = None, False, False, False
        known = self.known
        if known is not None and now < self.discover_due and len(known) <= EXACT_MAX:
            socks = self.exact(known)
        if socks is None:
            socks, capped = self.dump()
            whole, dumped = not capped, True
        if socks is None:
            self.last = PEER_HEAD.pack(PEERS_UNAVAILABLE, 0, min(self.error, 65535), 0, 0, 0, 0, now)
            self.due = self.discover_due = now + LAYOUT_S  # tried again in a while
            self.opens = opens
            self.known = None
            return self.last
        self.known = [(x[0], x[1]) for x in socks]
        self.last = self.aggregate(socks, capped, started, whole)
        paced = started + min(PEER_MAX_WAIT_S, (time.process_time() - cpu) / self.share)
        if dumped:
            self.opens = opens
            self.discover_due = max(paced, started + self.discover_s)
            self.due = self.discover_due if len(self.known) > EXACT_MAX else started
        else:
            self.due = paced
        return self.last

    def aggregate(self, socks, capped, now, whole=None):
        """The field of one reading's sockets at ``now``; ``whole``: the reading saw every
        socket (a dump not cut at the cap), so that a socket not seen before is new since."""
        prev, base = self.socks, self.first or not self.complete
        cur, sums, peers, local = {}, self.sums, {}, {}
        main, rate = TCPI_MAIN.unpack_from, TCPI_RATE.unpack_from
        for family, key, src, dst, info in socks:
            peer = (family, dst)
            p = peers.get(peer)
            if p is None:
                p = peers[peer] = [0, 0, 0, 0, 0, 0, 0, 0]  # sockets, sent, received, retrans, rate, rtt·bytes, bytes, rtt max
            p[0] += 1
            if len(local) < MAX_LOCAL_ADDRS:
                local[(family, src)] = True
            if info is None or len(info) < 104:
                continue
            if len(info) >= 136:
                rtt, retrans, acked, received = main(info)
            else:  # no byte counters on this kernel
                (rtt, retrans), acked, received = TCPI_RTT.unpack_from(info), 0, 0
            cur[key] = (acked, received, retrans)
            before = prev.get(key)
            if before is None:
                before = (acked, received, retrans) if base else (0, 0, 0)  # a new socket: all its bytes are new
            sent = acked - before[0] if acked >= before[0] else 0
            got = received - before[1] if received >= before[1] else 0
            p[1] += sent
            p[2] += got
            p[3] += retrans - before[2] if retrans >= before[2] else 0
            if sent and len(info) >= 168:
                p[4] += rate(info)[0]
            p[5] += rtt * (sent + got)
            p[6] += sent + got
            if rtt > p[7]:
                p[7] = rtt
        self.socks, self.first, self.complete = cur, False, (not capped) if whole is None else whole
        for peer, p in peers.items():
            s = sums.get(peer)
            if s is None:
                s = sums[peer] = [0, 0, 0, now]
            s[0] = (s[0] + p[1]) & U64_MAX
            s[1] = (s[1] + p[2]) & U64_MAX
            s[2] = (s[2] + p[3]) & U64_MAX
            s[3] = now
        if len(sums) > len(peers):
            for peer in [k for k, s in sums.items() if now - s[3] > PEER_KEEP_S or len(sums) > 4 * MAX_SOCKETS]:
                if peer not in peers:
                    del sums[peer]
        top = sorted(peers.items(), key=lambda kv: (-(kv[1][1] + kv[1][2]), -kv[1][0]))[:self.max_peers]
        rows = []
        for (family, addr), p in top:
            s = sums[(family, addr)]
            rtt = p[5] // p[6] if p[6] else p[7]
            rows.append(PEER_ROW.pack(family, p[0], addr, s[0], s[1], s[2], p[4], min(rtt, U32_MAX), p[7]))
        addrs = [PEER_ADDR.pack(family, addr) for family, addr in local]
        head = PEER_HEAD.pack(PEERS_OK, PEERS_CAPPED if capped else 0, 0, len(socks), len(peers), len(rows),
                              len(addrs), now)
        return head + b"".join(rows) + b"".join(addrs)


def write_whole(fd, data):
    """Every byte of ``data`` to ``fd``: a short write goes on where it stopped (a raw
    stdout, as under PYTHONUNBUFFERED, takes a short write as whole), and a full
    non-blocking pipe is waited on until the reader makes room."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[written:]


class Ethtool(object):
    """``ethtool -S`` of the RDMA netdevs, every ``every_s`` seconds where an ethtool exists:
    ``start`` runs it on every netdev not backing off, all at once, without waiting; ``collect``
    (called as often as the caller likes) reads what came and, once every run ended or the
    reading's ``budget_s`` is spent, adds the readings of the runs that ended well to a frame's
    fields ("eth/NAME", and "ethmono": when they started); a run past the budget is killed
    and its netdev skipped for BACKOFF_S, doubling while it keeps timing out; a run that writes
    more than ETHTOOL_MAX_BYTES is cut off and dropped. The remote sampler and the monitor's
    own host (collectors/local.py) read it through this one class."""

    def __init__(self, every_s=ETHTOOL_S, budget_s=ETHTOOL_BUDGET_S):
        self.every_s, self.budget_s = every_s, budget_s
        self.path, self.due, self.runs, self.mono, self.deadline = False, 0.0, [], 0.0, 0.0
        self.backoff, self.killed = {}, []

    def start(self, netdevs, now):
        """Start ethtool -S on every netdev not backing off, all at once; no waiting here."""
        if self.path is False:
            self.path = find_ethtool()
        if self.path is None:
            return
        import subprocess

        runs = []
        for name in netdevs:
            backoff = self.backoff.get(name)
            if backoff is not None and now < backoff[0]:
                continue
            try:
                proc = subprocess.Popen([self.path, "-S", name], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, close_fds=True)
            except (OSError, ValueError, subprocess.SubprocessError):
                continue
            runs.append(Run(name, proc))
        self.runs, self.mono, self.deadline = runs, now, now + self.budget_s
        if not runs:
            self.due = now + self.every_s

    def collect(self, out, now):
        """Once every run has ended, or the reading's budget is spent: the readings of the runs
        that ended well go out ("ethmono": when they started); the others are killed and their
        netdevs back off. The next reading is due ``every_s`` after this one ended."""
        runs = self.runs
        for run in runs:
            while not run.eof and select.select([run.fd], [], [], 0)[0]:
                ethtool_read(run)
        done = [run.eof and run.proc.poll() is not None for run in runs]
        if not all(done) and now < self.deadline:
            return
        got = False
        for run, ended in zip(runs, done):
            if ended and run.size <= ETHTOOL_MAX_BYTES:
                self.backoff.pop(run.name, None)
                if run.proc.returncode != 0:
                    continue
                lines = [line.strip() for line in b"".join(run.chunks).split(b"\n")]
                kept = b"\n".join(line for line in lines if line and not PER_QUEUE.match(line)
                                  and b"\0" not in line and b"\x1f" not in line)
                out += [("eth/" + run.name).encode(), kept]
                got = True
            else:
                self.kill(run)
                last = self.backoff.get(run.name, (0.0, 0.0))[1]
                pause = min(BACKOFF_S[1], last * 2) if last else BACKOFF_S[0]
                self.backoff[run.name] = (now + pause, pause)
        if got:
            out += [b"ethmono", repr(self.mono).encode()]
        self.runs = []
        self.due = now + self.every_s
        self.killed = [p for p in self.killed if p.poll() is None]

    def kill(self, run):
        if not run.eof:
            run.eof = True
            run.proc.stdout.close()
        if run.proc.poll() is None:
            try:
                run.proc.kill()
            except OSError:
                pass
            if run.proc.poll() is None:
                self.killed.append(run.proc)

    def stop(self):
        """The sampler ends: its runs end with it."""
        for run in self.runs:
            self.kill(run)
        self.runs = []


def mesh_address(text):
    """(family, 16 address bytes) of an IP address in text; None when it is not one."""
    import socket

    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            raw = socket.inet_pton(family, text)
        except (OSError, ValueError):
            continue
        return family, raw + b"\0" * (16 - len(raw))
    return None


def mesh_key(sockaddr):
    """A UDP source (address, port, ...) as (family, 16 address bytes, port); an IPv4 address
    mapped into IPv6 (a dual-stack socket's view of it) as the IPv4 address it is."""
    text = sockaddr[0].split("%")[0]
    if text.startswith("::ffff:") and "." in text:
        text = text[7:]
    found = mesh_address(text)
    return None if found is None else (found[0], found[1], sockaddr[1])


class Mesh(object):
    """The node's part of the probe mesh (docs/protocol.md#mesh): one unprivileged UDP socket
    that probes the peers the monitor listed, at most ``rate`` probes a second and each peer at
    most once per ``period`` seconds, and answers their probes with a packet of the same size,
    only when the probe carries the session's token and comes from a listed peer. Each frame
    carries what settled since the last one: per peer, probes answered (with their RTTs on this
    node's monotonic clock) and lost."""

    def __init__(self, token, rate, period):
        import socket

        self.token = token
        self.rate, self.period = rate, period
        self.peers = []  # [(family, address bytes, port, sockaddr to send to)]
        self.listed = set()  # (family, address bytes, port) of the peers
        self.next = 0  # the peer probed next (round robin)
        self.due = 0.0  # when the next probe may go
        self.seq = 0
        self.flying = {}  # seq -> (peer key, sent ns)
        self.settled = {}  # peer key -> [answered, lost, [RTT µs]]
        self.answers = self.refused = 0  # since the sampler started
        self.answer_budget, self.budget_at = MESH_ANSWERS_PER_S, 0.0
        self.error = 0
        # the address this node was reached at (its SSH session's server end): what its peers probe
        words = os.environ.get("SSH_CONNECTION", "").split()
        self.home = (len(words) == 4 and mesh_address(words[2])) or (0, b"\0" * 16)
        self.sock = None
        self.six = False  # a dual-stack IPv6 socket (IPv4 peers as mapped addresses)
        try:
            try:
                sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                sock.bind(("::", 0))
                self.six = True
            except (OSError, AttributeError):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.bind(("0.0.0.0", 0))
            sock.setblocking(False)
            self.sock = sock
            self.port = sock.getsockname()[1]
        except OSError as exc:
            self.error = exc.errno or errno.EIO
            self.port = 0

    def fileno(self):
        return self.sock.fileno()

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def add(self, words):
        """``mp+ ADDR PORT ADDR PORT ...``: more peers (malformed pairs are passed by)."""
        import socket

        for i in range(0, len(words) - 1, 2):
            found = mesh_address(words[i].decode("ascii", "replace"))
            if found is None or not DIGITS.match(words[i + 1].decode("ascii", "replace")):
                continue
            port = int(words[i + 1])
            key = (found[0], found[1], port)
            if not 0 < port < 65536 or key in self.listed or len(self.peers) >= MESH_MAX_PEERS:
                continue
            if found[0] == socket.AF_INET:
                text = socket.inet_ntop(socket.AF_INET, found[1][:4])
                to = ("::ffff:" + text, port) if self.six else (text, port)
            elif self.six:
                to = (socket.inet_ntop(socket.AF_INET6, found[1]), port)
            else:
                continue  # an IPv6 peer, and this node has no IPv6 socket
            self.listed.add(key)
            self.peers.append(key + (to,))
        # a new peer learns of this node from the monitor at about the same moment: probes
        # sent before it has would go unanswered, a loss that is not the network's
        self.due = max(self.due, time.monotonic() + MESH_GRACE_S)

    def remove(self, words):
        """``mp- ADDR PORT ...``: these peers gone (their probes in flight forgotten, not lost);
        ``mp-`` alone: every peer."""
        if not words:
            self.peers, self.listed, self.next, self.flying = [], set(), 0, {}
            return
        gone = set()
        for i in range(0, len(words) - 1, 2):
            found = mesh_address(words[i].decode("ascii", "replace"))
            if found is not None and DIGITS.match(words[i + 1].decode("ascii", "replace")):
                gone.add((found[0], found[1], int(words[i + 1])))
        if gone & self.listed:
            self.listed -= gone
            self.peers = [p for p in self.peers if p[:3] not in gone]
            self.next = 0
            self.flying = dict((seq, f) for seq, f in self.flying.items() if f[0] not in gone)

    def wake(self, now):
        """When the loop should next wake for the mesh (None: no probe to send)."""
        if self.sock is None or not self.peers:
            return None
        return self.due

    def probe(self, now):
        """Send the probes that are due (at most one per 1/rate s, each peer once per period)."""
        if self.sock is None or not self.peers:
            return
        if now < self.due:
            return
        peer = self.peers[self.next % len(self.peers)]
        self.next = (self.next + 1) % len(self.peers)
        self.seq = (self.seq + 1) & U32_MAX
        sent_ns = int(now * 1e9)
        try:
            self.sock.sendto(MESH_PACKET.pack(MESH_QUERY, self.token, self.seq, sent_ns), peer[3])
        except OSError:
            pass  # unreachable, refused, a full buffer: no answer will come, it is lost in time
        self.flying[self.seq] = (peer[:3], sent_ns)
        gap = max(1.0 / self.rate, self.period / len(self.peers))
        self.due = max(self.due + gap, now - gap)  # no burst after a stall

    def receive(self, now):
        """Take every packet waiting: answer probes, settle answers to ours."""
        sock = self.sock
        if sock is None:
            return
        for _ in range(256):  # a flood does not hold the loop
            try:
                data, source = sock.recvfrom(64)
            except OSError:
                return
            if len(data) != MESH_PACKET.size:
                self.refused += 1
                continue
            magic, token, seq, sent_ns = MESH_PACKET.unpack(data)
            key = mesh_key(source)
            if token != self.token or key is None or key not in self.listed:
                self.refused += 1
                continue
            if magic == MESH_QUERY:
                if now - self.budget_at >= 1.0:
                    self.budget_at, self.answer_budget = now, MESH_ANSWERS_PER_S
                if self.answer_budget <= 0:
                    continue
                self.answer_budget -= 1
                try:
                    sock.sendto(MESH_PACKET.pack(MESH_ANSWER, token, seq, sent_ns), source)
                    self.answers += 1
                except OSError:
                    pass
            elif magic == MESH_ANSWER:
                flying = self.flying.get(seq)
                if flying is None or flying[0] != key or flying[1] != sent_ns:
                    continue  # late (already lost), or not ours
                del self.flying[seq]
                rtt_us = max(0, int(now * 1e6) - sent_ns // 1000)
                row = self.settled.setdefault(key, [0, 0, []])
                row[0] += 1
                if len(row[2]) < MESH_MAX_RTTS:
                    row[2].append(min(rtt_us, U32_MAX))
            else:
                self.refused += 1

    def field(self, now):
        """The "mesh" field: what settled since the last frame (protocol.MESH_*)."""
        limit = int((now - MESH_TIMEOUT_S) * 1e9)
        for seq in [seq for seq, (_, sent_ns) in self.flying.items() if sent_ns < limit]:
            key = self.flying.pop(seq)[0]
            self.settled.setdefault(key, [0, 0, []])[1] += 1
        rows = []
        for (family, address, port), (answered, lost, rtts) in self.settled.items():
            rows.append(MESH_ROW.pack(family, address, port, min(answered, 65535), min(lost, 65535), len(rtts)))
            rows.append(struct.pack("<%dI" % len(rtts), *rtts))
        head = MESH_HEAD.pack(MESH_UNAVAILABLE if self.sock is None else MESH_ON, self.error & 0xFFFF,
                              self.port, len(self.peers), self.answers & U32_MAX, self.refused & U32_MAX,
                              len(self.settled), now, self.home[0], self.home[1])
        self.settled = {}
        return head + b"".join(rows)


class Sampler(object):
    """One node's sampler: the files it keeps open, its caches and running sums. A process
    runs one (main); tests run several side by side."""

    def __init__(self, interval_s=1.0, sysfs="/sys", ethtool_every_s=ETHTOOL_S, detail=False, peers=None):
        self.peers = peers  # a Peers, or None: no "peers" field
        self.mesh = None  # a Mesh while the monitor has the probe mesh on ("m TOKEN" on stdin)
        self.sys = sysfs  # where sysfs is (a test points it at a copied tree)
        self.detail = detail  # the per-CPU tables too
        self.line_ok = interval_s <= LINE_MAX_S  # /proc/stat's softirq line may give the sums
        self.fds = {}  # path -> open file (pread at offset 0)
        self.sizes = {}  # path -> bytes to ask for in one read (see read_all); 8 KB when not here
        self.facts = {}  # interface name -> (ifindex text, read at, [link, markers]): see iface_facts
        # an interface name (bytes) -> (name, its sysfs dir, its attribute paths, its record key)
        self.iface_paths = {}
        self.last_ifs = None  # the interface records of the last frame, joined
        # TcpExt names (the line without its prefix) -> (names kept, joined; their positions;
        # an itemgetter of them; the number of names): see tcp_table
        self.tcpext_cut = {}
        self.tcp_opens = None  # TCP ActiveOpens + PassiveOpens at the last frame (None: unknown)
        self.sums = {}  # name -> running sum (see add_u32)
        self.last_cols = {}  # "stat": (mono, cpus, softirq, total); "softirqs"/"softnet": (cpus, columns)
        self.irq_from_stat = False  # this frame's NET_RX/NET_TX sums came from /proc/stat's softirq line
        # RDMA: the HCAs, when their layout was listed, what to read; no RDMA until absent_until
        self.hcas, self.ib_at, self.ports, self.devices, self.netdevs = None, 0.0, [], [], []
        self.ib_absent_until = 0.0
        # ethtool -S: its path (False: not looked for), when due, the runs in flight (started
        # at eth_mono, killed at eth_deadline); backoff: netdev -> (skip until, last pause);
        # killed: runs killed but not yet reaped (a process stuck in the kernel dies when it returns)
        self.eth = Ethtool(ethtool_every_s)

    def read(self, path, one=False):
        """The file's bytes (None when unreadable); ``one``: a sysfs attribute, one short read."""
        fd = self.fds.get(path)
        try:
            if fd is None:
                # not blocking in open(), and regular files only (as procfs and sysfs files
                # are): a FIFO in a copied tree would block the sampler until a writer came
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError("not a regular file")
                if len(self.fds) < MAX_FDS:
                    self.fds[path] = fd
                else:
                    try:
                        return os.read(fd, 4096) if one else self.read_all(fd, path)
                    finally:
                        os.close(fd)
            if one:
                return os.pread(fd, 4096, 0)
            return self.read_all(fd, path)
        except OSError as exc:
            if fd is not None and one and exc.errno in KEEP_ON_ERROR and self.fds.get(path) == fd:
                return None  # (speed of a link that is down): the same file answers when it is up
            if fd is not None:
                self.fds.pop(path, None)
                try:
                    os.close(fd)
                except OSError:
                    pass
            return None

    def read_all(self, fd, path):
        """The whole file, from offset 0. The reads ask for about what the file held last time:
        a 256 KB read costs the kernel and python3 more than the file's own few KB do."""
        size = self.sizes.get(path, 8192)
        chunks = []
        offset = 0
        while True:
            chunk = os.pread(fd, size, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        if offset > size:  # (a file that grew: the next reading asks for enough at once)
            if len(self.sizes) > 4 * MAX_FDS:
                self.sizes.clear()
            self.sizes[path] = min(offset + (offset >> 2) + 4096, 1 << 22) & ~4095
        return b"".join(chunks) if len(chunks) != 1 else chunks[0]

    def iface_facts(self, name, base, ifindex, now):
        """What the class symlink points to and which markers exist: fixed for an interface,
        so read again only every LAYOUT_S seconds or when its ifindex changed (made anew)."""
        known = self.facts.get(name)
        if known is not None and known[0] == ifindex and now - known[1] <= LAYOUT_S:
            return known[2]
        try:
            fields = [os.readlink(base[:-1]).encode()]
        except OSError:
            fields = [NONE]
        for marker in IFACE_MARKERS:
            fields.append(b"" if os.path.exists(base + marker) else NONE)
        if len(self.facts) > 4 * MAX_FDS:
            self.facts.clear()
        self.facts[name] = (ifindex, now, fields)
        return fields

    def tcp_table(self, snmp, netstat):
        """tcp_summary's table straight from the two files, as the kernel writes them (their
        Tcp and TcpExt lines found, not every line split); None otherwise: the careful path."""
        tcp = line_pair(snmp, b"Tcp: ")
        ext = line_pair(netstat, b"TcpExt: ")
        if tcp is None or ext is None:
            return None
        cut = self.tcpext_cut.get(ext[0])
        if cut is None:
            names = ext[0].split()
            keep = [i for i, name in enumerate(names) if name in TCPEXT]
            if not keep:
                return None
            cut = self.tcpext_cut[ext[0]] = (b" ".join(names[i] for i in keep), keep, operator.itemgetter(*keep), len(names))
            if len(self.tcpext_cut) > 8:
                self.tcpext_cut.clear()
        values = ext[1].split()
        tn, tv = tcp[0].split(), tcp[1].split()
        if len(values) != cut[3] or not tn or len(tn) != len(tv):
            return None
        kept = cut[2](values)
        try:
            t = array.array("q", map(int, tv))
            if tn[4:6] == [b"ActiveOpens", b"PassiveOpens"]:
                self.tcp_opens = t[4] + t[5]  # a new connection: the peers' next dump is due
            e = array.array("Q", map(int, kept) if len(cut[1]) > 1 else (int(kept),))
        except (ValueError, OverflowError):
            return None
        if BIG:
            t.byteswap()
            e.byteswap()
        return b" ".join(tn) + b"\n" + cut[0] + b"\n" + t.tobytes() + e.tobytes()

    def add_u32(self, key, names, cpus, cols):
        """Add to the running sums ``names`` the increase of u32 per-CPU columns since the last
        reading of ``key`` (by CPU number when the CPUs changed)."""
        prev = self.last_cols.get(key)
        self.last_cols[key] = (cpus, cols)
        if names[0] not in self.sums:
            for name, col in zip(names, cols):
                self.sums[name] = sum(col)
            return
        if prev is None:  # (no reading of this table to go on from: from here, no jump)
            return
        pcpus, pcols = prev
        if pcpus == cpus:
            for name, col, pcol in zip(names, cols, pcols):
                self.sums[name] = (self.sums[name] + sum(col) - sum(pcol) + WRAP * sum(map(operator.lt, col, pcol))) & U64_MAX
        else:  # CPUs came or went: the ones in both readings
            at = dict((c, i) for i, c in enumerate(pcpus))
            for name, col, pcol in zip(names, cols, pcols):
                grew = sum((v - pcol[at[c]]) % WRAP for c, v in zip(cpus, col) if c in at)
                self.sums[name] = (self.sums[name] + grew) & U64_MAX

    def add_totals(self, rx_tx):
        """Add the increase (modulo 2**32) of /proc/stat's NET_RX and NET_TX sums since their
        last reading, or since the table's when it gave the sums last, to the running sums."""
        prev = self.last_cols.get("irqtotal")
        self.last_cols["irqtotal"] = rx_tx
        table = self.last_cols.pop("softirqs", None)
        if prev is None and table is not None:  # the table gave them last: the same counters
            prev = (sum(table[1][0]), sum(table[1][1]))
        if "net_rx" not in self.sums:
            self.sums["net_rx"], self.sums["net_tx"] = rx_tx
        elif prev is not None:
            self.grow_irq(rx_tx, prev)

    def grow_irq(self, now, before):
        """The NET_RX and NET_TX sums grow by ``now - before`` (each pair of sums) modulo 2**32."""
        self.sums["net_rx"] = (self.sums["net_rx"] + ((now[0] - before[0]) & U32_MAX)) & U64_MAX
        self.sums["net_tx"] = (self.sums["net_tx"] + ((now[1] - before[1]) & U32_MAX)) & U64_MAX

    def add_table(self, cpus, cols):
        """The NET_RX and NET_TX sums from the table of /proc/softirqs (``cols``: NET_RX, NET_TX
        per CPU), going on from the line of /proc/stat when it gave them last."""
        line = self.last_cols.pop("irqtotal", None)
        if line is not None and "softirqs" not in self.last_cols and "net_rx" in self.sums:
            self.last_cols["softirqs"] = (cpus, cols)
            self.grow_irq((sum(cols[0]), sum(cols[1])), line)
            return
        self.add_u32("softirqs", ("net_rx", "net_tx"), cpus, cols)

    def percpu(self, key, data, now, out):
        """A per-CPU table: into the sums, and into the frame when the monitor wants it.
        False when it does not read as the kernel writes it."""
        if key == "stat":
            rx_tx = softirq_sums(data) if self.line_ok else None
            if rx_tx is not None:
                self.add_totals(rx_tx)
                self.irq_from_stat = True
            cols = stat_columns(data)
            if cols is None:
                return False
            prev = self.last_cols.get("stat")
            self.last_cols["stat"] = (now,) + cols
            self.sums["hot"] = None if prev is None else hottest(cols[0], cols[1], cols[2], prev)
            self.sums["hot_since"] = None if prev is None else prev[0]
            self.sums["ncpus"] = len(cols[0])
            if self.detail:
                out += [b"cpu", cpu_pack(cols)]
            return True
        if key == "softirqs":
            cols = netirq_columns(data)
            if cols is None:
                return False
            packed = netirq_pack(cols) if self.detail else b""
            if packed is None:
                return False
            if not self.irq_from_stat:
                self.add_table(cols[0], cols[1:])
            if self.detail:
                out += [b"netirq", packed]
            return True
        a = softnet_columns(data)
        if a is None:
            return False
        self.add_u32("softnet", ("processed", "dropped", "squeeze"), a[3::4], (a[0::4], a[1::4], a[2::4]))
        if self.detail:
            out += [b"softnet", softnet_pack(a)]
        return True

    def cpusum(self, done):
        """The "cpusum" field of the per-CPU tables read in this frame (``done``: their keys)."""
        mask, hot = 0, None
        if "stat" in done:
            mask |= SUM_STAT
            hot = self.sums.get("hot")
            if hot is not None:
                mask |= SUM_HOT
        if "softirqs" in done:
            mask |= SUM_IRQ
        if "net/softnet_stat" in done:
            mask |= SUM_SOFTNET
        g = self.sums.get
        return CPUSUM.pack(mask, g("ncpus", 0) if mask & SUM_STAT else 0,
                           g("net_rx", 0) if mask & SUM_IRQ else 0, g("net_tx", 0) if mask & SUM_IRQ else 0,
                           g("processed", 0) if mask & SUM_SOFTNET else 0, g("dropped", 0) if mask & SUM_SOFTNET else 0,
                           g("squeeze", 0) if mask & SUM_SOFTNET else 0,
                           *(hot if hot is not None else (0, 0, 0)), g("hot_since") if hot is not None else 0.0)

    def small_int(self, path):
        """dev_id (hex) or dev_port (decimal) of a netdev; None when unreadable or odd."""
        data = self.read(path, True)
        v = None if data is None else one_line(data)
        if not v or len(v) > 10:
            return None
        try:
            n = int(v, 0)
        except ValueError:
            return None
        return n if n >= 0 else None

    def gid_netdev(self, files):
        """The netdev of the lowest GID that names one (pairing without device/net)."""
        for _, path in files:
            data = self.read(path, True)
            v = None if data is None else one_line(data)
            if v and NAME.match(v.decode("ascii", "replace")):
                return v.decode("ascii")
        return None

    def ib_layout(self, root, hcas):
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
                ids[n] = [self.small_int(net + "dev_id"), self.small_int(net + "dev_port")]
            for port in listdir(base + "/ports"):
                if not DIGITS.match(port):
                    continue
                pb = base + "/ports/" + port
                gids = []
                if not nets:  # pairing falls back to the netdevs of the first GIDs
                    idx = sorted((i for i in listdir(pb + "/gid_attrs/ndevs") if DIGITS.match(i)), key=int)
                    gids = [(i.encode(), pb + "/gid_attrs/ndevs/" + i) for i in idx[:MAX_GIDS]]
                    netdev = self.gid_netdev(gids)
                else:
                    netdev = paired(int(port), ids)
                if netdev and "." not in netdev and netdev not in netdevs:  # not VLAN or IPoIB children
                    netdevs.append(netdev)
                ports.append((("ib/" + hca + "/" + port).encode(), [pb + "/" + a for a in PORT_ATTRS],
                              counter_files(pb + "/counters"), counter_files(pb + "/hw_counters"), gids))
        return ports, devices, netdevs

    def counter_lines(self, files):
        lines = []
        for code, path in files:
            data = self.read(path, True)
            if data is not None:
                v = one_line(data)
                if v is not None:
                    lines.append(code + b" " + v)
        return b"\n".join(lines)

    def infiniband(self, out):
        root = self.sys + "/class/infiniband"
        eth = self.eth
        if not eth.runs and time.monotonic() < self.ib_absent_until:
            return  # no RDMA here a moment ago: looked for again every LAYOUT_S
        try:
            hcas = os.listdir(root)
        except OSError:
            self.ib_absent_until = time.monotonic() + LAYOUT_S
            if eth.runs:  # the RDMA devices went away while ethtool ran
                eth.collect(out, time.monotonic())
            return  # no RDMA here: that listdir was all
        hcas = sorted(h for h in hcas if NAME.match(h))[:MAX_HCAS]
        now = time.monotonic()
        if hcas != self.hcas or now - self.ib_at > LAYOUT_S:
            self.ports, self.devices, self.netdevs = self.ib_layout(root, hcas)
            self.hcas, self.ib_at = hcas, now
        for hca, hw, nets in self.devices:
            if hw:
                out += [("ibd/" + hca).encode(), self.counter_lines(hw)]
            if nets:
                lines = []
                for name, base in nets:
                    ids = []
                    for attr in ("dev_id", "dev_port"):
                        data = self.read(base + attr, True)
                        v = None if data is None else one_line(data)
                        ids.append(v if v and b" " not in v else b"-")
                    lines.append(b" ".join([name.encode()] + ids))
                out += [("ibn/" + hca).encode(), b"\n".join(lines)]
        for key, attrs, counters, hw, gids in self.ports:
            fields = []
            for path in attrs:
                data = self.read(path, True)
                v = None if data is None else one_line(data)
                fields.append(NONE if v is None else v)
            fields.append(self.counter_lines(counters))
            fields.append(self.counter_lines(hw))
            fields.append(self.counter_lines(gids))
            out += [key, b"\x1f".join(fields)]
        if eth.runs:
            eth.collect(out, time.monotonic())
        elif self.netdevs and now >= eth.due:
            eth.start(self.netdevs, now)

    def frame(self):
        now = time.monotonic()
        out = [b"wall", repr(time.time()).encode(), b"mono", repr(now).encode()]
        names = None  # of the interfaces in /proc/net/dev
        data = self.read(PROC["net/dev"])
        if data is not None:
            table = netdev_table(data)
            if table is not None:
                names = table[0]
                out += [b"netdev", table[1]]
            else:
                names = netdev_names(data)
                out += [b"net/dev", data]
        done = []  # the per-CPU tables read and summed
        self.irq_from_stat = False
        for key in PERCPU:  # (stat first: it may give the softirq sums)
            if key == "softirqs" and self.irq_from_stat and not self.detail:
                continue  # the sums came from /proc/stat, and nobody wants the table
            data = self.read(PROC[key])
            if data is not None:
                if self.percpu(key, data, now, out):
                    done.append(key)
                else:
                    out += [key.encode(), data]
        if self.irq_from_stat and "softirqs" not in done:
            done.append("softirqs")  # (its sums)
        if done:
            out += [b"cpusum", self.cpusum(done)]
        snmp, netstat = self.read(PROC["net/snmp"]), self.read(PROC["net/netstat"])
        tcp = None if snmp is None or netstat is None else self.tcp_table(snmp, netstat)
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
            data = self.read(PROC[key], True)
            if data is not None:
                out += [key.encode(), data]
        if names:
            records = []
            for raw in names:
                known = self.iface_paths.get(raw)
                if known is None:
                    name = raw.decode("ascii", "replace")
                    if not name or "/" in name or name in (".", ".."):
                        continue
                    base = self.sys + "/class/net/" + name + "/"
                    if len(self.iface_paths) > 4 * MAX_FDS:
                        self.iface_paths.clear()
                    known = self.iface_paths[raw] = (name, base, [base + attr for attr in IFACE_ATTRS], ("if/" + name).encode())
                name, base, paths, key = known
                fields = []
                for path in paths:
                    fd = self.fds.get(path)
                    if fd is not None:  # open already: read() without its call (24 a frame on a 4-interface node)
                        try:
                            fields.append(os.pread(fd, 4096, 0))
                            continue
                        except OSError as exc:
                            if exc.errno in KEEP_ON_ERROR:
                                fields.append(NONE)
                                continue
                    data = self.read(path, True)
                    fields.append(NONE if data is None else data)
                fields += self.iface_facts(name, base, fields[4], now)  # after ifindex
                records += [key, b"\x1f".join(fields)]
            joined = b"\0".join(records)
            if joined == self.last_ifs:
                out += [b"ifsame", b""]
            else:
                self.last_ifs = joined
                out += records
        self.infiniband(out)
        if self.peers is not None:
            out += [b"peers", self.peers.field(now, self.tcp_opens)]
        if self.mesh is not None:
            out += [b"mesh", self.mesh.field(now)]
        payload = pack_fields(out)
        return MAGIC + b"%d\n" % len(payload) + payload

    def command(self, line):
        """One line from the monitor (docs/protocol.md#stdin); a line it does not know is passed by."""
        if line.startswith(b"d "):  # the per-CPU tables: "d 1" on, "d 0" off
            self.detail = line[2:].strip() == b"1"
        elif line.startswith(b"m "):  # the probe mesh: "m TOKEN RATE PERIOD" on, "m 0" off
            words = line.split()
            if self.mesh is not None:
                self.mesh.close()
                self.mesh = None
            if len(words) == 4 and len(words[1]) == 32:
                try:
                    token = bytes(bytearray.fromhex(words[1].decode("ascii")))
                    rate, period = float(words[2]), float(words[3])
                except ValueError:
                    return
                if 0.01 <= rate <= 1000 and 0.01 <= period <= 3600:
                    self.mesh = Mesh(token, rate, period)
        elif line.startswith(b"mp+ ") and self.mesh is not None:
            self.mesh.add(line.split()[1:])
        elif (line == b"mp-" or line.startswith(b"mp- ")) and self.mesh is not None:
            self.mesh.remove(line.split()[1:])

    def loop(self, interval):
        out = sys.stdout.fileno()
        stdin = sys.stdin.fileno()  # read as it comes: a buffered reader could hold a second line unseen
        waiting = select.poll()
        waiting.register(stdin, select.POLLIN)
        pending = b""  # a line not yet whole
        due = time.monotonic()
        while True:
            try:
                write_whole(out, self.frame())
            except OSError:  # the channel went (a broken pipe)
                return
            due += interval
            while True:
                now = time.monotonic()
                wait = due - now
                if wait <= 0:
                    break
                runs, mesh = self.eth.runs, self.mesh
                if mesh is not None:
                    mesh.probe(now)
                    woken = mesh.wake(now)
                    if woken is not None:
                        wait = max(0.0, min(wait, woken - now))
                if runs or (mesh is not None and mesh.sock is not None):
                    # read ethtool's output as it comes (a full pipe would stall it), the mesh's packets
                    pipes = dict((run.fd, run) for run in runs if not run.eof)
                    socks = [mesh.sock] if mesh is not None and mesh.sock is not None else []
                    ready, _, _ = select.select([stdin] + list(pipes) + socks, [], [], wait)
                    for fd in ready:
                        if fd in socks:
                            mesh.receive(time.monotonic())
                        elif fd != stdin:
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
                    if line.startswith(b"i "):
                        try:
                            new = float(line[2:])
                        except ValueError:
                            continue
                        if 0.05 <= new <= 3600:
                            due += new - interval
                            interval = new
                            self.line_ok = interval <= LINE_MAX_S
                    else:
                        self.command(line)
            if time.monotonic() - due > interval:
                due = time.monotonic()  # we were stopped (SIGSTOP): do not burst to catch up


def main():
    args = sys.argv[1:]
    interval = float(args[0]) if args else 1.0
    sysfs, ethtool_s = "/sys", ETHTOOL_S
    max_peers, max_sockets = MAX_PEERS, MAX_SOCKETS
    loopback = "--peer-loopback" in args  # (tests: loopback peers too)
    discover_s, share = PEER_DISCOVER_S, PEER_SHARE
    for i, arg in enumerate(args[:-1]):
        if arg == "--sysfs":
            sysfs = args[i + 1].rstrip("/") or "/"
        elif arg == "--procfs":  # a copied tree (tests): its files stand for /proc's
            procfs = args[i + 1].rstrip("/")
            for key, path in PROC_FILES.items():
                PROC[key] = procfs + "/" + path
        elif arg == "--ethtool-every":
            ethtool_s = max(0.1, float(args[i + 1]))
        elif arg == "--max-peers":  # 0: no peers field
            max_peers = max(0, int(args[i + 1]))
        elif arg == "--max-sockets":
            max_sockets = max(1, int(args[i + 1]))
        elif arg == "--peer-discover":  # seconds between two dumps of every socket
            discover_s = max(0.0, float(args[i + 1]))
        elif arg == "--peer-share":  # of the node's time that peer readings may take (tests: 1)
            share = min(1.0, max(1e-6, float(args[i + 1])))
    if not os.path.exists(PROC["net/dev"]):
        sys.stderr.write("netui-sampler: no %s on this node\n" % PROC["net/dev"])
        sys.exit(3)
    peers = Peers(max_peers, max_sockets, loopback, discover_s, share) if max_peers else None
    sampler = Sampler(interval, sysfs, ethtool_s, "--detail" in args, peers)
    try:
        sampler.loop(interval)
    finally:
        sampler.eth.stop()
        if peers is not None:
            peers.close()
        if sampler.mesh is not None:
            sampler.mesh.close()

if __name__ == "__main__":
    main()
