"""RDMA ports from ``/sys/class/infiniband``: read the tree into texts, parse texts into ports.

``read_infiniband`` is the only function here that touches files; ``parse_infiniband`` is a
pure function of ``{relative path: text}``, so a remote sampler, a recording or a fixture
feeds it the same way. The traps of this tree, handled here:

- ``port_xmit_data``/``port_rcv_data`` count 4-byte words (``IbPort.xmit_bytes`` is ×4).
- Counter widths: the IBA error counters are 4, 8 or 16 bits, ``port_xmit_wait`` 32; the
  data/packet counters are 32-bit in the legacy table and 64-bit when the PMA has extended
  width. The kernel has *two* extended tables (``sysfs.c get_counter_table``):
  ``pma_group_ext`` adds ``unicast_*``/``multicast_*``, ``pma_group_noietf`` does not — so a
  port without ``unicast_xmit_packets`` may still be 64-bit (the mlx4 and hfi1 fixtures:
  ``port_xmit_data`` far above 2**32). A value above its table width widens the counter.
- hw_counters (mlx5): the q-counters are 32-bit and wrap; the congestion (``np_*``,
  ``rp_*``) and PPCNT (``rx_icrc_encapsulated``) counters are 64-bit. ``lifespan`` (ms a
  reading is cached) is a setting, not a counter. hw_counters may also be device-level
  (``<hca>/hw_counters``) instead of per port.
- ``N/A (no PMA)`` (old kernels, failed MAD) and unreadable files are unknown (None), never 0.
- HCA ↔ netdev: ``<hca>/device/net/*`` on the same PCI function; with several ports, the
  netdev whose ``max(dev_id, dev_port) + 1`` is the port number; else ``gid_attrs/ndevs``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Mapping
from functools import lru_cache

from netui.collectors.protocol import PORT_ATTRS
from netui.model.fabric import IbPort, PortKey, PortState

MAX_DIR_ENTRIES = 512  # a counters dir has ~25 files, hw_counters ~40: more is not a counter dir
MAX_FILE_BYTES = 4096  # sysfs attributes are at most a page
MAX_GIDS = 32  # RoCE GID tables have ~255 slots; the first ones carry the default GIDs
MAX_DEVICES = 64
_PREFIX = "class/infiniband/"

U64_MAX = (1 << 64) - 1
_json_loads = json.JSONDecoder().decode

# ---------------------------------------------------------------------------- reading


def open_regular(path: str) -> int:
    """A file descriptor of ``path`` for reading, when it is a regular file (as every procfs
    and sysfs attribute is); OSError otherwise. Opened without blocking: a FIFO (in a copied
    tree) would block open() until a writer came, and freeze the reader."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read(path: str) -> str | None:
    try:
        with open(open_regular(path), "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError):
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def _list(path: str, limit: int = MAX_DIR_ENTRIES) -> list[str]:
    """Entries of a directory, sorted; [] when it is missing, unreadable or over ``limit``."""
    try:
        names = os.listdir(path)
    except (OSError, ValueError):
        return []
    if len(names) > limit:
        return []
    # a name that is not printable ASCII (a separator, bytes that are not UTF-8) names no
    # counter, port or device: left out, as the remote sampler does
    return sorted(n for n in names if n.isascii() and n.isprintable())


def _read_dir(texts: dict[str, str], root: str, rel: str) -> None:
    for name in _list(os.path.join(root, rel)):
        text = _read(os.path.join(root, rel, name))
        if text is not None:
            texts[f"{rel}/{name}"] = text


def read_infiniband(sysfs_root: str = "/sys", *, max_gids: int = MAX_GIDS) -> dict[str, str]:
    """Read ``<sysfs_root>/class/infiniband`` into ``{path relative to it: text}``.

    Per HCA: ``ports/<n>/{state,phys_state,rate,link_layer}``, ``ports/<n>/counters/*``,
    ``ports/<n>/hw_counters/*``, the device-level ``hw_counters/*``, the first ``max_gids``
    entries of ``ports/<n>/gid_attrs/{types,ndevs}/*``, and for each netdev of the PCI
    function ``device/net/<netdev>`` (empty text: the name) with its ``dev_id`` and
    ``dev_port``. Missing or unreadable files are left out, directories with more than
    ``MAX_DIR_ENTRIES`` entries are skipped; never raises. {} when there is no RDMA device.
    Note that each ``counters/`` read is a MAD to the firmware: about 1 Hz is fine.
    """
    root = os.path.join(sysfs_root, "class", "infiniband")
    texts: dict[str, str] = {}
    for hca in _list(root, MAX_DEVICES):
        _read_dir(texts, root, f"{hca}/hw_counters")
        for netdev in _list(os.path.join(root, hca, "device", "net")):
            base = f"{hca}/device/net/{netdev}"
            texts[base] = ""
            for attr in ("dev_id", "dev_port"):
                text = _read(os.path.join(root, base, attr))
                if text is not None:
                    texts[f"{base}/{attr}"] = text
        for port in _list(os.path.join(root, hca, "ports")):
            if _index(port) is None:
                continue
            prel = f"{hca}/ports/{port}"
            for attr in PORT_ATTRS:
                text = _read(os.path.join(root, prel, attr))
                if text is not None:
                    texts[f"{prel}/{attr}"] = text
            _read_dir(texts, root, f"{prel}/counters")
            _read_dir(texts, root, f"{prel}/hw_counters")
            for table in ("types", "ndevs"):
                rel = f"{prel}/gid_attrs/{table}"
                indexes = sorted((n for n in _list(os.path.join(root, rel), 8192) if _index(n) is not None), key=int)
                for index in indexes[:max_gids]:
                    text = _read(os.path.join(root, rel, index))  # empty GID slots fail: skipped
                    if text is not None:
                        texts[f"{rel}/{index}"] = text
    return texts


def ethtool_netdevs(texts: Mapping[str, str | None]) -> list[str]:
    """The netdevs whose ``ethtool -S`` netui reads: those paired with a port (see
    ``_pair_netdev``), not VLAN or IPoIB children (a ``.`` in the name) — not every netdev
    of the PCI function, which in switchdev mode has one per VF representor. The remote
    sampler picks the same."""
    names: list[str] = []
    for port in parse_infiniband(texts).values():
        name = port.netdev
        if name and "." not in name and "/" not in name and name not in names:
            names.append(name)
    return names


def texts_from_grep(text: str) -> dict[str, str]:
    """``grep -H . <files>`` output (``path:value`` per line) → ``{path: value}`` for
    ``parse_infiniband``: a remote sampler reads a whole tree in one process that way (empty
    and unreadable files print nothing). The path ends at the first ``:`` after
    ``class/infiniband/`` (values such as ``4: ACTIVE`` have colons; a PCI path before it
    may too). Lines without one are skipped; a file printing several lines keeps its first.
    """
    texts: dict[str, str] = {}
    for line in text.splitlines():
        start = line.find(_PREFIX)
        colon = line.find(":", start + len(_PREFIX) if start >= 0 else 0)
        if colon > 0:
            texts.setdefault(line[:colon], line[colon + 1 :])
    return texts


# ---------------------------------------------------------------------------- parsing

STATE_NAMES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
PHYS_STATE_NAMES = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining",
                    5: "LinkUp", 6: "LinkErrorRecovery", 7: "Phy Test"}

