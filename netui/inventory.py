"""The nodes netui watches, from the command line, decided before any connection is made.

Sources: patterns on the command line (``[user@]host[:port]``, with ClusterShell ranges such as
``gpu[001-128]``), host files, a Slurm job, and ``--local``. Everything here is pure except
``read_host_file`` (reads one regular file, bounded) and ``slurm_nodes`` (runs ``scontrol`` through an injectable
``run``); nothing touches the network.

Safety: a host or user name that reaches ``Target`` holds only ``[A-Za-z0-9._-]`` (plus ``:`` and
``%`` in an IPv6 literal) and never starts with ``-``, so it can be put on an ``ssh`` command
line or in a remote shell without quoting surprises. Anything else is refused here, with the
input quoted in the message.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import subprocess
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException

# MAX_TARGETS: more nodes than this is taken for a typo (``node[1-10000000]``) and refused
# whatever --max-nodes says; MAX_NODES_DEFAULT: build_targets' limit unless told otherwise.
from netui.readlimits import MAX_NODES as MAX_TARGETS
from netui.readlimits import MAX_NODES_DEFAULT, FileRefused, read_capped

MAX_HOST_FILE_BYTES = 16 << 20
"""A host file larger than this is not a list of hosts (100,000 names take about 2 MB)."""

SHELL_METACHARACTERS = frozenset(";|&$`<>()\\'\"*?{}[]~#!^=")
"""Characters with a meaning to a shell (quoting, expansion, redirection, globs, history):
never in a Target's host or user."""

# NodeSet's operators and brackets are shell metacharacters too, but allowed in a pattern's host part.
_NEVER_IN_PATTERNS = SHELL_METACHARACTERS - frozenset("&!^[]")
_HOST_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_USER_RE = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]*")
_ZONE_RE = re.compile(r"[A-Za-z0-9._-]+")
_PORT_RE = re.compile(r"[0-9]+")
_JOBID_RE = re.compile(r"[0-9]+(?:_[0-9]+)?")
# Characters a pattern's host part may hold: host characters plus NodeSet syntax.
_PATTERN_HOST_RE = re.compile(r"[A-Za-z0-9._\-\[\],/!&^]+")
_RANGE_ITEM_RE = re.compile(r"\s*([0-9]+)(?:-([0-9]+)(?:/([0-9]+))?)?\s*")
_GROUP_RE = re.compile(r"(?:^|[,!&^@\[])@")
_MAX_HOST_LEN = 253  # DNS limit on a full name
_MAX_USER_LEN = 256  # LOGIN_NAME_MAX on Linux
_SCONTROL_TIMEOUT_S = 30.0


class InventoryError(ValueError):
    """Bad input for the list of nodes; the message says what is wrong and quotes the input."""


class NoNodes(InventoryError):
    """The hosts, files and Slurm job given name no node at all."""


@dataclass(frozen=True)
class Target:
    """One node to watch.

    ``host`` is what to connect to (a name, an address, or an ``~/.ssh/config`` alias; IPv6
    without brackets); ``user``/``port`` are None where neither the pattern nor ``-l`` gave one
    (ssh_config and defaults decide). ``name`` is what the grid shows, unique in an inventory.
    """

    host: str
    user: str | None
    port: int | None
    name: str
    local: bool = False

    @property
    def spec(self) -> str:
        """``[user@]host[:port]`` as ``parse_target`` reads it back (IPv6 in brackets with a port)."""
        return _format(self.user, self.host, self.port)


# --- one target --------------------------------------------------------------------------------


def parse_target(text: str) -> Target:
    """``[user@]host[:port]`` → Target named by its host; IPv6 as ``[fe80::1]:2222`` or bare ``fe80::1``.

    Raises InventoryError for anything that is not a plausible host (see the module docstring).
    """
    _check_text(text, "target")
    user, rest = _split_user(text, "target")
    host, port = _split_port(rest, text, "target")
    if not _is_ipv6(host):
        _check_host(host, text, "target")
    return Target(host=host, user=user, port=port, name=host)


