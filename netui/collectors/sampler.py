# netui remote sampler. Sent to each node as `python3 -c <this file> INTERVAL`; nothing is
# written on the node. Python 3.6+ standard library only.
#
# Every INTERVAL seconds it reads the node's /proc and /sys counters and writes one frame to
# stdout:   b"NETUI1 <length>\n" + payload
# payload:  key NUL value NUL key NUL value NUL ...   (keys as in collectors/assemble.py;
#           a file that cannot be read is left out)
# It sends only what the monitor uses, and big tables of numbers as base64 of little-endian
# u64 arrays ("u64s"), which the monitor decodes in C instead of parsing text number by
# number (a 1,024-node fleet is a million numbers a second):
#   "cpu"      /proc/stat summed per CPU: u64s of (CPU, SOFTIRQ, TOTAL) triples
#   "netirq"   the NET_RX and NET_TX rows of /proc/softirqs: u64s of (CPU, NET_RX, NET_TX)
#   "netdev"   /proc/net/dev: interface names (space-separated), a newline, then u64s of
#              their 16 counters each
#   "softnet"  softnet_stat cut to PROCESSED DROPPED SQUEEZE CPU (8 hex digits each) per row
#   the Tcp lines of snmp, and the TcpExt lines of netstat cut to the fields netui keeps.
# A table that does not read as the kernel writes it goes as its raw text under its own
# key ("net/dev", "stat", "softirqs"), and the monitor's careful parsers take it.
# An interface's sysfs texts go as one record, "if/<name>", fields in
# assemble.PACKED_ATTRS order joined by \x1f, \x1e for an unreadable one. Files stay open
# between samples (pread at offset 0 makes the kernel produce them afresh): no fork, no
# open/close.
#
# stdin: "i SECONDS" changes the interval; end of file (the SSH channel closed) ends the
# sampler at once, and so does a failed write: no sampler outlives its connection.
import array
import binascii
import os
import select
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
fds = {}
tcpext_cut = {}  # TcpExt names line -> (names kept, their positions)


