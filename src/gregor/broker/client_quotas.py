"""Client quotas, enforced (Kafka's ClientQuotaManager), sans-IO: every call is given the time.

Each byte-rate quota (`producer_byte_rate`, `consumer_byte_rate`) applies to the most specific
entity the metadata image holds a value for, in Kafka's order of precedence:

    user + client-id, user + default client-id, user, default user + client-id,
    default user + default client-id, default user, client-id, default client-id

and is measured per client of that entity (a `<default>` user quota gives each user that quota,
not all users together). The rate is Kafka's: bytes over the last `quota.window.num` samples of
`quota.window.size.seconds` each, over at least `quota.window.num - 1` whole samples' time, so a
short burst is averaged as Kafka averages it. A client over its quota is throttled for
`(rate - quota) / quota * window` ms (KIP-13), at most the full window; the answer carries
`throttle_time_ms` and the connection takes no further request of the client for that long
(`network.Throttled`, KIP-219's muted channel).

`request_percentage` is the share of the broker's event loop a client's requests may take (100:
all of it), measured as the time their handlers run (`request_quota`); Kafka measures the time of
its request handler threads, of which it has several.

The user of a quota is the principal's name (`ANONYMOUS` until authentication sets another).
`controller_mutation_rate` is a token bucket of its own (`controller_mutation_quota`), and
`connection_creation_rate` a per-IP rate of the listeners (`connection_rate`).
"""

from __future__ import annotations

from collections import deque
from typing import Mapping, Protocol

from gregor.broker.controller_mutation_quota import ControllerMutationQuota
from gregor.broker.network import Throttled
from gregor.metadata.client_quotas import (
    CLIENT_ID, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE, USER,
    QuotaEntity,
)
from gregor.metadata.image import MetadataImage

_MAX_RESOLVED = 100_000  # clients whose quota lookup is remembered

#: (user, client-id) of the clients one measured rate covers; "" where the quota is not per that part.
SensorKey = tuple[str, str]


class ImageSource(Protocol):
    @property
    def image(self) -> MetadataImage: ...


