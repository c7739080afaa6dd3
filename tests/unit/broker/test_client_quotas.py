"""Client quotas on virtual time: Kafka's precedence of quota entities, and a client that keeps
sending over its byte rate held to it by the throttle times it is given."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from gregor.broker.client_quotas import ClientQuotas, QuotaManager, Rate
from gregor.metadata.client_quotas import quota_entity
from gregor.metadata.image import MetadataImage


class Images:
    def __init__(self, quotas: dict) -> None:
        self.image = MetadataImage(client_quotas=MappingProxyType(
            {quota_entity(entity): MappingProxyType(values) for entity, values in quotas.items()}))


LEVELS = [
    ((("user", "alice"), ("client-id", "app")), ("alice", "app")),
    ((("user", "alice"), ("client-id", None)), ("alice", "app")),
    ((("user", "alice"),), ("alice", "")),
    ((("user", None), ("client-id", "app")), ("alice", "app")),
    ((("user", None), ("client-id", None)), ("alice", "app")),
    ((("user", None),), ("alice", "")),
    ((("client-id", "app"),), ("", "app")),
    ((("client-id", None),), ("", "app")),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_entity_with_a_value_applies(level):
    configured = {entity: {"producer_byte_rate": float(100 + index)} for index, (entity, _) in enumerate(LEVELS)
                  if index >= level}
    manager = QuotaManager("producer_byte_rate", Images(configured), 11, 1000)
    assert manager.quota("alice", "app") == (100 + level, LEVELS[level][1])


def test_no_quota_means_no_throttle_and_other_keys_do_not_count():
    manager = QuotaManager("producer_byte_rate", Images({(("user", "bob"),): {"consumer_byte_rate": 1.0}}), 11, 1000)
    assert manager.record("bob", "x", 10**9, 0) == 0


def test_the_rate_is_averaged_over_at_least_the_window_less_one_sample():
    rate = Rate(samples=11, window_ms=1000)
    rate.record(10_000, 0)
    assert rate.per_second(0) == pytest.approx(1000)  # 10 kB over 10 s, not over 0 s
    rate.record(10_000, 15_000)  # the first sample has expired (11 s)
    assert rate.per_second(15_000) == pytest.approx(1000)


@pytest.mark.parametrize("samples", [2, 11])
def test_a_client_sending_at_four_times_its_quota_is_held_within_20_percent_of_it(samples):
    """The client sends a 10 kB request whenever it may (its last throttle served), as a
    KIP-219 client does; over 60 virtual seconds it gets through at the quota's rate."""
    quota = 20_000.0
    quotas = ClientQuotas(Images({(("client-id", "fast"),): {"producer_byte_rate": quota}}), samples, 1000)
    slow_throttles = 0
    now = sent = 0
    given = 0
    while now < 60_000:
        throttle = quotas.record_produce("User:ANONYMOUS", "fast", 10_000, now)
        sent += 10_000
        given += throttle
        slow_throttles += quotas.record_produce("User:ANONYMOUS", "slow", 1_000, now)  # other clients: untouched
        now += max(throttle, 125)  # 125 ms a request: 4 times the quota when not throttled
    assert sent / (now / 1000) == pytest.approx(quota, rel=0.2)
    assert given > 0 and quotas.produce.throttled_ms[("", "fast")] == given
    assert slow_throttles == 0


def test_a_fetch_not_sent_is_taken_back():
    quotas = ClientQuotas(Images({(("client-id", None),): {"consumer_byte_rate": 1000.0}}), 2, 1000)
    assert quotas.fetch.record("u", "c", 5_000, 0) > 0
    quotas.fetch.unrecord("u", "c", 5_000, 0)
    assert quotas.fetch.record("u", "c", 500, 0) == 0


def _context(quotas: ClientQuotas, client_id: str, version: int = 9):
    from gregor.broker.handlers import BrokerContext, BrokerServices
    from gregor.broker.network import ConnectionInfo
    from gregor.protocol.messages import RequestHeader
    services = BrokerServices(partitions=None, metadata=None, controller=None, groups=None,  # type: ignore[arg-type]
                              metrics=None, shares=None, quotas=quotas)  # type: ignore[arg-type]
    header = RequestHeader(request_api_key=3, request_api_version=version, correlation_id=1, client_id=client_id)
    return BrokerContext(services, header, ConnectionInfo("127.0.0.1:1", "PLAINTEXT", 1), {}, 0)


def test_request_time_over_request_percentage_throttles_and_sets_the_answers_throttle_time():
    from gregor.broker.network import Throttled
    from gregor.broker.request_quota import apply_request_quota
    from gregor.protocol.messages import FetchRequest, MetadataRequest, MetadataResponse
    quotas = ClientQuotas(Images({(("client-id", "busy"),): {"request_percentage": 10.0}}), 2, 1000)
    answer = MetadataResponse()
    # half a second of handler time in a one-second window: 50 % of the loop against 10 %
    throttled = apply_request_quota(_context(quotas, "busy"), MetadataRequest(), answer, 0.5)
    assert isinstance(throttled, Throttled) and throttled.answer is answer
    assert throttled.delay_ms == answer.throttle_time_ms == 2000  # (50 - 10) / 10 s, at most the window
    # a byte-rate throttle already there: the larger of the two
    produce_throttle = Throttled(answer, 5000)
    assert apply_request_quota(_context(quotas, "busy"), MetadataRequest(), produce_throttle, 0.5).delay_ms == 5000
    # other clients, and a follower's fetch, are not throttled
    other = MetadataResponse()
    assert apply_request_quota(_context(quotas, "idle"), MetadataRequest(), other, 0.5) is other
    follower = FetchRequest(replica_id=2)
    assert apply_request_quota(_context(quotas, "busy"), follower, other, 5.0) is other


def test_quotas_are_measured_only_while_one_is_configured():
    """Kafka's ClientQuotaManager records nothing while no quota is enabled; neither does Gregor,
    so a broker without quotas makes no lookup per request. A quota set later applies at once."""
    images = Images({})
    quotas = ClientQuotas(images)
    assert not quotas.enabled
    assert not ClientQuotas(None).enabled
    images.image = Images({(("client-id", "fast"),): {"producer_byte_rate": 1000.0}}).image
    assert quotas.enabled
    assert quotas.record_produce("User:alice", "fast", 50_000, 0) > 0
