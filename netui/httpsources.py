"""``--source node-exporter`` and ``--source prometheus=URL``: the sources the CLI builds for them.

The inventory is the same as for SSH (patterns, -f, --slurm). A node's address is its host
as named, or ssh_config's ``Hostname`` for it (``-F FILE``, else ~/.ssh/config as for SSH),
so the aliases of an SSH inventory work for HTTP too. A port in ``host:port`` is the exporter's port; else
``--exporter-port`` (default 9100).
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from netui.collectors.node_exporter import HttpClient, HttpSettings, NodeExporterSource, ScrapeFailure
from netui.collectors.prometheus import PrometheusNode, PrometheusReader, names_for_instances
from netui.engine import eventloop


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
    return HttpSettings(timeout_s=args.scrape_timeout, concurrency=args.fanout)


def build_http_sources(args, kind: str, url: str | None) -> tuple[list, HttpClient]:
    """The sources for a node-exporter or Prometheus fleet, and the client the monitor closes."""
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
    client = HttpClient(http_settings(args))
    try:
        return await PrometheusReader(url, client).discover()
    except ScrapeFailure as exc:
        raise SystemExit(f"netui: Prometheus at {url}: {exc.reason}") from None
    finally:
        await client.close()


