"""Gregor's Consumer against a real Gregor broker and against tansu, with confluent-kafka
(librdkafka) writing the records: an independent producer of the bytes it must read.

tansu 0.6 answers the JoinGroup that follows MEMBER_ID_REQUIRED only once the session timeout
of the placeholder member it created has passed (librdkafka waits just as long), so the group
tests use a 6 s session timeout there.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Producer as ConfluentProducer

from gregor.client import KafkaException, TopicPartition
from gregor.client.consumer import Consumer, OffsetAndMetadata, RecordDeserializationError, WakeupException
from gregor.client.interceptors import ConsumerInterceptor
from tests.client.group_helpers import RebalanceCalls, poll_until

pytestmark = pytest.mark.interop



@pytest.fixture
def consumer_factory(peer):
    made = []

    def make(**config):
        consumer = Consumer({"bootstrap.servers": peer.bootstrap}, **config)
        made.append(consumer)
        return consumer
    yield make
    for consumer in made:
        consumer.close(5)


def produce(bootstrap: str, topic: str, count: int, *, partition: int | None = 0, start: int = 0,
            compression: str = "none", **extra) -> None:
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 5})
    for index in range(start, start + count):
        kwargs = dict(key=b"key-%d" % index, value=b"value-%d" % index, timestamp=1_700_000_000_000 + index,
                      headers=[("h", b"%d" % index)], **extra)
        if partition is not None:
            kwargs["partition"] = partition
        producer.produce(topic, **kwargs)
    assert producer.flush(20) == 0


def drain(consumer: Consumer, count: int, timeout: float = 20) -> list:
    records = []
    deadline = time.monotonic() + timeout
    while len(records) < count and time.monotonic() < deadline:
        records.extend(consumer.poll(0.5))
    return records


def test_assigned_partition_is_read_with_keys_values_headers_and_timestamps(peer, topic_factory, consumer_factory):
    topic = topic_factory()
    produce(peer.bootstrap, topic, 30)
    consumer = consumer_factory(auto_offset_reset="earliest")
    consumer.assign([(topic, 0)])
    records = drain(consumer, 30)
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in records] == [
        (i, b"key-%d" % i, b"value-%d" % i, 1_700_000_000_000 + i, [("h", b"%d" % i)]) for i in range(30)]
    assert consumer.position((topic, 0)) == 30


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_records_from_librdkafka_are_read(peer, topic_factory, consumer_factory, codec):
    topic = topic_factory()
    produce(peer.bootstrap, topic, 300, compression=codec)
    consumer = consumer_factory(auto_offset_reset="earliest", max_poll_records=50)
    consumer.assign([(topic, 0)])
    records = drain(consumer, 300)
    assert [r.value for r in records] == [b"value-%d" % i for i in range(300)]


def test_group_commits_and_a_new_member_resumes_from_them(peer, topic_factory, consumer_factory):
    topic = topic_factory(2)
    produce(peer.bootstrap, topic, 20, partition=0)
    produce(peer.bootstrap, topic, 20, partition=1, start=100)
    group = f"g-{uuid.uuid4().hex[:6]}"
    first = consumer_factory(group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=peer.session_timeout_ms)
    first.subscribe([topic])
    assert len(drain(first, 40, timeout=30)) == 40
    assert first.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    first.commit({(topic, 0): 15, (topic, 1): OffsetAndMetadata(5, "note")})
    committed = first.committed([(topic, 0), (topic, 1)])
    assert {partition: value.offset for partition, value in committed.items()} == {
        TopicPartition(topic, 0): 15, TopicPartition(topic, 1): 5}
    if peer.kind == "gregor":  # tansu 0.6 drops the metadata of a member's commit
        assert committed[TopicPartition(topic, 1)].metadata == "note"
    first.close()
    second = consumer_factory(group_id=group, auto_offset_reset="earliest", session_timeout_ms=peer.session_timeout_ms)
    second.subscribe([topic])
    records = drain(second, 20, timeout=30)
    assert sorted((r.partition, r.offset) for r in records) == sorted(
        [(0, offset) for offset in range(15, 20)] + [(1, offset) for offset in range(5, 20)])


def test_auto_offset_reset_latest_and_none(peer, topic_factory, consumer_factory):
    peer.lacks("record offsets in ListOffsets (it answers batch positions)")
    topic = topic_factory()
    produce(peer.bootstrap, topic, 5)
    latest = consumer_factory(group_id=f"g-{uuid.uuid4().hex[:6]}")
    latest.assign([(topic, 0)])
    assert latest.position((topic, 0)) == 5
    strict = consumer_factory(group_id=f"g-{uuid.uuid4().hex[:6]}", auto_offset_reset="none")
    strict.assign([(topic, 0)])
    with pytest.raises(KafkaException, match="auto.offset.reset is none"):
        strict.poll(1)


def test_seek_positions_and_offset_lookups(peer, topic_factory, consumer_factory):
    peer.lacks("record offsets in ListOffsets (it answers batch positions)")
    topic = topic_factory()
    produce(peer.bootstrap, topic, 10)
    consumer = consumer_factory(auto_offset_reset="earliest")
    consumer.assign([(topic, 0)])
    consumer.seek((topic, 0), 7)
    assert [r.offset for r in drain(consumer, 3)] == [7, 8, 9]
    consumer.seek_to_beginning()
    assert consumer.position((topic, 0)) == 0
    consumer.seek_to_end([(topic, 0)])
    assert consumer.position((topic, 0)) == 10
    assert consumer.beginning_offsets([(topic, 0)]) == {TopicPartition(topic, 0): 0}
    assert consumer.end_offsets([(topic, 0)]) == {TopicPartition(topic, 0): 10}
    found = consumer.offsets_for_times({(topic, 0): 1_700_000_000_004})[TopicPartition(topic, 0)]
    assert (found.offset, found.timestamp) == (4, 1_700_000_000_004)
    assert consumer.offsets_for_times({(topic, 0): 1_800_000_000_000})[TopicPartition(topic, 0)] is None


def test_pause_and_resume(peer, topic_factory, consumer_factory):
    topic = topic_factory(2)
    produce(peer.bootstrap, topic, 5, partition=0)
    produce(peer.bootstrap, topic, 5, partition=1)
    consumer = consumer_factory(auto_offset_reset="earliest")
    consumer.assign([(topic, 0), (topic, 1)])
    consumer.pause([(topic, 1)])
    assert consumer.paused() == {TopicPartition(topic, 1)}
    records = drain(consumer, 5, timeout=3)
    assert {r.partition for r in records} == {0}
    consumer.resume([(topic, 1)])
    assert {r.partition for r in drain(consumer, 5)} == {1}


def test_deserializers_and_a_record_they_refuse(peer, topic_factory, consumer_factory):
    topic = topic_factory()
    producer = ConfluentProducer({"bootstrap.servers": peer.bootstrap})
    for value in (b'{"n": 1}', b"not json", b'{"n": 3}'):
        producer.produce(topic, value=value, key="é".encode(), partition=0)
    assert producer.flush(10) == 0
    consumer = consumer_factory(auto_offset_reset="earliest", key_deserializer="str", value_deserializer="json")
    consumer.assign([(topic, 0)])
    first = drain(consumer, 1)
    assert [(r.key, r.value) for r in first] == [("é", {"n": 1})]
    with pytest.raises(RecordDeserializationError) as raised:
        drain(consumer, 1)
    assert raised.value.offset == 1 and f"{topic}-0" in str(raised.value)
    consumer.seek((topic, 0), raised.value.offset + 1)
    assert [r.value for r in drain(consumer, 1)] == [{"n": 3}]


def test_interceptors_see_polls_and_commits(peer, topic_factory, consumer_factory):
    topic = topic_factory()
    produce(peer.bootstrap, topic, 3)
    commits = []

    class Count(ConsumerInterceptor):
        def on_consume(self, records):
            for record in records:
                record.value = record.value.upper()
            return records

        def on_commit(self, offsets):
            commits.append(dict(offsets))

    consumer = consumer_factory(group_id=f"g-{uuid.uuid4().hex[:6]}", auto_offset_reset="earliest",
                                enable_auto_commit=False, interceptor_classes=[Count()])
    consumer.assign([(topic, 0)])
    assert [r.value for r in drain(consumer, 3)] == [b"VALUE-0", b"VALUE-1", b"VALUE-2"]
    consumer.commit()
    assert commits == [{TopicPartition(topic, 0): OffsetAndMetadata(3, "", commits[0][TopicPartition(topic, 0)].leader_epoch)}]


def test_wakeup_interrupts_a_poll_from_another_thread(topic_factory, consumer_factory):
    topic = topic_factory()
    consumer = consumer_factory()
    consumer.assign([(topic, 0)])
    consumer.poll(0.5)
    timer = threading.Timer(0.3, consumer.wakeup)
    timer.start()
    with pytest.raises(WakeupException):
        consumer.poll(30)
    timer.join()
    consumer.poll(0)


def test_wakeup_returns_when_called_by_the_thread_inside_poll(topic_factory, consumer_factory):
    """A signal handler runs on the thread it interrupted, possibly while poll holds the fetch
    lock: wakeup() from the handler must not wait for that lock (it waited for itself forever,
    and the console consumer ignored a Ctrl-C)."""
    topic = topic_factory()
    consumer = consumer_factory()
    returned = threading.Event()

    def interrupted_inside_poll() -> None:
        with consumer._fetcher.data_ready:
            consumer.wakeup()
            returned.set()

    threading.Thread(target=interrupted_inside_poll, daemon=True).start()
    assert returned.wait(5), "wakeup() waited for a lock its own thread holds"
    consumer.assign([(topic, 0)])
    with pytest.raises(WakeupException):
        consumer.poll(5)


def test_a_second_thread_is_refused_while_one_is_inside(topic_factory, consumer_factory):
    topic = topic_factory()
    consumer = consumer_factory()
    consumer.assign([(topic, 0)])
    consumer.poll(0.2)
    errors = []
    inside = threading.Thread(target=lambda: consumer.poll(2))
    inside.start()
    time.sleep(0.3)
    try:
        consumer.poll(0)
    except KafkaException as error:
        errors.append(error)
    inside.join()
    assert len(errors) == 1 and "not safe for multi-threaded access" in str(errors[0])


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_members_share_six_partitions_and_rebalance_when_one_leaves(peer, topic_factory, consumer_factory,
                                                                          strategy):
    peer.lacks("a prompt JoinGroup after MEMBER_ID_REQUIRED (each join waits out a session timeout)")
    topic = topic_factory(6)
    group = f"g-{uuid.uuid4().hex[:6]}"
    listeners = [RebalanceCalls() for _ in range(3)]
    consumers = [consumer_factory(group_id=group, partition_assignment_strategy=[strategy],
                                  session_timeout_ms=peer.session_timeout_ms, heartbeat_interval_ms=500)
                 for _ in range(3)]
    for consumer, listener in zip(consumers, listeners):
        consumer.subscribe([topic], listener=listener)
    poll_until(consumers, lambda: sorted(len(c.assignment()) for c in consumers) == [2, 2, 2], timeout=60)
    assert set().union(*(c.assignment() for c in consumers)) == {TopicPartition(topic, p) for p in range(6)}
    kept = [consumers[0].assignment(), consumers[1].assignment()]
    before = [len(listener.calls) for listener in listeners]
    consumers[2].close()
    poll_until(consumers[:2], lambda: sorted(len(c.assignment()) for c in consumers[:2]) == [3, 3], timeout=60)
    for index in range(2):
        calls = listeners[index].calls[before[index]:]
        if strategy == "range":
            assert calls[0] == ("revoked", kept[index]) and calls[-1] == ("assigned", consumers[index].assignment())
        else:
            assert kept[index] <= consumers[index].assignment()
            assert all(name != "revoked" or not (partitions & kept[index]) for name, partitions in calls)
    assert listeners[2].calls[-1][0] == "revoked"


def test_a_rebalance_that_finishes_between_polls_is_taken_by_the_next_poll(peer, topic_factory, consumer_factory):
    """poll(0) leaves the JoinGroup/SyncGroup running on the network thread; when it ends while
    the application is busy elsewhere, the next poll must still take the assignment."""
    topic = topic_factory(2)
    consumer = consumer_factory(group_id=f"g-{uuid.uuid4().hex[:6]}", session_timeout_ms=peer.session_timeout_ms)
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0)
        time.sleep(0.2)
    assert consumer.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}


@pytest.mark.slow
def test_a_member_that_stops_polling_leaves_and_rejoins_on_its_next_poll(peer, topic_factory, consumer_factory):
    peer.lacks("a prompt JoinGroup after MEMBER_ID_REQUIRED (each join waits out a session timeout)")
    topic = topic_factory(2)
    group = f"g-{uuid.uuid4().hex[:6]}"
    slow = consumer_factory(group_id=group, max_poll_interval_ms=1500, session_timeout_ms=10_000,
                            heartbeat_interval_ms=200)
    other = consumer_factory(group_id=group, session_timeout_ms=10_000, heartbeat_interval_ms=200)
    slow.subscribe([topic])
    other.subscribe([topic])
    poll_until([slow, other], lambda: len(slow.assignment()) == 1 and len(other.assignment()) == 1)
    poll_until([other], lambda: len(other.assignment()) == 2, timeout=30)
    poll_until([slow, other], lambda: len(slow.assignment()) == 1 and len(other.assignment()) == 1)


def test_subscribing_to_a_missing_topic_creates_it_unless_allow_auto_create_topics_is_false(peer, admin,
                                                                                            consumer_factory):
    created, untouched = f"auto-{uuid.uuid4().hex[:8]}", f"auto-{uuid.uuid4().hex[:8]}"
    consumer = consumer_factory(group_id=f"g-{uuid.uuid4().hex[:6]}", session_timeout_ms=peer.session_timeout_ms)
    consumer.subscribe([created])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment() and {partition.topic for partition in consumer.assignment()} == {created}
    refusing = consumer_factory(allow_auto_create_topics=False)
    refusing.assign([(untouched, 0)])
    with pytest.raises(KafkaException):
        refusing.position((untouched, 0), timeout=2)
    assert created in admin.list_topics() and untouched not in admin.list_topics()
