"""A switch of the two-tier lab: a namespace with a bridge (fabric.py) and an lldpd."""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import fabric, lldp


class LabSwitch:
    """'leaf1', 'leaf2', … or 'spine'; its lldpd announces that name and its port names."""

    def __init__(self, lab_name: str, name: str, directory: Path):
        self.name = name
        self.namespace = (fabric.spine_namespace(lab_name) if name == "spine"
                          else fabric.leaf_namespace(lab_name, int(name.removeprefix("leaf"))))
        self.directory = directory
        self._lldpd: subprocess.Popen | None = None

    def __repr__(self) -> str:
        return f"<LabSwitch {self.name} {self.namespace}>"

    @property
    def lldp_socket(self) -> Path:
        """`lldpcli -u <this> show neighbors` shows what the switch hears."""
        return self.directory / "lldpd.socket"

    @property
    def lldpd_running(self) -> bool:
        return self._lldpd is not None and self._lldpd.poll() is None

    def start_lldpd(self) -> None:
        if self.lldpd_running:
            return
        self.directory.mkdir(mode=0o711, exist_ok=True)
        self.directory.chmod(0o711)  # lldpcli drops root (cluster.py)
        lldp.write_config(self.directory / "lldpd.conf", system_name=self.name)
        self.lldp_socket.unlink(missing_ok=True)
        ports = "swp*" if self.name == "spine" else f"swp*,{fabric.UPLINK}"
        with open(self.directory / "lldpd.log", "ab") as log:
            self._lldpd = subprocess.Popen(
                ["ip", "netns", "exec", self.namespace, *lldp.argv(self.directory, ports)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)

    def wait_for_lldpd(self, deadline: float) -> None:
        lldp.wait_for_socket(self.lldp_socket, deadline, lambda: self.lldpd_running)

    def tracked_processes(self) -> list[subprocess.Popen]:
        return [self._lldpd] if self._lldpd is not None else []

    def forget_processes(self) -> None:
        self._lldpd = None
