"""Topology files read into a ``model.topology.Topology``: Slurm's ``topology.conf`` (the
topology/tree plugin), the output of ``scontrol show topology``, and netui's TOML map
(docs/topology.md).

Every problem raises ``TopologyFileError`` whose message starts with ``file:line:`` (or
``file:`` when no line is to blame): an unknown key, a line without ``SwitchName``, a bad
hostlist range, a switch under two parents, a node under two leaves, uplinks that loop, a
switch named but never defined, a file netui will not read (not a regular file, larger than
``MAX_TOPOLOGY_BYTES``, not UTF-8).

Slurm's rules, as topology.conf(5) and slurmctld apply them: parameter names are case
insensitive, ``#`` starts a comment, ``Nodes=``/``Switches=`` take hostlist expressions
(``tux[0-3,12,18-20]``), a switch has child nodes or child switches but not both,
``SwitchName`` is at most 64 characters, ``LinkSpeed`` is a number in arbitrary units.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as the tomli package (a dependency there)
    import tomli as tomllib

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException

from netui.model.topology import Attachment, Switch, Topology
from netui.model.text import MESSAGE_CHARS, safe_line, safe_text
from netui.readlimits import MAX_NODES, MAX_TOML_DEPTH, FileRefused, read_capped, toml_too_deep

MAX_TOPOLOGY_BYTES = 16 << 20
"""A topology file larger than this is refused (100,000 nodes on 3,000 switches take ~3 MB)."""

MAX_NAMES = 100_000  # names one hostlist expression may expand to: more is a typo in a range
MAX_SWITCH_NAME = 64  # topology.conf(5)
MAX_NODE_NAME = 253  # a full DNS name at most; a longer "name" is damage, not a host
MAX_LEVELS = 16  # switches from a leaf up to the top of its tree, the leaf included
MAX_FILE_NAMES = MAX_NODES  # node names in all of a file's lists together
SCONTROL = "scontrol show topology"
_SCONTROL_TIMEOUT_S = 30.0
_RANGE_ITEM_RE = re.compile(r"\s*([0-9]+)(?:-([0-9]+)(?:/([0-9]+))?)?\s*")
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._:-]*")
_PORT_RE = re.compile(r"[ -~]{1,128}")  # printable ASCII: switch port names are ifnames, "swp1", "Eth1/1"


class TopologyFileError(ValueError):
    """A topology that cannot be read; ``str()`` starts with ``file:line:`` or ``file:``."""

    def __init__(self, path: str, lineno: int | None, reason: str) -> None:
        reason = safe_text(reason, MESSAGE_CHARS)  # it may quote the file: shown, never obeyed
        super().__init__(f"{path}:{lineno}: {reason}" if lineno else f"{path}: {reason}")
        self.path = path
        self.lineno = lineno
        self.reason = reason


@dataclass
class _Rec:
    """One switch as a file defines it, before the tree is checked."""

    name: str
    line: int
    nodes: list[str] = field(default_factory=list)
    switches: list[str] | None = None  # topology.conf / scontrol: children named by the parent
    uplink: str | None = None  # TOML: the parent named by the child
    uplink_gbps: float | None = None
    link_speed: int | None = None


# --- hostlists ---------------------------------------------------------------------------------


def hostlist(text: str, path: str, lineno: int | None, what: str) -> list[str]:
    """A Slurm hostlist expression expanded (``tux[0-3,12]``, ``s0,s1``), in the order written
    (a range in ascending order); TopologyFileError naming ``what`` when it is not one."""
    if not text:
        raise TopologyFileError(path, lineno, f"{what} is empty")
    if "@" in text:
        raise TopologyFileError(path, lineno, f"bad {what} {_shown(text)}: node groups (@name) are not hostlists")
    if _bracket_count(text) > MAX_NAMES:
        raise TopologyFileError(path, lineno,
                                f"bad {what} {_shown(text)}: names more than {MAX_NAMES:,} (a typo in a range?)")
    out: list[str] = []
    for piece in re.split(r",(?![^\[]*\])", text):
        try:
            nodes = NodeSet(piece, resolver=RESOLVER_NOGROUP)
        except (NodeSetException, ValueError) as exc:
            raise TopologyFileError(path, lineno, f"bad {what} {_shown(text)}: {exc}") from None
        if len(nodes) == 0:
            raise TopologyFileError(path, lineno, f"bad {what} {_shown(text)}: an empty item")
        for name in nodes:
            if len(name) > MAX_NODE_NAME:
                raise TopologyFileError(path, lineno, f"bad {what}: a name of {len(name):,} characters "
                                                      f"(at most {MAX_NODE_NAME})")
            if not _NAME_RE.fullmatch(name):
                raise TopologyFileError(path, lineno, f"bad {what} {_shown(text)}: {_shown(name)} is not a plausible name")
            out.append(name)
    if len(out) > MAX_NAMES:
        raise TopologyFileError(path, lineno, f"bad {what} {_shown(text)}: names more than {MAX_NAMES:,}")
    return list(dict.fromkeys(out))


def _shown(text: str, limit: int = 80) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters with a mark when longer."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text):,} characters)"


class _NameBudget:
    """The node names a whole file may list (MAX_FILE_NAMES): a file of many lines, each
    within MAX_NAMES, must not expand to millions of names either."""

    def __init__(self) -> None:
        self.total = 0

    def hostlist(self, text: str, path: str, lineno: int | None, what: str) -> list[str]:
        estimate = _bracket_count(text)  # over MAX_NAMES: hostlist says so for this line
        if estimate <= MAX_NAMES and self.total + estimate > MAX_FILE_NAMES:
            raise TopologyFileError(path, lineno, f"the file names more than {MAX_FILE_NAMES:,} nodes "
                                                  f"by this line (a typo in a range?)")
        names = hostlist(text, path, lineno, what)
        self.total += len(names)
        return names


def _bracket_count(text: str) -> int:
    """A bound on the names a hostlist expands to, counted before NodeSet builds them."""
    total = 1
    for body in re.findall(r"\[([^\[\]]*)\]", text):
        count = 0
        for item in body.split(","):
            m = _RANGE_ITEM_RE.fullmatch(item)
            if not m or m.group(2) is None:
                count += 1
                continue
            if max(len(m.group(1)), len(m.group(2))) > 18:
                return MAX_NAMES + 1
            first, last, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
            count += (last - first) // max(step, 1) + 1 if last >= first else 1
        total *= max(count, 1)
    return total + text.count(",")


# --- topology.conf and scontrol show topology --------------------------------------------------


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text without comment) of each non-blank line; a backslash at the end
    of a line continues it on the next (as Slurm's configuration parser reads it). Linear in
    the file's size: the pieces of a continued line are joined once, at its end."""
    out: list[tuple[int, str]] = []
    first = 0
    held: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.partition("#")[0].rstrip()
        if not held:
            first = lineno
        if line.endswith("\\"):
            held.append(line[:-1])
            continue
        if held:
            held.append(line)
            line = " ".join(held)
            held = []
        if line.strip():
            out.append((first, line.strip()))
    if held:
        line = " ".join(held)
        if line.strip():
            out.append((first, line.strip()))
    return out


