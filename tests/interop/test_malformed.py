"""Malformed frames get Kafka's error codes or a closed connection; the broker carries on.

The batch bytes here are built by hand with the crc32c package, independently of gregor.records.
"""

from __future__ import annotations

import socket
import struct

import crc32c
import pytest

from tests.broker_process import api_versions_ok

pytestmark = pytest.mark.interop


def raw_batch(count: int = 1, last_offset_delta: int | None = None, corrupt_crc: bool = False) -> bytes:
    records = b""
    for i in range(count):
        body = b"\x00" + b"\x00" + bytes([i * 2]) + b"\x01" + b"\x06" + b"abc" + b"\x00"
        records += bytes([len(body) * 2]) + body
    delta = count - 1 if last_offset_delta is None else last_offset_delta
    after_crc = struct.pack(">hiqqqhii", 0, delta, 1000, 1000, -1, -1, -1, count) + records
    crc = crc32c.crc32c(after_crc) ^ (1 if corrupt_crc else 0)
    return struct.pack(">qiib", 0, 4 + 1 + 4 + len(after_crc), -1, 2) + struct.pack(">I", crc) + after_crc


def produce_v3(topic: str, records: bytes) -> bytes:
    body = struct.pack(">hhih", 0, 3, 7, 1) + b"t" + struct.pack(">hhi", -1, 1, 5000)
    body += struct.pack(">ih", 1, len(topic)) + topic.encode() + struct.pack(">iii", 1, 0, len(records)) + records
    return struct.pack(">i", len(body)) + body


def exchange(port: int, frame: bytes) -> bytes | None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(frame)
        header = sock.recv(4)
        if len(header) < 4:
            return None
        size = struct.unpack(">i", header)[0]
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                return None
            data += chunk
        return data


def produce_error(port: int, topic: str, records: bytes) -> int:
    response = exchange(port, produce_v3(topic, records))
    pos = 4 + 4
    name_length = struct.unpack_from(">h", response, pos)[0]
    pos += 2 + name_length + 4 + 4
    return struct.unpack_from(">h", response, pos)[0]


def high_watermark(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "x"})
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.close()
    return high


@pytest.fixture
def topic(broker):
    from confluent_kafka.admin import AdminClient, NewTopic
    name = "malformed"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(name, 1, 1)])
    for future in futures.values():
        try:
            future.result()
        except Exception:
            pass
    return name


@pytest.mark.parametrize("frame", [
    struct.pack(">i", -5),
    struct.pack(">i", 200 * 1024 * 1024),
    struct.pack(">i", 4) + struct.pack(">hh", 999, 0),
    struct.pack(">i", 10) + struct.pack(">hhih", 3, 1, 1, -1),
    struct.pack(">i", 14) + struct.pack(">hhih", 3, 1, 1, -1) + struct.pack(">i", 0x7FFFFFFF),
], ids=["negative-size", "over-socket.request.max.bytes", "unknown-api-key", "truncated-body", "array-larger-than-frame"])
def test_bad_frames_close_the_connection_and_the_broker_carries_on(broker, frame):
    assert exchange(broker.port, frame) is None
    assert api_versions_ok(broker.port)


def test_unsupported_api_versions_version_gets_the_v0_fallback(broker):
    body = struct.pack(">hhih", 18, 99, 42, -1) + b"\x00"
    response = exchange(broker.port, struct.pack(">i", len(body)) + body)
    correlation, error, count = struct.unpack_from(">ihi", response)
    assert (correlation, error) == (42, 35)
    entries = [struct.unpack_from(">hhh", response, 10 + 6 * i) for i in range(count)]
    assert (18, 0, 4) in entries


@pytest.mark.parametrize("records,expected", [
    (raw_batch(3, corrupt_crc=True), 2),
    (raw_batch(3, last_offset_delta=7), 87),
    (raw_batch(2)[:-5], 2),
], ids=["bad-crc", "lying-last-offset-delta", "truncated-batch"])
def test_bad_batches_are_refused_and_nothing_is_appended(broker, topic, records, expected):
    before = high_watermark(broker.bootstrap, topic)
    assert produce_error(broker.port, topic, records) == expected
    assert high_watermark(broker.bootstrap, topic) == before
    assert produce_error(broker.port, topic, raw_batch(2)) == 0
    assert high_watermark(broker.bootstrap, topic) == before + 2


def legacy_gzip_bomb(expanded_bytes: int) -> bytes:
    """A magic-1 gzip wrapper whose inner message set inflates to `expanded_bytes` (built by hand)."""
    import gzip
    import zlib

    value = bytes(expanded_bytes)
    inner_body = struct.pack(">bbq", 1, 0, 1000) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    inner = struct.pack(">qiI", 0, len(inner_body) + 4, zlib.crc32(inner_body)) + inner_body
    compressed = gzip.compress(inner, compresslevel=9)
    body = struct.pack(">bbq", 1, 1, 1000) + struct.pack(">i", -1) + struct.pack(">i", len(compressed)) + compressed
    return struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body


def produce_v2(topic: str, records: bytes) -> bytes:
    body = struct.pack(">hhih", 0, 2, 7, 1) + b"t" + struct.pack(">hi", 1, 5000)
    body += struct.pack(">ih", 1, len(topic)) + topic.encode() + struct.pack(">iii", 1, 0, len(records)) + records
    return struct.pack(">i", len(body)) + body


def test_a_compression_bomb_is_refused_not_expanded(broker, topic):
    bomb = legacy_gzip_bomb(100 * 1024 * 1024)
    assert len(bomb) < 200_000
    before = high_watermark(broker.bootstrap, topic)
    response = exchange(broker.port, produce_v2(topic, bomb))
    pos = 4 + 4
    name_length = struct.unpack_from(">h", response, pos)[0]
    pos += 2 + name_length + 4 + 4
    assert struct.unpack_from(">h", response, pos)[0] == 2  # CORRUPT_MESSAGE
    assert high_watermark(broker.bootstrap, topic) == before
    assert api_versions_ok(broker.port)
