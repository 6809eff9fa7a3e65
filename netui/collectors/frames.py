"""Frames of the remote sampler (collectors/sampler.py) → NodeSample. Pure, no I/O.
The format is docs/protocol.md; what both sides share, collectors/protocol.py.

A frame is ``b"NETUI2 <length>\\n"`` followed by ``length`` bytes of payload: fields of a
key, a NUL, the value's length (u32, little-endian) and the value (``encode_fields``). Keys
are those of collectors.protocol.PROC_FILES, ``wall``/``mono`` (the node's clocks when it
read the counters), ``cpu``, ``netirq``, ``netdev``, ``softnet``, ``tcp`` and ``cpusum`` (the
sampler's number tables: bytes of little-endian arrays; the per-CPU ones only while the
monitor asks for them, their sums in ``cpusum`` always) and ``if/<name>`` (an interface's sysfs texts,
packed in assemble.PACKED_ATTRS order). The sysfs records are sent only when one changed:
a frame with ``ifsame`` instead has those of the frame before, so the frames of one stream
are decoded in order by one ``FrameDecoder``. RDMA records (``ib/``, ``ibd/``, ``ibn/``) are
unpacked into the ``{path: text}`` texts of ``collectors.infiniband.read_infiniband``, and
``eth/<netdev>`` are ``ethtool -S`` texts read at ``ethmono``: see docs/protocol.md.
"""

from __future__ import annotations

from dataclasses import replace

from netui.collectors.assemble import interfaces_from_texts, kept_interfaces, sample_from_texts, unpack_attrs
from netui.collectors.mesh import parse_mesh
from netui.collectors.peers import PeerLayout, layout_of, parse_like, parse_peers
from netui.collectors.frame_tables import (
    parse_cpu_compact,
    parse_cpusum,
    parse_netdev_compact,
    parse_netirq_compact,
    parse_softnet_compact,
    parse_tcp_compact,
    tcp_layout_of,
)
from netui.collectors.procfs import ParseError
from netui.collectors.protocol import IB_NAMES, MAGIC, MAX_FIELDS, MAX_FRAME, MAX_RECORD_LINES, PORT_ATTRS
from netui.collectors.protocol import TABLES as _TABLE_KEYS
from netui.model.flows import PeerSample
from netui.model.mesh import MeshSample
from netui.model.samples import CounterMap, CpuSums, IfaceLayout, InterfaceTable, NodeSample, TcpSample
from netui.speedups import frame_fields, usual_frame


class FrameError(ParseError):
    """The stream from a node is not a sequence of sampler frames."""


def frame_length(header: bytes) -> int:
    """Payload length from a header line (``b"NETUI2 123\\n"``); FrameError otherwise."""
    if not header.startswith(MAGIC) or not header.endswith(b"\n"):
        raise FrameError(f"not a sampler frame: {header[:40]!r}")
    try:
        n = int(header[len(MAGIC) : -1])
    except ValueError:
        raise FrameError(f"bad frame length: {header[:40]!r}") from None
    if n > MAX_FRAME:
        raise FrameError(f"frame too large: {size_text(n)} > {MAX_FRAME >> 20} MiB")
    if n <= 0:
        raise FrameError(f"frame length out of range: {n}")
    return n


def size_text(n: int) -> str:
    """A byte count in words: ``13.6 MB``, ``512 kB``, ``80 B`` (SI units, as ls -h --si)."""
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} MB"
    if n >= 1000:
        return f"{n / 1e3:.0f} kB"
    return f"{n} B"


# the sampler's number tables: bytes of little-endian arrays, taken as they are
TABLES = frozenset(_TABLE_KEYS)
# the texts of a usual frame (no RDMA, no raw text): with the per-CPU tables, or their sums only
_STEADY = TABLES | {"boot_id", "hostname"}
_STEADY_SUMS = _STEADY - {"cpu", "netirq", "softnet"}
# the fields of a steady node's frame: the usual texts, its clocks, no interface record
_USUAL = _STEADY | {"wall", "mono", "ifsame"}
_USUAL_SUMS = _STEADY_SUMS | {"wall", "mono", "ifsame"}


def encode_fields(pairs) -> bytes:
    """(key, value) pairs as a frame's payload, as the sampler writes them (its
    ``pack_fields``): key NUL, the value's length as little-endian u32, the value."""
    return b"".join(k.encode() + b"\0" + len(v).to_bytes(4, "little") + v for k, v in pairs)