class Rate:
    """Kafka's sampled `Rate`: values summed over a ring of time samples."""

    __slots__ = ("_samples", "_window_ms", "_count", "last_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        self._samples: deque[list[float]] = deque()  # [start_ms, total]
        self._window_ms = window_ms
        self._count = samples
        self.last_ms = 0

    def record(self, value: float, now_ms: int) -> None:
        self._purge(now_ms)
        if not self._samples or now_ms >= self._samples[-1][0] + self._window_ms:
            self._samples.append([now_ms, 0.0])
            if len(self._samples) > self._count:
                self._samples.popleft()
        self._samples[-1][1] += value
        self.last_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        expire = self._count * self._window_ms
        while self._samples and now_ms - self._samples[0][0] >= expire:
            self._samples.popleft()

    def window_ms(self, now_ms: int) -> float:
        """The time the rate is measured over: since the oldest sample, at least samples - 1 windows."""
        self._purge(now_ms)
        elapsed = now_ms - self._samples[0][0] if self._samples else 0
        full = elapsed // self._window_ms
        if full < self._count - 1:
            elapsed += (self._count - 1 - full) * self._window_ms
        return float(elapsed)

    def per_second(self, now_ms: int) -> float:
        window = self.window_ms(now_ms)
        return sum(total for _, total in self._samples) / (window / 1000) if window > 0 else 0.0


class QuotaManager:
    """One quota key's rates and throttles (Kafka keeps one manager for produce, one for fetch)."""

    def __init__(self, key: str, images: ImageSource, samples: int, window_ms: int) -> None:
        self.key = key
        self._images = images
        self._samples = samples
        self._window_ms = window_ms
        self._rates: dict[SensorKey, Rate] = {}
        self._resolved: dict[tuple[str, str], tuple[float, SensorKey] | None] = {}
        self._quotas_seen: Mapping[QuotaEntity, Mapping[str, float]] | None = None
        self._last_purge_ms = 0
        #: Throttle time given, in ms, by sensor (what the metrics and tests read).
        self.throttled_ms: dict[SensorKey, int] = {}

    def quota(self, user: str, client_id: str) -> tuple[float, SensorKey] | None:
        """The quota that applies to this client and the key its rate is measured under; None:
        no quota (unlimited)."""
        quotas = self._images.image.client_quotas
        if quotas is not self._quotas_seen:
            self._resolved.clear()
            self._quotas_seen = quotas
        if (user, client_id) not in self._resolved:
            if len(self._resolved) >= _MAX_RESOLVED:  # many short-lived client ids: start over
                self._resolved.clear()
            self._resolved[(user, client_id)] = self._resolve(quotas, user, client_id)
        return self._resolved[(user, client_id)]

    def _resolve(self, quotas: Mapping[QuotaEntity, Mapping[str, float]], user: str,
                 client_id: str) -> tuple[float, SensorKey] | None:
        candidates: list[QuotaEntity] = [
            ((CLIENT_ID, client_id), (USER, user)), ((CLIENT_ID, None), (USER, user)), ((USER, user),),
            ((CLIENT_ID, client_id), (USER, None)), ((CLIENT_ID, None), (USER, None)), ((USER, None),),
            ((CLIENT_ID, client_id),), ((CLIENT_ID, None),)]
        for entity in candidates:
            value = quotas.get(entity, {}).get(self.key)
            if value is not None:
                kinds = {kind for kind, _ in entity}
                return value, (user if USER in kinds else "", client_id if CLIENT_ID in kinds else "")
        return None

    def record(self, user: str, client_id: str, nbytes: float, now_ms: int) -> int:
        """Count `nbytes` against the client's quota; the throttle time in ms (0: within it)."""
        found = self.quota(user, client_id)
        if found is None:
            return 0
        bound, sensor = found
        rate = self._rates.get(sensor)
        if rate is None:
            rate = self._rates[sensor] = Rate(self._samples, self._window_ms)
        rate.record(nbytes, now_ms)
        self._purge_idle(now_ms)
        observed = rate.per_second(now_ms)
        if observed <= bound:
            return 0
        throttle = int(min((observed - bound) / bound * rate.window_ms(now_ms), self._samples * self._window_ms))
        self.throttled_ms[sensor] = self.throttled_ms.get(sensor, 0) + throttle
        return throttle

    def max_in_window(self, user: str, client_id: str) -> int | None:
        """The most one answer may carry: what the quota allows over its shortest window (Kafka's
        getMaxValueInQuotaWindow), so that a fetch can fit the quota; None without a quota."""
        found = self.quota(user, client_id)
        if found is None:
            return None
        return max(int(found[0] * max(self._samples - 1, 1) * self._window_ms / 1000), 1)

    def unrecord(self, user: str, client_id: str, nbytes: int, now_ms: int) -> None:
        """Take back bytes that were not sent after all (a throttled fetch answers empty)."""
        found = self.quota(user, client_id)
        if found is not None and (rate := self._rates.get(found[1])) is not None:
            rate.record(-nbytes, now_ms)

    def _purge_idle(self, now_ms: int) -> None:
        """Forget the rates of clients idle for the whole window (their rate is 0 anyway)."""
        span = self._samples * self._window_ms
        if now_ms - self._last_purge_ms < span:
            return
        self._last_purge_ms = now_ms
        for sensor in [s for s, rate in self._rates.items() if now_ms - rate.last_ms >= span]:
            del self._rates[sensor]


def user_of(principal: str) -> str:
    """The user a quota is looked up by: the principal's name ("User:alice" → "alice")."""
    return principal.split(":", 1)[1] if ":" in principal else principal


def throttled(answer: object, throttle_ms: int) -> object:
    """The handler's answer, marked for the connection to mute itself when the client is throttled."""
    return Throttled(answer, throttle_ms) if throttle_ms > 0 else answer


class ClientQuotas:
    """The broker's produce and fetch byte-rate, request-time and controller mutation quotas."""

    def __init__(self, images: ImageSource | None, samples: int = 11, window_ms: int = 1000) -> None:
        self._images = images
        source: ImageSource = images if images is not None else _NoQuotas()
        self.produce = QuotaManager(PRODUCER_BYTE_RATE, source, samples, window_ms)
        self.fetch = QuotaManager(CONSUMER_BYTE_RATE, source, samples, window_ms)
        self.request = QuotaManager(REQUEST_PERCENTAGE, source, samples, window_ms)
        self.controller_mutation = ControllerMutationQuota(
            QuotaManager(CONTROLLER_MUTATION_RATE, source, samples, window_ms), samples * window_ms / 1000)

    @property
    def enabled(self) -> bool:
        """Whether any client quota is configured. Without one nothing is measured, as Kafka's
        ClientQuotaManager records only while quotas are enabled: a broker with no quota spends
        nothing per request on the lookups (a quota set later is measured from then on)."""
        return self._images is not None and bool(self._images.image.client_quotas)

    def record_produce(self, principal: str, client_id: str | None, nbytes: int, now_ms: int) -> int:
        """Count a produce request's record bytes; the client's throttle time in ms."""
        return self.produce.record(user_of(principal), client_id or "", nbytes, now_ms)

    def record_request_time(self, principal: str, client_id: str | None, seconds: float, now_ms: int) -> int:
        """Count the time a handler spent on a request (as a percentage of one second, so that the
        rate is the share of the event loop the client takes); the throttle time in ms."""
        return self.request.record(user_of(principal), client_id or "", seconds * 100, now_ms)

    def fetch_max_bytes(self, principal: str, client_id: str | None) -> int | None:
        """The bytes a fetch answer may carry under the client's consumer_byte_rate; None: no quota."""
        return self.fetch.max_in_window(user_of(principal), client_id or "")

    def record_fetch(self, principal: str, client_id: str | None, nbytes: int, now_ms: int) -> int:
        """Count a fetch answer's record bytes; the client's throttle time in ms. A throttled
        answer is not sent (Kafka answers it empty), so its bytes are taken back at once."""
        user, client = user_of(principal), client_id or ""
        throttle = self.fetch.record(user, client, nbytes, now_ms)
        if throttle:
            self.fetch.unrecord(user, client, nbytes, now_ms)
        return throttle


class _NoQuotas:
    image = MetadataImage()


#: No quota anywhere: what a context gets when it is built without the broker's quotas.
UNLIMITED_QUOTAS = ClientQuotas(None)
