"""The sources the options name: this host (live or a captured tree), a recording, nodes over
SSH, node_exporter or a Prometheus server.

For ``--source node-exporter`` and ``--source prometheus=URL`` the inventory is the same as
for SSH (patterns, -f, --slurm). A node's address is its host as named, or ssh_config's
``Hostname`` for it (``-F FILE``, else ~/.ssh/config as for SSH), so the aliases of an SSH
inventory work for HTTP too. A port in ``host:port`` is the exporter's port; else
``--exporter-port`` (default 9100).

The collectors are imported when a source needs them: watching this host never loads SSH or
HTTP (tests/test_startup.py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from netui.collectors.node_exporter import HttpClient, HttpSettings


def build_sources(args) -> tuple[list, object | None]:
    """The sources named by the arguments; raises SystemExit with a message on bad input."""
    from netui.collectors.local import LiveReader, TreeReader
    from netui.engine.sources import LocalSource, ReplaySource

    if args.source != "ssh":
        try:
            kind, url = parse_source(args.source)
        except ValueError as exc:
            raise SystemExit(f"netui: {exc}") from None
        if kind != "ssh":
            return build_http_sources(args, kind, url)
    if args.hosts or args.files or args.slurm is not False:
        if args.replay or args.procfs or args.sysfs:
            raise SystemExit("netui: hosts and --replay/--procfs/--sysfs do not go together")
        return _ssh_sources(args)
    if args.replay:
        from netui.engine.recording import RecordingError, load_recording

        try:
            recording = load_recording(args.replay)
        except (OSError, RecordingError) as exc:
            raise SystemExit(f"netui: cannot replay {args.replay}: {exc}") from None
        if not recording:
            raise SystemExit(f"netui: {args.replay} holds no samples")
        return [ReplaySource(name, samples) for name, samples in recording.items()], None
    if args.procfs or args.sysfs:
        procfs = args.procfs or "/proc"
        sysfs = args.sysfs or "/sys"
        for path in (procfs, sysfs):
            if not os.path.isdir(path):
                raise SystemExit(f"netui: {path}: not a directory")
        return [LocalSource(TreeReader(procfs, sysfs))], None
    return [LocalSource(LiveReader())], None


def _ssh_sources(args) -> tuple[list, object | None]:
    from netui.collectors.local import LiveReader
    from netui.collectors.ssh import SshConnector, SshSettings, SshSource
    from netui.engine.sources import LocalSource
    from netui.inventory import InventoryError, build_targets
    from netui.readlimits import unreadable_file

    try:
        targets = build_targets(args.hosts, files=args.files, slurm=args.slurm, local=args.local, user=args.user,
                                max_nodes=args.max_nodes)
    except (InventoryError, OSError) as exc:
        raise SystemExit(f"netui: {exc}") from None
    for flag, paths in (("-F", args.ssh_config), ("-i", args.identity)):
        for path in paths:
            why = unreadable_file(os.path.expanduser(path))
            if why:
                raise SystemExit(f"netui: {flag} {path}: {why}")
    settings = SshSettings(
        config_paths=[os.path.expanduser(p) for p in args.ssh_config],
        user=args.user,
        identity=[os.path.expanduser(p) for p in args.identity],
        connect_timeout_s=args.connect_timeout,
        fanout=args.fanout,
        accept_new_host_keys=args.accept_new_host_keys,
    )
    connector = SshConnector(settings)
    _raise_open_files_limit(len(targets))
    sources: list = []
    for t in targets:
        if t.local:
            source = LocalSource(LiveReader())
            source.name = t.name
            sources.append(source)
        else:
            sources.append(SshSource(t.name, t.host, connector, user=t.user, port=t.port))
    return sources, connector


def _raise_open_files_limit(nodes: int) -> None:
    """A connection per node needs descriptors: raise the soft limit towards the hard one."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard if hard != resource.RLIM_INFINITY else 1 << 20, max(soft, 4 * nodes + 256))
        if want > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):
        pass


