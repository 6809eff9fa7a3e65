"""The probe mesh, steered: who probes whom (docs/mesh.md, the wire in docs/protocol.md#mesh).

The monitor turns each node's mesh on with one token for the whole session (a node answers
only probes that carry it), learns from each node's frames the address and UDP port it answers
on, and gives every node the others' — the whole list to a node whose port is new, one line
to the others. A node that goes down leaves the others' lists (its probes would be lost to a
dead process, not to the network) and comes back with its next sampler. The judgement of what
the probes settled is the model's (model/mesh.py, ``Fleet.mesh``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence

from netui.collectors.source import Source
from netui.model.mesh import MeshSample, MeshSettings, parse_mesh_option

LINE_BYTES = 3500  # a steering line's length, at most (the sampler takes lines of 4 KiB)
TELL_AGAIN_S = 5.0  # a node that did not turn its mesh on, or holds a list of the wrong length, is told again


def peer_lines(endpoints: Iterable[tuple[str, int]], verb: str = "mp+") -> list[str]:
    """``verb ADDR PORT ADDR PORT …`` lines, each under LINE_BYTES."""
    lines: list[str] = []
    line = verb
    for address, port in endpoints:
        word = f" {address} {port}"
        if len(line) + len(word) > LINE_BYTES:
            lines.append(line)
            line = verb
        line += word
    if line != verb:
        lines.append(line)
    return lines


def taking_part(sources: Iterable[Source]) -> list[Source]:
    """The sources whose nodes probe and are probed: those streaming from a sampler that
    ``send_mesh`` steers (SSH nodes; not this host read in-process, node_exporter, Prometheus
    or a recording)."""
    return [s for s in sources if s.push and s.send_mesh(())]


class MeshCoordinator:
    """Keeps every node's peer list: ``observe`` each node's sample, ``left`` when one fails.
    ``sources``: the nodes that take part (those whose ``send_mesh`` steers a sampler);
    ``token``: the session's (16 random bytes unless given)."""

    def __init__(self, sources: Sequence[Source], settings: MeshSettings, token: bytes | None = None) -> None:
        self.settings = settings
        self.token = token if token is not None else os.urandom(16)
        self.sources = {s.name: s for s in sources}
        self.endpoints: dict[str, tuple[str, int]] = {}  # node → where its peers probe it
        self.names: dict[tuple[str, int], str] = {}  # and back
        self._told: dict[str, float] = {}  # node → when it was last told to turn on or its whole list

    def on_line(self) -> str:
        s = self.settings
        return f"m {self.token.hex()} {s.rate:g} {s.period_s:g}"

    def observe(self, name: str, mesh: MeshSample | None, now: float | None = None) -> None:
        """Node ``name``'s frame said this of its mesh (None: its sampler has it off)."""
        source = self.sources.get(name)
        if source is None:
            return
        now = time.monotonic() if now is None else now
        if mesh is None:
            if now - self._told.get(name, float("-inf")) >= TELL_AGAIN_S:
                self._told[name] = now
                if name in self.endpoints:  # a new sampler (a reconnect): its old port is gone
                    self.left(name)
                source.send_mesh([self.on_line()])
            return
        if not mesh.available or mesh.address is None or not mesh.port:
            return  # it cannot be probed (its reason shows as the node's mesh state)
        endpoint = (mesh.address, mesh.port)
        old = self.endpoints.get(name)
        if old != endpoint:
            if old is not None:
                self.left(name)
            self.endpoints[name], self.names[endpoint] = endpoint, name
            self._give_list(name, now)
            for other, where in self.endpoints.items():
                if other != name:
                    self.sources[other].send_mesh(peer_lines([endpoint]))
        elif mesh.peers != len(self.endpoints) - 1 and now - self._told.get(name, float("-inf")) >= TELL_AGAIN_S:
            self._give_list(name, now)  # a line lost on the way, or a list from before: the whole list again

    def _give_list(self, name: str, now: float) -> None:
        self._told[name] = now
        others = [where for other, where in self.endpoints.items() if other != name]
        self.sources[name].send_mesh(["mp-", *peer_lines(others)])

    def left(self, name: str) -> None:
        """Node ``name`` is down or reconnecting: off every other node's list."""
        endpoint = self.endpoints.pop(name, None)
        if endpoint is None:
            return
        self.names.pop(endpoint, None)
        for other in self.endpoints:
            self.sources[other].send_mesh(peer_lines([endpoint], "mp-"))

    def off(self) -> None:
        """The mesh off on every node (the monitor closes, or the user turned it off)."""
        for source in self.sources.values():
            source.send_mesh(["m 0"])
        self.endpoints.clear()
        self.names.clear()
        self._told.clear()


__all__ = ["LINE_BYTES", "MeshCoordinator", "MeshSettings", "parse_mesh_option", "peer_lines", "taking_part"]