def read(path):
    fd = fds.get(path)
    try:
        if fd is None:
            fd = fds[path] = os.open(path, os.O_RDONLY)
        chunks = []
        offset = 0
        while True:
            chunk = os.pread(fd, 262144, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            if path.startswith("/sys/"):
                break  # a sysfs attribute is one short read
        return b"".join(chunks)
    except OSError:
        if fd is not None:
            fds.pop(path, None)
            try:
                os.close(fd)
            except OSError:
                pass
        return None


def lines_with(data, prefixes):
    return b"".join(line for line in data.splitlines(True) if line.startswith(prefixes))


def u64s(values):
    a = array.array("Q", values)
    if BIG:
        a.byteswap()
    return binascii.b2a_base64(a.tobytes(), newline=False)


def cpu_summary(data):
    """u64s of (CPU, SOFTIRQ, TOTAL) per cpuN line; total = user..steal (guest is inside
    user/nice). None when a line is not numbers: the monitor then parses the raw text."""
    out = []
    for line in data.split(b"\n")[1:]:
        if not line.startswith(b"cpu"):
            break
        f = line.split()
        try:
            v = [int(x) for x in f[1:9]]
            out += (int(f[0][3:]), v[6] if len(v) > 6 else 0, sum(v))
        except ValueError:
            return None
        if min(v) < 0:
            return None
    return u64s(out) if out else None


def netirq_summary(data):
    """u64s of (CPU, NET_RX, NET_TX) from /proc/softirqs; None when it is not as expected."""
    lines = data.split(b"\n")
    try:
        cpus = [int(label[3:]) for label in lines[0].split()]
        rows = {}
        for line in lines[1:]:
            name, _, rest = line.partition(b":")
            name = name.strip()
            if name in (b"NET_RX", b"NET_TX"):
                rows[name] = [int(x) for x in rest.split()]
        rx, tx = rows[b"NET_RX"], rows[b"NET_TX"]
    except (ValueError, KeyError):
        return None
    if not cpus or len(rx) != len(cpus) or len(tx) != len(cpus) or min(rx + tx + cpus) < 0:
        return None
    out = []
    for i in range(len(cpus)):
        out += (cpus[i], rx[i], tx[i])
    return u64s(out)


def netdev_summary(data):
    """Names, a newline, u64s of each interface's 16 counters; None when a line is odd."""
    names = []
    out = []
    for line in data.split(b"\n")[2:]:
        if not line.strip():
            continue
        name, sep, rest = line.partition(b":")
        name = name.strip()
        f = rest.split()
        if not sep or not name or len(f) != 16:
            return None
        try:
            v = [int(x) for x in f]
        except ValueError:
            return None
        if min(v) < 0:
            return None
        names.append(name)
        out += v
    return b" ".join(names) + b"\n" + u64s(out) if names else None


def tcpext_lines(data):
    """The TcpExt name and value lines, cut to the fields netui keeps."""
    pair = [line for line in data.split(b"\n") if line.startswith(b"TcpExt:")]
    if len(pair) != 2:
        return b"".join(line + b"\n" for line in pair)
    cut = tcpext_cut.get(pair[0])
    if cut is None:
        names = pair[0].split()[1:]
        keep = [i for i, n in enumerate(names) if n in TCPEXT]
        cut = tcpext_cut[pair[0]] = (b" ".join(names[i] for i in keep), keep)
        if len(tcpext_cut) > 8:
            tcpext_cut.clear()
    values = pair[1].split()[1:]
    try:
        kept = b" ".join(values[i] for i in cut[1])
    except IndexError:
        return pair[0] + b"\n" + pair[1] + b"\n"  # a torn pair: the monitor judges it
    return b"TcpExt: " + cut[0] + b"\nTcpExt: " + kept + b"\n"


def softnet_summary(data):
    """'PROCESSED DROPPED SQUEEZE CPU' (8 hex digits each) per CPU row."""
    out = []
    for n, line in enumerate(data.split(b"\n")):
        f = line.split()
        if len(f) >= 9:
            cpu = f[12] if len(f) >= 13 else b"%08x" % n
            out.append(b" ".join((f[0], f[1], f[2], cpu)))
    return b"\n".join(out)


SUMMARIES = {"stat": (b"cpu", cpu_summary), "softirqs": (b"netirq", netirq_summary),
             "net/dev": (b"netdev", netdev_summary)}


def frame():
    out = [b"wall", repr(time.time()).encode(), b"mono", repr(time.monotonic()).encode()]
    texts = {}
    for key, path in PROC.items():
        data = read(path)
        if data is None:
            continue
        if key == "net/snmp":
            data = lines_with(data, (b"Tcp:",))
        elif key == "net/netstat":
            data = tcpext_lines(data)
        elif key == "net/softnet_stat":
            key, data = "softnet", softnet_summary(data)
        else:
            summary = SUMMARIES.get(key)
            if summary is not None:
                packed = summary[1](data)
                if packed is not None:
                    texts[key] = data
                    out += [summary[0], packed]
                    continue
        texts[key] = data
        out += [key.encode(), data]
    dev = texts.get("net/dev")
    if dev:
        for line in dev.splitlines()[2:]:
            name = line.partition(b":")[0].strip().decode("ascii", "replace")
            if not name or "/" in name or name in (".", ".."):
                continue
            base = "/sys/class/net/" + name + "/"
            fields = []
            for attr in ATTRS:
                data = read(base + attr)
                fields.append(NONE if data is None else data)
            try:
                fields.append(os.readlink(base[:-1]).encode())
            except OSError:
                fields.append(NONE)
            for marker in MARKERS:
                fields.append(b"" if os.path.exists(base + marker) else NONE)
            out += [("if/" + name).encode(), b"\x1f".join(fields)]
    payload = b"\0".join(out) + b"\0"
    return b"NETUI1 %d\n" % len(payload) + payload


def main():
    interval = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    if not os.path.exists("/proc/net/dev"):
        sys.stderr.write("netui-sampler: no /proc/net/dev on this node\n")
        sys.exit(3)
    out = sys.stdout.buffer
    stdin = sys.stdin.buffer
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
            ready, _, _ = select.select([stdin], [], [], wait)
            if not ready:
                continue
            line = stdin.readline()
            if not line:
                return  # the channel closed
            if line.startswith(b"i "):
                try:
                    new = float(line[2:])
                except ValueError:
                    continue
                if 0.05 <= new <= 3600:
                    due += new - interval
                    interval = new
        if time.monotonic() - due > interval:
            due = time.monotonic()  # we were stopped (SIGSTOP): do not burst to catch up


if __name__ == "__main__":
    main()