def _pairs(line: str, path: str, lineno: int) -> list[tuple[str, str]]:
    pairs = []
    for token in line.split():
        key, eq, value = token.partition("=")
        if not eq or not key:
            raise TopologyFileError(path, lineno, f"{token!r} is not Key=Value")
        pairs.append((key.lower(), value))
    return pairs


_NOT_TREE = {"blockname": "topology/block", "blocksizes": "topology/block", "ringname": "topology/ring"}
_CONF_KEYS = {"switchname", "switches", "nodes", "linkspeed"}
_SCONTROL_KEYS = _CONF_KEYS | {"level"}


def parse_topology_conf(text: str, path: str = "topology.conf", *, scontrol: bool = False) -> Topology:
    """Slurm's topology.conf (topology/tree), or with ``scontrol`` the lines of
    ``scontrol show topology`` (which also gives ``Level`` and, on a switch with child
    switches, every node below it in ``Nodes=``: those stay on their leaves)."""
    recs: list[_Rec] = []
    budget = _NameBudget()
    for lineno, line in _logical_lines(text):
        if scontrol and line.lower().startswith("no topology information"):
            raise TopologyFileError(path, lineno, "Slurm has no topology (TopologyPlugin is not topology/tree)")
        pairs = _pairs(line, path, lineno)
        keys = [k for k, _ in pairs]
        for k in keys:
            if k in _NOT_TREE:
                raise TopologyFileError(path, lineno, f"{_NOT_TREE[k]} is not supported: netui reads the "
                                                      "topology/tree plugin's SwitchName lines")
        allowed = _SCONTROL_KEYS if scontrol else _CONF_KEYS
        for k, _ in pairs:
            if k not in allowed:
                if scontrol:
                    continue  # a newer Slurm's extra fields say nothing about the tree
                raise TopologyFileError(path, lineno, f"unknown key {k!r} (topology/tree knows SwitchName, "
                                                      "Switches, Nodes, LinkSpeed)")
        twice = next((k for k in keys if keys.count(k) > 1 and k in allowed), None)
        if twice:
            raise TopologyFileError(path, lineno, f"{twice!r} given twice on one line")
        if keys[0] != "switchname":
            raise TopologyFileError(path, lineno, "missing SwitchName (each line defines one switch: "
                                                  "SwitchName=NAME Nodes=... or Switches=...)")
        values = dict(pairs)
        name = values["switchname"]
        if not name:
            raise TopologyFileError(path, lineno, "SwitchName is empty")
        if len(name) > MAX_SWITCH_NAME or not _NAME_RE.fullmatch(name):
            raise TopologyFileError(path, lineno, f"bad SwitchName {_shown(name)} (at most {MAX_SWITCH_NAME} "
                                                  "characters, letters, digits, '.', '_', '-')")
        rec = _Rec(name, lineno)
        if "linkspeed" in values:
            speed = values["linkspeed"]
            if not speed.isdigit() or len(speed) > 10:
                raise TopologyFileError(path, lineno, f"bad LinkSpeed {speed!r}: want a whole number")
            rec.link_speed = int(speed)
        if "switches" in values:
            rec.switches = hostlist(values["switches"], path, lineno, "Switches")
        if "nodes" in values:
            if rec.switches is not None and not scontrol:
                raise TopologyFileError(path, lineno, f"switch {name} has both child switches and nodes "
                                                      "(Slurm refuses this too)")
            if rec.switches is None:
                rec.nodes = budget.hostlist(values["nodes"], path, lineno, "Nodes")
        recs.append(rec)
    if not recs:
        raise TopologyFileError(path, None, "no switch defined (want lines like SwitchName=s0 Nodes=tux[0-3])")
    return _assemble(recs, path, {}, source="scontrol" if scontrol else os.path.basename(path))


