"""Version choice, bootstrap parsing, backoff: the small pure pieces of the network core."""

from __future__ import annotations

import random

import pytest

from gregor.client.errors import KafkaException
from gregor.protocol.backoff import ExponentialBackoff
from gregor.client.network.settings import NetworkSettings, parse_bootstrap_servers
from gregor.client.network.versions import BrokerApiVersions
from gregor.protocol.messages import ApiKey


def test_the_highest_version_both_sides_speak_is_picked():
    broker = BrokerApiVersions({ApiKey.METADATA: (0, 9), ApiKey.FETCH: (4, 17)})
    assert broker.pick(ApiKey.METADATA) == 9
    assert broker.pick(ApiKey.FETCH, (0, 11)) == 11
    assert broker.pick(ApiKey.FETCH, (0, 20)) == 17


def test_no_common_version_is_unsupported_version_naming_both_ranges():
    broker = BrokerApiVersions({ApiKey.FETCH: (12, 17)})
    with pytest.raises(KafkaException) as too_old:
        broker.pick(ApiKey.FETCH, (0, 11))
    assert too_old.value.name == "UNSUPPORTED_VERSION" and "v12-v17" in str(too_old.value)
    with pytest.raises(KafkaException) as missing:
        broker.pick(ApiKey.CREATE_PARTITIONS)
    assert "no version of CREATE_PARTITIONS" in str(missing.value)


def test_an_api_without_a_declared_client_range_needs_one_with_the_request():
    with pytest.raises(ValueError, match="versions="):
        BrokerApiVersions({ApiKey.PRODUCE: (0, 11)}).pick(ApiKey.PRODUCE)


@pytest.mark.parametrize("text, servers", [
    ("localhost:9092", (("localhost", 9092),)),
    ("a:1, b:2,,", (("a", 1), ("b", 2))),
    ("PLAINTEXT://h:19092", (("h", 19092),)),
    ("[::1]:9093", (("::1", 9093),)),
    ("noport", (("noport", 9092),)),
    (["x:1", "y:2"], (("x", 1), ("y", 2))),
])
def test_bootstrap_servers(text, servers):
    assert parse_bootstrap_servers(text) == servers


@pytest.mark.parametrize("text", ["", "h:port", "h:0", ":9092"])
def test_bad_bootstrap_servers(text):
    with pytest.raises(ValueError):
        parse_bootstrap_servers(text)


def test_settings_read_kafka_keys():
    settings = NetworkSettings.from_config({"bootstrap.servers": ("h:1",), "client.id": "me",
                                            "request.timeout.ms": 500, "retry.backoff.ms": 7})
    assert (settings.bootstrap_servers, settings.client_id, settings.request_timeout_ms,
            settings.retry_backoff_ms, settings.reconnect_backoff_max_ms) == ((("h", 1),), "me", 500, 7, 1000)


def test_backoff_doubles_to_its_cap_with_jitter():
    backoff = ExponentialBackoff(50, 1000, rng=random.Random(1))
    delays = [backoff.delay_ms(failures) for failures in range(1, 10)]
    assert 40 <= delays[0] <= 60 and 80 <= delays[1] <= 120
    assert all(800 <= delay <= 1200 for delay in delays[5:])
    assert ExponentialBackoff(50, 1000, jitter=0).delay_ms(3) == 200
    assert backoff.delay_ms(0) == 0
