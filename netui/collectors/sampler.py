# netui remote sampler. Sent to each node as `python3 -c <this file> INTERVAL`; nothing is
# written on the node. Python 3.6+ standard library only.
#
# Every INTERVAL seconds it reads the node's /proc and /sys counters and writes one frame to
# stdout:   b"NETUI1 <length>\n" + payload
# payload:  key NUL value NUL key NUL value NUL ...   (keys as in collectors/assemble.py;
#           "if/<name>/<attr>" for /sys/class/net; a file that cannot be read is left out)
# It reads only what the monitor uses (the Tcp lines of snmp, the TcpExt lines of netstat,
# the cpu lines of stat, the header and NET rows of softirqs) and keeps files open between
# samples (pread at offset 0 makes the kernel produce them afresh): no fork, no open/close.
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
ATTRS = ("mtu", "speed", "operstate", "carrier", "ifindex", "type")
MARKERS = ("bridge", "bonding", "device")
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
            end = data.find(b"\nintr")
            data = data[: end + 1] if end >= 0 else lines_with(data, (b"cpu",))
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
            for attr in ATTRS:
                data = read(base + attr)
                if data is not None:
                    out += [("if/%s/%s" % (name, attr)).encode(), data]
            try:
                out += [("if/%s/link" % name).encode(), os.readlink(base[:-1]).encode()]
            except OSError:
                pass
            for marker in MARKERS:
                if os.path.exists(base + marker):
                    out += [("if/%s/%s" % (name, marker)).encode(), b""]
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
