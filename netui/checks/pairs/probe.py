"""What a node offers a pair test, asked once before the test: the tool's path, the node's
IPv4 addresses, and (for perftest) its RDMA ports and GIDs.

``probe_command`` is one POSIX ``sh`` script per node (one SSH channel, a handful of
processes); ``parse_probe`` is a pure function of its output, so captured probes are unit
tests. The output is sections, each opened by a line ``@name``:

    @tool iperf3
    /usr/bin/iperf3                      (or "-" when ``command -v`` finds no executable)
    @addr
    <ip -o -4 addr show>                 "2: eth0    inet 10.0.0.1/24 brd … scope global eth0\\ …"
    @rdma
    port mlx5_0 1 4: ACTIVE|Ethernet     (device, port, state, link layer)
    /sys/class/infiniband/mlx5_0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:0a00:0001
    /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3:RoCE v2

Unused GID entries have no readable type (EINVAL): only entries with a type are kept.
"""

from __future__ import annotations

import ipaddress
import re
import shlex

from netui.checks.pairs.model_addresses import Gid, Probe, RdmaPort
from netui.model.text import safe_lines

# `grep -H .` prints "path:value" for every readable, non-empty file of a directory in one
# process: a port's GID table has up to 256 entries, a `cat` for each would cost ~0.3 s
_RDMA_SCRIPT = r"""echo @rdma
for p in ROOT/*/ports/*; do
  [ -d "$p" ] || continue
  d=${p%/ports/*}; d=${d##*/}
  printf 'port %s %s %s|%s\n' "$d" "${p##*/}" "$(cat "$p/state" 2>/dev/null)" "$(cat "$p/link_layer" 2>/dev/null)"
  grep -H . "$p"/gid_attrs/types/* "$p"/gids/* 2>/dev/null
done"""


def rdma_script(root: str = "/sys/class/infiniband") -> str:
    """The RDMA part of the probe (``root`` is for tests on a copied tree)."""
    return _RDMA_SCRIPT.replace("ROOT", shlex.quote(root))


def probe_command(binary: str, *, rdma: bool = False) -> str:
    """The probe script for a test with ``binary`` (a name or a path; quoted here)."""
    tool = shlex.quote(binary)
    script = (
        f"echo @tool {tool}\n"
        # dash's command -v skips non-executables, bash's does not: check -x as well
        f"p=$(command -v {tool} 2>/dev/null) && [ -f \"$p\" ] && [ -x \"$p\" ] && echo \"$p\" || echo -\n"
        "echo @addr\n"
        "ip -o -4 addr show 2>&1\n"
        # the TCP ports something already listens on (hex, from both tables, once each): a
        # test's server takes a port nobody holds (a user's own `iperf3 -s` on 5201, say)
        "echo @listen\n"
        "awk '$4==\"0A\"{split($2,a,\":\");if(!s[a[2]]++)print a[2]}' /proc/net/tcp /proc/net/tcp6 2>/dev/null\n"
    )
    if rdma:
        script += rdma_script() + "\n"
    return script


def tools_probe_command(binaries: list[str] | tuple[str, ...]) -> str:
    """The probe for a test that can use any of several tools (ping: fping, else ping):
    one ``@tool`` section per binary, then the addresses. ``tool_paths`` reads the tools,
    ``parse_probe`` the addresses."""
    script = ""
    for binary in binaries:
        script += probe_command(binary).split("echo @addr\n", 1)[0]
    return script + "echo @addr\nip -o -4 addr show 2>&1\n"


def tool_paths(text: str) -> dict[str, str | None]:
    """Every ``@tool`` section of a probe's output: binary → its path, or None when missing."""
    found: dict[str, str | None] = {}
    tool = None
    # the node's words (interface names, tool paths): shown, never obeyed
    for raw in safe_lines(text if isinstance(text, str) else "").splitlines():
        line = raw.strip()
        if line.startswith("@"):
            section, _, arg = line[1:].partition(" ")
            tool = arg if section == "tool" and arg else None
            if tool is not None:
                found.setdefault(tool, None)
        elif tool is not None and line:
            found[tool] = None if line == "-" else line
    return found


# "2: eth0    inet 198.18.0.9/24 brd 198.18.0.255 scope global eth0\       valid_lft …"
_ADDR = re.compile(r"^\d+:\s+(\S+)\s+inet\s+(\d+\.\d+\.\d+\.\d+/\d+)\b")
_PORT = re.compile(r"^port (\S+) (\d+) (.*)$")
_GID_FILE = re.compile(r"^\S*/([^/]+)/ports/(\d+)/(gids|gid_attrs/types)/(\d+):(.*)$")


def parse_probe(text: str) -> Probe:
    """Parse ``probe_command``'s output; never raises (what it cannot read is a problem)."""
    section = None
    tool = tool_path = None
    addresses: dict[str, list[ipaddress.IPv4Interface]] = {}
    ports: dict[tuple[str, int], tuple[str, str]] = {}
    gids: dict[tuple[str, int, int], str] = {}
    types: dict[tuple[str, int, int], str] = {}
    problems: list[str] = []
    listening: set[int] = set()
    listen_probed = False
    rdma_probed = False
    # the node's words (interface names, tool paths, GIDs): shown, never obeyed
    for raw in safe_lines(text if isinstance(text, str) else "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("@"):
            section, _, arg = line[1:].partition(" ")
            if section == "tool":
                tool = arg or None
            elif section == "rdma":
                rdma_probed = True
            elif section == "listen":
                listen_probed = True
            continue
        if section == "tool":
            tool_path = None if line == "-" else line
        elif section == "addr":
            m = _ADDR.match(line)
            if m is None:
                problems.append(line[:200])
                continue
            name = m.group(1).split("@", 1)[0]  # "eth0.100@eth0" is a VLAN on eth0
            try:
                addresses.setdefault(name, []).append(ipaddress.IPv4Interface(m.group(2)))
            except ValueError:
                problems.append(line[:200])
        elif section == "listen":
            try:
                port = int(line, 16)
            except ValueError:
                problems.append(line[:200])
                continue
            if 0 < port <= 65535:
                listening.add(port)
        elif section == "rdma":
            if m := _PORT.match(line):
                state, _, layer = m.group(3).partition("|")
                ports[(m.group(1), int(m.group(2)))] = (state.partition(": ")[2] or state, layer)
            elif m := _GID_FILE.match(line):
                key = (m.group(1), int(m.group(2)), int(m.group(4)))
                (gids if m.group(3) == "gids" else types)[key] = m.group(5).strip()
            else:
                problems.append(line[:200])
        else:
            problems.append(line[:200])
    rdma = []
    for (device, port), (state, layer) in sorted(ports.items()):
        entries = tuple(
            Gid(index, gids.get((device, port, index), ""), kind)
            for (d, p, index), kind in sorted(types.items())
            if d == device and p == port and kind
        )
        rdma.append(RdmaPort(device, port, state, layer, entries))
    return Probe(tool=tool, tool_path=tool_path, addresses=addresses, rdma=tuple(rdma),
                 rdma_probed=rdma_probed, problems=tuple(problems), listening=frozenset(listening),
                 listen_probed=listen_probed)
