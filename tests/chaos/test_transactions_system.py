"""Kafka's transactions system test (tests/kafkatest/tests/core/transactions_test.py), on Gregor:
3 brokers, replication factor 3, min.insync.replicas 2. A copier (librdkafka's transactional
producer with a read_committed consumer, send_offsets_to_transaction) copies an input topic of
GREGOR_TXN_RECORDS records (default 100,000) in transactions of a few hundred while brokers are
killed (-9) and restarted, four times, the transaction coordinator twice. Afterwards a read_committed
consumer finds the output equal to the input: none missing, none duplicated, in order per
partition. The counts are printed. Before it starts, transaction.version goes to 1 and back to 2 through
UpdateFeatures sent to broker-only nodes (forwarded to the controller) and every broker reports it,
and a transaction protocol v2 write goes to a partition leader that is not the coordinator.

The copier recovers as Kafka's TransactionalMessageCopier does: an abortable error aborts the
transaction and rewinds the consumer to the group's committed offsets; a fatal one (the producer
fenced) makes a new producer, whose init_transactions fences the old one. A
send_offsets_to_transaction that runs far past its own timeout is left behind the same way:
librdkafka never checks that timeout, and its group-coordinator request waits for a broker state
change that may never come when the coordinator it cached was killed (librdkafka issues 5456 and
5511, open); a CI run hung there until pytest's timeout.
"""

from __future__ import annotations

import functools
import math
import os
import threading
import time
import uuid
from typing import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka.admin import KafkaAdminClient

from gregor.client import AdminClient as GregorAdmin
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse
from tests.cluster.brokers import Cluster
from tests.interop.test_transaction_v2_wire import end, produce, state
from tests.interop.test_transaction_wire import init
from tests.txn_wire import batch, call

# The copy must end COPIED_BY_S after the test began, which leaves time for the checks before
# pytest's timeout: a stall fails with the copier's timeline rather than a stack.
pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(360)]
COPIED_BY_S = 270

PARTITIONS = 3
INPUT, OUTPUT, GROUP, V2_TOPIC = "txn-input", "txn-output", "txn-copier", "txn-v2"
RECORDS = int(os.environ.get("GREGOR_TXN_RECORDS", "100000"))
TRANSACTION_SIZE = 500
KILL_EVERY_S, DOWN_S, KILLS = 4.0, 1.0, 4
QUIET = {"log_level": 2}  # the connection errors of every kill are expected
HUNG_AFTER_S = 20  # past a call's own timeout, the call is taken for hung
STALLED_S = 20  # without a record while the input is not copied yet: the timeline says where things stand


class Hung(Exception):
    """A librdkafka call ran HUNG_AFTER_S past its own timeout."""


def bounded(call: Callable[[float], None], timeout: float) -> None:
    """`call(timeout)` in a thread of its own, given up (Hung) HUNG_AFTER_S after its timeout; the
    thread is a daemon, so that a call that never returns holds up nothing."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call(timeout)
        except BaseException as exception:  # handed to the caller's thread
            raised.append(exception)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout + HUNG_AFTER_S)
    if thread.is_alive():
        raise Hung
    if raised:
        raise raised[0]


def fill_input(bootstrap: str) -> dict[int, list[bytes]]:
    """RECORDS values, round-robin over the partitions, written by an idempotent producer."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20,
                         "batch.num.messages": 5000})
    written: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for n in range(RECORDS):
        value = b"%d" % n
        producer.produce(INPUT, value, partition=n % PARTITIONS)
        written[n % PARTITIONS].append(value)
        if n % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    return written


