"""``netui topology``: where the job's hosts sit in the fabric, and whether its ring order follows it.

    netui topology node[1-8] --topology topology.conf     # the ring order check of these hosts
    netui topology --slurm --hostfile > hosts              # this job, topology from scontrol
    netui topology --topology map.toml                     # the tree as netui reads it

Reads no node: the topology comes from a file (Slurm's topology.conf or netui's TOML map,
docs/topology.md) or from ``scontrol show topology`` under ``--slurm``. Exit status: 0 the
order is as good as the topology allows, 1 more hops cross switches than needed, 2 bad
arguments or a topology that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from netui.cli.options import exit_epilog, max_nodes
from netui.exits import FAILED, OK, USAGE, InputError
from netui.readlimits import MAX_NODES_DEFAULT


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netui topology",
        description="The ring order check: for an all-reduce ring through the hosts in the order given "
                    "(the rank order; the Slurm nodelist with --slurm), count the hops that cross switches, "
                    "compare with the fewest possible, and print a topology-ordered host list (each leaf "
                    "switch's hosts together). Without hosts: the topology as netui reads it.",
        epilog=exit_epilog("the order has more cross-switch hops than needed"))
    p.add_argument("hosts", nargs="*", metavar="HOST",
                   help="the job's hosts in rank order: names or ranges like gpu[001-128]")
    p.add_argument("-f", "--file", dest="files", action="append", default=[], metavar="FILE",
                   help="read hosts from FILE, one per line, in rank order (# comments)")
    p.add_argument("--slurm", nargs="?", const=None, default=False, metavar="JOBID",
                   help="the hosts of a Slurm job in its nodelist order; without --topology the switches "
                        "come from `scontrol show topology`")
    p.add_argument("--topology", metavar="FILE",
                   help="Slurm's topology.conf or netui's TOML map (docs/topology.md); told apart by the "
                        ".toml extension or the content")
    p.add_argument("--max-nodes", type=max_nodes, default=MAX_NODES_DEFAULT, metavar="N",
                   help=f"refuse more hosts than N (default {MAX_NODES_DEFAULT:,})")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the JSON document (docs/topology.md)")
    out.add_argument("--hostfile", action="store_true",
                     help="print only the topology-ordered hosts, one per line (a hostfile for mpirun, torchrun)")
    return p


def load_topology(path: str | None, slurm: bool):
    """(topology, where it came from) for --topology FILE, else --slurm's scontrol; (None, "")
    when neither is given. InputError with the reason when it cannot be read."""
    from netui.collectors.topology_files import SCONTROL, TopologyFileError, read_topology_file, scontrol_topology

    try:
        if path:
            return read_topology_file(os.path.expanduser(path)), path
        if slurm:
            return scontrol_topology(), SCONTROL
    except TopologyFileError as exc:
        raise InputError(f"{'--topology ' if path else ''}{exc}") from None
    return None, ""


def attach_topology(fleet, path: str | None, slurm: bool) -> None:
    """The topology named by --topology FILE (``path``; InputError with file and line when it
    cannot be read), else under --slurm (``slurm``) Slurm's own — which a cluster may not
    have: then a note on stderr and no topology, never a failure. Set on ``fleet``
    (``Fleet.topology``), which the nodes' LLDP neighbours complete."""
    if not path and not slurm:
        return
    try:
        topo, source = load_topology(path, slurm)
    except InputError as exc:
        if path:
            raise
        print(f"netui: {exc} (going on without switches)", file=sys.stderr)
        return
    fleet.topology, fleet.topology_source = topo, source


def main(argv: list[str]) -> int:
    from netui.engine.topologydoc import ring_document, ring_text, topology_document, topology_text
    from netui.inventory import InventoryError, NoNodes, build_targets
    from netui.model.topology import ring_check

    parser = build_parser()
    args = parser.parse_intermixed_args(argv)
    slurm = args.slurm is not False
    if not args.topology and not slurm:
        parser.error("no topology: give --topology FILE (Slurm's topology.conf or a TOML map) or --slurm")
    try:
        topo, source = load_topology(args.topology, slurm)
    except InputError as exc:
        print(f"netui topology: {exc}", file=sys.stderr)
        return USAGE
    assert topo is not None
    if not (args.hosts or args.files or slurm):
        if args.hostfile:
            parser.error("--hostfile needs the job's hosts (HOST..., -f FILE or --slurm)")
        from netui.cli.headless import print_whole
        print_whole(json.dumps(topology_document(topo, source), indent=2) if args.json else topology_text(topo, source))
        return OK
    try:
        targets = build_targets(args.hosts, files=args.files, slurm=args.slurm, max_nodes=args.max_nodes)
    except NoNodes:
        given = " ".join([*args.hosts, *(f"-f {f}" for f in args.files)] + (["--slurm"] if slurm else []))
        print(f"netui topology: no hosts to check: {given} names none", file=sys.stderr)
        return USAGE
    except (InventoryError, OSError) as exc:
        print(f"netui topology: {exc}", file=sys.stderr)
        return USAGE
    order = [t.host for t in targets]
    check = ring_check(topo, order)
    if len(check.unplaced) == len(check.order):
        print(f"netui topology: none of the {len(order):,} hosts is in the topology from {source} "
              f"(first: {order[0]}; its nodes are named like {_examples(topo)})", file=sys.stderr)
        return USAGE
    from netui.cli.headless import print_whole

    if args.hostfile:
        print_whole("\n".join(check.better))
    elif args.json:
        print_whole(json.dumps(ring_document(check, topo, source), indent=2))
    else:
        print_whole(ring_text(check, topo, source))
    return FAILED if check.worse_than_minimum else OK


def _examples(topo) -> str:
    names = [a.node for a in topo.nodes[:3]]
    return ", ".join(names) if names else "(no node at all)"