def _format(user: str | None, host: str, port: int | None) -> str:
    if port is not None and ":" in host:
        host = f"[{host}]"
    return f"{user + '@' if user else ''}{host}{f':{port}' if port is not None else ''}"


def _describe(ch: str) -> str:
    if ch in SHELL_METACHARACTERS:
        return f"shell metacharacter {ch!r}"
    if unicodedata.category(ch).startswith("C"):
        return f"control character U+{ord(ch):04X}"
    if ch.isspace():
        return f"whitespace {ch!r}"
    if not ch.isascii():
        return f"non-ASCII character {ch!r} (write international names as xn--…)"
    return f"character {ch!r}"


def _q(text: object) -> str:
    """The input quoted for a message, cut short if long (a whole nodelist can be kilobytes)."""
    r = repr(text)
    if isinstance(text, str) and len(r) > 80:
        r = repr(text[:60]) + f"… ({len(text):,} characters)"
    return r


def _bad(what: str, text: str, reason: str) -> InventoryError:
    return InventoryError(f"bad {what} {_q(text)}: {reason}")


def _check_text(text: object, what: str) -> None:
    """Refuses non-strings, empty input and characters no target or pattern may hold."""
    if not isinstance(text, str):
        raise InventoryError(f"bad {what} {_q(text)}: not a string")
    if not text:
        raise InventoryError(f"bad {what} {_q(text)}: empty")
    for ch in text:
        # NodeSet operators and brackets are checked where they may appear (not in a user name).
        if ch.isspace() or not ch.isascii() or not ch.isprintable() or ch in _NEVER_IN_PATTERNS:
            raise _bad(what, text, f"contains {_describe(ch)}")
    if _GROUP_RE.search(text):
        raise _bad(what, text, "node groups (@name) are not supported; list the nodes or use a file")


def _split_user(text: str, what: str) -> tuple[str | None, str]:
    user, at, rest = text.partition("@")
    if not at:
        return None, text
    if "@" in rest:
        raise _bad(what, text, "more than one '@'")
    _check_user(user, f"{what} {_q(text)}")
    if not rest:
        raise _bad(what, text, "no host after '@'")
    return user, rest


def _check_user(user: str, context: str) -> None:
    if not user:
        raise InventoryError(f"bad {context}: empty user name")
    bad = next((ch for ch in user if not (ch.isascii() and (ch.isalnum() or ch in "._-"))), None)
    if bad is not None:
        raise InventoryError(f"bad {context}: user name {_q(user)} contains {_describe(bad)}")
    if user.startswith("-"):
        raise InventoryError(f"bad {context}: user name {_q(user)} starts with '-' (ssh would read an option)")
    if len(user) > _MAX_USER_LEN or not _USER_RE.fullmatch(user):
        raise InventoryError(f"bad {context}: user name {_q(user)} is not a plausible login name")


def _split_port(rest: str, text: str, what: str) -> tuple[str, int | None]:
    """``host[:port]`` → (host, port); ``[v6]`` / ``[v6]:port`` / bare ``v6`` → address without brackets."""
    if rest.startswith("[") and ":" in rest.partition("]")[0]:
        inside, close, after = rest[1:].partition("]")
        if not close:
            raise _bad(what, text, "missing ']' after the IPv6 address")
        _check_ipv6(inside, text, what)
        if not after:
            return inside, None
        if not after.startswith(":"):
            raise _bad(what, text, f"unexpected {_q(after)} after ']' (want ':port')")
        return inside, _parse_port(after[1:], text, what)
    colons = rest.count(":")
    if colons == 0:
        return rest, None
    if colons == 1:
        host, _, port = rest.partition(":")
        if not host:
            raise _bad(what, text, "no host before ':'")
        return host, _parse_port(port, text, what)
    if "[" in rest or "]" in rest:
        raise _bad(what, text, "put an IPv6 address in brackets, alone: [fe80::1]:2222")
    _check_ipv6(rest, text, what, hint=" (a port goes after a bracketed address: [fe80::1]:2222)")
    return rest, None