class Copier:
    """Copies INPUT partition p to OUTPUT partition p, one transaction per consumed chunk."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.transactional_id = f"copier-{uuid.uuid4().hex[:6]}"
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                                  "isolation.level": "read_committed", "auto.offset.reset": "earliest", **QUIET})
        self.consumer.assign([TopicPartition(INPUT, p, 0) for p in range(PARTITIONS)])
        #: the next offset to copy of each input partition, as the copier itself knows it: after a
        #: seek librdkafka's position() is unknown (-1001) until a record comes, and none ever
        #: comes for a partition rewound to its end (a CI-loaded run spun there till its deadline)
        self.positions = {p: 0 for p in range(PARTITIONS)}
        self.committed = self.aborted = self.new_producers = self.hung = 0
        self.began, self.deadline = time.monotonic(), math.inf
        #: (seconds since the copier began, what happened): the errors met, and calls that took long
        self.events: list[tuple[float, str]] = []
        self.producer = self._new_producer()

    def note(self, what: str) -> None:
        self.events.append((time.monotonic() - self.began, what))

    def timeline(self) -> str:
        return "; ".join(f"{at:.1f}s {what}" for at, what in self.events[-30:]) or "no errors"

    def _new_producer(self) -> Producer:
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": self.transactional_id,
                             "transaction.timeout.ms": 60000, "linger.ms": 5, "message.timeout.ms": 60000, **QUIET})
        started = time.monotonic()
        producer.init_transactions(self._timeout(120))
        if time.monotonic() - started > 5:
            self.note(f"init_transactions took {time.monotonic() - started:.1f}s")
        return producer

    def _rewind(self) -> None:
        """Back to the offsets the last committed transaction stored for the group (asked again
        after an error, until the deadline)."""
        while True:
            try:
                committed = self.consumer.committed([TopicPartition(INPUT, p) for p in range(PARTITIONS)],
                                                    self._timeout(60))
                failed = [tp.error for tp in committed if tp.error is not None]
            except KafkaException as exception:
                failed = [exception.args[0]]
            if not failed:
                break
            self.note(f"committed offsets not read: {failed[0]}")
            assert time.monotonic() < self.deadline, f"the copier did not finish in time: {self.summary()}"
            time.sleep(1)
        for tp in committed:
            self.positions[tp.partition] = max(tp.offset, 0)
            self.consumer.seek(TopicPartition(INPUT, tp.partition, self.positions[tp.partition]))

    def _done(self, ends: dict[int, int]) -> bool:
        return all(self.positions[p] >= end for p, end in ends.items())

    def run(self, ends: dict[int, int], deadline: float) -> None:
        """Copy until the input's ends; every call's timeout ends by `deadline`, so that a stall
        fails here, with the copier's timeline, rather than at pytest's timeout."""
        self.deadline = deadline
        try:
            self._copy(ends)
        except KafkaException as exception:
            raise AssertionError(f"the copier failed: {exception.args[0]}; {self.summary()}") from exception

    def summary(self) -> str:
        return (f"{self.committed} transactions committed, {self.aborted} aborted, {self.new_producers} new "
                f"producers ({self.hung} for a hung call); {self.timeline()}")

    def _copy(self, ends: dict[int, int]) -> None:
        progressed = time.monotonic()
        while not self._done(ends):
            assert time.monotonic() < self.deadline, f"the copier did not finish in time: {self.summary()}"
            consumed = self.consumer.consume(TRANSACTION_SIZE, 1.0)
            for error in {str(m.error()) for m in consumed if m.error()}:
                self.note(f"consumer: {error}")
            messages = [m for m in consumed if not m.error()]
            if not messages:
                if time.monotonic() - progressed > STALLED_S:
                    self._note_stall(ends)
                    progressed = time.monotonic()
                continue
            progressed = time.monotonic()
            for message in messages:
                self.positions[message.partition()] = message.offset() + 1
            try:
                self.producer.begin_transaction()
                for message in messages:
                    self.producer.produce(OUTPUT, message.value(), partition=message.partition())
                offsets = [TopicPartition(INPUT, p, offset) for p, offset in self.positions.items()]
                group = self.consumer.consumer_group_metadata()
                self._timed("send_offsets_to_transaction", functools.partial(
                    bounded, functools.partial(self.producer.send_offsets_to_transaction, offsets, group)), 30)
                self._commit()
                self.committed += 1
            except KafkaException as exception:
                self.note(f"{exception.args[0].name()}: {exception.args[0].str()}")
                self._recover(exception.args[0])
            except Hung:
                self.note("send_offsets_to_transaction hung: a new producer takes over")
                self.hung += 1
                self._replace_producer()

    def _note_stall(self, ends: dict[int, int]) -> None:
        """Where the copier stands, and what each partition's leader says it may read."""
        watermarks = {}
        for p in range(PARTITIONS):
            try:
                watermarks[p] = self.consumer.get_watermark_offsets(TopicPartition(INPUT, p), 5, cached=False)
            except KafkaException as exception:
                watermarks[p] = exception.args[0].name()
        self.note(f"no records for {STALLED_S} s: positions {self.positions}, ends {ends}, "
                  f"watermarks {watermarks}")

    def _timeout(self, most: float) -> float:
        return max(1.0, min(most, self.deadline - time.monotonic()))

    def _timed(self, name: str, call, most: float = 60) -> None:
        """`call(timeout)`, noted when it took more than a few seconds."""
        started = time.monotonic()
        try:
            call(self._timeout(most))
        finally:
            if time.monotonic() - started > 5:
                self.note(f"{name} took {time.monotonic() - started:.1f}s")

    def _commit(self) -> None:
        """commit_transaction again after a retriable error (librdkafka's contract), until the deadline."""
        while True:
            try:
                self._timed("commit_transaction", self.producer.commit_transaction)
                return
            except KafkaException as exception:
                if not exception.args[0].retriable() or time.monotonic() > self.deadline:
                    raise
                self.note(f"commit retried after {exception.args[0].name()}")

    def _recover(self, error) -> None:
        if error.txn_requires_abort():
            try:
                self._timed("abort_transaction", self.producer.abort_transaction)
                self.aborted += 1
                self._rewind()
                return
            except KafkaException as exception:
                self.note(f"abort failed: {exception.args[0].name()}")  # a new producer fences this one
        self._replace_producer()

    def _replace_producer(self) -> None:
        """A new producer, whose init_transactions fences the old one and aborts its transaction."""
        self.producer = self._new_producer()
        self.new_producers += 1
        self._rewind()