# IBA PortCounters widths (sysfs.c PORT_PMA_ATTR table)
IBA_BITS: dict[str, int] = {
    "symbol_error": 16, "port_rcv_errors": 16, "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16, "port_xmit_discards": 16, "VL15_dropped": 16,
    "link_error_recovery": 8, "link_downed": 8, "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4, "excessive_buffer_overrun_errors": 4,
    "port_xmit_wait": 32,
    "unicast_xmit_packets": 64, "unicast_rcv_packets": 64,
    "multicast_xmit_packets": 64, "multicast_rcv_packets": 64,
}
# 32-bit in the legacy table, 64-bit in both extended ones
DATA_COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets")
# mlx5 (counters.c): q-counters are 32-bit, congestion and PPCNT counters 64-bit;
# a name not listed is taken as 64-bit (never a false saturation; backwards = reset)
HW_BITS: dict[str, int] = dict.fromkeys((
    "rx_write_requests", "rx_read_requests", "rx_atomic_requests", "rx_dct_connect", "out_of_buffer",
    "out_of_sequence", "duplicate_request", "rnr_nak_retry_err", "packet_seq_err",
    "implied_nak_seq_err", "local_ack_timeout_err", "resp_local_length_error", "resp_cqe_error",
    "req_cqe_error", "req_remote_invalid_request", "req_remote_access_errors",
    "resp_remote_access_errors", "resp_cqe_flush_error", "req_cqe_flush_error",
    "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
), 32) | dict.fromkeys((
    "rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent", "rx_icrc_encapsulated",
), 64)

_IBA_LEGACY = IBA_BITS | dict.fromkeys(DATA_COUNTERS, 32)
_IBA_EXT = IBA_BITS | dict.fromkeys(DATA_COUNTERS, 64)