def _parse_port(port: str, text: str, what: str) -> int:
    if not port:
        raise _bad(what, text, "empty port after ':'")
    if not _PORT_RE.fullmatch(port):
        raise _bad(what, text, f"port {_q(port)} is not a number")
    if len(port) > 5 or not 1 <= int(port) <= 65535:
        raise _bad(what, text, f"port {port} is out of range 1-65535")
    return int(port)


def _is_ipv6(host: str) -> bool:
    return ":" in host


def _check_ipv6(addr: str, text: str, what: str, hint: str = "") -> None:
    address, pct, zone = addr.partition("%")
    if pct and not _ZONE_RE.fullmatch(zone):
        raise _bad(what, text, f"bad IPv6 zone id {_q(zone)}")
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        raise _bad(what, text, f"{_q(addr)} is not an IPv6 address{hint}") from None


def _check_host(host: str, text: str, what: str) -> None:
    bad = next((ch for ch in host if not (ch.isascii() and (ch.isalnum() or ch in "._-"))), None)
    if bad is not None:
        raise _bad(what, text, f"host {_q(host)} contains {_describe(bad)}")
    if host.startswith("-"):
        raise _bad(what, text, f"host {_q(host)} starts with '-' (ssh would read an option)")
    if len(host) > _MAX_HOST_LEN:
        raise _bad(what, text, f"host name is longer than {_MAX_HOST_LEN} characters")
    if not _HOST_RE.fullmatch(host) or ".." in host:
        raise _bad(what, text, f"host {_q(host)} is not a plausible host name")


def _host_key(host: str) -> str:
    """Names that reach the same machine: ssh matches host names without regard to case."""
    if _is_ipv6(host):
        address, pct, zone = host.partition("%")
        return str(ipaddress.IPv6Address(address)) + pct + zone
    return host.lower()


# --- patterns ----------------------------------------------------------------------------------


def expand(patterns: Iterable[str]) -> list[str]:
    """Each pattern expanded with ClusterShell NodeSet, as ``[user@]host[:port]`` strings.

    Patterns keep the user's order, and so do the parts of a comma list (``gpu9,gpu[1-2]``); the
    nodes of one range, or of a set operation (``!``, ``&``, ``^``, applied left to right), come in
    NodeSet's sorted order. A node met twice is listed once, where first met. ``user@`` and
    ``:port`` apply to every node of the pattern.
    Raises InventoryError naming the pattern (and ClusterShell's reason), and past MAX_TARGETS.
    """
    return [_format(u, h, p) for u, h, p in _expand_all(patterns)]


def _limit_hint(limit: int) -> str:
    if limit >= MAX_TARGETS:
        return ""
    return f"; raise the limit with --max-nodes N (at most {MAX_TARGETS:,})"


def _expand_all(patterns: Iterable[str], limit: int = MAX_TARGETS) -> list[tuple[str | None, str, int | None]]:
    if isinstance(patterns, str):
        raise TypeError("patterns must be a list of strings, not one string")
    seen: set[tuple[str | None, str, int | None]] = set()
    out: list[tuple[str | None, str, int | None]] = []
    for pattern in patterns:
        user, hosts, port = _parse_pattern(pattern, limit)
        for host in hosts:
            key = (user, host, port)
            if key not in seen:
                seen.add(key)
                out.append(key)
                if len(out) > limit:  # checked per node: never a list much past the limit
                    raise InventoryError(f"too many nodes: more than {limit:,} in all "
                                         f"(the limit was passed at {_q(pattern)}){_limit_hint(limit)}")
    return out


def _too_many(pattern: str, limit: int = MAX_TARGETS) -> InventoryError:
    return InventoryError(f"too many nodes: pattern {_q(pattern)} names more than {limit:,} "
                          f"(a typo in a range?){_limit_hint(limit)}")


