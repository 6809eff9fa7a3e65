"""``netui export FILE --format csv|json|prom``: a recording's rates for plots and notebooks.

The rates are computed by the model from the recorded raw samples, frame by frame, exactly
as replay and live mode compute them.

- ``csv``: long ("tidy") rows ``time,node,device,metric,value`` — one per node, device and
  metric per interval; ``device`` is an interface, a CPU (``cpu3``) or empty for the node;
  unknown rates (the first sample, a counter reset) have no row. In pandas:
  ``pd.read_csv(f).pivot_table(index=["time", "node", "device"], columns="metric", values="value")``.
- ``json``: one document; each interval is ``snapshot --json``'s document at that time, with
  the monitor's interval then (``interval_s``: a recording may change it).
- ``prom``: OpenMetrics text with timestamps: the raw counters under node_exporter's names
  (``node_network_receive_bytes_total{device,instance}`` …, so PromQL's ``rate()`` works on
  them) and netui's own rates, health and straggler flags as ``netui_*`` gauges. It can be
  backfilled into Prometheus (``promtool tsdb create-blocks-from openmetrics``).

The command's options are in netui/cli/export.py. ``-o OUT`` never overwrites an existing file unless ``--force``, and never the recording
being exported (by any name: a link, a relative path, ``>>``), even with ``--force``; OUT
is written beside and renamed into place, so a failed export leaves no half file.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import stat
import sys
import tempfile
from collections.abc import Iterator

from netui.engine.document import fleet_document, mesh_loss
from netui.engine.recording.codec import RecordingError
from netui.engine.recording.playback import Recording, Step, load, replay_frames
from netui.engine.recording.reader import recording_files
from netui.exits import InputError
from netui.model import units
from netui.model.fleet import Fleet
from netui.model.mesh import MIN_PROBES, NodeMesh
from netui.model.node import Node, NodeState

FORMATS = ("csv", "json", "prom")
EXPORT_VERSION = 1
USER_HZ = 100  # /proc/stat ticks per second, as node_exporter assumes too


def judged_fleet(recording: Recording, config=None) -> Fleet:
    """The fleet at the recording's start, judging health and stragglers as live (by
    ``config``, a netui.config.Config: the configuration file's thresholds and rules; None:
    the defaults)."""
    fleet = Fleet(list(recording.nodes), interval_s=recording.interval_s, history_s=recording.interval_s * 4,
                  **_judged_by(config))
    if config is not None:
        fleet.straggler_rules = config.straggler
    return fleet


def intervals(recording: Recording, config=None, *, events: bool = False) -> Iterator[tuple[Step, Fleet]]:
    """Run the model over the recording (``replay_frames``): (the frame's Step, the fleet)
    after each frame, health and stragglers judged as ``judged_fleet`` says; with
    ``events``, each Step lists the frame's events, as the replay's timeline has them."""
    fleet = judged_fleet(recording, config)
    for step in replay_frames(recording, fleet, events=events):
        yield step, fleet


# --- csv ------------------------------------------------------------------------------------------

# (the JSON document's name, the rate's attribute, its scale): the CSV's metrics are named
# as the JSON's rates are, throughput in bits per second (docs/recording.md)
_IFACE_METRICS = (("rx_bits_per_s", "rx_bytes_per_s", 8), ("tx_bits_per_s", "tx_bytes_per_s", 8),
                  ("rx_packets_per_s", "rx_packets_per_s", 1), ("tx_packets_per_s", "tx_packets_per_s", 1),
                  ("rx_dropped_per_s", "rx_dropped_per_s", 1), ("tx_dropped_per_s", "tx_dropped_per_s", 1),
                  ("rx_errors_per_s", "rx_errors_per_s", 1), ("tx_errors_per_s", "tx_errors_per_s", 1),
                  ("link_percent", "link_percent", 1))
_SUMMARY_METRICS = (("rx_bits_per_s", "rx_bytes_per_s", 8), ("tx_bits_per_s", "tx_bytes_per_s", 8),
                    ("drops_per_s", "drops_per_s", 1), ("errors_per_s", "errors_per_s", 1),
                    ("retrans_segs_per_s", "retrans_segs_per_s", 1), ("retrans_ratio", "retrans_ratio", 1),
                    ("hottest_softirq_percent", "hottest_softirq_percent", 1), ("net_rx_per_s", "net_rx_per_s", 1),
                    ("softnet_dropped_per_s", "softnet_drops_per_s", 1),
                    ("time_squeeze_per_s", "time_squeeze_per_s", 1), ("max_link_percent", "max_link_percent", 1))


def _scaled(obj, metrics):
    for metric, attr, scale in metrics:
        v = getattr(obj, attr)
        if v is not None:
            yield metric, v * scale


def mesh_of(fleet: Fleet, name: str) -> NodeMesh | None:
    """Node ``name``'s pairs in the probe mesh's last judgement, or None (the mesh is off, or
    it has no settled probe in the window)."""
    verdict = fleet.mesh_verdict
    return verdict.nodes.get(name) if verdict is not None else None


def node_rows(node: Node, mesh: NodeMesh | None = None) -> Iterator[tuple[str, str, float]]:
    """(device, metric, value) of one node's last interval, named as the JSON document's rates
    (throughput in bits per second), and with ``mesh`` (``mesh_of``) its probe mesh's loss
    (0 to 1, over the window) and RTT p99 (seconds); unknown values are left out."""
    r = node.rates
    if r is None:
        return
    for name in sorted(r.interfaces):
        for metric, v in _scaled(r.interfaces[name], _IFACE_METRICS):
            yield name, metric, v
    for metric, v in _scaled(node.summary, _SUMMARY_METRICS):
        yield "", metric, v
    if r.tcp is not None:
        for metric in ("out_segs_per_s", "in_segs_per_s"):
            v = getattr(r.tcp, metric)
            if v is not None:
                yield "", metric, v
    if r.cpu is not None:
        for cpu, pct, rx, tx in zip(r.cpu.cpus, r.cpu.softirq_percent, r.cpu.net_rx_per_s, r.cpu.net_tx_per_s):
            for metric, v in (("softirq_percent", pct), ("net_rx_per_s", rx), ("net_tx_per_s", tx)):
                if v is not None:
                    yield units.cpu(cpu), metric, v
    if r.softnet is not None:
        for cpu, d, q in zip(r.softnet.cpus, r.softnet.dropped_per_s, r.softnet.time_squeeze_per_s):
            yield units.cpu(cpu), "softnet_dropped_per_s", d
            yield units.cpu(cpu), "time_squeeze_per_s", q
    if mesh is not None:
        loss = mesh_loss(mesh.counts)
        if loss is not None:
            yield "", "mesh_loss", loss
        if mesh.p99_us is not None:
            yield "", "mesh_p99_rtt_s", mesh.p99_us / 1e6
    yield "", "health_level", float(node.level)
    yield "", "straggler", 1.0 if node.straggler is not None else 0.0


def export_csv(recording: Recording, out, config=None) -> int:
    """Write the tidy CSV; the number of rows."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("time", "node", "device", "metric", "value"))
    rows = 0
    for step, fleet in intervals(recording, config):
        for name in step.sampled:
            node = fleet[name]
            t = f"{node.sample.wall_s:.3f}"
            for device, metric, value in node_rows(node, mesh_of(fleet, name)):
                writer.writerow((t, name, device, metric, repr(float(value))))
                rows += 1
    return rows


def _judged_by(config) -> dict:
    return {} if config is None else {"thresholds": config.thresholds or None, "rules": config.health}


# --- json -----------------------------------------------------------------------------------------


def export_json(recording: Recording, out, config=None) -> int:
    """Write one document: the recording's header and, per frame, snapshot --json's document."""
    frames = []
    events = []
    for step, fleet in intervals(recording, config, events=True):
        frames.append({"t": round(step.t, 3), "interval_s": fleet.interval_s} | fleet_document(fleet))
        events.extend(e.record for e in step.events)
    doc = {
        "version": EXPORT_VERSION,
        "kind": "netui-export",
        "files": [str(p) for p in recording.files],
        "header": recording.header,
        "nodes": recording.nodes,
        "interval_s": recording.interval_s,
        "start": recording.start_t,
        "end": recording.end_t,
        "intervals": frames,
        "events": events,
    }
    json.dump(doc, out, allow_nan=False)
    out.write("\n")
    return len(frames)


# --- prom (OpenMetrics) -------------------------------------------------------------------------

# InterfaceCounters field → node_exporter's netdev name (receive_/transmit_ …_total)
NETDEV_NAMES = {
    "rx_bytes": "receive_bytes", "rx_packets": "receive_packets", "rx_errors": "receive_errs",
    "rx_dropped": "receive_drop", "rx_fifo": "receive_fifo", "rx_frame": "receive_frame",
    "rx_compressed": "receive_compressed", "rx_multicast": "receive_multicast",
    "tx_bytes": "transmit_bytes", "tx_packets": "transmit_packets", "tx_errors": "transmit_errs",
    "tx_dropped": "transmit_drop", "tx_fifo": "transmit_fifo", "tx_colls": "transmit_colls",
    "tx_carrier": "transmit_carrier", "tx_compressed": "transmit_compressed",
}
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
_NETUI_IFACE = {
    "rx_bytes_per_s": ("netui_network_receive_bytes_per_second", "Bytes received per second over the interval"),
    "tx_bytes_per_s": ("netui_network_transmit_bytes_per_second", "Bytes sent per second over the interval"),
    "rx_packets_per_s": ("netui_network_receive_packets_per_second", "Packets received per second"),
    "tx_packets_per_s": ("netui_network_transmit_packets_per_second", "Packets sent per second"),
    "rx_dropped_per_s": ("netui_network_receive_drop_per_second", "Received packets dropped per second"),
    "tx_dropped_per_s": ("netui_network_transmit_drop_per_second", "Packets to send dropped per second"),
    "rx_errors_per_s": ("netui_network_receive_errs_per_second", "Receive errors per second"),
    "tx_errors_per_s": ("netui_network_transmit_errs_per_second", "Transmit errors per second"),
    "link_percent": ("netui_network_link_percent", "The busier direction in percent of link speed"),
}


class OpenMetrics:
    """Families of samples, written family by family, series by series, in time order."""

    def __init__(self) -> None:
        self.meta: dict[str, tuple[str, str]] = {}  # family → (type, help)
        self.series: dict[str, dict[tuple, list[tuple[float, float]]]] = {}

    def add(self, family: str, kind: str, help_text: str, labels: dict[str, str], t: float, value) -> None:
        if value is None:
            return
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            return
        self.meta.setdefault(family, (kind, help_text))
        points = self.series.setdefault(family, {}).setdefault(tuple(sorted(labels.items())), [])
        if points and t <= points[-1][0]:
            return  # a series' timestamps only go forward (a node clock stepped back)
        points.append((t, value))

    def text(self) -> str:
        out = io.StringIO()
        for family in sorted(self.meta):
            kind, help_text = self.meta[family]
            out.write(f"# TYPE {family} {kind}\n# HELP {family} {_escape_help(help_text)}\n")
            name = family + "_total" if kind == "counter" else family
            for labels, points in self.series[family].items():
                label_text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
                for t, v in points:
                    out.write(f"{name}{{{label_text}}} {_number(v)} {t:.3f}\n")
        out.write("# EOF\n")
        return out.getvalue()


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _number(v: float) -> str:
    return str(int(v)) if v.is_integer() and abs(v) < 2**63 else repr(v)


def _prom_node(om: OpenMetrics, node: Node) -> None:
    s = node.sample
    t = s.wall_s
    inst = {"instance": node.name}
    for name, i in sorted(s.interfaces.items()):
        dev = inst | {"device": name}
        for field, value in zip(i.counters._fields, i.counters):
            suffix = NETDEV_NAMES[field]
            om.add(f"node_network_{suffix}", "counter", f"Network device statistic {suffix}.", dev, t, value)
        om.add("node_network_mtu_bytes", "gauge", "mtu_bytes value of /sys/class/net/<iface>.", dev, t, i.mtu)
        if i.speed_mbps:
            om.add("node_network_speed_bytes", "gauge", "speed_bytes value of /sys/class/net/<iface>.", dev, t,
                   i.speed_mbps * 125_000)
        if i.carrier is not None:
            om.add("node_network_carrier", "gauge", "carrier value of /sys/class/net/<iface>.", dev, t, int(i.carrier))
        if i.operstate is not None:
            om.add("node_network_up", "gauge", "Value is 1 if operstate is 'up', 0 otherwise.", dev, t,
                   int(i.operstate == "up"))
        ir = node.rates.interfaces.get(name) if node.rates else None
        if ir is not None:
            for field, (family, help_text) in _NETUI_IFACE.items():
                om.add(family, "gauge", help_text, dev, t, getattr(ir, field))
    if s.tcp is not None:
        for key, value in sorted(s.tcp.tcp.items()):
            om.add(f"node_netstat_Tcp_{key}", "unknown", f"Statistic Tcp{key}.", inst, t, value)
        for key, value in sorted(s.tcp.ext.items()):
            om.add(f"node_netstat_TcpExt_{key}", "unknown", f"Statistic TcpExt{key}.", inst, t, value)
    if s.cpu is not None:
        for mode in CPU_MODES:
            column = getattr(s.cpu, mode)
            if column is None:
                continue
            for cpu, ticks in zip(s.cpu.cpus, column):
                om.add("node_cpu_seconds", "counter", "Seconds the CPUs spent in each mode.",
                       inst | {"cpu": str(cpu), "mode": mode}, t, ticks / USER_HZ)
    if s.softirqs is not None:
        for cpu, rx, tx in zip(s.softirqs.cpus, s.softirqs.net_rx, s.softirqs.net_tx):
            for kind, value in (("NET_RX", rx), ("NET_TX", tx)):
                om.add("node_softirqs_functions", "counter", "Softirq counts per CPU.",
                       inst | {"cpu": str(cpu), "type": kind}, t, value)
    if s.softnet is not None:
        for cpu, p, d, q in zip(s.softnet.cpus, s.softnet.processed, s.softnet.dropped, s.softnet.time_squeeze):
            c = inst | {"cpu": str(cpu)}
            om.add("node_softnet_processed", "counter", "Number of processed packets", c, t, p)
            om.add("node_softnet_dropped", "counter", "Number of dropped packets", c, t, d)
            om.add("node_softnet_times_squeezed", "counter", "Number of times processing packets ran out of quota",
                   c, t, q)
    r = node.rates
    if r is not None and r.tcp is not None:
        om.add("netui_tcp_retransmit_ratio", "gauge",
               "Retransmitted segments per segment sent (ΔRetransSegs/ΔOutSegs)", inst, t, r.tcp.retrans_ratio)
        om.add("netui_tcp_retransmitted_segments_per_second", "gauge", "TCP segments retransmitted per second",
               inst, t, r.tcp.retrans_segs_per_s)
    if r is not None and r.cpu is not None:
        for cpu, pct in zip(r.cpu.cpus, r.cpu.softirq_percent):
            om.add("netui_cpu_softirq_percent", "gauge", "Share of the CPU's time in softirq, percent",
                   inst | {"cpu": str(cpu)}, t, pct)


def _prom_mesh(om: OpenMetrics, node: Node, mesh: NodeMesh | None) -> None:
    """The node's probe mesh over its window (docs/mesh.md), as the CSV's mesh_loss and mesh_p99_rtt_s."""
    if mesh is None or node.sample is None:
        return
    inst, t = {"instance": node.name}, node.sample.wall_s
    om.add("netui_mesh_loss_ratio", "gauge", "Share of the probe mesh's probes lost on the node's pairs, both ways, "
           f"over the window (none under {MIN_PROBES} probes)", inst, t, mesh_loss(mesh.counts))
    om.add("netui_mesh_rtt_p99_seconds", "gauge", "RTT p99 of the node's mesh probes over the window", inst, t,
           None if mesh.p99_us is None else mesh.p99_us / 1e6)


def export_prom(recording: Recording, out, config=None) -> int:
    """Write OpenMetrics text; the number of samples."""
    om = OpenMetrics()
    for step, fleet in intervals(recording, config):
        ft = step.t
        for name in step.sampled:
            _prom_node(om, fleet[name])
            _prom_mesh(om, fleet[name], mesh_of(fleet, name))
        for node in fleet:
            inst = {"instance": node.name}
            om.add("netui_node_up", "gauge", "1 while netui has the node up, else 0", inst, ft,
                   int(node.state is NodeState.UP))
            om.add("netui_node_health_level", "gauge", "0 ok, 1 careful, 2 warning, 3 critical", inst, ft,
                   int(node.level))
            om.add("netui_node_straggler", "gauge", "1 while the node is a straggler, else 0", inst, ft,
                   int(node.straggler is not None))
    text = om.text()
    out.write(text)
    return sum(len(points) for series in om.series.values() for points in series.values())


def _refuse_output(output: str, inputs: list, force: bool) -> str | None:
    """Why writing to ``output`` is refused, or None: it is the recording itself (one of its
    files, by any name), an existing regular file without ``force``, a directory, a disk."""
    try:
        st = os.stat(output)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{output}: {exc.strerror or exc}"
    for f in inputs:
        try:
            if os.path.samefile(output, f):
                return f"{output} is the recording being exported ({f}): netui export never writes over its input"
        except OSError:
            continue
    if stat.S_ISDIR(st.st_mode):
        return f"{output}: is a directory"
    if stat.S_ISBLK(st.st_mode):
        return f"{output}: a block device: netui export writes files"
    if stat.S_ISREG(st.st_mode) and not force:
        return f"{output} exists: netui export never overwrites a file (--force replaces it)"
    return None  # a FIFO or a character device (/dev/null) takes the output as it comes


def _refuse_stdout(inputs: list) -> str | None:
    """``netui export FILE >> FILE`` would append to the recording: refused."""
    try:
        out = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    for f in inputs:
        with contextlib.suppress(OSError):
            st = os.stat(f)
            if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
                return f"standard output is the recording being exported ({f}): netui export never writes over its input"
    return None


def _write_file(output: str, write, recording: Recording) -> None:
    """Write ``output`` whole or not at all: a regular file is written beside it and renamed
    over it at the end (a failed export leaves the old file or none); a FIFO or a character
    device is written to directly."""
    if os.path.exists(output) and not os.path.isfile(output):
        with open(output, "w", encoding="utf-8", newline="") as out:
            write(recording, out)
        return
    directory = os.path.dirname(os.path.abspath(output))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(output)}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            write(recording, out)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, output)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def open_recording(path: str, *, output: str | None, force: bool) -> Recording:
    """The recording at ``path`` (FILE.1 … of a rotated set too), once it is sure that the
    export may go to ``output`` (None: standard output) — never over the recording itself, nor
    over an existing file without ``force``. InputError with the reason otherwise."""
    try:
        files = recording_files(path)
    except RecordingError as exc:
        raise InputError(f"cannot export {exc}") from None  # the message starts with the file
    refused = _refuse_output(output, files, force) if output else _refuse_stdout(files)
    if refused:
        raise InputError(refused)
    try:
        return load(path)
    except (OSError, RecordingError) as exc:
        raise InputError(f"cannot export {exc}") from None


def write_export(recording: Recording, fmt: str, *, output: str | None, config=None, stdout=None) -> None:
    """Write the recording's rates as ``fmt`` (one of FORMATS) to ``output``, whole or not at
    all, or to standard output (None): the text stream ``stdout`` (the command line's, which
    writes every byte; default sys.stdout). InputError when it cannot be written; a broken
    pipe on standard output is raised as it is, for the command line to end quietly."""
    export = {"csv": export_csv, "json": export_json, "prom": export_prom}[fmt]

    def write(recording, out):
        return export(recording, out, config)

    try:
        if output:
            _write_file(output, write, recording)
        else:
            out = sys.stdout if stdout is None else stdout
            write(recording, out)
            out.flush()
    except BrokenPipeError:
        if not output:
            raise  # the reader went away (| head): the command line ends quietly
        raise InputError(f"cannot write {output}: the reader went away") from None
    except OSError as exc:
        raise InputError(f"cannot write {output or 'to standard output'}: {exc.strerror or exc}") from None
