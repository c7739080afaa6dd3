"""Columnar produce (`send_columns`) against a real Gregor broker and tansu, read back by
librdkafka: rows from lists and from pyarrow tables land with their keys, values, headers and
timestamps, keyed rows on the partitions librdkafka picks (murmur2), in batches the broker and
librdkafka accept; plus the encoder itself against the record decoder of gregor.records."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest
from confluent_kafka import Producer as ConfluentProducer

from gregor.aio import Producer as AioProducer
from gregor.client import KafkaException
from gregor.client.producer import Producer
from gregor.client.producer.batch import ProducerBatch
from gregor.client.producer.columns import batch_bounds, encode_batches, record_columns
from gregor.records.batch import parse_header
from gregor.records.record import decode_records
from tests.client.test_producer import read_back


def decoded(columns, batch_size: int) -> list:
    """The records of the batches the encoder makes, decoded by gregor.records."""
    out = []
    for encoded in encode_batches(columns, batch_bounds(columns, batch_size)):
        data = ProducerBatch.of_encoded("t", 0, encoded, 0.0, 0).build(0)
        records = decode_records(data, 0, parse_header(data, 0), 1 << 30)
        assert [record.offset for record in records] == list(range(encoded.count))
        out.extend(records)
    return out


def test_the_encoder_writes_what_the_record_decoder_reads():
    values = [b"v%d" % index for index in range(900)] + [None, b"x" * 20_000, b""]
    keys = [None] * 450 + [b"k%d" % index for index in range(453)]
    headers = [{"a": b"1", "n": None} if index % 3 == 0 else None for index in range(903)]
    timestamps = [1_700_000_000_000 + index * 10_000 for index in range(903)]  # deltas past 2 varint bytes
    records = decoded(record_columns(values, keys, timestamps=timestamps, headers=headers), 16_384)
    assert [(r.key, r.value, r.timestamp) for r in records] == list(zip(keys, values, timestamps))
    assert records[3].headers == [("a", b"1"), ("n", None)] and records[4].headers == []


def test_batches_are_cut_near_batch_size_and_a_table_gives_the_columns():
    table = pa.table({"value": pa.array(["é" * 50] * 1000), "key": pa.array([b"k"] * 1000),
                      "timestamp": pa.array([5] * 1000, pa.timestamp("ms"))})
    columns = record_columns(table)
    bounds = batch_bounds(columns, 16_384)
    assert len(bounds) > 5 and bounds[0][0] == 0 and bounds[-1][1] == 1000
    encoded = encode_batches(columns, bounds)
    assert all(len(batch.records) <= 16_384 for batch in encoded)
    records = decoded(columns, 16_384)
    assert {(r.key, r.value, r.timestamp) for r in records} == {(b"k", "é".encode() * 50, 5)}


def test_bad_columns_are_refused_with_the_argument_named():
    with pytest.raises(TypeError, match="values"):
        record_columns("abc")
    with pytest.raises(TypeError, match="values"):
        record_columns([1, 2])
    with pytest.raises(ValueError, match="keys has 1 rows and values 2"):
        record_columns([b"a", b"b"], [b"k"])
    with pytest.raises(TypeError, match="timestamps"):
        record_columns([b"a"], timestamps=pa.array(["x"]))
    with pytest.raises(ValueError, match="'value' column"):
        record_columns(pa.table({"key": [b"k"]}))


@pytest.mark.interop
def test_columns_land_as_librdkafka_reads_them(peer, topic_factory):
    topic = topic_factory(3)
    values = [b"value-%d" % index for index in range(300)]
    keys = [b"key-%d" % index for index in range(300)]
    oracle = ConfluentProducer({"bootstrap.servers": peer.bootstrap, "partitioner": "murmur2_random"})
    expected: dict[bytes, int] = {}

    def delivered(error, message) -> None:
        expected[message.key()] = message.partition()

    for key in keys:
        oracle.produce(topic, b"oracle", key=key, on_delivery=delivered)
    assert oracle.flush(20) == 0
    with Producer(bootstrap_servers=peer.bootstrap, batch_size=2000) as producer:
        landed = producer.send_columns(topic, values, keys, timestamps=[1_700_000_000_000 + i for i in range(300)],
                                       headers=[[("h", b"%d" % i)] for i in range(300)]).get(20)
        assert sum(batch.record_count for batch in landed) == 300 and len(landed) > 3
        keyless = producer.send_columns(topic, pa.table({"value": pa.array([b"plain"] * 50),
                                                         "partition": pa.array([2] * 50)})).get(20)
        assert [(batch.partition, batch.record_count) for batch in keyless] == [(2, 50)]
        with pytest.raises(KafkaException, match="partition 7 of topic"):
            producer.send_columns(topic, [b"x"], partition=7)
    messages = [m for m in read_back(peer.bootstrap, topic, [0, 1, 2], 650) if m.value() != b"oracle"]
    mine = {m.key(): (m.partition(), m.value(), m.timestamp()[1], m.headers()) for m in messages if m.key()}
    assert {key: partition for key, (partition, *_) in mine.items()} == expected
    assert mine[b"key-7"][1:] == (b"value-7", 1_700_000_000_007, [("h", b"7")])
    assert sum(1 for m in messages if m.value() == b"plain" and m.partition() == 2) == 50


@pytest.mark.interop
def test_async_columns_and_records_keep_their_order(peer, topic_factory):
    topic = topic_factory()

    async def main() -> None:
        async with AioProducer(bootstrap_servers=peer.bootstrap, linger_ms=50) as producer:
            first = await producer.enqueue(topic, b"before", partition=0)
            landed = await producer.send_columns(topic, [b"c%d" % index for index in range(100)], partition=0)
            after = await producer.send(topic, b"after", partition=0)
            assert (await first).offset == 0 and landed[0].base_offset == 1 and after.offset == 101

    asyncio.run(main())
    assert [m.value() for m in read_back(peer.bootstrap, topic, 0, 102)] == \
        [b"before", *(b"c%d" % index for index in range(100)), b"after"]
