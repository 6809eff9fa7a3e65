"""Pairwise bandwidth tests: which pairs run together, on which ports, and the verdict.

Pure: no I/O, no clock. The runner (engine/) asks for rounds and ports, runs the tools,
turns each parsed result into a ``PairResult`` and asks ``judge`` for the ``Verdict``.

Scheduling is the circle method of round-robin tournaments: fix one node, rotate the
others one place per round; the two rows of the circle face each other. Every unordered
pair meets exactly once, in N−1 rounds for even N (N rounds for odd N, where the node
facing the empty seat sits the round out), and no node is in two tests of one round.

The shift pattern (mpiGraph's) is the other schedule of a matrix both ways: in round k every
node i sends to node i+k and receives from node i−k at once (N flows a round, every NIC full
duplex, as in a ring all-reduce), so every ordered pair is tested once in N−1 rounds, half
the rounds of disjoint one-way pairs, for N odd as well as even.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netui.model.text import safe_fields

Pair = tuple[str, str]  # (sender, receiver)


# --- scheduling ------------------------------------------------------------------------------


def all_pairs_rounds(nodes: Sequence[str], *, directed: bool = False) -> list[list[Pair]]:
    """Rounds of disjoint ``(sender, receiver)`` pairs covering every pair of ``nodes``.

    Undirected: each unordered pair once, in N−1 rounds (N even) or N rounds (N odd);
    senders alternate so each node sends in about half of its tests. ``directed=True``
    adds every reverse direction as a second pass of the same rounds, reversed (2(N−1) or
    2N rounds). Both directions of a pair inside one round would put each node in two
    tests at once (client and server, TX and RX, two processes on its CPUs): that is a
    ``--bidir`` test, not two one-way ones. 2(N−1) is also the least possible: a round
    holds at most ⌊N/2⌋ tests and there are N(N−1) ordered pairs.

    Deterministic; node order is kept; duplicate names are dropped (first kept).
    """
    order = list(dict.fromkeys(nodes))
    if len(order) < 2:
        return []
    position = {node: i for i, node in enumerate(order)}
    seats: list[str | None] = order + ([None] if len(order) % 2 else [])
    n = len(seats)
    rounds: list[list[Pair]] = []
    for r in range(n - 1):
        # seat 0 stays, the others turn one place per round
        rest = seats[1:]
        ring = [seats[0]] + rest[len(rest) - r :] + rest[: len(rest) - r]
        round_pairs: list[Pair] = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is not None and b is not None:  # else: the sit-out seat of an odd count
                round_pairs.append(_oriented(a, b, position, len(order)))
        rounds.append(round_pairs)
    if directed:
        rounds += [[(b, a) for a, b in round_pairs] for round_pairs in rounds]
    return rounds


def shift_rounds(nodes: Sequence[str]) -> list[list[Pair]]:
    """mpiGraph's rounds: in round k (1 … N−1) node i sends to node (i+k) mod N and receives
    from node (i−k) mod N at the same time. Every ordered pair exactly once in N−1 rounds;
    each node sends once and receives once in every round (N tests a round, two per node:
    a server for the flow coming in, a client for the flow going out). Deterministic; node
    order is kept; duplicate names are dropped (first kept)."""
    order = list(dict.fromkeys(nodes))
    n = len(order)
    if n < 2:
        return []
    return [[(order[i], order[(i + k) % n]) for i in range(n)] for k in range(1, n)]


def _oriented(a: str, b: str, position: dict[str, int], count: int) -> Pair:
    """Who sends: node i sends to the next ⌊(N−1)/2⌋ nodes around the list, so every node
    sends in half of its tests (±1 for even N), not the first nodes in all of theirs."""
    i, j = position[a], position[b]
    d = (j - i) % count
    if d < count - d or (d == count - d and i < j):
        return (a, b)
    return (b, a)


def one_at_a_time(rounds: Iterable[Iterable[Pair]]) -> list[list[Pair]]:
    """Each pair its own round, in the same order (for nodes sharing an uplink)."""
    return [[pair] for round_pairs in rounds for pair in round_pairs]


class PortsExhausted(RuntimeError):
    """Every port of the allocator's range is in use on one of the nodes asked for."""