def _parse_pattern(pattern: str, limit: int = MAX_TARGETS) -> tuple[str | None, Iterator[str] | list[str], int | None]:
    """Validates a whole pattern (user, port, NodeSet syntax, size); its hosts are listed lazily."""
    _check_text(pattern, "pattern")
    user, rest = _split_user(pattern, "pattern")
    host_part, port = _split_port(rest, pattern, "pattern")
    if _is_ipv6(host_part):
        return user, [host_part], port
    if _HOST_RE.fullmatch(host_part):  # a plain name: no need for NodeSet (fast for long files)
        _check_host(host_part, pattern, "pattern")
        return user, [host_part], port
    if not _PATTERN_HOST_RE.fullmatch(host_part):
        bad = next(ch for ch in host_part if not _PATTERN_HOST_RE.fullmatch(ch))
        raise _bad("pattern", pattern, f"contains {_describe(bad)}")
    nodes = _nodeset(host_part, pattern, limit)
    if len(nodes) == 0:
        raise _bad("pattern", pattern, "names no node")
    # NodeSet sorts; a plain comma list (as Slurm's nodelists are) keeps the order it was written in.
    groups = [nodes] if re.search(r"[!&^]", host_part) else [
        _nodeset(piece, pattern, limit) for piece in re.split(r",(?![^\[]*\])", host_part)]

    def hosts() -> Iterator[str]:
        for group in groups:
            for host in group:
                _check_host(host, pattern, "pattern")
                yield host

    return user, hosts(), port


def _nodeset(host_part: str, pattern: str, limit: int = MAX_TARGETS) -> NodeSet:
    # NodeSet stores every number of a range as a string (RangeSet is a set), so
    # NodeSet("n[1-10000000]") alone takes seconds and gigabytes: bound the ranges before.
    if _bracket_count(host_part, pattern) > limit:
        raise _too_many(pattern, limit)
    try:
        # No group resolver: "@name" and wildcards would otherwise run groups.conf commands.
        nodes = NodeSet(host_part, resolver=RESOLVER_NOGROUP)
    except NodeSetException as exc:
        raise _bad("pattern", pattern, str(exc)) from None
    except ValueError:  # NodeSet lets int()'s "Exceeds the limit (4300 digits)" through
        raise _bad("pattern", pattern, "number too long") from None
    if len(nodes) > limit:  # cartesian products (a[1-1000]b[1-1000]) are counted, not built
        raise _too_many(pattern, limit)
    return nodes


def _bracket_count(host_part: str, pattern: str) -> int:
    """Sum of the sizes of all bracket ranges; items NodeSet would refuse count as 1 (it will say why)."""
    total = 0
    for body in re.findall(r"\[([^\[\]]*)\]", host_part):
        for item in body.split(","):
            m = _RANGE_ITEM_RE.fullmatch(item)
            if not m or m.group(2) is None:
                total += 1
                continue
            if max(len(m.group(1)), len(m.group(2)), len(m.group(3) or "")) > 18:
                raise _bad("pattern", pattern, f"number too long in range {_q(item.strip())}")
            first, last, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
            if step > 0 and last >= first:
                total += (last - first) // step + 1
    return total


# --- host files --------------------------------------------------------------------------------


