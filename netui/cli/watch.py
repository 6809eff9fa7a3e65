"""``netui`` (live TUI), ``netui snapshot``, ``netui record``, ``netui replay``: watching nodes.

The collectors, the engine and asyncio are imported when a command needs them, not with
this module: ``netui --help`` and a bad argument answer at once (tests/integration/test_startup.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from netui import __version__
from netui.cli.options import (common, exit_epilog, mesh_option, positive_float, positive_int, rotate_size,
                               topology_option)
from netui.exits import InputError

if TYPE_CHECKING:
    from netui.cli.settings import WatchSettings
    from netui.config import Config
    from netui.engine.monitor import Monitor
    from netui.model.mesh import MeshSettings


class _Version(argparse.Action):
    """``netui --version``: the version, the event loop netui runs on (NETUI_EVENT_LOOP), asyncssh's
    version and which of netui's asyncssh shims applied (netui/collectors/asyncssh_shims.py)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from netui.collectors import asyncssh_shims
        from netui.engine.eventloop import describe

        print(f"netui {__version__} (Python {sys.version.split()[0]}, event loop {describe()})")
        print("\n".join(asyncssh_shims.describe()))
        parser.exit()


_SIGNALLED = "130/143/129 ended by SIGINT/SIGTERM/SIGHUP (the terminal restored first)"


def build_parser(command: str | None) -> argparse.ArgumentParser:
    if command == "snapshot":
        p = argparse.ArgumentParser(prog="netui snapshot",
                                    description="Take two samples one interval apart and print them once.",
                                    epilog=exit_epilog("a node is not up"))
        p.add_argument("--json", action="store_true", help="print the JSON document (see docs/json.md)")
    elif command == "record":
        p = argparse.ArgumentParser(
            prog="netui record",
            description="Record raw samples, node states and health events to a file "
                        "(gzip-compressed JSON lines, readable after a crash; see docs/recording.md).",
            epilog=exit_epilog(extra="130 interrupted (Ctrl-C); SIGTERM and SIGHUP end it with 0, "
                                     "the file finished as on Ctrl-C"))
        p.add_argument("-o", "--output", required=True, metavar="FILE")
        p.add_argument("--count", type=positive_int, default=None, metavar="N", help="stop after N ticks")
        p.add_argument("--max-size", type=rotate_size, default=None, metavar="SIZE",
                       help="rotate when FILE reaches SIZE (e.g. 100M): FILE → FILE.1 → … FILE.KEEP")
        p.add_argument("--keep", type=positive_int, default=5, metavar="N",
                       help="rotated files kept with --max-size (default 5); the oldest goes")
    elif command == "replay":
        p = argparse.ArgumentParser(prog="netui replay",
                                    description="Play a recording back in the UI: pause, speed, seek, events.",
                                    epilog=exit_epilog(extra=_SIGNALLED))
        p.add_argument("file", metavar="FILE", help="a recording (FILE.1 … of a rotated set are read too)")
        p.add_argument("--history", type=positive_float, default=900.0, metavar="S",
                       help="seconds of history kept per node (default 900)")
        p.add_argument("--config", metavar="PATH",
                       help="health thresholds, health rules and straggler rules, as live "
                            "(TOML; default ~/.config/netui/config.toml)")
        topology_option(p)
        p.set_defaults(mesh="off")  # a replay's probes are recorded ones
        return p
    else:
        p = argparse.ArgumentParser(
            prog="netui",
            description="A terminal cockpit for the network of a training cluster. "
                        "With no arguments it watches this host. "
                        f"Commands: {', '.join(_commands())}.",
            epilog=exit_epilog(extra=_SIGNALLED),
        )
        p.add_argument("--version", action=_Version,
                       help="show netui's version and event loop, asyncssh's version and which of "
                            "netui's asyncssh shims apply, then exit")
        p.add_argument("--history", type=positive_float, default=900.0, metavar="S",
                       help="seconds of history kept per node (default 900)")
    p.add_argument("--config", metavar="PATH",
                   help="health thresholds, health rules and straggler rules "
                        "(TOML; default ~/.config/netui/config.toml)")
    common(p)
    topology_option(p)
    mesh_option(p)
    return p


def _commands() -> list[str]:
    from netui.cli import COMMANDS

    return list(COMMANDS)


