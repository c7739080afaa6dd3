"""The records a ShareFetch acquired for this member, decoded from a partition's answer.

A partition's record batches may hold records acquired by other members (batches are sent
whole); only offsets inside this member's acquired ranges are kept, each with the delivery count
of its range. Offsets of an acquired range that yield no record for the application (control
records, offsets compaction removed) are returned as gaps, to be acknowledged as such; offsets
past the last whole batch of the answer (its size limit cut it) were not seen at all and are
returned apart, to be released, as are those of a batch failing its CRC. A record the
deserializers refuse is rejected (it would fail again) and the error raised by the next poll.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Iterable

from gregor.client.consumer.fetcher import record_entries
from gregor.client.consumer.record_decoder import iter_records
from gregor.client.consumer.records import ConsumerRecord
from gregor.client.errors import ClientErrorCode, KafkaException
from gregor.client.network import TopicPartition
from gregor.client.serialization import Deserializer, SerializationError
from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import verify_crc

_MAX_UNCOMPRESSED = 256 * 1024 * 1024


class ShareConsumerRecord(ConsumerRecord):
    """A record of a share group: `delivery_count` says how many times it was delivered (1 the first time)."""

    __slots__ = ("delivery_count",)

    def __init__(self, *args: Any, delivery_count: int) -> None:
        super().__init__(*args)
        self.delivery_count = delivery_count

    def __repr__(self) -> str:
        return (f"ShareConsumerRecord(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
                f"delivery_count={self.delivery_count}, key={self.key!r}, value={self.value!r})")


@dataclass
class Acquired:
    """What one partition's ShareFetch answer holds for this member."""

    records: list[ShareConsumerRecord] = field(default_factory=list)
    gaps: list[int] = field(default_factory=list)
    """Offsets of the acquired ranges with no record for the application (acknowledged as gaps)."""
    unseen: list[int] = field(default_factory=list)
    """Acquired offsets not in the answer's whole batches, or in a batch failing its CRC (released)."""
    undecodable: list[int] = field(default_factory=list)
    """Records the deserializers refused (rejected, as they would fail again)."""
    errors: list[KafkaException] = field(default_factory=list)


def acquired_records(partition: TopicPartition, data: Any, acquired: Iterable[Any], *,
                     key_deserializer: Deserializer, value_deserializer: Deserializer,
                     check_crcs: bool) -> Acquired:
    """The records in this member's acquired ranges, and what to acknowledge for the rest."""
    out = Acquired()
    ranges = sorted((item.first_offset, item.last_offset, item.delivery_count) for item in acquired)
    if not ranges:
        return out
    firsts = [first for first, _, _ in ranges]
    seen: set[int] = set()
    corrupt: list[tuple[int, int]] = []
    covered = -1
    topic, index = partition
    for header, start, _ in record_entries(data or b""):
        if header is None:
            continue  # share groups read v2 batches only (Kafka 4 has no older format)
        if header.last_offset < ranges[0][0] or header.base_offset > ranges[-1][1]:
            covered = max(covered, header.last_offset)
            continue
        if check_crcs and not verify_crc(data, start, header):
            out.errors.append(KafkaException(ErrorCode.CORRUPT_MESSAGE, f"record batch at offset "
                              f"{header.base_offset} of {topic}-{index} fails its CRC32C; its records are released"))
            corrupt.append((header.base_offset, header.last_offset))
            continue
        covered = max(covered, header.last_offset)
        if header.is_control:
            continue
        epoch = header.partition_leader_epoch
        for offset, timestamp, raw_key, raw_value, headers in iter_records(data, start, header, _MAX_UNCOMPRESSED):
            position = bisect.bisect_right(firsts, offset) - 1
            if position < 0 or offset > ranges[position][1]:
                continue
            seen.add(offset)
            try:
                key = key_deserializer.deserialize(topic, raw_key, headers)
                value = value_deserializer.deserialize(topic, raw_value, headers)
            except (SerializationError, ValueError, TypeError) as cause:
                out.undecodable.append(offset)
                out.errors.append(KafkaException(ClientErrorCode._BAD_MSG, f"cannot deserialize the record at offset "
                                                 f"{offset} of {topic}-{index}: {cause}; it was rejected"))
                continue
            out.records.append(ShareConsumerRecord(
                topic, index, offset, timestamp, header.timestamp_type, key, value, headers,
                epoch if epoch >= 0 else None, -1 if raw_key is None else len(raw_key),
                -1 if raw_value is None else len(raw_value), delivery_count=ranges[position][2]))
    missing = [offset for first, last, _ in ranges for offset in range(first, last + 1) if offset not in seen]
    out.unseen = [offset for offset in missing
                  if offset > covered or any(first <= offset <= last for first, last in corrupt)]
    out.gaps = [offset for offset in missing if offset not in set(out.unseen)]
    return out