class PortAllocator:
    """Ports for concurrent tests: a port in use on a node is not handed out again for that
    node until released.

    A port is taken on every node given (both ends of a pair), so a node that is server in
    one test and client in another never meets the same port twice. The search starts
    after the last port handed out (wrapping to ``base``), so a port just released is not
    reused at once -- a server killed on timeout may not have let go of it yet.
    Deterministic: the same calls give the same ports.
    """

    def __init__(self, base: int = 5201, span: int = 200) -> None:
        if span < 1 or base < 1 or base + span - 1 > 65535:
            raise ValueError(f"bad port range {base}..{base + span - 1}")
        self.base = base
        self.span = span
        self._in_use: dict[str, set[int]] = {}
        self._busy: dict[str, frozenset[int]] = {}  # held by something else on the node
        self._next = 0  # offset where the next search starts

    def reserve(self, node: str, ports) -> None:
        """Ports something else holds on ``node`` (it listens on them): never handed out there."""
        self._busy[node] = self._busy.get(node, frozenset()) | frozenset(ports)

    def busy(self, node: str, port: int) -> bool:
        """Whether something other than this test holds ``port`` on ``node``."""
        return port in self._busy.get(node, ())

    def acquire(self, *nodes: str) -> int:
        """A port free on every one of ``nodes``, now marked in use on all of them."""
        for step in range(self.span):
            offset = (self._next + step) % self.span
            port = self.base + offset
            if all(port not in self._in_use.get(node, ()) and port not in self._busy.get(node, ())
                   for node in nodes):
                for node in nodes:
                    self._in_use.setdefault(node, set()).add(port)
                self._next = (offset + 1) % self.span
                return port
        last = self.base + self.span - 1
        raise PortsExhausted(f"no free port in {self.base}..{last} on {', '.join(nodes)}")

    def release(self, port: int, *nodes: str) -> None:
        """Give ``port`` back on ``nodes`` (a port not held is ignored)."""
        for node in nodes:
            self._in_use.get(node, set()).discard(port)

    def in_use(self, node: str) -> frozenset[int]:
        return frozenset(self._in_use.get(node, ()))


# --- results ---------------------------------------------------------------------


@dataclass(frozen=True)
class PairResult:
    """One one-way test between two nodes. ``gbps`` is Gbit/s (10^9 bit/s) of goodput.

    ``ok`` False means the run failed (``error`` holds the tool's words); a run that ran
    but was slow is ``ok`` True and fails only in the verdict. ``counters`` holds what the
    runner measured on both ends during the test (deltas, e.g. ``{"node1.retrans": 12}``).
    """

    sender: str
    receiver: str
    tool: str  # "iperf3", "ib_write_bw"
    gbps: float | None
    ok: bool
    error: str | None = None
    retransmits: int | None = None
    kind: str | None = None  # the parser's failure kind ("refused", "no-device", ...)
    counters: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # what the sender counted sending (iperf3's sum_sent), Gbit/s; ``gbps`` is what the
    # receiver counted receiving (the goodput). None where the tool gives one figure
    sent_gbps: float | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        safe_fields(self)  # a tool's words, or a report read back from a file: shown, never obeyed

    @property
    def pair(self) -> Pair:
        return (self.sender, self.receiver)

    @classmethod
    def of(cls, sender: str, receiver: str, tool: str, measured: Any) -> PairResult:
        """From a parsed ``Iperf3Result`` or ``PerftestResult`` (anything with ``ok``,
        ``error``, ``gbps`` and optionally ``kind`` and ``retransmits``)."""
        return cls(
            sender,
            receiver,
            tool,
            gbps=measured.gbps,
            ok=bool(measured.ok),
            error=measured.error,
            retransmits=getattr(measured, "retransmits", None),
            kind=getattr(measured, "kind", None),
        )


def _pct(value: float) -> str:
    return f"{value:g}"


def _names(nodes: list[str]) -> str:
    return nodes[0] if len(nodes) == 1 else ", ".join(nodes[:-1]) + " and " + nodes[-1]