class FrameDecoder:
    """The frames of one sampler stream → NodeSamples, in order.

    It holds what a frame may leave out: the interfaces' sysfs records (``ifsame``), and
    the layout they gave with the last interface names, so a steady node's interfaces cost
    one comparison of names. Once a frame of the usual fields (``_USUAL_SUMS``) was read,
    the next ones are read in one call (``usual_frame``) while their names, identity and
    sums are as that frame's; any other frame goes the careful way, and the next usual one
    sets that up again.
    """

    def __init__(self) -> None:
        self._attrs: dict[str, tuple] | None = None  # the last records sent
        self._names: tuple[str, ...] | None = None  # the interface names of the last frame ...
        self._layout: IfaceLayout | None = None  # ... and their layout with those records
        self._cut: str | None = None  # this frame's interfaces beyond MAX_IFACES, in words
        self._peers_raw: bytes | None = None  # the last "peers" field, and its PeerSample
        self._peers: PeerSample | None = None
        self._peers_layout: PeerLayout | None = None  # what the next field likely shares with it (parse_like)
        self._ids: tuple = (None, None, None, None)  # the last boot_id and hostname fields, and their texts
        # what a frame must share with the last usual one to be read in one call: usual_frame's
        # state, then the boot_id and hostname texts, the interfaces' layout, the tcp table's layout
        self._same: tuple | None = None

    def _peers_of(self, raw: bytes | None) -> PeerSample | None:
        """The PeerSample of a "peers" field (the one before when the sampler repeated it; one
        whose peers and addresses are the bytes of the one before read as its layout,
        ``parse_like``); a field that does not parse makes peers unavailable, never the node's error."""
        if raw is None:
            return None
        if raw != self._peers_raw:
            layout = self._peers_layout
            peers = parse_like(raw, layout) if layout is not None else None
            if peers is None:
                try:
                    peers = parse_peers(raw)
                    self._peers_layout = layout_of(raw, peers)
                except ParseError as exc:
                    peers = PeerSample(self._peers.mono_s if self._peers else 0.0, available=False, error=str(exc))
                    self._peers_layout = None
            self._peers_raw, self._peers = bytes(raw), peers
        return self._peers

    def decode(self, payload: bytes) -> NodeSample:
        """The NodeSample carried by one payload. FrameError when it is not well formed, or
        holds more than MAX_FIELDS fields or a record of more than MAX_RECORD_LINES lines;
        of more than MAX_IFACES interfaces the first are kept, and the sample's problems say so."""
        same = self._same
        if same is not None:
            got = usual_frame(payload, same[0], CpuSums)
            if got is not None:
                return self._same_sample(got, same)
            self._same = None  # (the careful path may change what it holds: the next usual frame sets it again)
        self._cut = None
        sample = self._decode(payload)
        if self._cut is not None:
            sample = replace(sample, problems=(*sample.problems, self._cut))
        return sample

    def _decode(self, payload: bytes) -> NodeSample:
        try:
            fields = frame_fields(payload, MAX_FIELDS)
        except ValueError as exc:
            if str(exc) == "too many fields":
                raise FrameError(f"too many fields: more than {MAX_FIELDS} in one frame") from None
            raise FrameError(f"bad frame: {exc}") from None
        raw_mesh, mesh, error = fields.pop("mesh", None), None, None
        if raw_mesh is not None:
            try:
                mesh = parse_mesh(raw_mesh)
            except ParseError as exc:  # the mesh's reading is unavailable, never the node's error
                error = str(exc)
        sample = self._sample(fields, mesh)
        if error is not None:
            return replace(sample, mesh=MeshSample(sample.mono_s, available=False, error=error))
        return sample

    def _sample(self, fields: dict, mesh: MeshSample | None = None) -> NodeSample:
        peers = self._peers_of(fields.pop("peers", None))
        if self._attrs is not None:
            keys = fields.keys()
            if keys == _USUAL_SUMS or keys == _USUAL:  # a steady node's frame: straight to its sample
                sample = self._usual(fields, keys == _USUAL, peers, mesh)
                if sample is not None:
                    return sample
        texts: dict[str, str | bytes] = {}
        attrs: dict[str, tuple] = {}
        ib: dict[str, str] = {}
        eth: dict[str, str] = {}
        same = False
        for key, value in fields.items():
            if key in TABLES:
                texts[key] = value
                continue
            text = value.decode("utf-8", "replace")
            if key.startswith(("ib", "eth/")) and text.count("\n") >= MAX_RECORD_LINES:
                raise FrameError(f"too many lines in {key[:80]!r}: more than {MAX_RECORD_LINES}")
            if key.startswith("if"):
                if key == "ifsame":
                    same = True
                    continue
                if not key.startswith("if/"):
                    raise FrameError(f"unknown record {key[:80]!r}")
                packed = unpack_attrs(text)
                if packed is None:
                    raise FrameError(f"bad interface record for {key[3:]!r}")
                attrs[key[3:]] = packed
            elif key.startswith("ib"):
                if not unpack_rdma(key, text, ib):
                    raise FrameError(f"bad RDMA record {key[:80]!r}")
            elif key.startswith("eth/"):
                eth[key[4:]] = text
            else:
                texts[key] = text
        try:
            wall = float(texts.pop("wall"))
            mono = float(texts.pop("mono"))
        except (KeyError, TypeError, ValueError):
            raise FrameError("frame without node clocks") from None
        eth_mono = None
        if eth:
            try:
                eth_mono = float(texts.pop("ethmono"))
            except (KeyError, TypeError, ValueError):
                raise FrameError("ethtool records without their clock") from None
        texts.pop("ethmono", None)
        if same:
            if attrs or self._attrs is None:
                raise FrameError("ifsame without the interface records it refers to")
            attrs = self._attrs
        elif attrs:
            self._attrs, self._names = attrs, None
        interfaces = self._interfaces(texts, attrs, same)
        if interfaces is not None and not ib and not eth and (texts.keys() == _STEADY_SUMS or texts.keys() == _STEADY):
            sample = _steady(wall, mono, texts["boot_id"].strip() or None, texts["hostname"].strip() or None,
                             interfaces, texts, texts.keys() == _STEADY, peers, mesh)
            if sample is not None:
                return sample
        sample = sample_from_texts(texts, attrs, wall_s=wall, mono_s=mono, ib_texts=ib, ethtool_texts=eth,
                                   ethtool_mono_s=eth_mono, interfaces=interfaces, peers=peers)
        return sample if mesh is None else replace(sample, mesh=mesh)

    def _same_sample(self, got: tuple, same: tuple) -> NodeSample:
        """The sample of a frame usual_frame read: what _usual makes of it."""
        wall, mono, flat, tcp, ext, sums, raw_peers, raw_mesh = got
        _, boot_id, hostname, layout, (tcp_keys, ext_keys, tcp_index, ext_index) = same
        mesh = None
        if raw_mesh is not None:
            try:
                mesh = parse_mesh(raw_mesh)
            except ParseError as exc:  # the mesh's reading is unavailable, never the node's error
                mesh = MeshSample(mono, available=False, error=str(exc))
        return NodeSample(wall, mono, boot_id, InterfaceTable(layout, flat),
                          TcpSample(CounterMap(tcp_keys, tcp, tcp_index), CounterMap(ext_keys, ext, ext_index)),
                          None, None, None, hostname, (), None, sums, self._peers_of(raw_peers), mesh)

    def _usual(self, fields: dict, tables: bool, peers: PeerSample | None = None,
               mesh: MeshSample | None = None) -> NodeSample | None:
        """The sample of a frame with the usual fields (``_USUAL_SUMS``, or ``_USUAL`` with
        the per-CPU ``tables``) and the interface records of the frame before; None when a
        part is not as the sampler packs it (the careful path then says which)."""
        try:
            wall, mono = float(fields["wall"]), float(fields["mono"])
        except ValueError:
            return None
        interfaces = self._interfaces(fields, self._attrs, True)
        if interfaces is None:
            return None
        boot_raw, host_raw = fields["boot_id"], fields["hostname"]
        ids = self._ids
        if boot_raw != ids[0] or host_raw != ids[1]:  # (the same on every frame of a node, but after a reboot)
            ids = self._ids = (bytes(boot_raw), bytes(host_raw), boot_raw.decode("utf-8", "replace").strip() or None,
                               host_raw.decode("utf-8", "replace").strip() or None)
        sample = _steady(wall, mono, ids[2], ids[3], interfaces, fields, tables, peers, mesh)
        if sample is not None and not tables and self._cut is None:  # the next frames may be read in one call
            netdev, (tcp_names, layout) = fields["netdev"], tcp_layout_of(fields["tcp"])
            names = netdev[: netdev.find(b"\n")]
            self._same = ((ids[0], ids[1], bytes(names), len(interfaces.layout.names), bytes(tcp_names),
                           len(layout[0]), len(layout[1])), ids[2], ids[3], interfaces.layout, layout)
        return sample

    def _interfaces(self, texts: dict, attrs: dict, same: bool) -> InterfaceTable | None:
        """The sample's interfaces from the sampler's table; None: sample_from_texts finds
        them (and says what is wrong)."""
        text = texts.get("netdev")
        if text is None:
            return None
        try:
            table = parse_netdev_compact(text)
        except ParseError:
            return None
        table, self._cut = kept_interfaces(table)
        if same and table.names == self._names:
            return InterfaceTable(self._layout, table.flat)
        interfaces = interfaces_from_texts(table, attrs)
        if attrs is self._attrs:
            self._names, self._layout = table.names, interfaces.layout
        return interfaces