class Killer:
    """kill -9 one broker every KILL_EVERY_S seconds, KILLS times, the transaction coordinator every
    other time, and restart it DOWN_S later."""

    def __init__(self, cluster: Cluster, transactional_id: str, note: Callable[[str], None]) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.note = note
        self.kills: list[tuple[int, bool]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _coordinator(self) -> int | None:
        with GregorAdmin({"bootstrap.servers": self.cluster.bootstrap}) as admin:
            found = admin.describe_transactions([self.transactional_id], timeout=10)[self.transactional_id]
        return None if isinstance(found, Exception) else found.coordinator_id

    def _run(self) -> None:
        ids = sorted(self.cluster.brokers)
        while len(self.kills) < KILLS and not self.stopping.wait(KILL_EVERY_S):
            coordinator = self._coordinator() if len(self.kills) % 2 == 0 else None
            victim = coordinator if coordinator in self.cluster.brokers else ids[len(self.kills) % len(ids)]
            self.kills.append((victim, victim == coordinator))
            self.note(f"broker {victim} killed{' (the coordinator)' if victim == coordinator else ''}")
            self.cluster.brokers[victim].kill9()
            time.sleep(DOWN_S)
            self.cluster.brokers[victim].restart()
            self.note(f"broker {victim} answers again")


def read_committed(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list[bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for message in consumer.consume(10000, 0.5):
            if not message.error():
                got[message.partition()].append(message.value())
        positions = consumer.position([TopicPartition(topic, p) for p in range(PARTITIONS)])
        if all(tp.offset >= ends[tp.partition] for tp in positions):
            break
    consumer.close()
    return got


def features_agree(cluster: Cluster) -> dict[str, int]:
    """Every broker's finalized levels (ApiVersions), which must be the same on all."""
    seen = []
    for node in cluster.brokers.values():
        with GregorAdmin({"bootstrap.servers": node.bootstrap}) as admin:
            seen.append(dict(admin.describe_features(timeout=10).finalized_features))
    assert all(levels == seen[0] for levels in seen), seen
    return seen[0]


def update_through(node, updates: dict) -> None:
    """UpdateFeatures sent to a broker-only node, which forwards it to the active controller."""
    admin = KafkaAdminClient(bootstrap_servers=node.bootstrap)
    try:
        assert admin.update_features(updates) == {name: "OK" for name in updates}
    finally:
        admin.close()


def v2_write_across_brokers(cluster: Cluster) -> None:
    """Transaction protocol v2 where the partition leader is not the coordinator: Produce v12 makes
    the leader add the partition with AddPartitionsToTxn v4 (not verifyOnly) over the network."""
    any_port = next(iter(cluster.brokers.values())).port
    txn_id = f"v2-{uuid.uuid4().hex[:6]}"
    deadline = time.monotonic() + 30
    while (found := call(any_port, FindCoordinatorRequest(key=txn_id, key_type=1), 3,
                         FindCoordinatorResponse)).error_code:
        assert time.monotonic() < deadline, ErrorCode(found.error_code)
        time.sleep(0.2)
    coordinator = found.port
    pid, epoch = init(coordinator, txn_id)
    states = cluster.wait_for_full_isr(V2_TOPIC)
    partition, (leader, _, _) = next((p, s) for p, s in sorted(states.items()) if s[0] != found.node_id)
    assert produce(cluster.brokers[leader].port, txn_id, V2_TOPIC, partition, batch([b"v2"], pid, epoch, 0)) == 0
    assert state(coordinator, txn_id) == ("Ongoing", [(V2_TOPIC, partition)])
    ended = end(coordinator, txn_id, pid, epoch)
    assert (ended.error_code, ended.producer_epoch) == (0, epoch + 1)


def test_copier_output_equals_its_input_while_brokers_are_killed(tmp_path):
    began = time.monotonic()
    cluster = Cluster(tmp_path, overrides={"min.insync.replicas": "2", "transaction.state.log.num.partitions": "3",
                                           "transaction.state.log.replication.factor": "3"})
    cluster.start()
    try:
        first, second = list(cluster.brokers.values())[:2]
        assert features_agree(cluster)["transaction.version"] == 2
        update_through(first, {"transaction.version": ("SAFE_DOWNGRADE", 1)})
        deadline = time.monotonic() + 10
        while features_agree(cluster)["transaction.version"] != 1:  # every observer replays the record
            assert time.monotonic() < deadline
            time.sleep(0.1)
        update_through(second, {"transaction.version": 2})
        cluster.create_topic(V2_TOPIC, PARTITIONS)
        v2_write_across_brokers(cluster)
        cluster.create_topic(INPUT, PARTITIONS)
        cluster.create_topic(OUTPUT, PARTITIONS)
        started = time.monotonic()
        written = fill_input(cluster.bootstrap)
        filled = time.monotonic()
        copier = Copier(cluster.bootstrap)
        killer = Killer(cluster, copier.transactional_id, copier.note)
        killer.thread.start()
        try:
            copier.run({p: len(values) for p, values in written.items()}, began + COPIED_BY_S)
        finally:
            killer.stopping.set()
            killer.thread.join()
        copied = time.monotonic()
        cluster.wait_for_brokers(len(cluster.brokers))
        probe = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "probe"})
        ends = {p: probe.get_watermark_offsets(TopicPartition(OUTPUT, p), 30)[1] for p in range(PARTITIONS)}
        probe.close()
        output = read_committed(cluster.bootstrap, OUTPUT, ends)
        print(f"\ninput {RECORDS} records; copied in {copier.committed} committed transactions, "
              f"{copier.aborted} aborted, {copier.new_producers} new producers ({copier.hung} for a hung call); "
              f"kills {' '.join(str(b) + ('*' if c else '') for b, c in killer.kills)} (* coordinator); "
              f"output read_committed {sum(map(len, output.values()))} records, log end offsets {ends}; "
              f"fill {filled - started:.1f}s, copy {copied - filled:.1f}s; {copier.timeline()}")
        for partition in range(PARTITIONS):
            got, expected = output[partition], written[partition]
            assert len(got) == len(expected) and got == expected, (
                f"partition {partition}: {len(got)} records, {len(expected)} expected; "
                f"{len(set(got))} distinct; first difference at "
                f"{next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))}")
        assert killer.kills, "no broker was killed while the copier ran"
    finally:
        cluster.stop()
