"""node_exporter in the lab's nodes, and a Prometheus server scraping them.

    python -m tests.lab.exporters [--name lab]   # an exporter in every node of a running lab

Each node gets Debian's `prometheus-node-exporter` (1.5.0 on bookworm) listening on its own
address, port 9100, started like every lab process (its namespace, its UTS hostname), so
the lab's teardown kills it too; the helpers here also kill what they started, even when a
test fails. In a namespace the systemd collector fails at every scrape (no D-Bus) and the
infiniband one finds nothing: both are turned off.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from .processes import port_open

EXPORTER = "/usr/bin/prometheus-node-exporter"
PROMETHEUS = "/usr/bin/prometheus"
EXPORTER_PORT = 9100
EXPORTER_FLAGS = ("--no-collector.systemd", "--no-collector.infiniband")
READY_TIMEOUT_S = 10.0


def missing_reason() -> str | None:
    """Why the exporter tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "node_exporter in lab namespaces needs root"
    if not os.access(EXPORTER, os.X_OK):
        return f"no {EXPORTER} (Debian package prometheus-node-exporter)"
    return None


def exporter_argv(address: str, port: int = EXPORTER_PORT) -> list[str]:
    return [EXPORTER, f"--web.listen-address={address}:{port}", *EXPORTER_FLAGS]


def start_exporters(nodes, port: int = EXPORTER_PORT) -> list[subprocess.Popen]:
    """One exporter per lab node; returns when all listen (or kills them and raises)."""
    procs = [node.popen(exporter_argv(node.address, port)) for node in nodes]
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        for node, proc in zip(nodes, procs):
            while not port_open(node.address, port):
                if proc.poll() is not None:
                    raise RuntimeError(f"node_exporter on {node.name} exited with {proc.returncode}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"node_exporter on {node.name} did not listen in {READY_TIMEOUT_S} s")
                time.sleep(0.05)
    except BaseException:
        stop(procs)
        raise
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """Debian's prometheus on 127.0.0.1, scraping `targets` every second (temp config and TSDB)."""

    def __init__(self, targets: list[str], *, relabel_to_names: dict[str, str] | None = None,
                 extra_jobs: list[dict] | None = None) -> None:
        self.targets = targets
        self.names = relabel_to_names or {}
        self.extra_jobs = extra_jobs or []  # more scrape_configs entries, as given
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.directory: Path | None = None
        self.proc: subprocess.Popen | None = None

    def config(self) -> str:
        static = [{"targets": self.targets}]
        return json.dumps({  # YAML is a superset of JSON
            "global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "node", "static_configs": static}, *self.extra_jobs],
        })

    def start(self) -> PrometheusServer:
        self.directory = Path(tempfile.mkdtemp(prefix="netui-prometheus."))
        (self.directory / "prometheus.yml").write_text(self.config())
        log = open(self.directory / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={self.directory / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.directory / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}",
             "--storage.tsdb.retention.time=1h"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        log.close()
        try:
            deadline = time.monotonic() + 30
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"prometheus exited with {self.proc.returncode}: {self.log_tail()}")
                try:
                    with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"prometheus not ready in 30 s: {self.log_tail()}")
                time.sleep(0.2)
        except BaseException:
            self.close()
            raise
        return self

    def log_tail(self) -> str:
        try:
            return (self.directory / "prometheus.log").read_text(errors="replace")[-1500:]
        except (OSError, TypeError):
            return ""

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    """Start an exporter in every node of a running lab; they die with `python -m tests.lab down`."""
    from .cluster import read_state
    from .network import namespace_name

    parser = argparse.ArgumentParser(prog="python -m tests.lab.exporters", description=main.__doc__)
    parser.add_argument("--name", default="lab")
    args = parser.parse_args(argv)
    reason = missing_reason()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    state = read_state(Path("/tmp") / f"netui-{args.name}")
    if not state:
        print(f"no lab {args.name!r} is up (python -m tests.lab up 4)", file=sys.stderr)
        return 1
    for node in state["nodes"]:
        ns = namespace_name(args.name, int(node["name"].removeprefix("node")))
        argv_ = ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                 node["name"], *exporter_argv(node["address"])]
        subprocess.Popen(argv_, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    for node in state["nodes"]:
        while not port_open(node["address"], EXPORTER_PORT) and time.monotonic() < deadline:
            time.sleep(0.05)
        print(f"  {node['name']:<8} http://{node['address']}:{EXPORTER_PORT}/metrics"
              f" {'listening' if port_open(node['address'], EXPORTER_PORT) else 'NOT LISTENING'}")
    print(f"  watch: netui --source node-exporter -F {state['ssh_config']} node[1-{len(state['nodes'])}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