def parse_source(text: str) -> tuple[str, str | None]:
    """``ssh`` | ``node-exporter`` | ``prometheus=URL`` → (kind, URL or None); ValueError if bad."""
    kind, sep, url = text.partition("=")
    if kind in ("ssh", "node-exporter") and not sep:
        return kind, None
    if kind == "prometheus":
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"--source prometheus=URL needs an http(s) URL, got {url!r}")
        return kind, url
    raise ValueError(f"unknown source {text!r}: ssh, node-exporter or prometheus=URL")


def _targets(args):
    from netui.inventory import MAX_NODES_DEFAULT, InventoryError, build_targets

    try:
        targets = build_targets(args.hosts, files=args.files, slurm=args.slurm, user=args.user,
                                max_nodes=getattr(args, "max_nodes", MAX_NODES_DEFAULT))
    except (InventoryError, OSError) as exc:
        raise SystemExit(f"netui: {exc}") from None
    from netui.collectors.ssh import SshSettings, resolve

    for path in args.ssh_config:
        if not os.path.isfile(os.path.expanduser(path)):
            raise SystemExit(f"netui: {path}: no such file")
    settings = SshSettings(config_paths=[os.path.expanduser(p) for p in args.ssh_config])
    if not _mentions_hostname(settings.default_config_paths()):
        return [(t.name, t.host, t.port) for t in targets]
    # the SSH port of ssh_config is not the exporter's: only a port the user wrote counts
    return [(t.name, resolve(settings, t.host, None, None).host, t.port) for t in targets]


def _mentions_hostname(paths: list[str]) -> bool:
    """Whether ssh_config could rename a host at all (parsing it costs per host)."""
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read().lower()
        except OSError:
            continue
        if "hostname" in text or "include" in text:
            return True
    return False


def http_settings(args) -> HttpSettings:
    from netui.collectors.node_exporter import HttpSettings

    return HttpSettings(timeout_s=args.scrape_timeout, concurrency=args.fanout)


def build_http_sources(args, kind: str, url: str | None) -> tuple[list, HttpClient]:
    """The sources for a node-exporter or Prometheus fleet, and the client the monitor closes."""
    from netui.collectors.node_exporter import HttpClient, NodeExporterSource
    from netui.collectors.prometheus import PrometheusNode, PrometheusReader, names_for_instances
    from netui.engine import eventloop

    if args.local or args.replay or args.procfs or args.sysfs:
        raise SystemExit(f"netui: --source {kind} does not go with --local/--replay/--procfs/--sysfs")
    if args.prometheus_job and kind != "prometheus":
        raise SystemExit("netui: --prometheus-job goes with --source prometheus=URL")
    client = HttpClient(http_settings(args))
    has_hosts = bool(args.hosts or args.files or args.slurm is not False)
    if kind == "node-exporter":
        if not has_hosts:
            raise SystemExit("netui: --source node-exporter needs hosts (patterns, -f or --slurm)")
        return [NodeExporterSource(name, host, client, port=port or args.exporter_port)
                for name, host, port in _targets(args)], client
    if has_hosts:
        keys = {}
        for name, host, port in _targets(args):
            keys[name] = [name, host] + ([f"{host}:{port}"] if port else [f"{host}:{args.exporter_port}"])
        reader = PrometheusReader(url, client, keys_by_name=keys, job=args.prometheus_job)
    else:
        instances = eventloop.run(_discover(url, args))
        if not instances:
            raise SystemExit(f"netui: Prometheus at {url} knows no instance with node_network_* series")
        reader = PrometheusReader(url, client, instances=names_for_instances(instances), job=args.prometheus_job)
    return [PrometheusNode(name, reader) for name in reader.names], client


async def _discover(url: str, args) -> dict[str, str | None]:
    from netui.collectors.node_exporter import HttpClient, ScrapeFailure
    from netui.collectors.prometheus import PrometheusReader

    client = HttpClient(http_settings(args))
    try:
        return await PrometheusReader(url, client).discover()
    except ScrapeFailure as exc:
        raise SystemExit(f"netui: Prometheus at {url}: {exc.reason}") from None
    finally:
        await client.close()
