"""The controller mutation quota (KIP-599), sans-IO: `controller_mutation_rate` partitions created
or deleted per second, per user / client-id with Kafka's precedence (the lookup is
`client_quotas.QuotaManager.quota`).

As Kafka's ControllerMutationQuotaManager, each client's quota is a token bucket: it holds up to
`quota × quota.window.num × quota.window.size.seconds` tokens (the burst), refills at `quota` per
second, and each topic created, extended or deleted takes as many tokens as partitions it creates
or deletes, even below zero. A topic asked for while the bucket is below zero is refused with
THROTTLING_QUOTA_EXCEEDED in the versions that know that error (CreateTopics v6+,
CreatePartitions v3+, DeleteTopics v5+; "strict"); older versions go through and are only
throttled ("permissive"). Either way the answer carries the time until the bucket is back at zero
as `throttle_time_ms`, and the connection is muted that long.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

SensorKey = tuple[str, str]


class QuotaLookup(Protocol):
    def quota(self, user: str, client_id: str) -> tuple[float, SensorKey] | None: ...


@dataclass
class TokenBucket:
    """Kafka's TokenBucket: `tokens` at `last_ms`, refilled at `rate` per second up to `burst`."""

    rate: float
    burst: float
    tokens: float
    last_ms: int

    def refill(self, now_ms: int) -> None:
        self.tokens = min(self.burst, self.tokens + self.rate * max(now_ms - self.last_ms, 0) / 1000)
        self.last_ms = max(now_ms, self.last_ms)

    def throttle_ms(self) -> int:
        """How long until the bucket is back at zero (0 when it is not below)."""
        return int(-self.tokens / self.rate * 1000) if self.tokens < 0 else 0


class ControllerMutationQuota:
    """The buckets of the clients that have a `controller_mutation_rate`."""

    def __init__(self, quotas: QuotaLookup, burst_s: float) -> None:
        """`burst_s`: quota.window.num × quota.window.size.seconds."""
        self._quotas = quotas
        self._burst_s = burst_s
        self._buckets: dict[SensorKey, TokenBucket] = {}

    def _bucket(self, user: str, client_id: str, now_ms: int) -> TokenBucket | None:
        found = self._quotas.quota(user, client_id)
        if found is None:
            return None
        rate, sensor = found
        bucket = self._buckets.get(sensor)
        if bucket is None or bucket.rate != rate:
            bucket = self._buckets[sensor] = TokenBucket(rate, rate * self._burst_s, rate * self._burst_s, now_ms)
        bucket.refill(now_ms)
        return bucket

    def admit(self, user: str, client_id: str, partitions: int, strict: bool, now_ms: int) -> bool:
        """Take `partitions` mutations for one topic; False (nothing taken) when a strict request
        finds the client's bucket below zero."""
        bucket = self._bucket(user, client_id, now_ms)
        if bucket is None:
            return True
        if strict and bucket.tokens < 0:
            return False
        bucket.tokens -= partitions
        return True

    def throttle_ms(self, user: str, client_id: str, now_ms: int) -> int:
        bucket = self._bucket(user, client_id, now_ms)
        return 0 if bucket is None else bucket.throttle_ms()
