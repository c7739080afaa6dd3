"""AdminClient on bad input: unknown keys, unreachable or silent brokers, lost connections, close."""

from __future__ import annotations

import threading
import time

import pytest

from gregor.client import AdminClient, KafkaException, KafkaTimeoutError
from gregor.client.admin import NewTopic
from gregor.protocol.messages import ApiKey
from tests.broker_process import free_port
from tests.client.fake_broker import ANSWER, CLOSE, IGNORE, TOPIC, FakeBroker


@pytest.mark.parametrize("config, kwargs, named", [
    ({"bootstrap.servers": "127.0.0.1:9", "no.such.key": 1}, {}, "no.such.key"),
    ({"bootstrap.servers": "127.0.0.1:9"}, {"request_timeout_mss": 5}, "request_timeout_mss"),
    ({"bootstrap.servers": "127.0.0.1:9", "linger.ms": 5}, {}, "linger.ms"),
])
def test_an_unknown_config_key_is_a_value_error_naming_it(config, kwargs, named):
    with pytest.raises(ValueError, match=named):
        AdminClient(config, **kwargs)


def test_unreachable_bootstrap_servers_fail_within_the_timeout():
    admin = AdminClient(bootstrap_servers=f"127.0.0.1:{free_port()}", reconnect_backoff_ms=20)
    try:
        for call in (lambda: admin.list_topics(timeout=1),
                     lambda: admin.create_topics([NewTopic("t", 1, 1)], timeout=1)):
            started = time.monotonic()
            with pytest.raises(KafkaTimeoutError) as failed:
                call()
            assert time.monotonic() - started < 2
            assert failed.value.name == "_TIMED_OUT"
            assert "_ALL_BROKERS_DOWN" in str(failed.value) and "Connect call failed" in str(failed.value)
    finally:
        admin.close(2)


def test_a_silent_broker_times_out_instead_of_hanging():
    with FakeBroker(lambda *_: IGNORE) as broker:
        admin = AdminClient(bootstrap_servers=broker.bootstrap)
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError):
            admin.describe_topics([TOPIC], timeout=1)
        assert time.monotonic() - started < 2
        admin.close(2)


def test_a_connection_lost_mid_request_is_retried_on_a_new_connection():
    def drop_first_metadata(connection: int, api_key: int, request: int) -> str:
        return CLOSE if (connection, api_key) == (1, ApiKey.METADATA) else ANSWER

    with FakeBroker(drop_first_metadata) as broker:
        admin = AdminClient(bootstrap_servers=broker.bootstrap, retry_backoff_ms=10)
        assert list(admin.list_topics(timeout=5)) == [TOPIC]
        assert broker.connections == 2
        admin.close(2)


def test_a_lost_connection_is_reported_when_retries_are_off():
    with FakeBroker(lambda connection, api_key, request: CLOSE if api_key == ApiKey.METADATA else ANSWER) as broker:
        admin = AdminClient(bootstrap_servers=broker.bootstrap, retries=0)
        with pytest.raises(KafkaException) as lost:
            admin.list_topics(timeout=5)
        assert lost.value.name == "_TRANSPORT" and "closed the connection" in str(lost.value)
        admin.close(2)


def test_close_stops_the_network_thread_and_later_calls_fail_with_destroy():
    with FakeBroker() as broker:
        admin = AdminClient(bootstrap_servers=broker.bootstrap, client_id="closing")
        assert TOPIC in admin.list_topics()
        assert "gregor-closing" in {thread.name for thread in threading.enumerate()}
        admin.close(2)
        assert "gregor-closing" not in {thread.name for thread in threading.enumerate()}
        with pytest.raises(KafkaException) as closed:
            admin.list_topics(timeout=1)
        assert closed.value.name == "_DESTROY"
        admin.close(1)
