"""Abuse at the broker's edge, against a real broker process: huge announced frames, thousands of
idle connections, follower fetches from clients, appends to internal topics. Each is answered as
Kafka answers it, and a well-behaved client (confluent-kafka) is served throughout.

The broker here has a client listener (PLAINTEXT) and an inter-broker one (REPLICATION), and
reaps connections idle for 5 s.
"""

from __future__ import annotations

import resource
import socket
import struct
import time

import pytest

from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import FetchRequest, FetchResponse

from tests.broker_process import BrokerProcess, api_versions_ok, free_port
from tests.interop.test_malformed import exchange, high_watermark, produce_error, raw_batch

pytestmark = pytest.mark.interop

IDLE_MS = 5000
CONNECTIONS = 2000
TOPIC_AUTHORIZATION_FAILED = 29
INVALID_TOPIC_EXCEPTION = 17


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("abuse") / "data"))
    process.replication_port = free_port()
    process.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{process.port},REPLICATION://127.0.0.1:{process.replication_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "REPLICATION",
        "connections.max.idle.ms": str(IDLE_MS),
        "message.max.bytes": str(8 * 1024 * 1024),  # room for a snappy bomb (snappy expands at most ~21 times)
    })
    raise_fd_limit(CONNECTIONS + 500)  # before the broker starts: it inherits the limit
    process.start()
    yield process
    process.stop()


def raise_fd_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def api_versions_on(sock: socket.socket) -> bool:
    body = struct.pack(">hhih", 18, 0, 1, 1) + b"t"
    sock.sendall(struct.pack(">i", len(body)) + body)
    header = sock.recv(4)
    return len(header) == 4 and struct.unpack(">i", header)[0] > 0 and len(sock.recv(1 << 16)) > 0


def create_topic(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)


def round_trip(bootstrap: str, topic: str, count: int = 50) -> list[bytes]:
    """Produce `count` records with confluent-kafka and read them back from the start."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def closed_by_broker(sock: socket.socket, timeout: float = 5) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionError:
        return True
    except socket.timeout:
        return False


@pytest.mark.parametrize("announced", [b"\x80\x00\x00\x00", b"\x7f\xff\xff\xff"], ids=["2GB", "2GB-1"])
def test_a_2gb_frame_announced_and_never_sent_closes_that_connection_only(broker, announced):
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as other:
        assert api_versions_on(other)
        with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as sock:
            sock.sendall(announced)
            assert closed_by_broker(sock)
        assert api_versions_on(other)


def test_frames_of_the_maximum_size_announced_and_never_sent_cost_the_broker_no_memory(broker):
    before = rss_mib(broker.proc.pid)
    socks = [socket.create_connection(("127.0.0.1", broker.port), timeout=5) for _ in range(10)]
    try:
        for sock in socks:
            sock.sendall(struct.pack(">i", 100 * 1024 * 1024) + b"\x00\x00\x00\x00partial")
        time.sleep(0.5)
        assert api_versions_ok(broker.port)
        assert rss_mib(broker.proc.pid) - before < 50  # 10 x 100 MiB if the announced sizes were allocated
    finally:
        for sock in socks:
            sock.close()


@pytest.mark.slow
def test_2000_idle_connections_leave_the_broker_responsive_and_are_reaped(broker):
    limit = raise_fd_limit(CONNECTIONS + 500)
    if limit < CONNECTIONS + 200:
        pytest.skip(f"RLIMIT_NOFILE hard limit {limit} is below the {CONNECTIONS + 200} descriptors needed")
    create_topic(broker.bootstrap, "crowded")
    idle = []
    try:
        for _ in range(CONNECTIONS):
            idle.append(socket.create_connection(("127.0.0.1", broker.port), timeout=10))
        opened = time.monotonic()
        assert round_trip(broker.bootstrap, "crowded") == [f"v{i}".encode() for i in range(50)]
        assert time.monotonic() - opened < IDLE_MS / 1000  # the idle ones were all still open meanwhile
        deadline = opened + IDLE_MS / 1000 + 10
        for sock in idle:
            assert closed_by_broker(sock, max(deadline - time.monotonic(), 0.1))
        assert api_versions_ok(broker.port)
    finally:
        for sock in idle:
            sock.close()


def fetch_as_follower(port: int, topic: str, version: int = 4) -> FetchResponse:
    request = FetchRequest(replica_id=1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    frame = exchange(port, encode_request(9, "not-a-broker", request, version))
    assert frame is not None
    _, offset = decode_response_header(memoryview(frame), 1, version)
    return FetchResponse.decode(frame[offset:], version)


def test_a_follower_fetch_on_a_client_listener_is_refused_as_kafka_refuses_an_unauthorized_one(broker):
    create_topic(broker.bootstrap, "guarded")
    assert round_trip(broker.bootstrap, "guarded", 3) == [b"v0", b"v1", b"v2"]
    refused = fetch_as_follower(broker.port, "guarded")
    [partition] = refused.responses[0].partitions
    assert partition.error_code == TOPIC_AUTHORIZATION_FAILED and not partition.records
    # On the inter-broker listener the same fetch is served as a follower's (broker 1 is the leader
    # itself, not one of its followers, hence NOT_LEADER_OR_FOLLOWER rather than records).
    served = fetch_as_follower(broker.replication_port, "guarded")
    assert served.responses[0].partitions[0].error_code == 6


def find_coordinator(port: int, group: str) -> int:
    """FindCoordinator v0's error code (the first lookup creates `__consumer_offsets`)."""
    body = struct.pack(">hhih", 10, 0, 3, 1) + b"t" + struct.pack(">h", len(group)) + group.encode()
    response = exchange(port, struct.pack(">i", len(body)) + body)
    return struct.unpack_from(">h", response, 4)[0]