@lru_cache(maxsize=64)
def _hw_table(names: tuple[str, ...]) -> dict[str, int]:
    """Widths of a hw_counters set (cached: a node's set does not change between reads)."""
    return {n: HW_BITS.get(n.removeprefix("vport_"), 64) for n in names}


_STATE = re.compile(r"\s*([0-9]{1,6})\s*:\s*(.*?)\s*\Z", re.S)
_RATE = re.compile(r"\s*([0-9]{1,6}(?:\.[0-9]{1,3})?)\s*Gb/s")


def parse_counter(text: str | None) -> int | None:
    """A sysfs counter: a decimal u64, or None ("N/A (no PMA)", empty, garbage)."""
    if text is None:
        return None
    s = text.strip()
    if not s.isascii() or not s.isdigit() or len(s) > 20:
        return None
    value = int(s)
    return value if value <= U64_MAX else None


def parse_state(text: str | None, names: dict[int, str] = STATE_NAMES) -> PortState | None:
    """``4: ACTIVE`` → PortState(4, "ACTIVE"); a bare number or known name is completed from
    ``names``; None for anything else. The name is kept as printed."""
    if text is None:
        return None
    m = _STATE.match(text)
    if m:
        num = int(m.group(1))
        name = m.group(2) if m.group(2).isprintable() and len(m.group(2)) < 64 else None
        return PortState(num, name or names.get(num))
    s = text.strip()
    if s.isascii() and s.isdigit() and len(s) < 6:
        return PortState(int(s), names.get(int(s)))
    for num, name in names.items():
        if s == name:
            return PortState(num, name)
    return None


def parse_rate_gbps(text: str | None) -> float | None:
    """``100 Gb/sec (4X EDR)`` → 100.0, ``2.5 Gb/sec (1X SDR)`` → 2.5; None otherwise."""
    if text is None:
        return None
    m = _RATE.match(text)
    return float(m.group(1)) if m else None


def _word(text: str | None) -> str | None:
    if text is None:
        return None
    s = text.strip()
    return s if s and s.isprintable() and len(s) < 64 else None


def _small_int(text: str | None) -> int | None:
    """dev_id is printed in hex (``0x1``), dev_port in decimal."""
    s = _word(text)
    if s is None or len(s) > 10:
        return None
    try:
        value = int(s, 0)
    except ValueError:
        return None
    return value if value >= 0 else None


