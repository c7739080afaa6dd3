"""Jepsen's Kafka queue workload, driven by librdkafka (confluent-kafka): idempotent acks=all
producers writing unique integers (value n to partition n % partitions), consumers in a group
(subscribe, auto commit) and assign-mode readers (every partition from offset 0), each a thread
that records what it does in the history. A final reader reads every partition to its end after
the cluster has healed, so that an acknowledged record nobody read is a loss, not a straggler."""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from tools.faults.history import History


class Values:
    """Unique values for all producers."""

    def __init__(self) -> None:
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            return next(self._counter)


class ProducerWorker:
    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int, history: History, values: Values,
                 rate: float, message_timeout_ms: int = 120000, extra: dict[str, object] | None = None) -> None:
        self.name, self.topic, self.partitions, self.history, self.values = name, topic, partitions, history, values
        self.interval = 1.0 / rate
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": message_timeout_ms,
                                  "retry.backoff.ms": 100, "socket.timeout.ms": 10000, "log_level": 4,
                                  **(extra or {})})
        self.pending: dict[int, float] = {}  # value -> invoke time
        self.acknowledged = 0
        self.fatal: str | None = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _delivered(self, error: KafkaError | None, message) -> None:
        value = int(message.value())
        invoked = self.pending.pop(value, None)
        if error is None:
            self.acknowledged += 1
            self.history.add(self.name, "ok", "send", [message.partition(), message.offset(), value],
                             latency=round(self.history.now() - invoked, 6) if invoked is not None else None)
        else:
            # librdkafka does not say whether a failed record was written: with acks=all and
            # idempotence a timeout or a retriable error may follow a successful append.
            self.history.add(self.name, "info", "send", [message.partition(), value, error.name()])

    def _run(self) -> None:
        try:
            self._send()
        except KafkaException as error:  # fatal for the producer (e.g. its sequence lost with a log)
            self.fatal = str(error)
            self.history.add(self.name, "info", "fatal", self.fatal)

    def _send(self) -> None:
        next_at = time.monotonic()
        while not self.stopping.is_set():
            value = self.values.next()
            partition = value % self.partitions
            self.pending[value] = self.history.now()
            self.history.add(self.name, "invoke", "send", [partition, value])
            while True:
                try:
                    self.producer.produce(self.topic, str(value).encode(), partition=partition,
                                          on_delivery=self._delivered)
                    break
                except BufferError:
                    self.producer.poll(0.1)
            self.producer.poll(0)
            next_at += self.interval
            delay = next_at - time.monotonic()
            if delay > 0:
                self.stopping.wait(delay)
                self.producer.poll(0)
            else:
                next_at = time.monotonic()

    def finish(self, timeout: float) -> None:
        """Stop sending and wait up to `timeout` for the records in flight; those still unanswered
        are indeterminate (`info`)."""
        self.stopping.set()
        self.thread.join(30)
        try:
            self.producer.flush(timeout)
        except:  # noqa: E722 - confluent-kafka raises its KafkaError, not an exception class, when
            # the idempotent producer turns fatal inside flush (its sequence lost with an unclean
            # election's log): a bare except is the only one that catches it
            self.fatal = self.fatal or f"fatal while flushing: {sys.exc_info()[1]}"
            self.history.add(self.name, "info", "fatal", self.fatal)
        for value in list(self.pending):
            self.pending.pop(value, None)
            self.history.add(self.name, "info", "send", [value % self.partitions, value, "unanswered"])