def read_config(path: str | None) -> Config:
    """The configuration file's settings (``path`` None: ~/.config/netui/config.toml where it
    exists); InputError with the reason when it is unusable."""
    from netui.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def build_monitor(settings: WatchSettings, *, history_s: float | None = None,
                  hold_intervals: int | None = None) -> Monitor:
    """The live Monitor the settings name, judging by the configuration file; ``history_s``
    overrides the settings' and ``hold_intervals`` the file's (a one-shot snapshot has too few
    samples to hold). InputError with the reason on bad input."""
    from dataclasses import replace

    from netui.cli.sources import build_sources, replays
    from netui.engine.mesh import taking_part
    from netui.engine.monitor import Monitor

    config = read_config(settings.config_path)
    rules = config.health if hold_intervals is None else replace(config.health, hold_intervals=hold_intervals)
    history_s = settings.history_s if history_s is None else history_s
    if replays(settings.sources):  # the recording's frames, one per tick, at the interval's pace
        from netui.engine.replay import RecordingFeed

        monitor: Monitor = RecordingFeed(load_replay(settings.sources.replay), interval_s=settings.interval_s,
                                         history_s=history_s, thresholds=config.thresholds or None, rules=rules)
    else:
        sources, connector = build_sources(settings.sources)
        for source in sources:  # what the first read needs, before the first tick waits for it
            source.prepare()
        monitor = Monitor(sources, interval_s=settings.interval_s, history_s=history_s,
                          thresholds=config.thresholds or None, rules=rules, connector=connector,
                          mesh=mesh_for(settings, config, len(taking_part(sources))))
    monitor.fleet.straggler_rules = config.straggler
    if hold_intervals == 1:  # judged at once: stragglers too
        # (and no wait for flows not read yet: a single judgement has no later one to wait for)
        monitor.fleet.straggler_rules = replace(config.straggler, flag_intervals=1, window_intervals=1,
                                                clear_intervals=1, unread_intervals=0)
    from netui.cli.topology import attach_topology

    attach_topology(monitor.fleet, settings.topology_path, settings.sources.slurm is not False)
    return monitor


def mesh_for(settings: WatchSettings, config: Config, probing_nodes: int) -> MeshSettings | None:
    """The probe mesh's settings: --mesh's, else config.toml's ``mesh``, else on when up to
    DEFAULT_MESH_NODES nodes would probe (None: off). ``probing_nodes``: the nodes that take
    part (engine/mesh.py ``taking_part``: SSH nodes, not this host, node_exporter or Prometheus
    ones), as its cost grows with their pairs."""
    from netui.model.mesh import DEFAULT_MESH_NODES

    if settings.mesh_option is not None:
        return settings.mesh
    if config.mesh_said or probing_nodes <= DEFAULT_MESH_NODES:
        return config.mesh
    return None


async def _snapshot(monitor: Monitor, connect_timeout_s: float) -> dict:
    """Every node with two samples (so rates), or with a failure to report; then one document."""
    from netui.cli.headless import say_abandoned, settled_states
    from netui.model.node import NodeState

    gave_up = settled_states()

    def settled() -> bool:
        return all(n.samples_seen >= 2 or n.state in gave_up for n in monitor.fleet)

    try:
        await monitor.run_until(settled, timeout_s=connect_timeout_s + 3 * monitor.interval_s + 5)
        # where each node is cabled, if its lldpd says: read, and waited for a little (a read
        # that has not finished by then leaves the node's LLDP state "reading")
        from netui.engine.lldp import SNAPSHOT_WAIT_S

        monitor.lldp.tick()
        await monitor.lldp.settled(SNAPSHOT_WAIT_S)
    finally:
        await monitor.close()
        say_abandoned(monitor)
    untried = {s.name for s in monitor.sources if not s.tried}
    for n in monitor.fleet:
        if n.state is NodeState.CONNECTING:
            # a node still waiting for a handshake slot was never asked: say so, not "no answer";
            # one that failed and was being tried again failed as it last said
            if n.name in untried:
                n.fail(NodeState.DOWN, "not tried in time (waiting for one of the --fanout handshakes)")
            elif n.last_failure is not None:
                n.fail(*n.last_failure, at_s=n.failed_at_s)
            else:
                n.fail(NodeState.DOWN, "no answer in time")
    from netui.engine.document import fleet_document
    from netui.engine.eventloop import running

    return {**fleet_document(monitor.fleet), "event_loop": running()}


def _failure(node: dict) -> str:
    """"failed at 16:13:21: connection refused": when and what, never a retry countdown (a
    snapshot is taken once)."""
    import time

    at = node.get("failed_at")
    return node["error"] if at is None else f"failed at {time.strftime('%H:%M:%S', time.localtime(at))}: {node['error']}"