def _steady(wall: float, mono: float, boot_id: str | None, hostname: str | None, interfaces: InterfaceTable,
            tables: dict, detail: bool, peers: PeerSample | None = None,
            mesh: MeshSample | None = None) -> NodeSample | None:
    """The sample of a usual frame from its number tables (``detail``: the per-CPU ones
    too, else their sums only); None when one is not as the sampler packs it, or the sums
    lack a file (sample_from_texts then says what is wrong or missing)."""
    try:
        sums = parse_cpusum(tables["cpusum"])
        if detail:
            return NodeSample(wall, mono, boot_id, interfaces, parse_tcp_compact(tables["tcp"]),
                              parse_cpu_compact(tables["cpu"]), parse_netirq_compact(tables["netirq"]),
                              parse_softnet_compact(tables["softnet"]), hostname, (), None, sums, peers, mesh)
        if sums.ncpus is None or sums.net_rx is None or sums.dropped is None:
            return None
        return NodeSample(wall, mono, boot_id, interfaces, parse_tcp_compact(tables["tcp"]), None, None, None,
                          hostname, (), None, sums, peers, mesh)
    except ParseError:
        return None


def decode_frame(payload: bytes) -> NodeSample:
    """The NodeSample of a frame that stands alone (the first of its stream)."""
    return FrameDecoder().decode(payload)


