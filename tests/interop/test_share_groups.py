"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka), the real peer.

Every record goes to exactly one of the consumers sharing a partition; records released, or
left unacknowledged by a consumer killed with -9, come back to another with their delivery count
raised; rejected records never come back; a record released `group.share.delivery.count.limit`
times is archived; the share state survives a broker restart. Acknowledging a record the member
does not hold is refused per partition with INVALID_RECORD_STATE (over the wire, with Gregor's
codec: librdkafka refuses to send such an acknowledgement itself).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    MetadataRequest, MetadataResponse, RequestHeader, ShareAcknowledgeRequest, ShareAcknowledgeResponse,
    ShareFetchRequest, ShareFetchResponse,
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
)
from tests.broker_process import BrokerProcess
from tests.share_close import close_share_consumer

pytestmark = pytest.mark.interop

LOCK_MS = 3000
DELIVERY_LIMIT = 3
SETTINGS = {"share.auto.offset.reset": "earliest", "group.share.record.lock.duration.ms": str(LOCK_MS),
            "group.share.delivery.count.limit": str(DELIVERY_LIMIT), "group.share.heartbeat.interval.ms": "500",
            "group.share.session.timeout.ms": "6000", "share.coordinator.state.topic.num.partitions": "3",
            "offsets.topic.num.partitions": "3"}


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("gregor-share") / "data"), SETTINGS)
    process.start()
    yield process
    process.stop()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def produce(bootstrap: str, topic: str, count: int, partitions: int, start: int = 0, **config) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, **config})
    for i in range(start, start + count):
        producer.produce(topic, value=b"record-%d" % i, partition=i % partitions)
    assert producer.flush(15) == 0


def share_consumer(bootstrap: str, group: str, topic: str, **extra) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})
    consumer.subscribe([topic])
    return consumer


def poll_until(consumer: ShareConsumer, done, timeout: float, on_message=None) -> list:
    """Poll until `done(received)` holds; every message received, in order."""
    received = []
    deadline = time.monotonic() + timeout
    while not done(received):
        if time.monotonic() > deadline:
            seen = [(m.partition(), m.offset(), m.delivery_count()) for m in received]
            raise AssertionError(f"timed out after {timeout:.0f} s; received {seen}")
        for message in consumer.poll(0.2):
            assert message.error() is None, message.error()
            received.append(message)
            if on_message is not None:
                on_message(message)
    return received


