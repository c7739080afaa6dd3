"""One open produce batch: records are queued into it as they are sent, encoded in bulk.

`try_append` is the per-record hot path of the producer, on the sending thread: it only keeps
the record, in columns (its timestamp and value appended to two lists; keys and encoded headers
get lists of their own only once a record has them, so that a batch of keyless, headerless
records never builds a tuple per record), and an upper bound of the batch's encoded size. Its
common cases are also written out in `RecordAccumulator` (`append_to_open`, and `append_plain`
for a keyless, headerless record), which update the columns, `bound` and `count` themselves,
under the accumulator's lock, a call less per record. The records are encoded into their v2
bytes (`record_encoding`) in one go (`seal`) when the batch is measured or built, or when the
bound reaches `capacity`: then what is queued is encoded, and whether the record fits is decided
on exact sizes, as if each had been encoded on arrival, so a batch holds the records it would
hold when encoded one by one. `max_timestamp` is brought up to date by `seal` (one `max` over
the queued timestamps). The sender adds the 61-byte header, the producer id and sequence it
knows at drain time, compression and the CRC.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, Sequence

from gregor.client.errors import KafkaException
from gregor.client.network.request_frames import RecordChunks
from gregor.client.producer.future import BatchResult, Callback, RecordFuture
from gregor.client.producer.record_encoding import NO_HEADERS, encode_headers, encode_records
from gregor.records.batch import BATCH_HEADER_SIZE
from gregor.records.compression import compress
from gregor.records.crc import crc32c

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC = struct.Struct(">I")
_TRANSACTIONAL = 0x10  # the batch attribute bit of a transactional batch
_CRC_OFFSET, _ATTRIBUTES_OFFSET = 17, 21

Headers = Sequence[tuple[str, "bytes | None"]]
__all__ = ["BATCH_HEADER_SIZE", "NO_HEADERS", "RECORD_BOUND", "EncodedBatch", "ProducerBatch", "encode_headers",
           "estimated_record_size"]

RECORD_BOUND = 33
"""With a key and value size of -1 for null ones, an upper bound of the bytes a record adds
beyond its key, value and headers: its length (5), attributes (1), timestamp delta (10), offset
delta (5) and key and value lengths (5 each) as varints."""


def estimated_record_size(key: bytes | None, value: bytes | None, encoded_headers: bytes) -> int:
    """An upper bound of a record's encoded size within a batch (Java's estimateSizeInBytesUpperBound)."""
    return 21 + (len(key) if key is not None else 0) + (len(value) if value is not None else 0) \
        + len(encoded_headers)


class EncodedBatch(NamedTuple):
    """Records encoded outside the accumulator (columnar produce), ready to become one batch."""

    records: bytes
    count: int
    base_timestamp: int
    max_timestamp: int


class ProducerBatch:
    """Records for one partition, appended until full, then sent (and maybe retried) as one."""

    __slots__ = ("topic", "partition", "result", "created", "reserved_bytes", "_encoded", "encoded_size",
                 "timestamps", "values",
                 "keys", "headers", "bound", "count", "base_timestamp", "max_timestamp", "capacity", "full", "waiters", "attempts",
                 "retry_at", "producer_id", "producer_epoch", "base_sequence", "in_flight",
                 "done", "ordinal", "__weakref__")

    def __init__(self, topic: str, partition: int, capacity: int, created: float,
                 reserved_bytes: int, ordinal: int = 0) -> None:
        self.topic = topic
        self.partition = partition
        self.result = BatchResult(topic, partition)
        self.created = created
        self.reserved_bytes = reserved_bytes
        self._encoded: list[bytes] = []  # the records encoded so far, in chunks (never joined to be sent)
        self.encoded_size = 0  # their bytes
        # the records queued after them, as columns; keys and headers stay None while every
        # queued record has a null key and no headers
        self.timestamps: list[int] = []
        self.values: list[bytes | None] = []
        self.keys: list[bytes | None] | None = None
        self.headers: list[bytes] | None = None
        self.bound = BATCH_HEADER_SIZE  # an upper bound of the batch's size with the queued records
        self.count = 0
        self.base_timestamp = 0
        self.max_timestamp = -1  # of the encoded records (`seal` adds the queued ones')
        self.capacity = capacity
        self.full = False
        self.waiters: list[tuple[RecordFuture, Callback]] = []
        self.attempts = 0
        self.retry_at = 0.0
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.in_flight = False
        self.done = False
        self.ordinal = ordinal  # creation order: a retried batch goes back in front of younger ones

    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None,
                   encoded_headers: bytes) -> RecordFuture | None:
        """Take the record, or return None (and mark the batch full) if it does not fit."""
        count = self.count
        key_size = -1 if key is None else len(key)
        value_size = -1 if value is None else len(value)
        bound = self.bound + RECORD_BOUND + key_size + value_size + len(encoded_headers)
        if bound > self.capacity:
            return self._append_exactly(timestamp, key, value, encoded_headers)
        if count == 0:
            self.base_timestamp = timestamp
        self.bound = bound
        self.queue(timestamp, key, value, encoded_headers)
        self.count = count + 1
        return RecordFuture(self.result, count, timestamp, key_size, value_size)

    def queue(self, timestamp: int, key: bytes | None, value: bytes | None, encoded_headers: bytes) -> None:
        """Add the record to the queued columns (the caller keeps `bound` and `count`)."""
        self.timestamps.append(timestamp)
        self.values.append(value)
        keys = self.keys
        if keys is not None:
            keys.append(key)
        elif key is not None:
            self.keys = [None] * (len(self.values) - 1) + [key]
        headers = self.headers
        if headers is not None:
            headers.append(encoded_headers)
        elif encoded_headers != NO_HEADERS:
            self.headers = [NO_HEADERS] * (len(self.values) - 1) + [encoded_headers]

    def _append_exactly(self, timestamp: int, key: bytes | None, value: bytes | None,
                        encoded_headers: bytes) -> RecordFuture | None:
        """Near `capacity`: encode what is queued, then the record, keeping it only if it fits
        (a first record always does)."""
        self.seal()
        count = self.count
        if count == 0:
            self.base_timestamp = timestamp
        record, = encode_records((timestamp,), None if key is None else (key,), (value,),
                                 None if encoded_headers == NO_HEADERS else (encoded_headers,), self.base_timestamp,
                                 count)
        new_size = BATCH_HEADER_SIZE + self.encoded_size + len(record)
        if count and new_size > self.capacity:
            self.full = True
            return None
        self._encoded.append(record)
        self.encoded_size += len(record)
        self.bound = new_size
        self.count = count + 1
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        if new_size >= self.capacity:
            self.full = True
        return RecordFuture(self.result, count, timestamp, -1 if key is None else len(key),
                            -1 if value is None else len(value))

    def seal(self) -> None:
        """Encode the queued records (the batch's size is then exact)."""
        timestamps = self.timestamps
        if timestamps:
            chunks = encode_records(timestamps, self.keys, self.values, self.headers, self.base_timestamp,
                                    self.count - len(timestamps))
            self._encoded += chunks
            self.encoded_size += sum(map(len, chunks))
            latest = max(timestamps)
            if latest > self.max_timestamp:
                self.max_timestamp = latest
            self.timestamps, self.values, self.keys, self.headers = [], [], None, None
            self.bound = BATCH_HEADER_SIZE + self.encoded_size

    @property
    def records(self) -> bytes:
        """The records' v2 bytes (after the batch header)."""
        self.seal()
        if len(self._encoded) != 1:
            self._encoded = [b"".join(self._encoded)]
        return self._encoded[0]

    @classmethod
    def of_encoded(cls, topic: str, partition: int, encoded: EncodedBatch, created: float,
                   ordinal: int) -> ProducerBatch:
        """A full batch holding records encoded elsewhere; its one result is shared by all of them."""
        size = BATCH_HEADER_SIZE + len(encoded.records)
        batch = cls(topic, partition, size, created, size, ordinal)
        batch._encoded = [encoded.records]
        batch.encoded_size = len(encoded.records)
        batch.count = encoded.count
        batch.base_timestamp = encoded.base_timestamp
        batch.max_timestamp = encoded.max_timestamp
        batch.full = True
        return batch

    @property
    def size(self) -> int:
        """The batch's encoded size (encoding what is queued)."""
        self.seal()
        return BATCH_HEADER_SIZE + self.encoded_size

    def build(self, compression: int, compression_level: int | None = None, transactional: bool = False) -> bytes:
        """The batch's v2 bytes with the producer id, epoch and sequence it holds now (and the
        transactional attribute for a transactional producer's batch)."""
        return bytes(self.build_chunks(compression, compression_level, transactional))

    def build_chunks(self, compression: int, compression_level: int | None = None,
                     transactional: bool = False) -> RecordChunks:
        """`build`'s bytes as the pieces they follow from (the header, then the records' chunks),
        for a request frame to write one after the other: the records are never copied."""
        if compression:
            payload = [compress(compression, self.records, level=compression_level)]
            size = len(payload[0])
        else:
            self.seal()
            payload, size = self._encoded, self.encoded_size
        count = self.count
        header = bytearray(_HEADER.pack(
            0, BATCH_HEADER_SIZE - 12 + size, -1, 2, 0,
            compression | _TRANSACTIONAL if transactional else compression, count - 1,
            self.base_timestamp, self.max_timestamp, self.producer_id, self.producer_epoch,
            self.base_sequence, count))
        crc = crc32c(memoryview(header)[_ATTRIBUTES_OFFSET:])
        for chunk in payload:
            crc = crc32c(chunk, crc)
        _CRC.pack_into(header, _CRC_OFFSET, crc)
        return RecordChunks((bytes(header), *payload))

    def complete(self, base_offset: int, log_append_time: int, error: KafkaException | None) -> None:
        """Resolve every record of the batch; callbacks given to `send` run first, in order."""
        self.done = True
        result = self.result
        for future, callback in self.waiters:
            result.add_waiter(future, callback)
        self.waiters = []
        result.complete(base_offset, log_append_time, error)

    def __repr__(self) -> str:
        # the size without sealing: a repr must not encode an open batch outside the accumulator's lock
        size = f"{BATCH_HEADER_SIZE + self.encoded_size}" if not self.timestamps else f"<={self.bound}"
        return f"<ProducerBatch {self.topic}-{self.partition} records={self.count} bytes={size} attempts={self.attempts}>"
