"""The sources the options name: this host (live or a captured tree), a recording, nodes over
SSH, node_exporter or a Prometheus server.

For ``--source node-exporter`` and ``--source prometheus=URL`` the inventory is the same as
for SSH (patterns, -f, --slurm). A node's address is its host as named, or ssh_config's
``Hostname`` for it (``-F FILE``, else ~/.ssh/config as for SSH), so the aliases of an SSH
inventory work for HTTP too. A port in ``host:port`` is the exporter's port; else
``--exporter-port`` (default 9100).

The collectors are imported when a source needs them: watching this host never loads SSH or
HTTP (tests/integration/test_startup.py). Bad input is an InputError with the reason, which the command
line says as ``netui: <reason>`` with exit status 2.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from netui.exits import InputError

if TYPE_CHECKING:
    from netui.cli.settings import SourceSettings
    from netui.collectors.node_exporter import HttpClient, HttpSettings
    from netui.collectors.ssh_connect import SshSettings


def build_sources(settings: SourceSettings) -> tuple[list, object | None]:
    """The sources the settings name, and what the monitor closes with them (an SSH connector,
    an HTTP client, or None); InputError with the reason on bad input."""
    from netui.collectors.local import LiveReader, TreeReader
    from netui.engine.sources import LocalSource

    if settings.source != "ssh":
        try:
            kind, url = parse_source(settings.source)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if kind != "ssh":
            return build_http_sources(settings, kind, url)
    if settings.names_nodes:
        if settings.replay or settings.procfs or settings.sysfs:
            raise InputError("hosts and --replay/--procfs/--sysfs do not go together")
        return _ssh_sources(settings)
    if settings.replay:  # a recording feeds the monitor itself (cli/watch.py build_monitor)
        raise InputError("a recording is not a source: netui plays it through engine/replay.py")
    if settings.procfs or settings.sysfs:
        procfs = settings.procfs or "/proc"
        sysfs = settings.sysfs or "/sys"
        for path in (procfs, sysfs):
            if not os.path.isdir(path):
                raise InputError(f"{path}: not a directory")
        return [LocalSource(TreeReader(procfs, sysfs))], None
    return [LocalSource(LiveReader())], None


def replays(settings: SourceSettings) -> bool:
    """Whether the settings name a recording to watch (``--replay FILE``, no hosts, no HTTP
    source: ``build_sources`` refuses those together)."""
    return bool(settings.replay) and settings.source == "ssh" and not settings.names_nodes


def _ssh_sources(settings: SourceSettings) -> tuple[list, object | None]:
    from netui.collectors.local import LiveReader
    from netui.collectors.ssh import SshSource
    from netui.collectors.ssh_connect import SshConnector
    from netui.engine.sources import LocalSource
    from netui.inventory import InventoryError, build_targets
    from netui.readlimits import unreadable_file

    try:
        targets = build_targets(settings.hosts, files=settings.files, slurm=settings.slurm, local=settings.local,
                                user=settings.user, max_nodes=settings.max_nodes)
    except (InventoryError, OSError) as exc:
        raise InputError(str(exc)) from None
    for flag, paths in (("-F", settings.ssh_config), ("-i", settings.identity)):
        for path in paths:
            if flag == "-F" and path == os.devnull:
                continue  # `-F /dev/null`, as with ssh: no ssh_config at all
            why = unreadable_file(os.path.expanduser(path))
            if why:
                raise InputError(f"{flag} {path}: {why}")
    connector = SshConnector(ssh_settings(settings))
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


def ssh_settings(settings: SourceSettings) -> SshSettings:
    """What the SSH collector takes: paths expanded, seconds and counts checked by the options."""
    from netui.collectors.ssh_connect import SshSettings

    return SshSettings(
        config_paths=[os.path.expanduser(p) for p in settings.ssh_config],
        user=settings.user,
        identity=[os.path.expanduser(p) for p in settings.identity],
        connect_timeout_s=settings.connect_timeout_s,
        fanout=settings.fanout,
        accept_new_host_keys=settings.accept_new_host_keys,
    )


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


def _targets(settings: SourceSettings):
    from netui.inventory import InventoryError, build_targets

    try:
        targets = build_targets(settings.hosts, files=settings.files, slurm=settings.slurm, user=settings.user,
                                max_nodes=settings.max_nodes)
    except (InventoryError, OSError) as exc:
        raise InputError(str(exc)) from None
    from netui.collectors.ssh_connect import SshSettings, resolve

    for path in settings.ssh_config:
        if not os.path.isfile(os.path.expanduser(path)):
            raise InputError(f"{path}: no such file")
    ssh = SshSettings(config_paths=[os.path.expanduser(p) for p in settings.ssh_config])
    if not _mentions_hostname(ssh.default_config_paths()):
        return [(t.name, t.host, t.port) for t in targets]
    # the SSH port of ssh_config is not the exporter's: only a port the user wrote counts
    return [(t.name, resolve(ssh, t.host, None, None).host, t.port) for t in targets]


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


def http_settings(settings: SourceSettings) -> HttpSettings:
    """What the HTTP collectors take: a scrape's timeout, requests at once (--fanout)."""
    from netui.collectors.node_exporter import HttpSettings

    return HttpSettings(timeout_s=settings.scrape_timeout_s, concurrency=settings.fanout)


