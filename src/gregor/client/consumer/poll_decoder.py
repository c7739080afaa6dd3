"""Decoding a whole v2 record batch straight into the `ConsumerRecord`s that `poll` returns.

A record decoded through a generator (`record_decoder.iter_records`) and then turned into a
ConsumerRecord costs a generator step, a tuple, an unpacking and a second loop per record, and
its one-byte varint fast path misses the two-byte lengths of every record over 63 bytes. Here
one flat loop per batch reads each record with one- and two-byte varints from a table (as
`batch_decoder` does for columns) and builds its ConsumerRecord at once, with no headers list
unless the record has headers. The record's slots are stored here directly, without a call to
`ConsumerRecord.__init__` (a Python call with eleven arguments costs about as much as the
stores): this loop sets every slot the class declares, as its test checks. Batches of the most
common shape (null keys, no headers, values of one size) are split by a regular expression
instead (`uniform_batch`). Malformed input raises the same CORRUPT_MESSAGE RecordsError as the
other decoders.
"""

from __future__ import annotations

from gregor.client.consumer.batch_decoder import ZIGZAG
from gregor.client.consumer.record_decoder import Truncated, batch_data, corrupt_record, read_headers, read_varint
from gregor.client.consumer.records import ConsumerRecord
from gregor.client.consumer.uniform_batch import uniform_records
from gregor.records.batch import BatchHeader


def decode_consumer_records(buf: bytes | memoryview, pos: int, header: BatchHeader, max_uncompressed_bytes: int,
                            topic: str, partition: int) -> list[ConsumerRecord]:
    """Every record of the v2 batch at `pos` (its header already parsed) as a ConsumerRecord of
    `topic`-`partition` with raw key and value (deserializers are the caller's)."""
    data = batch_data(buf, pos, header, max_uncompressed_bytes)
    uniform = uniform_records(data, header, topic, partition)
    if uniform is not None:
        return uniform
    end = len(data)
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    timestamp_type = header.timestamp_type
    append_time = header.max_timestamp if timestamp_type == 1 else None
    epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None
    zigzag = ZIGZAG
    new, record_type = object.__new__, ConsumerRecord
    out: list[ConsumerRecord] = []
    add = out.append
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
    if position != end:
        raise corrupt_record(header, "bytes after the last record of the batch")
    return out
