"""The wait between a source's tries after failures, the same for every transport (SSH,
node_exporter, Prometheus): capped exponential backoff with jitter.

The n-th wait in a row (n from 0) is uniform in [d/2, d], d = first_s·2^n capped at max_s:
a fleet whose nodes fail at the same moment spreads its retries instead of retrying in
lockstep. A polling source passes its interval as ``at_least_s``: a retry never comes
sooner than its next poll would.
"""

from __future__ import annotations

import random

FIRST_S = 1.0  # the first wait (at most; half of it at least)
MAX_S = 60.0  # the longest wait


def backoff_s(attempt: int, first_s: float, max_s: float, rng: random.Random, at_least_s: float = 0.0) -> float:
    """Seconds to wait before try ``attempt + 1`` (``attempt`` failures in a row so far, from
    0): uniform in [d/2, d], d = min(max_s, first_s·2^attempt), and never under ``at_least_s``."""
    d = min(max_s, first_s * (2 ** min(attempt, 30)))
    return max(at_least_s, rng.uniform(d / 2, d))


class Backoff:
    """One source's failures in a row and the wait they earn (``backoff_s``).

    ``seed``: the jitter's; each source seeds with its own name, so two nodes draw
    different waits and a run of tests draws the same ones.
    """

    def __init__(self, first_s: float, max_s: float, seed: int | str) -> None:
        self.first_s = first_s
        self.max_s = max_s
        self.attempt = 0  # failures in a row
        self._rng = random.Random(seed if isinstance(seed, int) else hash(seed))

    def next_s(self, at_least_s: float = 0.0) -> float:
        """The wait after one more failure (counted)."""
        delay = backoff_s(self.attempt, self.first_s, self.max_s, self._rng, at_least_s)
        self.attempt += 1
        return delay

    def reset(self) -> None:
        """A success: the next failure waits as a first one."""
        self.attempt = 0
