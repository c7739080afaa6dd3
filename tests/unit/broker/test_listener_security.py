"""A listener whose security protocol Gregor does not implement is refused at start, never served
as plaintext; a listener name needs a protocol in `listener.security.protocol.map` unless it is
one, as in Kafka."""

from __future__ import annotations

import pytest

from gregor.broker.config import BrokerConfig, ConfigError


@pytest.mark.parametrize("listeners, protocol_map", [
    ("SASL_SSL://127.0.0.1:9093", None),
    ("SSL://127.0.0.1:9093", None),
    ("SASL_PLAINTEXT://127.0.0.1:9093", None),
    ("PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093", None),
    ("EXTERNAL://127.0.0.1:9093", "EXTERNAL:SASL_SSL,CONTROLLER:PLAINTEXT"),
])
def test_a_listener_gregor_cannot_secure_is_refused(listeners, protocol_map):
    properties = {"listeners": listeners}
    if protocol_map:
        properties["listener.security.protocol.map"] = protocol_map
    with pytest.raises(ConfigError, match="does not implement yet; refusing to serve it as plaintext"):
        BrokerConfig(properties)


def test_an_advertised_listener_is_checked_too():
    with pytest.raises(ConfigError, match="SSL://broker.example:9093 uses security protocol SSL"):
        BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092",
                      "advertised.listeners": "SSL://broker.example:9093"})


def test_a_listener_without_a_security_protocol_is_refused():
    with pytest.raises(ConfigError, match="no security protocol defined for listener INTERNAL"):
        BrokerConfig({"listeners": "INTERNAL://127.0.0.1:9092"})


def test_a_listener_mapped_to_plaintext_is_served():
    config = BrokerConfig({"listeners": "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094",
                           "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"})
    assert [config.security_protocol(e.listener) for e in config.listeners] == ["PLAINTEXT", "PLAINTEXT"]
