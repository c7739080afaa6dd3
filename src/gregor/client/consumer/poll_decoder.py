"""Decoding a v2 record batch straight into the `ConsumerRecord`s that `poll` returns.

A record decoded through a generator (`record_decoder.iter_records`) and then turned into a
ConsumerRecord costs a generator step, a tuple, an unpacking and a second loop per record, and
its one-byte varint fast path misses the two-byte lengths of every record over 63 bytes. Here
one flat loop per batch reads each record with one- and two-byte varints from a table (as
`batch_decoder` does for columns) and builds its ConsumerRecord at once, with no headers list
unless the record has headers. The record's slots are stored here directly, without a call to
`ConsumerRecord.__init__` (a Python call with eleven arguments costs about as much as the
stores): this loop sets every slot the class declares, as its test checks. Batches of the most
common shape (null keys, no headers, values of one size) are split by regular expressions
instead (`uniform_batch`). Malformed input raises the same CORRUPT_MESSAGE RecordsError as the
other decoders.

Both build the records `take` at a time, as `poll` hands them over (at most max.poll.records),
rather than a whole batch at once: the records of a batch of thousands would otherwise live
through several collections of the garbage collector's young generations and reach the old one,
whose collections then walk them all (a quarter of a consumer's time, measured). So a malformed
record is raised when the take reaches it, after the records before it, as in Java's consumer.
"""

from __future__ import annotations

from gregor.client.consumer.batch_decoder import ZIGZAG
from gregor.client.consumer.record_decoder import Truncated, batch_data, corrupt_record, read_headers, read_varint
from gregor.client.consumer.records import ConsumerRecord
from gregor.client.consumer.uniform_batch import UniformRecords, uniform_records
from gregor.records.batch import BatchHeader


def batch_records(buf: bytes | memoryview, pos: int, header: BatchHeader, max_uncompressed_bytes: int,
                  topic: str, partition: int) -> BatchRecords:
    """The records of the v2 batch at `pos` (its header already parsed) as ConsumerRecords of
    `topic`-`partition` with raw key and value (deserializers are the caller's), to take."""
    data = batch_data(buf, pos, header, max_uncompressed_bytes)
    uniform = uniform_records(data, header, topic, partition)
    return uniform if uniform is not None else LoopRecords(data, header, topic, partition)


def decode_consumer_records(buf: bytes | memoryview, pos: int, header: BatchHeader, max_uncompressed_bytes: int,
                            topic: str, partition: int) -> list[ConsumerRecord]:
    """Every record of the v2 batch at `pos` at once (see `batch_records`)."""
    records = batch_records(buf, pos, header, max_uncompressed_bytes, topic, partition)
    return records.take(records.remaining)


