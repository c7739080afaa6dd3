"""Connections and the network client against a scripted fake broker: negotiation, lost
connections, timeouts, unreachable servers, reconnects."""

from __future__ import annotations

import asyncio
import time

import pytest

from gregor.client.errors import KafkaConnectionError, KafkaException, KafkaTimeoutError
from gregor.client.network import NetworkClient, NetworkSettings
from gregor.client.network.connection import BrokerConnection
from gregor.client.network.settings import parse_bootstrap_servers
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiKey, MetadataRequest
from tests.broker_process import free_port
from tests.client.fake_broker import ANSWER, CLOSE, IGNORE, TOPIC, FakeBroker


def network_for(bootstrap: str, **settings) -> NetworkClient:
    return NetworkClient(NetworkSettings(parse_bootstrap_servers(bootstrap), client_id="test", **settings))


def test_a_connection_negotiates_api_versions_and_picks_the_highest_common_version():
    async def scenario() -> None:
        connection = await BrokerConnection.open(-1, "127.0.0.1", broker.port, client_id="t",
                                                 request_timeout_ms=5000, setup_timeout_ms=5000)
        assert connection.pick_version(ApiKey.METADATA) == 12
        response = await connection.send(MetadataRequest(topics=None))
        assert [topic.name for topic in response.topics] == [TOPIC]
        connection.close()

    with FakeBroker() as broker:
        asyncio.run(scenario())
    assert broker.requests[0] == (1, ApiKey.API_VERSIONS, 4)


def test_api_versions_retries_with_the_version_the_broker_says_it_speaks():
    async def scenario() -> None:
        connection = await BrokerConnection.open(-1, "127.0.0.1", broker.port, client_id="t",
                                                 request_timeout_ms=5000, setup_timeout_ms=5000)
        assert connection.api_versions.max_version(ApiKey.API_VERSIONS) == 2
        connection.close()

    with FakeBroker(api_versions_max=2) as broker:
        asyncio.run(scenario())
    assert [version for _, key, version in broker.requests if key == ApiKey.API_VERSIONS] == [4, 2]


def close_during_second_metadata(connection: int, api_key: int, request: int) -> str:
    """On the first connection, leave the first Metadata request unanswered and close the
    connection when the second one arrives: both are in flight when it goes."""
    if connection == 1 and api_key == ApiKey.METADATA:
        return IGNORE if request == 2 else CLOSE
    return ANSWER


def test_a_broker_closing_mid_request_fails_every_request_in_flight_and_the_client_reconnects():
    async def scenario() -> None:
        network = network_for(broker.bootstrap, reconnect_backoff_ms=10)
        network.start()
        first, second = await asyncio.gather(
            network.send(MetadataRequest(topics=None)), network.send(MetadataRequest(topics=None)),
            return_exceptions=True)
        for failure in (first, second):
            assert isinstance(failure, KafkaConnectionError) and failure.name == "_TRANSPORT"
            assert "closed the connection" in str(failure) or "lost" in str(failure)
        response = await network.send(MetadataRequest(topics=None))
        assert response.cluster_id == "fake"
        await network.close()

    with FakeBroker(close_during_second_metadata) as broker:
        asyncio.run(scenario())
    assert broker.connections == 2


def test_a_request_that_times_out_fails_with_timed_out_and_closes_its_connection():
    def silent_on_metadata(connection: int, api_key: int, request: int) -> str:
        return IGNORE if api_key == ApiKey.METADATA else ANSWER

    async def scenario() -> None:
        network = network_for(broker.bootstrap)
        connection = await network.connection(-1)
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError) as timed_out:
            await network.send(MetadataRequest(topics=None), -1, timeout_ms=300)
        assert 0.25 < time.monotonic() - started < 2
        assert timed_out.value.name == "_TIMED_OUT" and "METADATA" in str(timed_out.value)
        assert connection.closed
        await network.close()

    with FakeBroker(silent_on_metadata) as broker:
        asyncio.run(scenario())


def test_unreachable_bootstrap_servers_are_all_brokers_down_within_the_timeout():
    async def scenario() -> None:
        network = network_for(f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}")
        started = time.monotonic()
        with pytest.raises(KafkaConnectionError) as down:
            await network.send(MetadataRequest(topics=[]), timeout_ms=800)
        assert time.monotonic() - started < 1.5
        assert down.value.name == "_ALL_BROKERS_DOWN" and "Connect call failed" in str(down.value)
        await network.close()

    asyncio.run(scenario())


def test_the_next_bootstrap_server_is_tried_when_one_refuses():
    async def scenario() -> None:
        network = network_for(f"127.0.0.1:{free_port()},{broker.bootstrap}")
        for _ in range(3):
            cluster = await network.refresh_metadata(None, timeout_ms=3000)
            assert list(cluster.topics) == [TOPIC]
        assert list(cluster.brokers) == [0] and cluster.bootstrapped
        await network.close()

    with FakeBroker() as broker:
        asyncio.run(scenario())


def test_a_broker_that_never_answers_times_out_the_connection():
    async def scenario() -> None:
        network = network_for(broker.bootstrap)
        started = time.monotonic()
        with pytest.raises(KafkaException) as failed:
            await network.send(MetadataRequest(topics=[]), timeout_ms=500)
        assert time.monotonic() - started < 1.5
        assert failed.value.name in ("_ALL_BROKERS_DOWN", "_TIMED_OUT")
        await network.close()

    with FakeBroker(lambda *_: IGNORE) as broker:
        asyncio.run(scenario())


def test_stale_metadata_errors_wake_the_refresher_and_others_do_not():
    async def scenario() -> None:
        network = network_for(broker.bootstrap)
        network.start()
        await network.refresh_metadata([])
        network.cluster.wanted_topics.add(TOPIC)
        network.note_error(ErrorCode.OFFSET_OUT_OF_RANGE)
        await asyncio.sleep(0.2)
        assert TOPIC not in network.cluster.topics
        network.note_error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        for _ in range(100):
            if TOPIC in network.cluster.topics:
                break
            await asyncio.sleep(0.02)
        assert TOPIC in network.cluster.topics
        refreshed = network.request_metadata_update()
        assert await asyncio.wait_for(refreshed, 3) is network.cluster
        await network.close()

    with FakeBroker() as broker:
        asyncio.run(scenario())


def test_closing_the_client_fails_requests_in_flight_with_destroy():
    async def scenario() -> None:
        network = network_for(broker.bootstrap)
        pending = asyncio.ensure_future(network.send(MetadataRequest(topics=None), timeout_ms=5000))
        while not broker.requests or broker.requests[-1][1] != ApiKey.METADATA:
            await asyncio.sleep(0.01)
        await network.close()
        with pytest.raises(KafkaException) as closed:
            await pending
        assert closed.value.name == "_DESTROY"
        with pytest.raises(KafkaException) as refused:
            await network.send(MetadataRequest(topics=None))
        assert refused.value.name == "_DESTROY"

    with FakeBroker(lambda connection, api_key, request: IGNORE if api_key == ApiKey.METADATA else ANSWER) as broker:
        asyncio.run(scenario())