def build_http_sources(settings: SourceSettings, kind: str, url: str | None) -> tuple[list, HttpClient]:
    """The sources for a node-exporter or Prometheus fleet, and the client the monitor closes."""
    from netui.collectors.node_exporter import HttpClient, NodeExporterSource
    from netui.collectors.prometheus import PrometheusNode, PrometheusReader, names_for_instances
    from netui.engine import eventloop

    if settings.local or settings.replay or settings.procfs or settings.sysfs:
        raise InputError(f"--source {kind} does not go with --local/--replay/--procfs/--sysfs")
    if settings.prometheus_job and kind != "prometheus":
        raise InputError("--prometheus-job goes with --source prometheus=URL")
    client = HttpClient(http_settings(settings))
    has_hosts = settings.names_nodes
    if kind == "node-exporter":
        if not has_hosts:
            raise InputError("--source node-exporter needs hosts (patterns, -f or --slurm)")
        return [NodeExporterSource(name, host, client, port=port or settings.exporter_port)
                for name, host, port in _targets(settings)], client
    if has_hosts:
        keys = {}
        for name, host, port in _targets(settings):
            keys[name] = [name, host] + ([f"{host}:{port}"] if port else [f"{host}:{settings.exporter_port}"])
        reader = PrometheusReader(url, client, keys_by_name=keys, job=settings.prometheus_job)
    else:
        instances = eventloop.run(_discover(url, settings))
        if not instances:
            raise InputError(f"Prometheus at {url} knows no instance with node_network_* series")
        if len(instances) > settings.max_nodes:  # as a host list of that many would be refused
            raise InputError(f"too many nodes: Prometheus at {url} knows {len(instances):,} instances "
                             f"(more than {settings.max_nodes:,}); name the nodes to watch (patterns, -f, "
                             f"--slurm) or raise the limit with --max-nodes N")
        reader = PrometheusReader(url, client, instances=names_for_instances(instances), job=settings.prometheus_job)
    return [PrometheusNode(name, reader) for name in reader.names], client


async def _discover(url: str, settings: SourceSettings) -> dict[str, str | None]:
    from netui.collectors.node_exporter import HttpClient, ScrapeFailure
    from netui.collectors.prometheus import PrometheusReader

    client = HttpClient(http_settings(settings))
    try:
        return await PrometheusReader(url, client).discover()
    except ScrapeFailure as exc:
        raise InputError(f"Prometheus at {url}: {exc.reason}") from None
    finally:
        await client.close()