def parse_scontrol_topology(text: str) -> Topology:
    """The output of ``scontrol show topology``; TopologyFileError names it as the file."""
    if not text.strip():
        raise TopologyFileError(SCONTROL, None, "no output (is TopologyPlugin=topology/tree set in slurm.conf?)")
    return parse_topology_conf(text, SCONTROL, scontrol=True)


Run = Callable[..., subprocess.CompletedProcess]


def scontrol_topology(run: Run = subprocess.run) -> Topology:
    """Slurm's switch tree, asked of ``scontrol show topology``; TopologyFileError when scontrol
    is missing, fails, or the cluster's topology plugin is not topology/tree."""
    argv = ["scontrol", "show", "topology"]
    try:
        done = run(argv, capture_output=True, text=True, timeout=_SCONTROL_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise TopologyFileError(SCONTROL, None, "scontrol not found (is this a Slurm cluster? "
                                                "else give the topology with --topology FILE)") from None
    except subprocess.TimeoutExpired:
        raise TopologyFileError(SCONTROL, None, f"no answer in {_SCONTROL_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise TopologyFileError(SCONTROL, None, f"cannot run scontrol: {exc}") from None
    if done.returncode != 0:
        reason = (done.stderr or done.stdout or "").strip() or f"exit status {done.returncode}"
        raise TopologyFileError(SCONTROL, None, safe_line(reason, 300))
    return parse_scontrol_topology(done.stdout or "")


# --- the TOML map ------------------------------------------------------------------------------

_SWITCH_KEYS = {"nodes", "uplink", "uplink_gbps"}
_NODE_KEYS = {"switch", "port"}


def _header_line(text: str, table: str, name: str) -> int | None:
    """The line of ``[table.name]`` (or of ``name = {`` inside ``[table]``), for messages."""
    quoted = rf"(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}')"
    table = re.escape(table)
    pats = [rf"^\s*\[\s*{table}\s*\.\s*{quoted}\s*[\].]", rf"^\s*{quoted}\s*=",
            rf"^\s*{table}\s*\.\s*{quoted}\s*[.=]"]
    lines = text.splitlines()
    for pat in pats:
        for i, line in enumerate(lines, start=1):
            if re.match(pat, line):
                return i
    return None


def parse_topology_toml(text: str, path: str = "topology.toml") -> Topology:
    """netui's TOML map (docs/topology.md)::

        [switches.spine1]
        [switches.leaf1]
        uplink = "spine1"          # the switch this one's uplink goes to
        uplink_gbps = 100          # optional: that uplink's capacity
        nodes = "node[1-4]"        # a hostlist, or a list of them
        [nodes.node1]
        port = "swp1"              # optional: the switch port (and ``switch`` if not listed above)
    """
    deep = toml_too_deep(text)
    if deep is not None:
        raise TopologyFileError(path, deep, f"arrays or tables nested more than {MAX_TOML_DEPTH} deep")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        raise TopologyFileError(path, int(m.group(1)) if m else None,
                                f"not valid TOML: {re.sub(r' ?[(]at line .*', '', str(exc))}") from None
    src = os.path.basename(path)
    for key in doc:
        if key not in ("switches", "nodes"):
            raise TopologyFileError(path, _header_line(text, key, "") or _top_key_line(text, key),
                                    f"unknown key {key!r} (a topology map has [switches.NAME] and [nodes.NAME])")
    switches = doc.get("switches", {})
    nodes = doc.get("nodes", {})
    for what, table in (("switches", switches), ("nodes", nodes)):
        if not isinstance(table, dict):
            raise TopologyFileError(path, _top_key_line(text, what), f"{what!r} must be a table ([{what}.NAME])")
    recs: list[_Rec] = []
    budget = _NameBudget()
    for name, body in switches.items():
        line = _header_line(text, "switches", name)
        if not isinstance(body, dict):
            raise TopologyFileError(path, line, f"switch {_shown(name)} must be a table ([switches.{name}])")
        if len(name) > MAX_SWITCH_NAME or not _NAME_RE.fullmatch(name):
            raise TopologyFileError(path, line, f"bad switch name {_shown(name)}")
        for key in body:
            if key not in _SWITCH_KEYS:
                _dotted(path, line, "switches", name, key, body[key])
                raise TopologyFileError(path, line, f"switch {name}: unknown key {key!r} "
                                                    "(known: nodes, uplink, uplink_gbps)")
        rec = _Rec(name, line or 0)
        listed = body.get("nodes", [])
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
            raise TopologyFileError(path, line, f"switch {name}: nodes must be a hostlist string or a list of them")
        for item in listed:
            rec.nodes.extend(budget.hostlist(item, path, line, f"switch {name}'s nodes"))
        rec.nodes = list(dict.fromkeys(rec.nodes))
        uplink = body.get("uplink")
        if uplink is not None and not isinstance(uplink, str):
            raise TopologyFileError(path, line, f"switch {name}: uplink must be a switch name")
        rec.uplink = uplink
        gbps = body.get("uplink_gbps")
        if gbps is not None:
            if isinstance(gbps, bool) or not isinstance(gbps, (int, float)) or not 0 < gbps < 1e6:
                raise TopologyFileError(path, line, f"switch {name}: uplink_gbps must be a positive number of Gb/s")
            rec.uplink_gbps = float(gbps)
        recs.append(rec)
    ports: dict[str, tuple[str | None, str | None, int | None]] = {}
    lowered: dict[str, str] = {}  # a node's key → its name as first written
    for node, body in nodes.items():
        line = _header_line(text, "nodes", node)
        if not isinstance(body, dict):
            raise TopologyFileError(path, line, f"node {node!r} must be a table ([nodes.{node}])")
        if len(node) > MAX_NODE_NAME:
            raise TopologyFileError(path, line, f"bad node name: {len(node):,} characters (at most {MAX_NODE_NAME})")
        if not _NAME_RE.fullmatch(node):
            raise TopologyFileError(path, line, f"bad node name {_shown(node)}")
        for key in body:
            if key not in _NODE_KEYS:
                _dotted(path, line, "nodes", node, key, body[key])
                raise TopologyFileError(path, line, f"node {node}: unknown key {key!r} (known: switch, port)")
        switch, port = body.get("switch"), body.get("port")
        if switch is not None and not isinstance(switch, str):
            raise TopologyFileError(path, line, f"node {node}: switch must be a switch name")
        if port is not None and (not isinstance(port, str) or not _PORT_RE.fullmatch(port)):
            raise TopologyFileError(path, line, f"node {node}: port must be a name such as \"swp1\"")
        if node.lower() in lowered:
            first = lowered[node.lower()]
            raise TopologyFileError(path, line, f"node {node} is given twice (as {first}"
                                                f"{f', line {ports[first][2]}' if ports[first][2] else ''})")
        lowered[node.lower()] = node
        ports[node] = (switch, port, line)
    return _assemble(recs, path, ports, source=src)


def _top_key_line(text: str, key: str) -> int | None:
    for i, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"^\s*\[*\s*[\"']?{re.escape(key)}(?![\w-])", line):
            return i
    return None


def _dotted(path: str, line: int | None, table: str, name: str, key: str, value: object) -> None:
    """``[nodes.n1.cluster]``: TOML reads a table ``cluster`` inside ``n1``; say to quote the name."""
    if isinstance(value, dict):
        parts = [name, key]
        while isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), dict):
            part, value = next(iter(value.items()))
            parts.append(part)
        dotted = ".".join(parts)
        raise TopologyFileError(path, line, f"{table}.{dotted}: a name with a dot must be quoted: "
                                            f"[{table}.\"{dotted}\"]")