def _text_report(doc: dict) -> str:
    from netui.model import units

    lines = []
    for n in doc["nodes"]:
        lines.append(f"{n['name']}: {n['state']}" + (f" ({_failure(n)})" if n["error"] else "")
                     + f"  health {n['health']['level']}")
        if n.get("switch"):
            sw = n["switch"]
            lines.append(f"  switch {sw['leaf']}" + (f" port {sw['port']}" if sw["port"] else ""))
        for r in n["health"]["reasons"]:
            lines.append(f"  ! {r}")
        for i in n["interfaces"]:
            if i["hidden"]:
                continue
            r = i["rates"]
            lines.append(
                f"  {i['name']:<12} {i['operstate'] or '—':<8} RX {units.si(r['rx_bits_per_s'], 'b/s', width=11)}"
                f"  TX {units.si(r['tx_bits_per_s'], 'b/s', width=11)}"
                f"  drops {units.per_s(_add(r['rx_dropped_per_s'], r['tx_dropped_per_s']))}/s"
                f"  errors {units.per_s(_add(r['rx_errors_per_s'], r['tx_errors_per_s']))}/s"
            )
        if n["tcp"]:
            t = n["tcp"]["rates"]
            lines.append(f"  TCP retransmits {units.per_s(t['retrans_segs_per_s'])}/s"
                         f" ({units.ratio_percent(t['retrans_ratio'])} of segments)")
        for p in (n["fabric"] or {}).get("ports", []):
            r = p["rates"] or {}
            lines.append(
                f"  {p['hca'] + '/' + str(p['port']):<12} {p['state'] or '—':<8}"
                f" RX {units.si(r.get('rx_bits_per_s'), 'b/s', width=11)}"
                f"  TX {units.si(r.get('tx_bits_per_s'), 'b/s', width=11)}"
                f"  errors {units.per_s(r.get('errors_per_s'))}/s"
                f"  {'—' if p['rate_gbps'] is None else format(p['rate_gbps'], 'g')} Gb/s {p['link_layer'] or ''}"
                + (f" ↔ {p['netdev']}" if p["netdev"] else "")
            )
        for f in (n["fabric"] or {}).get("pfc", []):
            r = f["rates"] or {}
            lines.append(f"  {f['netdev']:<12} pause RX {units.per_s(r.get('rx_pause_per_s'))}/s"
                         f"  TX {units.per_s(r.get('tx_pause_per_s'))}/s")
    if doc.get("topology_notes"):
        from netui.engine.topologydoc import notes_text

        lines.append(f"topology ({doc['topology_source']}):")
        lines.extend(notes_text(doc["topology_notes"]))
    return "\n".join(lines)


def _add(a, b):
    return None if a is None and b is None else (a or 0) + (b or 0)


async def _record(monitor: Monitor, path: str, count: int | None, *, max_size_bytes: int | None,
                  keep: int):
    """Record every tick (engine/recorder.py) for ``count`` ticks or until interrupted; the
    Recorder, closed."""
    import asyncio
    import contextlib
    import signal

    from netui.cli.headless import say_abandoned
    from netui.engine.recording.writer import rotated_paths

    existing = rotated_paths(path)
    if existing:
        raise InputError(f"{existing[-1]} exists: netui record never overwrites a recording "
                         "(name another file, or remove it)")
    try:
        recorder = monitor.start_recording(path, max_size_bytes=max_size_bytes, keep=keep)
    except OSError as exc:
        raise InputError(f"cannot record to {path}: {exc}") from None
    # SIGTERM, and SIGHUP (the SSH session or the terminal closed), end it as the count does:
    # the file finished, trailer and last tick included (but SIGHUP stays ignored under nohup)
    for signum in stopping_signals(signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signum, monitor.stop)
    try:
        await monitor.run(polls=count)
    finally:
        await monitor.close()  # finishes the file
        say_abandoned(monitor)
    if recorder.error:
        raise InputError(f"recording to {path} stopped: {recorder.error}")
    return recorder


def stopping_signals(*signums: int) -> list[int]:
    """Those of ``signums`` that netui may handle: a signal ignored when netui started
    (``nohup`` ignores SIGHUP) stays ignored."""
    import signal

    return [s for s in signums if signal.getsignal(s) is not signal.SIG_IGN]


