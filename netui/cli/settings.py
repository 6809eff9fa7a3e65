"""The options, typed: what the command line hands to the code that builds sources and monitors.

Parsing ends here. ``SourceSettings.from_options`` and ``WatchSettings.from_options`` read an
argparse Namespace once; everything after takes these frozen objects, with units in their
names, and never the Namespace.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netui.exits import InputError
from netui.readlimits import MAX_NODES_DEFAULT

if TYPE_CHECKING:
    from netui.model.mesh import MeshSettings


@dataclass(frozen=True)
class SourceSettings:
    """Which nodes, and where their counters come from (the options of ``common``)."""

    hosts: tuple[str, ...] = ()  # patterns: [user@]host[:port], gpu[001-128]
    files: tuple[str, ...] = ()  # host files (-f)
    slurm: str | bool | None = False  # False: no Slurm; None: $SLURM_JOB_NODELIST; "JOBID": via scontrol
    local: bool = False  # this host too, beside the SSH nodes
    max_nodes: int = MAX_NODES_DEFAULT
    user: str | None = None  # login user where a host names none (-l)
    ssh_config: tuple[str, ...] = ()  # -F files, as given (~ not expanded)
    identity: tuple[str, ...] = ()  # -i keys, as given
    connect_timeout_s: float = 10.0
    fanout: int = 64  # SSH handshakes, or HTTP requests, at once
    accept_new_host_keys: bool = False
    procfs: str | None = None  # a captured /proc tree
    sysfs: str | None = None
    replay: str | None = None  # a recording instead of live data
    source: str = "ssh"  # ssh | node-exporter | prometheus=URL
    exporter_port: int = 9100
    prometheus_job: str | None = None
    scrape_timeout_s: float = 5.0

    @property
    def names_nodes(self) -> bool:
        """Whether the options name nodes (patterns, host files or a Slurm job), not this host."""
        return bool(self.hosts or self.files or self.slurm is not False)

    @classmethod
    def from_options(cls, args: argparse.Namespace) -> SourceSettings:
        return cls(
            hosts=tuple(args.hosts), files=tuple(args.files), slurm=args.slurm, local=args.local,
            max_nodes=args.max_nodes, user=args.user, ssh_config=tuple(args.ssh_config),
            identity=tuple(args.identity), connect_timeout_s=args.connect_timeout, fanout=args.fanout,
            accept_new_host_keys=args.accept_new_host_keys, procfs=args.procfs, sysfs=args.sysfs,
            replay=args.replay, source=args.source, exporter_port=args.exporter_port,
            prometheus_job=args.prometheus_job, scrape_timeout_s=args.scrape_timeout,
        )


@dataclass(frozen=True)
class WatchSettings:
    """``netui``, ``snapshot``, ``record``, ``replay``: the sources, the pace, the history and
    the configuration file that judges the nodes."""

    sources: SourceSettings = SourceSettings()
    interval_s: float = 1.0
    history_s: float = 900.0
    config_path: str | None = None  # None: ~/.config/netui/config.toml where it exists
    topology_path: str | None = None  # --topology FILE: where each node is cabled
    mesh: MeshSettings | None = None  # --mesh: the probe mesh (None: off, or not given: see ``mesh_option``)
    mesh_option: str | None = None  # --mesh as given; None: config.toml's ``mesh`` decides

    @classmethod
    def from_options(cls, args: argparse.Namespace) -> WatchSettings:
        from netui.model.mesh import parse_mesh_option

        try:
            mesh = parse_mesh_option(args.mesh) if args.mesh is not None else None
        except ValueError as exc:
            raise InputError(f"--mesh: {exc} (off, on, or a rate in probes a second per node)") from None
        return cls(sources=SourceSettings.from_options(args), interval_s=args.interval,
                   history_s=getattr(args, "history", cls.history_s), config_path=args.config,
                   topology_path=args.topology, mesh=mesh, mesh_option=args.mesh)
