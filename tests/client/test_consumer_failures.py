"""Gregor's Consumer on bad input: unreachable clusters, a broker that closes the connection in
the middle of a request, a commit from a member whose generation is gone, misuse of the API.
Each failure must be a KafkaException carrying the Kafka error name, never a hang."""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.admin import AdminClient, NewTopic

from gregor.client import KafkaException, TopicPartition
from gregor.client.config import ConfigError
from gregor.client.consumer import Consumer
from gregor.protocol.messages import ApiKey
from tests.broker_process import free_port

pytestmark = pytest.mark.interop

NOT_A_MEMBER = {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"}


def finishes(call, limit: float = 30) -> BaseException | None:
    """Run `call` in a thread; the exception it raised (None if none). Fails if it is still
    running after `limit` seconds: a hang, whatever the configured timeouts said."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"{call} did not return within {limit} s"
    return outcome[0]


def create_topic(bootstrap: str, partitions: int = 1) -> str:
    name = f"fail-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)
    return name


def produce(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for index in range(count):
        producer.produce(topic, value=b"%d" % index, partition=index % partitions)
    assert producer.flush(15) == 0


# -- misuse --

def test_unknown_keys_are_refused_by_name():
    with pytest.raises(ConfigError, match="no.such.key"):
        Consumer({"bootstrap.servers": "127.0.0.1:9", "no.such.key": 1})
    with pytest.raises(ConfigError, match="linger.ms"):
        Consumer(bootstrap_servers="127.0.0.1:9", linger_ms=5)
    with pytest.raises(ConfigError, match="heartbeat.interval.ms"):
        Consumer(bootstrap_servers="127.0.0.1:9", group_protocol="consumer", heartbeat_interval_ms=500)


def test_calls_out_of_order_are_state_or_argument_errors():
    consumer = Consumer(bootstrap_servers=f"127.0.0.1:{free_port()}")
    try:
        with pytest.raises(KafkaException) as not_subscribed:
            consumer.poll(0)
        assert not_subscribed.value.name == "_STATE"
        with pytest.raises(KafkaException) as no_group:
            consumer.subscribe(["t"])
        assert no_group.value.name == "_INVALID_ARG" and "group.id" in str(no_group.value)
        with pytest.raises(KafkaException) as no_group_commit:
            consumer.commit({("t", 0): 1})
        assert no_group_commit.value.name == "_INVALID_ARG"
        consumer.assign([("t", 0)])
        with pytest.raises(KafkaException, match="not assigned"):
            consumer.seek(("t", 1), 0)
        with pytest.raises(KafkaException) as negative:
            consumer.seek(("t", 0), -1)
        assert negative.value.name == "_INVALID_ARG"
    finally:
        consumer.close(1)
    consumer.close(1)
    with pytest.raises(KafkaException, match="closed"):
        consumer.poll(0)


# -- unreachable --

@pytest.mark.parametrize("call", ["committed", "poll after assign", "poll after subscribe", "list_topics",
                                  "end_offsets"])
def test_an_unreachable_cluster_fails_with_its_error_name_within_the_timeout(call):
    consumer = Consumer(bootstrap_servers=f"127.0.0.1:{free_port()}", group_id="g", default_api_timeout_ms=1000,
                        reconnect_backoff_ms=20)

    def poll_subscribed() -> None:
        """A poll returns when its timeout ends while the join goes on; a later poll raises
        once the join has failed for default.api.timeout.ms."""
        consumer.subscribe(["t"])
        while True:
            consumer.poll(0.2)

    try:
        actions = {
            "committed": lambda: consumer.committed([("t", 0)]),
            "poll after assign": lambda: (consumer.assign([("t", 0)]), consumer.poll(0.5)),
            "poll after subscribe": poll_subscribed,
            "list_topics": lambda: consumer.list_topics(timeout=1),
            "end_offsets": lambda: consumer.end_offsets([("t", 0)], timeout=1),
        }
        error = finishes(actions[call])
        assert isinstance(error, KafkaException), error
        assert error.name in {"_ALL_BROKERS_DOWN", "_TIMED_OUT"}, error
    finally:
        assert finishes(lambda: consumer.close(2)) is None


# -- a broker that closes connections mid-request --

class ClosingProxy:
    """Forwards Kafka traffic to `upstream` and closes the connection, instead of forwarding,
    on the first `count` requests of the API keys in `close_on`."""

    def __init__(self, port: int, upstream_port: int, close_on: dict[int, int]) -> None:
        self.upstream_port = upstream_port
        self.remaining = dict(close_on)
        self.closed: list[int] = []
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port = port
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        while True:
            head = _read(client, 4)
            body = None if head is None else _read(client, struct.unpack(">i", head)[0])
            if body is None:
                break
            api_key = struct.unpack_from(">h", body)[0]
            with self._lock:
                close = self.remaining.get(api_key, 0) > 0
                if close:
                    self.remaining[api_key] -= 1
                    self.closed.append(api_key)
            if close:
                break
            try:
                upstream.sendall(head + body)
            except OSError:
                break
        _shut(client)
        _shut(upstream)

    @staticmethod
    def _responses(upstream: socket.socket, client: socket.socket) -> None:
        while True:
            try:
                data = upstream.recv(65536)
                if not data:
                    break
                client.sendall(data)
            except OSError:
                break
        _shut(client)

    def close(self) -> None:
        _shut(self._listener)
        with self._lock:
            for sock in self._sockets:
                _shut(sock)


def _read(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@pytest.fixture
def proxied(broker_factory):
    """A Gregor broker that advertises a proxy, so every connection of the client goes through it."""
    proxy_port = free_port()
    proxy: list[ClosingProxy] = []
    broker = broker_factory({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
                             "group.initial.rebalance.delay.ms": "0"})

    def start(close_on: dict[int, int]) -> ClosingProxy:
        proxy.append(ClosingProxy(proxy_port, broker.port, close_on))
        return proxy[-1]

    yield broker, start
    for made in proxy:
        made.close()


def test_connections_closed_mid_fetch_mid_commit_and_mid_offset_fetch_are_survived(proxied):
    _, start = proxied
    proxy = start({ApiKey.FETCH: 2, ApiKey.OFFSET_COMMIT: 1, ApiKey.OFFSET_FETCH: 1})
    topic = create_topic(f"127.0.0.1:{proxy.port}", 2)
    produce(f"127.0.0.1:{proxy.port}", topic, 40, partitions=2)
    consumer = Consumer(bootstrap_servers=f"127.0.0.1:{proxy.port}", group_id=f"g-{uuid.uuid4().hex[:6]}",
                        auto_offset_reset="earliest", enable_auto_commit=False, retry_backoff_ms=20,
                        session_timeout_ms=10_000, default_api_timeout_ms=15_000)
    try:
        consumer.subscribe([topic])
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < 40 and time.monotonic() < deadline:
            seen.extend((record.partition, record.offset) for record in consumer.poll(0.5))
        assert sorted(seen) == sorted((partition, offset) for partition in (0, 1) for offset in range(20))
        consumer.commit()
        assert {partition: value.offset for partition, value in
                consumer.committed([(topic, 0), (topic, 1)]).items()} == {
            TopicPartition(topic, 0): 20, TopicPartition(topic, 1): 20}
        assert sorted(proxy.closed) == sorted([ApiKey.FETCH, ApiKey.FETCH, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH])
    finally:
        consumer.close(5)


# -- stale generation --

@pytest.mark.slow
def test_a_commit_from_a_member_whose_generation_is_gone_fails_by_name_and_commits_nothing(broker):
    topic = create_topic(broker.bootstrap, 2)
    group = f"g-{uuid.uuid4().hex[:6]}"
    settings = dict(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                    auto_offset_reset="earliest", session_timeout_ms=10_000, heartbeat_interval_ms=200)
    stalled = Consumer(max_poll_interval_ms=1500, **settings)
    other = Consumer(**settings)
    try:
        stalled.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(stalled.assignment()) < 2 and time.monotonic() < deadline:
            stalled.poll(0.2)
        assert len(stalled.assignment()) == 2
        other.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(other.assignment()) < 2 and time.monotonic() < deadline:
            other.poll(0.2)
        assert len(other.assignment()) == 2, "the group did not move on without the stalled member"
        with pytest.raises(KafkaException) as refused:
            stalled.commit({(topic, 0): 7})
        assert refused.value.name in NOT_A_MEMBER and "poll again" in str(refused.value)
        assert other.committed([(topic, 0)]) == {TopicPartition(topic, 0): None}
    finally:
        other.close(5)
        stalled.close(5)