def load_replay(path: str):
    """The recording at ``path`` (a rotated set too: engine/recording/playback.py ``load``),
    what could not be read of it said on standard error; InputError with the reason when it
    cannot be read at all."""
    from netui.engine.recording.codec import RecordingError
    from netui.engine.recording.playback import load

    try:
        recording = load(path)
    except (OSError, RecordingError) as exc:
        raise InputError(f"cannot replay {exc}") from None  # the message starts with the file
    for note in recording.notes:
        print(f"netui: {note}", file=sys.stderr)
    return recording


def build_replay(path: str, *, history_s: float, config: Config | None = None):
    """A ReplayMonitor for a recording (a rotated set too), judging the nodes by ``config``
    as live mode does; InputError with the reason when it cannot be read."""
    from netui.engine.replay import ReplayMonitor

    recording = load_replay(path)
    if config is None:
        return ReplayMonitor(recording, history_s=history_s)
    return ReplayMonitor(recording, history_s=history_s, thresholds=config.thresholds or None, rules=config.health,
                         straggler_rules=config.straggler)


def _run(command: str | None, argv: list[str]) -> int:
    args = build_parser(command).parse_args(argv)
    from netui.cli.settings import SourceSettings, WatchSettings
    from netui.engine import eventloop  # uvloop when installed (NETUI_EVENT_LOOP)

    if command == "replay":
        settings = WatchSettings(sources=SourceSettings(replay=args.file), history_s=args.history,
                                 config_path=args.config, topology_path=args.topology)
    else:
        settings = WatchSettings.from_options(args)
    if command == "snapshot":
        monitor = build_monitor(settings, history_s=60, hold_intervals=1)  # two samples: nothing to hold over
        monitor.set_detail_all(True)  # the document lists every CPU
        doc = eventloop.run(_snapshot(monitor, settings.sources.connect_timeout_s))
        from netui.cli.headless import print_whole
        print_whole(json.dumps(doc, indent=2) if args.json else _text_report(doc))
        return 0 if all(n["state"] == "up" for n in doc["nodes"]) else 1
    if command == "record":
        monitor = build_monitor(settings, history_s=60)
        try:
            recorder = eventloop.run(_record(monitor, args.output, args.count, max_size_bytes=args.max_size,
                                             keep=args.keep))
        except KeyboardInterrupt:
            return 130
        print(f"netui: {recorder.summary()}", file=sys.stderr)
        return 0
    if settings.sources.replay and not settings.sources.names_nodes:
        config = read_config(settings.config_path)
        monitor = build_replay(settings.sources.replay, history_s=settings.history_s, config=config)
        if settings.topology_path:
            from netui.cli.topology import attach_topology

            attach_topology(monitor.fleet, settings.topology_path, False)
    else:
        monitor = build_monitor(settings)
    from netui.ui.app import make_app

    # an exception in a widget ends the app with its traceback printed, and status 1 (Textual's
    # return code): never a silent 0
    return eventloop.run(_watch(make_app(monitor)))  # App.run() would take asyncio.run's loop


async def _watch(app) -> int:
    """Run the TUI until it quits; its exit status. SIGINT, SIGTERM and SIGHUP end it as
    ``q`` does, through the app's exit (the terminal leaves the alternate screen, mouse
    tracking goes off, the cursor shows again), with the status a shell shows for that
    signal: 130, 143, 129 (netui/exits.py)."""
    import asyncio
    import contextlib
    import signal

    from netui.exits import ended_by

    loop = asyncio.get_running_loop()
    for signum in stopping_signals(signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, lambda signum=signum: app.exit(return_code=ended_by(signum)))
    await app.run_async()
    if app.recorded is not None:  # quit while recording: where the file went, as netui record says
        print(f"netui: {app.recorded.summary()}", file=sys.stderr)
    return app.return_code or 0


def watch(argv: list[str]) -> int:
    """``netui [options] [HOST ...]``: the live TUI (or a recording's, with --replay); 0 quit,
    130/143/129 ended by SIGINT, SIGTERM or SIGHUP (the terminal restored)."""
    return _run(None, argv)


def snapshot(argv: list[str]) -> int:
    """``netui snapshot``: 0 every node up, 1 a node is not."""
    return _run("snapshot", argv)


def record(argv: list[str]) -> int:
    """``netui record -o FILE``: 0 recorded, 130 interrupted."""
    return _run("record", argv)


def replay(argv: list[str]) -> int:
    """``netui replay FILE``: the recording in the TUI; 0 quit, 130/143/129 ended by SIGINT,
    SIGTERM or SIGHUP (the terminal restored)."""
    return _run("replay", argv)
