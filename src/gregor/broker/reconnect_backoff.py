"""When a node may try again to reach a peer, and which failures are worth a log line (sans-IO).

A broker whose controller listener refuses it (wrong credentials, a mechanism not enabled, the
peer down) must not reconnect in a tight loop, nor log every refusal: Kafka's NetworkClient waits
`reconnect.backoff.ms` after a failed connection, doubling per consecutive failure up to
`reconnect.backoff.max.ms`, with ±20 % jitter. A node's own links use the client defaults (50 ms
doubling to 1 s; Kafka's brokers hard-code a fixed 50 ms for these links, which is the flood this
avoids). The failure is reported once per change of state (the first failure, a different
reason, the recovery), not once per attempt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from gregor.protocol.backoff import ExponentialBackoff

RECONNECT_BACKOFF_MS = 50
RECONNECT_BACKOFF_MAX_MS = 1000


@dataclass
class ReconnectBackoff:
    """One peer's connection attempts; times are in seconds of whatever clock the caller reads."""

    backoff: ExponentialBackoff = field(
        default_factory=lambda: ExponentialBackoff(RECONNECT_BACKOFF_MS, RECONNECT_BACKOFF_MAX_MS, rng=random.Random()))
    failures: int = 0
    retry_at: float = 0.0
    reported: str | None = None

    def wait_s(self, now: float) -> float:
        """How long before the next attempt may start (0 when it may start now)."""
        return max(0.0, self.retry_at - now)

    def failed(self, now: float, reason: str) -> bool:
        """Record a failed attempt; True when `reason` is new (the caller logs it then, and only then)."""
        self.failures += 1
        self.retry_at = now + self.backoff.delay_ms(self.failures) / 1000
        if reason == self.reported:
            return False
        self.reported = reason
        return True

    def succeeded(self) -> int:
        """Record a connection; the number of failed attempts before it (the caller logs the
        recovery when a failure had been reported)."""
        failures, self.failures, self.retry_at, self.reported = self.failures, 0, 0.0, None
        return failures