class LoopRecords:
    """The records of any v2 batch, read by one flat loop that resumes where the last take stopped."""

    __slots__ = ("_data", "_header", "_position", "remaining", "_topic", "_partition")

    def __init__(self, data: bytes, header: BatchHeader, topic: str, partition: int) -> None:
        self._data = data
        self._header = header
        self._position = 0
        self.remaining = header.records_count
        self._topic = topic
        self._partition = partition

    def take(self, limit: int) -> list[ConsumerRecord]:
        """The next `limit` records (fewer at the end of the batch); CORRUPT_MESSAGE RecordsError
        for a malformed one, or for bytes after the last."""
        if not self.remaining:
            return []
        data, header, topic, partition = self._data, self._header, self._topic, self._partition
        end = len(data)
        base_offset, base_timestamp = header.base_offset, header.base_timestamp
        timestamp_type = header.timestamp_type
        append_time = header.max_timestamp if timestamp_type == 1 else None
        epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None
        zigzag = ZIGZAG
        new, record_type = object.__new__, ConsumerRecord
        out: list[ConsumerRecord] = []
        add = out.append
        position = self._position
        taking = min(limit, self.remaining)
        self.remaining -= taking
        try:
            for _ in range(taking):
                byte = data[position]
                if byte < 0x80:
                    length = zigzag[byte]
                    position += 1
                elif data[position + 1] < 0x80:
                    length = zigzag[(byte & 0x7F) | (data[position + 1] << 7)]
                    position += 2
                else:
                    length, position = read_varint(data, position)
                record_end = position + length
                if length < 0 or record_end > end:
                    raise corrupt_record(header, "record length past the end of the batch")
                byte = data[position + 1]  # after the attributes byte
                if byte < 0x80:
                    timestamp_delta = zigzag[byte]
                    position += 2
                elif data[position + 2] < 0x80:
                    timestamp_delta = zigzag[(byte & 0x7F) | (data[position + 2] << 7)]
                    position += 3
                else:
                    timestamp_delta, position = read_varint(data, position + 1)
                byte = data[position]
                if byte < 0x80:
                    offset_delta = zigzag[byte]
                    position += 1
                elif data[position + 1] < 0x80:
                    offset_delta = zigzag[(byte & 0x7F) | (data[position + 1] << 7)]
                    position += 2
                else:
                    offset_delta, position = read_varint(data, position)
                byte = data[position]
                if byte == 1:  # zigzag(-1): a null key, the common case
                    key = None
                    key_size = -1
                    position += 1
                else:
                    if byte < 0x80:
                        key_size = zigzag[byte]
                        position += 1
                    elif data[position + 1] < 0x80:
                        key_size = zigzag[(byte & 0x7F) | (data[position + 1] << 7)]
                        position += 2
                    else:
                        key_size, position = read_varint(data, position)
                    if key_size < 0:
                        key = None
                        key_size = -1
                    else:
                        key = data[position:position + key_size]
                        position += key_size
                byte = data[position]
                if byte < 0x80:
                    value_size = zigzag[byte]
                    position += 1
                elif data[position + 1] < 0x80:
                    value_size = zigzag[(byte & 0x7F) | (data[position + 1] << 7)]
                    position += 2
                else:
                    value_size, position = read_varint(data, position)
                if value_size < 0:
                    value = None
                    value_size = -1
                else:
                    value = data[position:position + value_size]
                    position += value_size
                if data[position] == 0:
                    headers = None
                    position += 1
                else:
                    count, position = read_varint(data, position)
                    if count < 0 or count > record_end - position:
                        raise corrupt_record(header, f"record claims {count} headers")
                    headers, position = read_headers(data, position, count)
                if position != record_end:
                    raise corrupt_record(header, "record length does not match its fields")
                record = new(record_type)
                record.topic = topic
                record.partition = partition
                record.offset = base_offset + offset_delta
                record.timestamp = base_timestamp + timestamp_delta if append_time is None else append_time
                record.timestamp_type = timestamp_type
                record.key = key
                record.value = value
                record._headers = headers
                record.leader_epoch = epoch
                record.serialized_key_size = key_size
                record.serialized_value_size = value_size
                add(record)
        except (Truncated, IndexError):
            raise corrupt_record(header, "truncated record") from None
        except UnicodeDecodeError:
            raise corrupt_record(header, "header name is not UTF-8") from None
        except ValueError as error:
            raise corrupt_record(header, str(error)) from None
        self._position = position
        if not self.remaining:
            if position != end:
                raise corrupt_record(header, "bytes after the last record of the batch")
            self._data = b""
        return out


class ListRecords:
    """Records decoded elsewhere (a legacy v0/v1 entry), taken as a batch's are."""

    __slots__ = ("_records", "remaining")

    def __init__(self, records: list[ConsumerRecord]) -> None:
        self._records = records
        self.remaining = len(records)

    def take(self, limit: int) -> list[ConsumerRecord]:
        records = self._records
        start = len(records) - self.remaining
        self.remaining = max(self.remaining - limit, 0)
        return records[start:start + limit]


BatchRecords = UniformRecords | LoopRecords | ListRecords
"""The records of one batch, built `take(limit)` at a time; `remaining` says how many are left."""
