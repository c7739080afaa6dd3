"""Jepsen's Kafka transactional workload, driven by librdkafka (confluent-kafka): each worker is a
transactional producer with a read_committed reader of every partition; a transaction polls once,
then writes unique values to several partitions, and commits, or aborts on purpose
(`abort_ratio`, after flushing, so that the aborted records are in the logs). Read_committed
assign-mode readers (tools.faults.workload.ConsumerWorker) read along. The history's operations
are described in tools.faults.txn_checker."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from confluent_kafka import (
    KafkaError,
    KafkaException,
    Producer,
)

from tools.faults.history import History
from tools.faults.workload import ConsumerWorker, Values

READ_COMMITTED: dict[str, object] = {"isolation.level": "read_committed"}


class TxnWorker:
    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int, history: History, values: Values,
                 rate: float, abort_ratio: float, seed: int, transaction_timeout_ms: int = 10000) -> None:
        self.name, self.bootstrap, self.topic, self.partitions = name, bootstrap, topic, partitions
        self.history, self.values, self.abort_ratio = history, values, abort_ratio
        self.interval = 1.0 / rate
        self.rng = random.Random(seed)
        self.transaction_timeout_ms = transaction_timeout_ms
        self.reader = ConsumerWorker(name, bootstrap, topic, partitions, history, extra=READ_COMMITTED)
        self.producer = self._producer()
        self.committed = self.aborted = self.indeterminate = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _producer(self) -> Producer:
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": f"faults-{self.name}",
                             "acks": "all", "linger.ms": 5, "socket.timeout.ms": 10000, "log_level": 3,
                             "transaction.timeout.ms": self.transaction_timeout_ms,
                             "message.timeout.ms": self.transaction_timeout_ms})
        producer.init_transactions(60)
        return producer

    def _run(self) -> None:
        self.reader.assign_all()
        self.history.add(self.name, "ok", "assign", list(range(self.partitions)))
        try:
            while not self.stopping.is_set():
                self.transaction()
                self.stopping.wait(self.interval)
        finally:
            self.reader.consumer.close()

    def transaction(self) -> None:
        chosen = self.rng.sample(range(self.partitions), self.rng.randint(min(2, self.partitions), self.partitions))
        writes = [(partition, self.values.next()) for partition in chosen for _ in range(self.rng.randint(1, 2))]
        invoked = self.history.add(self.name, "invoke", "txn", [["send", p, None, v] for p, v in writes])["time"]
        offsets: dict[int, int | None] = {}
        reads: list[list[int]] = []

        def delivered(error: KafkaError | None, message: Any) -> None:
            offsets[int(message.value())] = message.offset() if error is None else None

        try:
            self.producer.begin_transaction()
            reads = self.reader.poll_once(0.05)
            for partition, value in writes:
                self.producer.produce(self.topic, str(value).encode(), partition=partition, on_delivery=delivered)
            self.producer.flush(self.transaction_timeout_ms / 1000)
            if self.rng.random() < self.abort_ratio:
                self.producer.abort_transaction(30)
                self._complete("fail", reads, writes, offsets, invoked)
                return
            self.history.add(self.name, "invoke", "commit", None)
            self._commit()
            self._complete("ok", reads, writes, offsets, invoked)
        except KafkaException as exception:
            self._failed(exception.args[0], reads, writes, offsets, invoked)

    def _commit(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                self.producer.commit_transaction(30)
                return
            except KafkaException as exception:
                if not exception.args[0].retriable() or time.monotonic() > deadline:
                    raise

    def _failed(self, error: KafkaError, reads: list[list[int]], writes: list[tuple[int, int]],
                offsets: dict[int, int | None], invoked: float) -> None:
        """An abortable error: abort, and the transaction certainly did not commit. Anything else
        (fatal, or the abort failing too): unknown, and a new producer fences the old one."""
        if error.txn_requires_abort():
            try:
                self.producer.abort_transaction(30)
                self._complete("fail", reads, writes, offsets, invoked)
                return
            except KafkaException:
                pass
        self._complete("info", reads, writes, offsets, invoked)
        self.history.add(self.name, "info", "fatal", str(error))
        while not self.stopping.is_set():
            try:
                self.producer = self._producer()
                return
            except KafkaException:
                self.stopping.wait(1)

    def _complete(self, kind: str, reads: list[list[int]], writes: list[tuple[int, int]],
                  offsets: dict[int, int | None], invoked: float) -> None:
        counter = {"ok": "committed", "fail": "aborted", "info": "indeterminate"}[kind]
        setattr(self, counter, getattr(self, counter) + 1)
        self.history.add(self.name, kind, "txn", [["poll", reads],
                                                  *(["send", p, offsets.get(v), v] for p, v in writes)],
                         latency=round(self.history.now() - invoked, 6))

    def finish(self) -> None:
        self.stopping.set()
        self.thread.join(120)