class ConsumerWorker:
    """A group member (`group` given) or an assign-mode reader of every partition from offset 0."""

    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int, history: History,
                 group: str | None = None, extra: dict[str, object] | None = None) -> None:
        self.name, self.topic, self.partitions, self.history, self.group = name, topic, partitions, history, group
        config: dict[str, object] = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                                     "session.timeout.ms": 6000, "socket.timeout.ms": 10000, "log_level": 4,
                                     "statistics.interval.ms": 2000, "stats_cb": self._statistics}
        if group is not None:
            config.update({"group.id": group, "enable.auto.commit": True, "auto.commit.interval.ms": 500})
        else:
            config.update({"group.id": f"{name}-unused", "enable.auto.commit": False})
        config.update(extra or {})
        self.consumer = Consumer(config)
        self.read = 0
        self.positions: dict[int, int] = {}
        # what this consumer holds, kept here: confluent-kafka's assignment() waits for librdkafka's
        # main thread while holding the GIL, which once stopped every thread of the harness (the
        # fault proxy's too, so the cluster lost its network) for good
        self.assigned: list[TopicPartition] = []
        self.state: dict[str, object] = {}  # librdkafka's view, named when the consumer stalls
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _statistics(self, report: str) -> None:
        statistics = json.loads(report)
        group = statistics.get("cgrp", {})
        partitions = statistics.get("topics", {}).get(self.topic, {}).get("partitions", {})
        self.state = {"group": {key: group.get(key) for key in ("state", "join_state", "rebalance_cnt",
                                                                "rebalance_reason", "assignment_size")},
                      "partitions": {p: {key: state.get(key) for key in ("fetch_state", "leader", "next_offset",
                                                                          "hi_offset", "fetchq_cnt")}
                                     for p, state in partitions.items() if int(p) >= 0}}

    def _assigned(self, _consumer, partitions: list[TopicPartition]) -> None:
        self.assigned = [TopicPartition(p.topic, p.partition) for p in partitions]
        self.history.add(self.name, "ok", "assign", sorted(p.partition for p in partitions))

    def _revoked(self, _consumer, _partitions: list[TopicPartition]) -> None:
        self.assigned = []

    def assign_all(self) -> None:
        """Every partition from offset 0 (an assign-mode reader)."""
        self.consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
        self.assigned = [TopicPartition(self.topic, p) for p in range(self.partitions)]

    def _run(self) -> None:
        if self.group is not None:
            self.consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked,
                                    on_lost=self._revoked)
        else:
            self.assign_all()
            self.history.add(self.name, "ok", "assign", list(range(self.partitions)))
        try:
            while not self.stopping.is_set():
                self.poll_once(0.2)
        finally:
            self.consumer.close()

    def poll_once(self, timeout: float) -> list[list[int]]:
        """One consume call; its records ([partition, offset, value]) are one `poll` operation."""
        records: list[list[int]] = []
        for message in self.consumer.consume(200, timeout):
            partition, offset, value = message.partition(), message.offset(), message.value()
            if message.error() is None and partition is not None and offset is not None and value is not None:
                records.append([partition, offset, int(value)])
        if records:
            self.read += len(records)
            for partition, offset, _ in records:
                self.positions[partition] = offset + 1
            self.history.add(self.name, "ok", "poll", records)
        else:  # idle: the position may be past offsets never delivered (transaction markers, aborted records)
            for tp in self.consumer.position(self.assigned) if self.assigned else ():
                if tp.offset >= 0:
                    self.positions[tp.partition] = max(self.positions.get(tp.partition, 0), tp.offset)
        return records


def final_read(bootstrap: str, topic: str, partitions: int, history: History, timeout: float = 120,
               extra: dict[str, object] | None = None) -> dict[int, int]:
    """Read every partition from 0 to its high watermark; returns the high watermarks. With
    read_committed (in `extra`), once every transaction has ended: the last stable offset is then
    the high watermark, and the position (not the last offset read) passes the markers."""
    reader = ConsumerWorker("final", bootstrap, topic, partitions, history, extra=extra)
    ends = {p: reader.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)}
    reader.assign_all()
    history.add("final", "ok", "assign", list(range(partitions)))
    deadline = time.monotonic() + timeout
    try:
        while any(reader.positions.get(p, 0) < ends[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the final read stopped at {reader.positions}, ends {ends}")
            reader.poll_once(0.5)
    finally:
        reader.consumer.close()
    return ends


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Retried while the client's metadata still names a former leader (NOT_LEADER_FOR_PARTITION)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "faults-watermarks", "log_level": 4})
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                        for p in range(partitions)}
            except KafkaException as error:
                if not error.args[0].retriable() or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def stalled(consumers: list[ConsumerWorker], ends: dict[int, int], timeout: float) -> list[str]:
    """Liveness: once the cluster has healed, the group together and each assign-mode reader must
    read to `ends` within `timeout`; the names (and librdkafka's view) of those that did not."""
    deadline = time.monotonic() + timeout
    while True:
        behind = []
        group = [c for c in consumers if c.group is not None]
        if group and any(max(c.positions.get(p, 0) for c in group) < end for p, end in ends.items()):
            behind += [f"{c.name} at {c.positions}: {c.state}" for c in group]
        behind += [f"{c.name} at {c.positions}: {c.state}" for c in consumers if c.group is None
                   and any(c.positions.get(p, 0) < end for p, end in ends.items())]
        if not behind or time.monotonic() > deadline:
            return behind
        time.sleep(0.5)