@pytest.mark.slow
def test_three_consumers_on_two_partitions_each_record_to_exactly_one(share_broker):
    bootstrap = share_broker.bootstrap
    create_topic(bootstrap, "queue", 2)
    consumers = [share_consumer(bootstrap, "workers", "queue", **{"max.poll.records": 3}) for _ in range(3)]
    try:
        for consumer in consumers:  # join before the records exist, so the records spread
            consumer.poll(0.5)
        time.sleep(1.5)
        for consumer in consumers:
            consumer.poll(0.1)
        # small batches: a share fetch acquires whole batches, max.poll.records is a soft limit
        produce(bootstrap, "queue", 90, 2, **{"batch.num.messages": 3})
        seen: dict[tuple[int, int], list[int]] = {}
        deadline = time.monotonic() + 60
        while sum(len(v) for v in seen.values()) < 90:
            assert time.monotonic() < deadline, f"received {len(seen)} distinct records of 90"
            for index, consumer in enumerate(consumers):
                for message in consumer.poll(0.1):
                    assert message.error() is None, message.error()
                    seen.setdefault((message.partition(), message.offset()), []).append(index)
        assert sorted(seen) == sorted((i % 2, i // 2) for i in range(90))
        duplicates = {key: who for key, who in seen.items() if len(who) > 1}
        assert not duplicates, f"records delivered more than once: {duplicates}"
        per_consumer = [sum(1 for who in seen.values() if who == [i]) for i in range(3)]
        assert all(count > 0 for count in per_consumer), per_consumer
    finally:
        for consumer in consumers:
            close_share_consumer(consumer)


@pytest.mark.slow
def test_records_of_a_killed_consumer_go_to_another_with_their_delivery_count(share_broker):
    bootstrap = share_broker.bootstrap
    create_topic(bootstrap, "orphans", 1)
    produce(bootstrap, "orphans", 10, 1)
    member = subprocess.Popen([sys.executable, "-m", "tests.interop.share_member", "--bootstrap", bootstrap,
                               "--topic", "orphans", "--group", "orphans-group"],
                              stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    held: list[int] = []
    try:
        reader = threading.Thread(target=lambda: held.extend(json.loads(line)["record"][1] for line in member.stdout),
                                  daemon=True)
        reader.start()
        deadline = time.monotonic() + 30
        while not held:
            assert time.monotonic() < deadline, "the member to be killed received nothing"
            time.sleep(0.05)
    finally:
        member.kill()
        member.wait()
    killed_held = set(held)
    survivor = share_consumer(bootstrap, "orphans-group", "orphans", **{"share.acknowledgement.mode": "explicit"})
    try:
        def accept(message):
            survivor.acknowledge(message, AcknowledgeType.ACCEPT)

        received = poll_until(survivor, lambda got: {m.offset() for m in got} >= set(range(10)), 40, accept)
        survivor.commit_sync()
    finally:
        close_share_consumer(survivor)
    counts = {m.offset(): m.delivery_count() for m in received}
    assert killed_held and all(counts[offset] >= 2 for offset in killed_held), (killed_held, counts)
    assert all(counts[offset] == 1 for offset in set(range(10)) - killed_held), counts


def test_released_records_return_and_rejected_ones_never_do(share_broker):
    bootstrap = share_broker.bootstrap
    create_topic(bootstrap, "verdicts", 1)
    produce(bootstrap, "verdicts", 9, 1)
    consumer = share_consumer(bootstrap, "judges", "verdicts", **{"share.acknowledgement.mode": "explicit"})
    try:
        verdict = {0: AcknowledgeType.RELEASE, 1: AcknowledgeType.REJECT, 2: AcknowledgeType.ACCEPT}
        first = poll_until(consumer, lambda got: len(got) >= 9, 30,
                           lambda m: consumer.acknowledge(m, verdict[m.offset() % 3]))
        consumer.commit_sync()
        assert {m.offset() for m in first} == set(range(9)) and all(m.delivery_count() == 1 for m in first)
        produce(bootstrap, "verdicts", 1, 1, start=9)
        again = poll_until(consumer, lambda got: {m.offset() for m in got} >= {0, 3, 6, 9}, 30,
                           lambda m: consumer.acknowledge(m, AcknowledgeType.ACCEPT))
        consumer.commit_sync()
        counts = {m.offset(): m.delivery_count() for m in again}
        assert counts == {0: 2, 3: 2, 6: 2, 9: 1}, counts
        for _ in range(10):
            assert not [m for m in consumer.poll(0.2)], "an accepted or rejected record came back"
    finally:
        close_share_consumer(consumer)


def test_a_poison_record_is_archived_at_the_delivery_count_limit(share_broker):
    bootstrap = share_broker.bootstrap
    create_topic(bootstrap, "poison", 1)
    produce(bootstrap, "poison", 3, 1)
    consumer = share_consumer(bootstrap, "poisoned", "poison", **{"share.acknowledgement.mode": "explicit"})
    deliveries: list[int] = []
    try:
        def handle(message):
            if message.offset() == 0:
                deliveries.append(message.delivery_count())
                consumer.acknowledge(message, AcknowledgeType.RELEASE)
            else:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)

        poll_until(consumer, lambda got: len(deliveries) >= DELIVERY_LIMIT, 30, handle)
        consumer.commit_sync()
        for _ in range(10):
            for message in consumer.poll(0.2):
                handle(message)
        assert deliveries == list(range(1, DELIVERY_LIMIT + 1)), deliveries
    finally:
        close_share_consumer(consumer)


@pytest.mark.slow
def test_share_state_survives_a_broker_restart(tmp_path):
    process = BrokerProcess(str(tmp_path / "data"), SETTINGS)
    process.start()
    try:
        create_topic(process.bootstrap, "durable", 1)
        produce(process.bootstrap, "durable", 6, 1)
        consumer = share_consumer(process.bootstrap, "keepers", "durable", **{"share.acknowledgement.mode": "explicit"})
        try:
            got = poll_until(consumer, lambda got: len(got) >= 6, 30,
                             lambda m: consumer.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() < 3
                                                            else AcknowledgeType.RELEASE))
            consumer.commit_sync()
            assert {m.offset() for m in got} == set(range(6))
        finally:
            close_share_consumer(consumer)
        process.stop()
        process.start()
        consumer = share_consumer(process.bootstrap, "keepers", "durable")
        try:
            got = poll_until(consumer, lambda got: len(got) >= 3, 30)
            for _ in range(5):
                got.extend(consumer.poll(0.2))
        finally:
            close_share_consumer(consumer)
        assert sorted((m.offset(), m.delivery_count()) for m in got) == [(3, 2), (4, 2), (5, 2)]
    finally:
        process.stop()


class _Wire:
    """One connection speaking Gregor's generated codec, for requests librdkafka will not send."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.correlation = 0

    def call(self, request, response_type, api_key: int, version: int = 1):
        self.correlation += 1
        header = RequestHeader(request_api_key=api_key, request_api_version=version,
                               correlation_id=self.correlation, client_id="wire")
        body = header.encode(2) + request.encode(version)  # every API used here is flexible
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", self._read(4))[0]
        data = self._read(size)
        return response_type.decode(data[5:], version)  # correlation id, empty tagged fields

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            assert chunk, "connection closed"
            data += chunk
        return data


def _join(wire: _Wire, group: str, member: str, topic: str) -> None:
    """Join a share group as a client does: find the coordinator (which creates
    __consumer_offsets) and send the first heartbeat until the coordinator has loaded."""
    deadline = time.monotonic() + 30
    while True:
        wire.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), FindCoordinatorResponse, 10, 4)
        answer = wire.call(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0,
                                                      subscribed_topic_names=[topic]), ShareGroupHeartbeatResponse, 76)
        if answer.error_code not in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                                     ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) or time.monotonic() > deadline:
            assert answer.error_code == 0, answer
            return
        time.sleep(0.2)


def test_acknowledging_a_record_the_member_does_not_hold_is_refused(share_broker):
    bootstrap = share_broker.bootstrap
    create_topic(bootstrap, "strict", 1)
    produce(bootstrap, "strict", 2, 1)  # two batches: a fetch with MaxRecords 2 acquires the first
    produce(bootstrap, "strict", 2, 1, start=2)
    wire = _Wire(share_broker.port)
    metadata = wire.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="strict")]),
                         MetadataResponse, 3, 12)
    topic_uuid = metadata.topics[0].topic_id
    for name in ("alice", "bob"):
        _join(wire, "strict-group", name, "strict")
    part = ShareFetchRequest.FetchPartition(partition_index=0, acknowledgement_batches=[])
    fetched = wire.call(ShareFetchRequest(group_id="strict-group", member_id="alice", share_session_epoch=0,
                                          max_wait_ms=2000, min_bytes=1, max_bytes=1 << 20, max_records=2,
                                          batch_size=2, topics=[ShareFetchRequest.FetchTopic(topic_id=topic_uuid,
                                                                                              partitions=[part])]),
                        ShareFetchResponse, 78)
    (acquired,) = fetched.responses[0].partitions
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in acquired.acquired_records] == [(0, 1, 1)]
    wire.call(ShareFetchRequest(group_id="strict-group", member_id="bob", share_session_epoch=0, max_wait_ms=0,
                                min_bytes=1, max_bytes=1 << 20, max_records=0, batch_size=0,
                                topics=[ShareFetchRequest.FetchTopic(topic_id=topic_uuid, partitions=[part])]),
              ShareFetchResponse, 78)
    refused = wire.call(_accept_offsets_0_to_1("bob", topic_uuid), ShareAcknowledgeResponse, 79)
    assert refused.error_code == 0
    assert refused.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
    accepted = wire.call(_accept_offsets_0_to_1("alice", topic_uuid), ShareAcknowledgeResponse, 79)
    assert accepted.responses[0].partitions[0].error_code == 0


def _accept_offsets_0_to_1(member: str, topic_id, group: str = "strict-group",
                           epoch: int = 1) -> ShareAcknowledgeRequest:
    batch = ShareAcknowledgeRequest.AcknowledgementBatch(first_offset=0, last_offset=1, acknowledge_types=[1])
    return ShareAcknowledgeRequest(group_id=group, member_id=member, share_session_epoch=epoch, topics=[
        ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=topic_id, partitions=[
            ShareAcknowledgeRequest.AcknowledgePartition(partition_index=0, acknowledgement_batches=[batch])])])


def test_acknowledgements_closing_a_session_after_the_members_leave_are_applied(share_broker):
    """A closing client sends its leave (ShareGroupHeartbeat, epoch -1) to the coordinator and its
    last acknowledgements (ShareAcknowledge, epoch -1) to the leader at once, as librdkafka does;
    handled in that order, the leave must not drop the share session: the acknowledgements are
    applied and the accepted records never come back."""
    create_topic(share_broker.bootstrap, "closing", 1)
    produce(share_broker.bootstrap, "closing", 2, 1)  # two batches, as above
    produce(share_broker.bootstrap, "closing", 2, 1, start=2)
    wire = _Wire(share_broker.port)
    metadata = wire.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="closing")]),
                         MetadataResponse, 3, 12)
    topic_uuid = metadata.topics[0].topic_id

    def fetch(member: str) -> ShareFetchResponse:
        part = ShareFetchRequest.FetchPartition(partition_index=0, acknowledgement_batches=[])
        return wire.call(ShareFetchRequest(group_id="closing-group", member_id=member, share_session_epoch=0,
                                           max_wait_ms=2000, min_bytes=1, max_bytes=1 << 20, max_records=2,
                                           batch_size=2,
                                           topics=[ShareFetchRequest.FetchTopic(topic_id=topic_uuid, partitions=[part])]),
                         ShareFetchResponse, 78)

    _join(wire, "closing-group", "alice", "closing")
    (acquired,) = fetch("alice").responses[0].partitions
    assert [(r.first_offset, r.last_offset) for r in acquired.acquired_records] == [(0, 1)]
    left = wire.call(ShareGroupHeartbeatRequest(group_id="closing-group", member_id="alice", member_epoch=-1),
                     ShareGroupHeartbeatResponse, 76)
    assert left.error_code == 0, left
    closed = wire.call(_accept_offsets_0_to_1("alice", topic_uuid, "closing-group", -1), ShareAcknowledgeResponse, 79)
    assert closed.error_code == 0, closed
    assert closed.responses[0].partitions[0].error_code == 0
    _join(wire, "closing-group", "bob", "closing")
    (next_records,) = fetch("bob").responses[0].partitions
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in next_records.acquired_records] == [(2, 3, 1)]


def test_a_group_id_belongs_to_one_group_type(share_broker):
    """A share heartbeat for a consumer-protocol group's id, and a consumer-protocol heartbeat for
    a share group's id, get GROUP_ID_NOT_FOUND, as Kafka answers: group ids share one namespace."""
    create_topic(share_broker.bootstrap, "typed", 1)
    wire = _Wire(share_broker.port)
    deadline = time.monotonic() + 30
    while True:  # as a client does: find the coordinator (which creates __consumer_offsets), wait for it
        wire.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["typed-consumer"]), FindCoordinatorResponse,
                  10, 4)
        consumer = wire.call(ConsumerGroupHeartbeatRequest(
            group_id="typed-consumer", member_id="c1", member_epoch=0, rebalance_timeout_ms=5000,
            subscribed_topic_names=["typed"], topic_partitions=[]), ConsumerGroupHeartbeatResponse, 68, 0)
        if consumer.error_code not in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                       ErrorCode.COORDINATOR_NOT_AVAILABLE) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert consumer.error_code == 0, consumer
    share = wire.call(ShareGroupHeartbeatRequest(group_id="typed-consumer", member_id="s1", member_epoch=0,
                                                 subscribed_topic_names=["typed"]), ShareGroupHeartbeatResponse, 76)
    assert share.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    share = wire.call(ShareGroupHeartbeatRequest(group_id="typed-share", member_id="s1", member_epoch=0,
                                                 subscribed_topic_names=["typed"]), ShareGroupHeartbeatResponse, 76)
    assert share.error_code == 0, share
    consumer = wire.call(ConsumerGroupHeartbeatRequest(group_id="typed-share", member_id="c2", member_epoch=0,
                                                       rebalance_timeout_ms=5000, subscribed_topic_names=["typed"],
                                                       topic_partitions=[]),
                         ConsumerGroupHeartbeatResponse, 68, 0)
    assert consumer.error_code == ErrorCode.GROUP_ID_NOT_FOUND


