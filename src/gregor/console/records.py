"""Reading a partition from an offset or a timestamp, and producing a test record.

The browser is a short-lived Consumer without a group (assign and seek, nothing committed), so a
look at a topic never shows up as a consumer group or moves anyone's offsets. Offsets (start, end,
the first offset at a timestamp) come from the AdminClient's ListOffsets.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

from gregor.client import Consumer, KafkaException, Producer, TopicPartition
from gregor.client.admin import OffsetSpec
from gregor.client.producer import RecordMetadata
from gregor.console.inspector import Inspector
from gregor.protocol.error_codes import ErrorCode

MAX_RECORDS = 500
_POLL_SLICE_S = 0.2


@dataclass(frozen=True)
class Fetched:
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


@dataclass(frozen=True)
class RecordPage:
    """Records of one partition from `start`, with the partition's bounds for paging."""

    topic: str
    partition: int
    start: int
    log_start: int
    log_end: int
    records: list[Fetched]

    @property
    def next_offset(self) -> int | None:
        after = self.records[-1].offset + 1 if self.records else self.start
        return after if after < self.log_end else None


class RecordReader:
    """Reads records through a Consumer made for each read (Kafka consumers are single-threaded,
    and the pages are served from several threads)."""

    def __init__(self, client_config: Mapping[str, Any], inspector: Inspector, timeout_s: float) -> None:
        self._config = dict(client_config)
        self._inspector = inspector
        self._timeout_s = timeout_s

    def bounds(self, tp: TopicPartition) -> tuple[int, int]:
        starts = self._inspector.offsets([tp], OffsetSpec.earliest())
        ends = self._inspector.offsets([tp], OffsetSpec.latest())
        if tp not in starts or tp not in ends:
            raise KafkaException(ErrorCode.LEADER_NOT_AVAILABLE,
                                 f"cannot read the offsets of {tp.topic}-{tp.partition}: it has no leader now")
        return starts[tp], ends[tp]

    def read(self, topic: str, partition: int, offset: int | None = None, timestamp_ms: int | None = None,
             limit: int = 20) -> RecordPage:
        """Up to `limit` records from `offset`, or from the first record at or after `timestamp_ms`,
        or (neither) the last `limit` records of the partition."""
        limit = max(1, min(limit, MAX_RECORDS))
        tp = TopicPartition(topic, partition)
        log_start, log_end = self.bounds(tp)
        if timestamp_ms is not None:
            start = self._inspector.offsets([tp], OffsetSpec.for_timestamp(timestamp_ms)).get(tp, log_end)
        elif offset is not None:
            start = offset
        else:
            start = log_end - limit
        start = min(max(start, log_start), log_end)
        records = self._fetch(tp, start, min(log_end, start + limit)) if start < log_end else []
        return RecordPage(topic, partition, start, log_start, log_end, records[:limit])

    def one(self, topic: str, partition: int, offset: int) -> Fetched | None:
        """The record at `offset`, None when there is none (deleted, compacted away, past the end)."""
        page = self.read(topic, partition, offset=offset, limit=1)
        return next((record for record in page.records if record.offset == offset), None)

    def _fetch(self, tp: TopicPartition, start: int, stop: int) -> list[Fetched]:
        """Records in [start, stop), polling until the last is read or the time is up."""
        consumer = Consumer({**self._config, "enable.auto.commit": False, "allow.auto.create.topics": False,
                             "client.id": "gregor-console-browser",
                             "max.poll.records": MAX_RECORDS})
        try:
            consumer.assign([tp])
            consumer.seek(tp, start)
            found: list[Fetched] = []
            deadline = time.monotonic() + self._timeout_s
            while time.monotonic() < deadline:
                for record in consumer.poll(_POLL_SLICE_S).records(tp):
                    if start <= record.offset < stop:
                        found.append(Fetched(record.offset, record.timestamp, record.timestamp_type, record.key,
                                             record.value, list(record.headers)))
                # compacted or transactional partitions have gaps: the position tells we are past `stop`
                if (found and found[-1].offset >= stop - 1) or consumer.position(tp) >= stop:
                    break
            return found
        finally:
            consumer.close()


class RecordProducer:
    """One Producer, made on first use, shared by the pages that produce test records."""

    def __init__(self, client_config: Mapping[str, Any], timeout_s: float) -> None:
        self._config = {**client_config, "client.id": "gregor-console-producer", "linger.ms": 0,
                        "max.block.ms": int(timeout_s * 1000)}
        self._timeout_s = timeout_s
        self._producer: Producer | None = None
        self._lock = threading.Lock()

    def send(self, topic: str, key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]],
             partition: int | None = None) -> RecordMetadata:
        with self._lock:
            if self._producer is None:
                self._producer = Producer(self._config)
            producer = self._producer
        future = producer.send(topic, value=value, key=key, partition=partition, headers=headers or None)
        producer.flush(self._timeout_s)
        return future.get(self._timeout_s)

    def close(self) -> None:
        with self._lock:
            if self._producer is not None:
                self._producer.close(self._timeout_s)
                self._producer = None