def read_host_file(path: str | os.PathLike[str], limit: int = MAX_TARGETS) -> list[str]:
    """The patterns in a file, one per line; ``#`` starts a comment; blank lines are skipped.

    Every line is checked as ``expand`` would (its nodes listed once); errors say ``file:line``.
    A line repeated word for word is checked once. The names the file's lines produce are
    counted as they come: past ``limit`` in all the file is refused at the line that passed it,
    before the lines after it are read (a file of ``n[1-100000]`` lines stops at its second).
    UTF-8, with or without a byte order mark. An unreadable file raises InventoryError too,
    and so does anything but a regular file (a directory, a FIFO, ``/dev/zero``) or one larger
    than MAX_HOST_FILE_BYTES.
    """
    try:
        data = read_capped(path, MAX_HOST_FILE_BYTES)
    except FileRefused as exc:  # a directory, a FIFO, a device, too large
        raise InventoryError(f"cannot read host file {exc}") from None
    except OSError as exc:
        raise InventoryError(f"cannot read host file {os.fspath(path)!r}: {exc.strerror or exc}") from None
    try:
        lines = data.decode("utf-8-sig").splitlines()  # a byte order mark (Windows editors) is no host
    except UnicodeDecodeError as exc:
        raise InventoryError(f"host file {os.fspath(path)!r} is not UTF-8 text: {exc.reason}") from None
    patterns: list[str] = []
    checked: set[str] = set()
    produced = 0  # names listed by the file's lines so far, repeats included
    for lineno, line in enumerate(lines, start=1):
        text = line.partition("#")[0].strip()
        if not text:
            continue
        if text in checked:
            continue  # the same pattern names the same nodes: nothing new to check or watch
        try:
            for _ in _parse_pattern(text, limit)[1]:  # lists the nodes, so a bad one is reported here
                produced += 1
                if produced > limit:
                    raise InventoryError(f"too many nodes: the file names more than {limit:,} in all"
                                         f"{_limit_hint(limit)}")
        except InventoryError as exc:
            hint = " (one host or pattern per line)" if any(c.isspace() for c in text) else ""
            raise InventoryError(f"{os.fspath(path)}:{lineno}: {exc}{hint}") from None
        checked.add(text)
        patterns.append(text)
    return patterns


# --- Slurm -------------------------------------------------------------------------------------

Run = Callable[..., subprocess.CompletedProcess]


def slurm_nodes(jobid: str | None = None, env: Mapping[str, str] = os.environ,
                run: Run = subprocess.run) -> list[str]:
    """Host names of a Slurm job, in Slurm's order.

    No ``jobid``: ``$SLURM_JOB_NODELIST`` expanded with NodeSet (no command run); if that is not
    set, the job ``$SLURM_JOB_ID`` is asked of ``scontrol``. With a ``jobid`` (digits, or
    ``123_4`` for an array task): ``scontrol show job`` gives its ``NodeList``, and
    ``scontrol show hostnames`` expands it. Raises InventoryError on any failure, with the reason.
    """
    if jobid is None:
        nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
        if nodelist:
            try:
                return [host for _, host, _ in _expand_all([nodelist])]
            except InventoryError as exc:
                raise InventoryError(f"$SLURM_JOB_NODELIST: {exc}") from None
        jobid = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
        if not jobid:
            raise InventoryError("--slurm without a job id needs $SLURM_JOB_NODELIST "
                                 "(run inside a Slurm job) or give the job id: --slurm 1234")
    if not isinstance(jobid, str) or not _JOBID_RE.fullmatch(jobid):
        raise InventoryError(f"bad Slurm job id {_q(jobid)}: want digits, or 123_4 for an array task")
    out = _scontrol(["show", "job", jobid], run, f"job {jobid}")
    nodelists = [m for m in re.findall(r"(?<![A-Za-z])NodeList=(\S*)", out) if m and m != "(null)"]
    if not nodelists:
        state = re.search(r"JobState=(\S+)", out)
        why = f" (state {state.group(1)})" if state else ""
        raise InventoryError(f"Slurm job {jobid} has no nodes allocated{why}")
    for nodelist in nodelists:
        if not _PATTERN_HOST_RE.fullmatch(nodelist):
            raise InventoryError(f"Slurm job {jobid}: unexpected NodeList {_q(nodelist)}")
    hosts = _scontrol(["show", "hostnames", ",".join(nodelists)], run, f"job {jobid}").split()
    if len(hosts) > MAX_TARGETS:
        raise InventoryError(f"too many nodes: Slurm job {jobid} has {len(hosts):,} (more than {MAX_TARGETS:,})")
    for host in hosts:
        try:
            _check_host(host, host, "host")
        except InventoryError as exc:
            raise InventoryError(f"Slurm job {jobid}: scontrol gave {exc}") from None
    return list(dict.fromkeys(hosts))


