"""Exponential backoff with jitter, as Kafka's clients compute it (sans-IO).

`reconnect.backoff.ms` → `reconnect.backoff.max.ms`, `retry.backoff.ms` → `retry.backoff.max.ms`
and `socket.connection.setup.timeout.ms` → `.max.ms` all grow the same way: doubling per
consecutive failure, capped, with ±20 % jitter so that many clients do not retry in lockstep.
The random source is injected so that tests and simulations are reproducible. Gregor's client and
a broker's own links to other nodes (`gregor.broker.reconnect_backoff`) both use it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExponentialBackoff:
    """Delays in milliseconds; `failures` counts consecutive failures (1 for the first)."""

    initial_ms: float
    max_ms: float
    multiplier: float = 2.0
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def delay_ms(self, failures: int) -> float:
        if self.initial_ms <= 0 or failures <= 0:
            return 0.0
        cap = max(self.initial_ms, self.max_ms)
        base = min(cap, self.initial_ms * self.multiplier ** min(failures - 1, 64))
        if self.jitter:
            base *= self.rng.uniform(1 - self.jitter, 1 + self.jitter)
        return base
