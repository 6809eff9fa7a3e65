"""One finding of the doctor: what a check found on a node (or on the whole fleet).

Its own module so that the rules split over several modules (``checks.doctor.rules``,
``checks.doctor.rules_nic``) share it without importing each other; ``checks.doctor.rules`` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from netui.model.health import Level


@dataclass(frozen=True, slots=True)
class Finding:
    check: str  # "mtu", "link_speed", "link_state", "rdma_port", "rdma_rate", "sysctl", …
    severity: Level
    node: str | None  # None: the whole fleet (the ok summaries)
    subject: str  # "eth0", "net.ipv4.tcp_rmem", "mlx5_0 port 1"
    evidence: str
    fix: str | None = None  # the command (run on ``node``) that fixes it
    look: str | None = None  # where no command can fix it: the command that shows more

    @property
    def failed(self) -> bool:
        return self.severity >= Level.WARNING