def _counter_lines(blob: str, prefix: str, out: dict[str, str]) -> None:
    """``CODE VALUE`` lines (CODE: an index into IB_NAMES, or ``=name``) → out[prefix+name]."""
    if not blob:
        return
    for line in blob.split("\n"):
        code, _, value = line.partition(" ")
        if code.startswith("="):
            name = code[1:]
        elif code.isascii() and code.isdigit() and int(code) < len(IB_NAMES):
            name = IB_NAMES[int(code)]
        else:
            continue
        if name and "/" not in name:
            out[prefix + name] = value


def unpack_rdma(key: str, value: str, out: dict[str, str]) -> bool:
    """One RDMA record of the sampler into read_infiniband's texts; False when malformed."""
    kind, _, rest = key.partition("/")
    if kind == "ib":
        hca, _, port = rest.rpartition("/")
        fields = value.split("\x1f")
        if not hca or "/" in hca or not port.isdigit() or len(fields) != 7:
            return False
        base = f"{hca}/ports/{port}/"
        for attr, text in zip(PORT_ATTRS, fields):
            if text != "\x1e":
                out[base + attr] = text
        _counter_lines(fields[4], base + "counters/", out)
        _counter_lines(fields[5], base + "hw_counters/", out)
        for line in fields[6].split("\n") if fields[6] else ():
            index, _, netdev = line.partition(" ")
            if index.isdigit():
                out[f"{base}gid_attrs/ndevs/{index}"] = netdev
        return True
    if not rest or "/" in rest:
        return False
    if kind == "ibd":
        _counter_lines(value, f"{rest}/hw_counters/", out)
        return True
    if kind == "ibn":
        for line in value.split("\n") if value else ():
            fields = line.split(" ")
            if len(fields) != 3 or not fields[0] or "/" in fields[0]:
                continue
            base = f"{rest}/device/net/{fields[0]}"
            out[base] = ""
            for attr, text in zip(("dev_id", "dev_port"), fields[1:]):
                if text != "-":
                    out[f"{base}/{attr}"] = text
        return True
    return False