# --- the tree, checked -------------------------------------------------------------------------


def _assemble(recs: list[_Rec], path: str, ports: dict[str, tuple[str | None, str | None, int | None]],
              source: str) -> Topology:
    where = (lambda line: f"{source}:{line}" if line else source)
    defined: dict[str, _Rec] = {}
    for r in recs:
        if r.name in defined:
            raise TopologyFileError(path, r.line,
                                    f"switch {r.name} is defined twice (first at line {defined[r.name].line})")
        defined[r.name] = r
    parent: dict[str, tuple[str, int]] = {}
    for r in recs:
        kids = r.switches or []
        for kid in kids:
            if kid == r.name:
                raise TopologyFileError(path, r.line, f"switch {r.name} lists itself in Switches")
            if kid not in defined:
                raise TopologyFileError(path, r.line, f"switch {kid} (in Switches of {r.name}) is not defined")
            if kid in parent:
                raise TopologyFileError(path, r.line, f"switch {kid} is under two parents: "
                                                      f"{parent[kid][0]} (line {parent[kid][1]}) and {r.name}")
            parent[kid] = (r.name, r.line)
        if r.uplink is not None:
            if r.uplink == r.name:
                raise TopologyFileError(path, r.line, f"switch {r.name}: uplink to itself")
            if r.uplink not in defined:
                raise TopologyFileError(path, r.line, f"switch {r.name}: uplink {r.uplink!r} is not a switch of "
                                                      f"this file (add [switches.{r.uplink}])")
            parent[r.name] = (r.uplink, r.line)
    depth: dict[str, int] = {}  # switches from this one up to its root, itself included
    for r in recs:  # a loop of uplinks (no root above), or a tree deeper than MAX_LEVELS
        walk: list[str] = []
        on_walk: set[str] = set()
        name: str | None = r.name
        while name is not None and name not in depth:
            if name in on_walk:
                loop = " → ".join(walk[walk.index(name):] + [name])
                raise TopologyFileError(path, parent[walk[-1]][1], f"switches loop: {loop}")
            on_walk.add(name)
            walk.append(name)
            up = parent.get(name)
            name = up[0] if up is not None else None
        above = depth[name] if name is not None else 0
        for i, below in enumerate(reversed(walk), start=1):
            depth[below] = above + i
            if above + i > MAX_LEVELS:
                raise TopologyFileError(path, defined[below].line,
                                        f"switch {below}: more than {MAX_LEVELS} levels of switches from it up "
                                        f"to the top of its tree (netui reads at most {MAX_LEVELS}; a chain "
                                        "of uplinks this long is a typo)")
    leaf_of: dict[str, tuple[str, int, str]] = {}  # node's key → (switch, line, the name as written)
    attachments: dict[str, Attachment] = {}
    for r in recs:
        for node in r.nodes:
            key = node.lower()  # as Topology finds nodes: Node1 and node1 are one node
            if key in leaf_of and leaf_of[key][0] != r.name:
                raise TopologyFileError(path, r.line, f"node {node} is under two switches: "
                                                      f"{leaf_of[key][0]} (line {leaf_of[key][1]}) and {r.name}"
                                                      + (f" (as {leaf_of[key][2]})" if leaf_of[key][2] != node else ""))
            if key not in leaf_of:
                leaf_of[key] = (r.name, r.line, node)
                attachments[key] = Attachment(node, r.name, source=where(r.line))
    for node, (switch, port, line) in ports.items():
        key = node.lower()
        if switch is not None and switch not in defined:
            raise TopologyFileError(path, line, f"node {node}: switch {switch!r} is not a switch of this file")
        if switch is not None and key in leaf_of and leaf_of[key][0] != switch:
            raise TopologyFileError(path, line, f"node {node} is under two switches: "
                                                f"{leaf_of[key][0]} (line {leaf_of[key][1]}) and {switch}")
        port_source = where(line) if port is not None else None
        old = attachments.get(key)  # the switch that lists the node, if one does
        if old is not None:
            attachments[key] = Attachment(old.node, old.switch, port, old.source, port_source)
        elif switch is not None:
            attachments[key] = Attachment(node, switch, port, where(line), port_source)
        else:
            raise TopologyFileError(path, line, f"node {node}: no switch (give switch = \"NAME\" or list it "
                                                "in a switch's nodes)")
    switches = [Switch(r.name, parent[r.name][0] if r.name in parent else None, r.uplink_gbps, r.link_speed,
                       where(r.line)) for r in recs]
    return Topology(switches, attachments.values())


# --- a file, whichever format ------------------------------------------------------------------


def looks_like_toml(path: str, text: str) -> bool:
    """``.toml`` by name, or a first meaningful line that opens a table (``[switches.x]``)."""
    if path.lower().endswith(".toml"):
        return True
    for line in text.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            return s.startswith("[")
    return False


def read_topology_file(path: str | os.PathLike[str]) -> Topology:
    """A topology file read and parsed: the TOML map (by extension or content), else
    Slurm's topology.conf. TopologyFileError for anything wrong, naming the file."""
    name = os.fspath(path)
    try:
        data = read_capped(name, MAX_TOPOLOGY_BYTES)
    except FileRefused as exc:
        raise TopologyFileError(name, None, str(exc).removeprefix(f"{name}: ")) from None
    except OSError as exc:
        raise TopologyFileError(name, None, f"cannot read: {(exc.strerror or str(exc)).lower()}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TopologyFileError(name, line, "not UTF-8 text") from None
    if looks_like_toml(name, text):
        return parse_topology_toml(text, name)
    return parse_topology_conf(text, name)
