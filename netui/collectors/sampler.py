# netui remote sampler. Sent to each node as `python3 -c <this file> INTERVAL`; nothing is
# written on the node. Python 3.6+ standard library only.
#
# Every INTERVAL seconds it reads the node's /proc and /sys counters and writes one frame to
# stdout:   b"NETUI1 <length>\n" + payload
# payload:  key NUL value NUL key NUL value NUL ...   (keys as in collectors/assemble.py;
#           a file that cannot be read is left out)
# It sends only what the monitor uses: the Tcp lines of snmp, the TcpExt lines of netstat,
# the header and NET rows of softirqs; /proc/stat summed per CPU ("cpu": CPU SOFTIRQ TOTAL
# lines) and softnet_stat cut to its used columns ("softnet": PROCESSED DROPPED SQUEEZE CPU,
# hex): the monitor of a 1,024-node fleet parses 3 numbers per CPU, not 17. An interface's
# sysfs texts go as one record, "if/<name>", fields in assemble.PACKED_ATTRS order joined
# by \x1f, \x1e for an unreadable one. Files stay open between samples (pread at offset 0
# makes the kernel produce them afresh): no fork, no open/close.
#
# stdin: "i SECONDS" changes the interval; end of file (the SSH channel closed) ends the
# sampler at once, and so does a failed write: no sampler outlives its connection.
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
fds = {}


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


def cpu_summary(data):
    """'CPU SOFTIRQ TOTAL' per cpuN line; total = user..steal (guest is inside user/nice)."""
    out = []
    for line in data.split(b"\n")[1:]:
        if not line.startswith(b"cpu"):
            break
        f = line.split()
        try:
            v = [int(x) for x in f[1:9]]
            out.append(b"%s %d %d" % (f[0][3:], v[6] if len(v) > 6 else 0, sum(v)))
        except ValueError:
            continue
    return b"\n".join(out)


def softnet_summary(data):
    """'PROCESSED DROPPED SQUEEZE CPU' (8 hex digits each) per CPU row."""
    out = []
    for n, line in enumerate(data.split(b"\n")):
        f = line.split()
        if len(f) >= 9:
            cpu = f[12] if len(f) >= 13 else b"%08x" % n
            out.append(b" ".join((f[0], f[1], f[2], cpu)))
    return b"\n".join(out)


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
            data = lines_with(data, (b"TcpExt:",))
        elif key == "stat":
            key, data = "cpu", cpu_summary(data)
        elif key == "net/softnet_stat":
            key, data = "softnet", softnet_summary(data)
        elif key == "softirqs":
            first = data.find(b"\n")
            data = data[: first + 1] + b"".join(
                line for line in data[first + 1 :].splitlines(True) if line.lstrip().startswith(b"NET_"))
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