@pytest.mark.slow
def test_a_topic_created_again_under_the_same_name_starts_a_fresh_share_state(share_broker):
    """The member stays across the delete and create: its assignment and share session move to
    the new topic id, and the new topic's records come at delivery count 1."""
    bootstrap = share_broker.bootstrap
    create_topic(bootstrap, "reborn", 1)
    produce(bootstrap, "reborn", 5, 1)
    consumer = share_consumer(bootstrap, "rebirth", "reborn", **{"topic.metadata.refresh.interval.ms": 500})
    try:
        assert len(poll_until(consumer, lambda got: len(got) >= 5, 30)) == 5
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_topics(["reborn"])["reborn"].result(10)
        deadline = time.monotonic() + 15
        while "reborn" in admin.list_topics(timeout=5).topics:
            assert time.monotonic() < deadline, "the deleted topic is still listed"
            time.sleep(0.2)
        create_topic(bootstrap, "reborn", 1)
        produce(bootstrap, "reborn", 3, 1, start=100)
        received = poll_until(consumer, lambda got: len(got) >= 3, 30)
    finally:
        close_share_consumer(consumer)
    assert [(m.offset(), m.value(), m.delivery_count()) for m in received] == [
        (i, b"record-%d" % (100 + i), 1) for i in range(3)]


def test_a_read_committed_share_group_gets_only_committed_transactions(share_broker):
    bootstrap = share_broker.bootstrap
    create_topic(bootstrap, "ledger", 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    isolation = ConfigResource(ResourceType.GROUP, "auditors", incremental_configs=[ConfigEntry(
        "share.isolation.level", "read_committed", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([isolation]).values():
        future.result(10)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "ledger-writer"})
    producer.init_transactions(10)
    for outcome in ("aborted", "committed"):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("ledger", value=b"%s-%d" % (outcome.encode(), i), partition=0)
        if outcome == "aborted":
            producer.abort_transaction(10)
        else:
            producer.commit_transaction(10)
    produce(bootstrap, "ledger", 1, 1)
    consumer = share_consumer(bootstrap, "auditors", "ledger")
    try:
        received = poll_until(consumer, lambda got: len(got) >= 4, 30)
        for _ in range(5):
            received.extend(consumer.poll(0.2))
    finally:
        close_share_consumer(consumer)
    assert [m.value() for m in received] == [b"committed-0", b"committed-1", b"committed-2", b"record-0"]