def _index(text: str) -> int | None:
    """A port number or GID index from a path (bounded: int() refuses >4300 digits)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else None


def _widths(values: dict[str, int | None], table: dict[str, int], default: int) -> dict[str, int]:
    bits = {}
    for name, value in values.items():
        b = table.get(name, default)
        if value is not None and value >= 1 << b:
            b = 64  # wider than the table says: this driver's counter is not the IBA one
        bits[name] = b
    return bits


class _Port:
    __slots__ = ("attrs", "counters", "hw", "gid_types", "gid_ndevs")

    def __init__(self) -> None:
        self.attrs: dict[str, str | None] = {}
        self.counters: dict[str, str | None] = {}
        self.hw: dict[str, str | None] = {}
        self.gid_types: dict[int, str] = {}
        self.gid_ndevs: dict[int, str] = {}


def parse_counters(raw: Mapping[str, str | None]) -> dict[str, int | None]:
    """``{name: text}`` → ``{name: u64 or None}``, all at once when every text is a plain
    number (the C JSON decoder; the common case), one by one otherwise."""
    tokens = [t.strip() if isinstance(t, str) else "" for t in raw.values()]
    joined = ",".join(tokens)
    if tokens and joined.isascii() and joined.replace(",", "").isdigit() and all(tokens):
        try:
            values = _json_loads("[" + joined + "]")  # rejects leading zeros: careful path
        except ValueError:
            values = None
        if values is not None and len(values) == len(tokens) and max(values) <= U64_MAX:
            return dict(zip(raw, values))
    return {name: parse_counter(text) for name, text in raw.items()}


def _pair_netdev(port: int, netdevs: dict[str, list[int | None]], gid_ndevs: dict[int, str]) -> str | None:
    """The netdev of ``port`` (B.4 of the network facts): the PCI function's netdev whose
    max(dev_id, dev_port) + 1 is the port (parents before IPoIB children such as ib0.8001),
    the only netdev when its index is unknown, else the netdev of the lowest GID."""
    names = sorted(netdevs, key=lambda n: (len(n), n))
    for name in names:
        known = [v for v in netdevs[name] if v is not None]
        if known and max(known) + 1 == port:
            return name
    if len(names) == 1 and all(v is None for v in netdevs[names[0]]):
        return names[0]
    if gid_ndevs:
        return gid_ndevs[min(gid_ndevs)]
    return None


def parse_infiniband(texts: Mapping[str, str | None]) -> dict[PortKey, IbPort]:
    """Ports from the texts of ``read_infiniband`` (keys relative to /sys/class/infiniband;
    a longer path containing ``class/infiniband/`` is cut there). Unknown keys are ignored,
    an unreadable or unparsable value becomes None; never raises. Ports in key order.
    """
    ports: dict[PortKey, _Port] = {}
    seen: dict[tuple[str, str], _Port] = {}
    device_hw: dict[str, dict[str, str | None]] = {}
    netdevs: dict[str, dict[str, list[int | None]]] = {}
    for key, text in texts.items():
        if not isinstance(key, str):
            continue
        if _PREFIX in key:
            key = key.partition(_PREFIX)[2]
        parts = key.strip("/").split("/")
        n = len(parts)
        if n < 3 or not parts[0]:
            continue
        hca, second = parts[0], parts[1]
        if second == "ports":
            if n < 4:
                continue
            port = seen.get((hca, parts[2]))
            if port is None:
                num = _index(parts[2])
                if num is None:
                    continue
                port = seen[hca, parts[2]] = ports.setdefault((hca, num), _Port())
            kind = parts[3]
            if n == 5:
                if kind == "counters" and parts[4]:
                    port.counters[parts[4]] = text
                elif kind == "hw_counters" and parts[4]:
                    port.hw[parts[4]] = text
            elif n == 4:
                if kind in PORT_ATTRS:
                    port.attrs[kind] = text
            elif n == 6 and kind == "gid_attrs" and parts[4] in ("types", "ndevs"):
                index, word = _index(parts[5]), _word(text)
                if word is not None and index is not None:
                    (port.gid_types if parts[4] == "types" else port.gid_ndevs)[index] = word
        elif second == "hw_counters":
            if n == 3 and parts[2]:
                device_hw.setdefault(hca, {})[parts[2]] = text
        elif second == "device" and parts[2] == "net" and n in (4, 5) and parts[3]:
            slot = netdevs.setdefault(hca, {}).setdefault(parts[3], [None, None])
            if n == 5 and parts[4] in ("dev_id", "dev_port"):
                slot[parts[4] == "dev_port"] = _small_int(text)
    return {key: _build(key, p, device_hw.get(key[0]), netdevs.get(key[0], {})) for key, p in ports.items()}


def _build(key: PortKey, p: _Port, device_hw: dict[str, str | None] | None,
           netdevs: dict[str, list[int | None]]) -> IbPort:
    hca, num = key
    counters = parse_counters(p.counters)
    extended = "unicast_xmit_packets" in counters or "unicast_rcv_packets" in counters or any(
        (v := counters.get(n)) is not None and v > 0xFFFFFFFF for n in DATA_COUNTERS
    )
    table = _IBA_EXT if extended else _IBA_LEGACY
    if p.hw:
        raw_hw, scope = p.hw, "port"
    elif device_hw:
        raw_hw, scope = device_hw, "device"
    else:
        raw_hw, scope = {}, None
    lifespan = parse_counter(raw_hw.get("lifespan"))
    hw = parse_counters({name: text for name, text in raw_hw.items() if name != "lifespan"})
    hw_bits = _widths(hw, _hw_table(tuple(hw)), 64)
    xmit, rcv = counters.get("port_xmit_data"), counters.get("port_rcv_data")
    return IbPort(
        hca=hca,
        port=num,
        state=parse_state(p.attrs.get("state")),
        phys_state=parse_state(p.attrs.get("phys_state"), PHYS_STATE_NAMES),
        rate_gbps=parse_rate_gbps(p.attrs.get("rate")),
        link_layer=_word(p.attrs.get("link_layer")),
        netdev=_pair_netdev(num, netdevs, p.gid_ndevs),
        counters=counters,
        counter_bits=_widths(counters, table, 64),
        extended=extended,
        xmit_bytes=None if xmit is None else xmit * 4,
        rcv_bytes=None if rcv is None else rcv * 4,
        hw_counters=hw,
        hw_counter_bits=hw_bits,
        hw_scope=scope if hw else None,
        hw_lifespan_ms=lifespan,
        gid_netdevs=p.gid_ndevs,
        gid_types=p.gid_types,
    )
