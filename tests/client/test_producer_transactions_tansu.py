"""Gregor's transactional producer against tansu (a broker nobody here wrote): tansu 0.6 answers
InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and
EndTxn, so the whole protocol flow runs there. It does not hide aborted records from read_committed
consumers (librdkafka's consumer sees them too), so visibility is tested against Gregor only
(tests/interop/test_client_transactions.py)."""

from __future__ import annotations

import time
import uuid

from gregor.client import AdminClient, Consumer, ConsumerGroupMetadata, Producer, TopicPartition
from gregor.client.admin import NewTopic


def test_the_transactional_protocol_flow_runs_against_tansu(tansu):
    topic = f"tx-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap})
    try:
        admin.create_topics([NewTopic(topic, 1, 1)], timeout=20)
    finally:
        admin.close()
    producer = Producer({"bootstrap.servers": tansu.bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        committed = producer.send(topic, b"committed")
        producer.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, ConsumerGroupMetadata("tansu-group"))
        producer.commit_transaction(30)
        assert committed.get(1).offset == 0
        producer.begin_transaction()
        producer.send(topic, b"aborted")
        producer.abort_transaction(30)
    finally:
        producer.close()
    consumer = Consumer({"bootstrap.servers": tansu.bootstrap, "auto.offset.reset": "earliest"})
    consumer.assign([(topic, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 15
    try:
        while b"committed" not in values and time.monotonic() < deadline:
            values.extend(record.value for record in consumer.poll(0.3))
    finally:
        consumer.close()
    assert values[0] == b"committed"
