"""The Prometheus endpoint listens where the broker does unless `metrics.host` says otherwise: a
broker on localhost does not expose its metrics on every interface."""

from __future__ import annotations

import pytest

from gregor.broker.config import BrokerConfig


@pytest.mark.parametrize("properties, host", [
    ({}, "localhost"),
    ({"listeners": "PLAINTEXT://127.0.0.1:19092"}, "127.0.0.1"),
    ({"listeners": "PLAINTEXT://:19092"}, ""),                          # every interface, as the listener
    ({"listeners": "CONTROLLER://127.0.0.2:19093,PLAINTEXT://127.0.0.1:19092"}, "127.0.0.1"),
    ({"listeners": "PLAINTEXT://127.0.0.1:19092", "metrics.host": "0.0.0.0"}, "0.0.0.0"),
    ({"listeners": "PLAINTEXT://127.0.0.1:19092", "metrics.host": ""}, ""),
])
def test_the_metrics_host(properties, host):
    assert BrokerConfig(properties).metrics_host == host
