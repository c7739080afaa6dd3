"""Connection creation rates (KIP-612), sans-IO: every call is given the time.

- `max.connection.creation.rate` (default unlimited): connections per second the broker accepts
  on all its listeners but the inter-broker one. A connection over it is held for its throttle
  time before its requests are served, as Kafka's acceptor waits before it takes the next.
- `connection_creation_rate` on an `ip` quota entity (an address, or `<default>` for any address
  without its own): a connection from an address over its rate is not counted and is closed after
  its throttle time (Kafka's delayed close, which slows a reconnect loop down).

Rates are measured as the client quotas are (`client_quotas.Rate`: `quota.window.num` samples of
`quota.window.size.seconds`), and the throttle time is Kafka's (rate − quota) / quota × window.
"""

from __future__ import annotations

from gregor.broker.client_quotas import ImageSource, Rate
from gregor.broker.network import Held
from gregor.metadata.client_quotas import CONNECTION_CREATION_RATE, IP

UNLIMITED_RATE = 2**31 - 1


class ConnectionRates:
    def __init__(self, images: ImageSource, max_rate: float, exempt_listener: str, samples: int = 11,
                 window_ms: int = 1000) -> None:
        """`exempt_listener`: the inter-broker listener, which the broker-wide rate does not hold."""
        self._images = images
        self._max_rate = max_rate
        self._exempt = exempt_listener.upper()
        self._samples = samples
        self._window_ms = window_ms
        self._broker = Rate(samples, window_ms)
        self._per_ip: dict[str, Rate] = {}
        self.throttled_ms = {"broker": 0, "ip": 0}  # throttle time given (what tests and metrics read)

    def _throttle_ms(self, rate: Rate, quota: float, now_ms: int) -> int:
        observed = rate.per_second(now_ms)
        if observed <= quota:
            return 0
        longest = self._samples * self._window_ms
        return int(min((observed - quota) / quota * rate.window_ms(now_ms), longest)) if quota > 0 else longest

    def _ip_quota(self, ip: str) -> float | None:
        quotas = self._images.image.client_quotas
        for entity in (((IP, ip),), ((IP, None),)):
            value = quotas.get(entity, {}).get(CONNECTION_CREATION_RATE)
            if value is not None:
                return value
        return None

    def admit(self, listener: str, ip: str, now_ms: int) -> Held | None:
        """Whether a connection accepted now must be held back (None: serve it at once)."""
        quota = self._ip_quota(ip)
        if quota is not None:
            rate = self._per_ip.get(ip)
            if rate is None:
                rate = self._per_ip[ip] = Rate(self._samples, self._window_ms)
            rate.record(1, now_ms)
            throttle = self._throttle_ms(rate, quota, now_ms)
            if throttle:
                rate.record(-1, now_ms)  # not accepted: it does not count, as in Kafka
                self.throttled_ms["ip"] += throttle
                return Held(throttle / 1000, close=True)
        if self._max_rate >= UNLIMITED_RATE or listener.upper() == self._exempt:
            return None
        self._broker.record(1, now_ms)
        throttle = self._throttle_ms(self._broker, self._max_rate, now_ms)
        if not throttle:
            return None
        self.throttled_ms["broker"] += throttle
        return Held(throttle / 1000)