def test_a_client_cannot_append_to_an_internal_topic(broker):
    from confluent_kafka import Producer

    deadline = time.monotonic() + 20
    while find_coordinator(broker.port, "g") != 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert produce_error(broker.port, "__consumer_offsets", raw_batch(1)) == INVALID_TOPIC_EXCEPTION
    errors = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.send.max.retries": 0})
    producer.produce("__consumer_offsets", b"x", partition=0, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(20)
    assert [error.code() for error in errors] == [INVALID_TOPIC_EXCEPTION]


@pytest.mark.slow
def test_mutated_requests_of_every_api_are_answered_or_closed_and_the_broker_carries_on(tmp_path):
    from tools.fuzzing.wire import CRASH_MARKERS, fuzz_broker

    process = BrokerProcess(str(tmp_path / "data"), {"auto.create.topics.enable": "false"})
    process.start()
    try:
        report = fuzz_broker(process.port, 1500, seed=5, timeout_s=1.0)
        assert report.sent > 1000 and report.outcomes["answered"] > 100 and report.outcomes["closed"] > 100
        assert process.proc.poll() is None
        with open(process.log_path, encoding="utf-8", errors="replace") as handle:
            log = handle.read()
        assert not [marker for marker in CRASH_MARKERS if marker in log], log[-6000:]
        create_topic(process.bootstrap, "after-the-storm")
        assert round_trip(process.bootstrap, "after-the-storm", 5) == [f"v{i}".encode() for i in range(5)]
    finally:
        process.stop()


@pytest.mark.parametrize("named_by", ["id", "null name"])
def test_metadata_v11_naming_a_topic_by_id_is_an_invalid_request_and_the_connection_goes_on(broker, named_by):
    """Found by the wire fuzzer: the answer's null topic name could not be encoded at v11, so the
    broker dropped the connection with a 'Fatal error' instead of answering."""
    import uuid

    from gregor.protocol.messages import MetadataRequest, MetadataResponse

    topic_id = uuid.uuid4() if named_by == "id" else uuid.UUID(int=0)
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=topic_id, name=None)])
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as sock:
        sock.sendall(encode_request(5, "t", request, 11))
        size = struct.unpack(">i", sock.recv(4))[0]
        frame = b""
        while len(frame) < size:
            frame += sock.recv(size - len(frame))
        _, offset = decode_response_header(memoryview(frame), 3, 11)
        [topic] = MetadataResponse.decode(frame[offset:], 11).topics
        assert (topic.error_code, topic.name, topic.topic_id) == (42, "", topic_id)  # INVALID_REQUEST
        assert api_versions_on(sock)


# -- compression bombs, one per codec, built here with the codec libraries (not gregor.records) ------------------

BOMB_MIB = 70  # past the broker's 64 MiB decompression bound
GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
CORRUPT_MESSAGE, UNSUPPORTED_COMPRESSION_TYPE = 2, 76


