"""Decoding a whole v2 record batch into columns, for bulk readers such as the Spark source.

The per-record path (`record_decoder.iter_records`, then a ConsumerRecord per record in `poll`)
costs a generator step, a tuple and an object per record, which is most of what a bulk reader
spends. Here one call decodes a batch straight into five lists in one flat loop: one- and
two-byte varints (nearly every length and delta in a batch) are a table lookup, keys and values
are slices of one bytes object, and records without headers share one empty tuple. Malformed
input raises the same CORRUPT_MESSAGE RecordsError as the per-record decoder.
"""

from __future__ import annotations

from typing import Sequence

from gregor.client.consumer.record_decoder import (
    Header, Truncated, batch_data, corrupt_record, read_headers, read_varint,
)
from gregor.records.batch import BatchHeader

_NO_HEADERS: tuple = ()

ZIGZAG = [(raw >> 1) ^ -(raw & 1) for raw in range(1 << 14)]
"""Zigzag-decoded value of every varint of one or two bytes, indexed by its 14 payload bits."""

Headers = Sequence[Header]


class RecordColumns:
    """The records of one partition chunk, column by column (all lists have the same length)."""

    __slots__ = ("offsets", "timestamps", "keys", "values", "headers")

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[Headers] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def extend(self, other: RecordColumns) -> None:
        """Append `other`'s records after these."""
        self.offsets += other.offsets
        self.timestamps += other.timestamps
        self.keys += other.keys
        self.values += other.values
        self.headers += other.headers

    def slice(self, start: int, stop: int | None = None) -> RecordColumns:
        """The records from index `start` up to `stop`, as new columns."""
        part = RecordColumns()
        part.offsets = self.offsets[start:stop]
        part.timestamps = self.timestamps[start:stop]
        part.keys = self.keys[start:stop]
        part.values = self.values[start:stop]
        part.headers = self.headers[start:stop]
        return part


def decode_batch(buf: bytes | memoryview, pos: int, header: BatchHeader, max_uncompressed_bytes: int
                 ) -> RecordColumns:
    """Every record of the v2 batch at `pos` (its header already parsed), as columns."""
    into = RecordColumns()
    data = batch_data(buf, pos, header, max_uncompressed_bytes)
    end = len(data)
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    append_time = header.max_timestamp if header.timestamp_type == 1 else None
    zigzag = ZIGZAG
    add_offset, add_timestamp = into.offsets.append, into.timestamps.append
    add_key, add_value, add_headers = into.keys.append, into.values.append, into.headers.append
    position = 0
    try:
        for _ in range(header.records_count):
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
            position += 1  # attributes
            byte = data[position]
            if byte < 0x80:
                timestamp_delta = zigzag[byte]
                position += 1
            elif data[position + 1] < 0x80:
                timestamp_delta = zigzag[(byte & 0x7F) | (data[position + 1] << 7)]
                position += 2
            else:
                timestamp_delta, position = read_varint(data, position)
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
            if byte < 0x80:
                size = zigzag[byte]
                position += 1
            elif data[position + 1] < 0x80:
                size = zigzag[(byte & 0x7F) | (data[position + 1] << 7)]
                position += 2
            else:
                size, position = read_varint(data, position)
            if size < 0:
                add_key(None)
            else:
                add_key(data[position:position + size])
                position += size
            byte = data[position]
            if byte < 0x80:
                size = zigzag[byte]
                position += 1
            elif data[position + 1] < 0x80:
                size = zigzag[(byte & 0x7F) | (data[position + 1] << 7)]
                position += 2
            else:
                size, position = read_varint(data, position)
            if size < 0:
                add_value(None)
            else:
                add_value(data[position:position + size])
                position += size
            if data[position] == 0:
                add_headers(_NO_HEADERS)
                position += 1
            else:
                count, position = read_varint(data, position)
                if count < 0 or count > record_end - position:
                    raise corrupt_record(header, f"record claims {count} headers")
                headers, position = read_headers(data, position, count)
                add_headers(headers)
            if position != record_end:
                raise corrupt_record(header, "record length does not match its fields")
            add_offset(base_offset + offset_delta)
            add_timestamp(base_timestamp + timestamp_delta if append_time is None else append_time)
    except (Truncated, IndexError):
        raise corrupt_record(header, "truncated record") from None
    except UnicodeDecodeError:
        raise corrupt_record(header, "header name is not UTF-8") from None
    except ValueError as error:
        raise corrupt_record(header, str(error)) from None
    if position != end:
        raise corrupt_record(header, "bytes after the last record of the batch")
    return into