def _scontrol(args: list[str], run: Run, what: str) -> str:
    argv = ["scontrol", *args]
    try:
        done = run(argv, capture_output=True, text=True, timeout=_SCONTROL_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise InventoryError(f"cannot ask Slurm about {what}: scontrol not found (is this a Slurm cluster?)") from None
    except subprocess.TimeoutExpired:
        raise InventoryError(f"cannot ask Slurm about {what}: "
                             f"scontrol gave no answer in {_SCONTROL_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise InventoryError(f"cannot ask Slurm about {what}: cannot run scontrol: {exc}") from None
    if done.returncode != 0:
        reason = (done.stderr or done.stdout or "").strip() or f"exit status {done.returncode}"
        raise InventoryError(f"cannot ask Slurm about {what}: {' '.join(argv)}: {reason}")
    return done.stdout or ""


# --- the whole inventory -----------------------------------------------------------------------


def build_targets(hosts: Iterable[str], *, files: Iterable[str] = (), slurm: str | bool | None = False,
                  local: bool = False, user: str | None = None, port: int | None = None,
                  max_nodes: int = MAX_NODES_DEFAULT) -> list[Target]:
    """Every node to watch, in the order named: patterns, then files, then the Slurm job, then this host.

    ``slurm``: False = not asked, None (or True) = this job's nodes from the environment, a string
    = that job id. ``user``/``port`` (``-l``) apply where a pattern gave none. The same
    (host, user, port) named twice is one target; host names match without regard to case.
    Names are unique: ``user@``/``:port`` are shown only where one host appears with several.
    Raises InventoryError on any bad input, more than ``max_nodes`` nodes (at most
    MAX_TARGETS), or no node at all.
    """
    if isinstance(hosts, str):
        raise TypeError("hosts must be a list of patterns, not one string")
    if not 1 <= max_nodes <= MAX_TARGETS:
        raise InventoryError(f"bad --max-nodes {max_nodes}: want 1 to {MAX_TARGETS:,}")
    if user is not None:
        _check_user(user, f"-l {_q(user)}")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        raise InventoryError(f"bad port {_q(port)}: want 1-65535")

    patterns = list(hosts)
    for path in files:
        patterns.extend(read_host_file(path, max_nodes))
    if slurm is not False:
        patterns.extend(slurm_nodes(None if slurm is True else slurm))

    seen: set[tuple[str, str | None, int | None]] = set()
    chosen: list[tuple[str, str | None, int | None]] = []  # (host as written, user, port)
    for u, h, p in _expand_all(patterns, max_nodes):
        u, p = (u if u is not None else user), (p if p is not None else port)
        key = (_host_key(h), u, p)
        if key not in seen:
            seen.add(key)
            chosen.append((h, u, p))
    targets = _named(chosen)
    if local:
        name = socket.gethostname() or "localhost"
        if name.lower() in {t.name.lower() for t in targets}:
            name = f"{name} (local)"
        targets.append(Target(host="localhost", user=None, port=None, name=name, local=True))
    if not targets:
        raise NoNodes("no nodes to watch")
    if len(targets) > max_nodes:
        raise InventoryError(f"too many nodes: {len(targets):,} (more than {max_nodes:,}){_limit_hint(max_nodes)}")
    return targets


def _named(chosen: list[tuple[str, str | None, int | None]]) -> list[Target]:
    users: dict[str, set[str | None]] = {}
    ports: dict[str, set[int | None]] = {}
    for h, u, p in chosen:
        users.setdefault(_host_key(h), set()).add(u)
        ports.setdefault(_host_key(h), set()).add(p)
    targets = []
    for h, u, p in chosen:
        k = _host_key(h)
        name = _format(u if len(users[k]) > 1 else None, h, p if len(ports[k]) > 1 else None)
        targets.append(Target(host=h, user=u, port=p, name=name))
    return targets