def compressed(codec: int, chunks) -> bytes:
    import cramjam
    import lz4.frame
    import zlib
    import zstandard

    if codec == GZIP:
        deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(deflater.compress(chunk) for chunk in chunks) + deflater.flush()
    if codec == SNAPPY:  # the xerial framing of the Java client, one block per chunk
        blocks = (bytes(cramjam.snappy.compress_raw(chunk)) for chunk in chunks)
        return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + b"".join(struct.pack(">i", len(b)) + b for b in blocks)
    if codec == LZ4:
        compressor = lz4.frame.LZ4FrameCompressor(block_linked=False)
        return compressor.begin() + b"".join(compressor.compress(chunk) for chunk in chunks) + compressor.flush()
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    return b"".join(compressor.compress(chunk) for chunk in chunks) + compressor.flush()


def zeros(mib: int):
    chunk = bytes(1 << 20)
    return (chunk for _ in range(mib))


def v2_bomb(codec: int) -> bytes:
    """A v2 batch claiming one record whose compressed records section expands to 70 MiB of zeros."""
    import crc32c

    payload = compressed(codec, zeros(BOMB_MIB))
    after_crc = struct.pack(">hiqqqhii", codec, 0, 1000, 1000, -1, -1, -1, 1) + payload
    crc = crc32c.crc32c(after_crc)
    return struct.pack(">qiib", 0, 4 + 1 + 4 + len(after_crc), -1, 2) + struct.pack(">I", crc) + after_crc


def legacy_bomb(codec: int) -> bytes:
    """A magic-1 wrapper whose inner message set (one message of 70 MiB of zeros) is compressed."""
    import zlib

    value_size = BOMB_MIB << 20
    head = struct.pack(">bbq", 1, 0, 1000) + struct.pack(">i", -1) + struct.pack(">i", value_size)
    crc = zlib.crc32(bytes(value_size), zlib.crc32(head))
    inner_head = struct.pack(">qiI", 0, len(head) + value_size + 4, crc) + head
    value = compressed(codec, [inner_head, *zeros(BOMB_MIB)])
    body = struct.pack(">bbq", 1, codec, 1000) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body


def produce_v8(port: int, topic: str, records: bytes) -> tuple[int, str | None]:
    """The partition's error code and message (Produce v8 carries the message)."""
    from gregor.protocol.messages import ProduceRequest, ProduceResponse

    request = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
    frame = exchange(port, encode_request(3, "t", request, 8))
    _, offset = decode_response_header(memoryview(frame), 0, 8)
    [partition] = ProduceResponse.decode(frame[offset:], 8).responses[0].partition_responses
    return partition.error_code, partition.error_message


@pytest.fixture(scope="module")
def compacted(broker):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("bombs", 1, 1, config={"cleanup.policy": "compact"})])["bombs"].result(10)
    return "bombs"


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=["gzip", "snappy", "lz4", "zstd"])
def test_a_compression_bomb_is_refused_with_corrupt_message_and_memory_stays_flat(broker, compacted, codec):
    """v2 batches are decompressed where records must be read: on a compacted topic (every record
    needs a key). Legacy v0/v1 sets always are (up-conversion); zstd has no legacy form, and Kafka
    answers a zstd wrapper UNSUPPORTED_COMPRESSION_TYPE."""
    from tests.interop.test_malformed import produce_v2

    before = rss_mib(broker.proc.pid)
    assert produce_v8(broker.port, compacted, v2_bomb(codec)) == (
        CORRUPT_MESSAGE, f"decompressed records exceed the {64 << 20}-byte limit")
    legacy = exchange(broker.port, produce_v2(compacted, legacy_bomb(codec)))
    pos = 8 + 2 + len(compacted) + 4 + 4
    expected = UNSUPPORTED_COMPRESSION_TYPE if codec == ZSTD else CORRUPT_MESSAGE
    assert struct.unpack_from(">h", legacy, pos)[0] == expected
    # another connection is served afterwards (opened now: one opened before the bombs may be
    # reaped as idle, connections.max.idle.ms being 5 s here, when a busy machine decompresses slowly)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as other:
        assert api_versions_on(other)
    assert rss_mib(broker.proc.pid) - before < 150  # the bound is 64 MiB; the bomb expands to 70 MiB each time
    assert high_watermark(broker.bootstrap, compacted) == 0


def test_creating_a_topic_named_after_the_metadata_log_is_an_invalid_request(broker):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    with pytest.raises(Exception) as refused:
        admin.create_topics([NewTopic("__cluster_metadata", 1, 1)])["__cluster_metadata"].result(10)
    assert refused.value.args[0].code() == 42  # INVALID_REQUEST
    assert "prohibited" in refused.value.args[0].str()
    create_topic(broker.bootstrap, "after-metadata-attempt")
    assert round_trip(broker.bootstrap, "after-metadata-attempt", 3) == [b"v0", b"v1", b"v2"]
