"""Decoding the common batch shape in C: every record with a null key, no headers and a value of
one size (what most producers of fixed-size events write).

Such a record is `length, 0, timestampDelta, offsetDelta, 0x01, valueLength, value, 0x00`, whose
only variable parts are four varints: one regular expression per value size matches it, and
`findall` (the `re` engine, in C) splits the whole batch into (length, timestamp delta, offset
delta, value) groups, leaving one dictionary lookup per varint to Python. The result is used
only when it provably equals a sequential parse: as many matches as the batch has records,
each record's length varint equal to its matched length, and the matched lengths adding up to
the batch, so that the matches tile it from its first byte to its last. Anything else (another
shape, malformed records) returns None, and the caller's general loop decodes the batch,
raising what it raises for bad input.
"""

from __future__ import annotations

import re

from gregor.client.consumer.record_decoder import read_varint
from gregor.client.consumer.records import ConsumerRecord
from gregor.protocol.primitives import uvarint_bytes
from gregor.records.batch import BatchHeader

_VARINTS = {uvarint_bytes(raw): (raw >> 1) ^ -(raw & 1) for raw in range(1 << 14)}
"""Zigzag-decoded value of every canonical varint of one or two bytes, by its bytes."""
_MIN_RECORDS = 8  # below this the general loop is as fast
_PATTERNS: dict[int, re.Pattern[bytes]] = {}
_MAX_PATTERNS = 64


def _pattern(value_size: int) -> re.Pattern[bytes]:
    pattern = _PATTERNS.get(value_size)
    if pattern is None:
        if len(_PATTERNS) >= _MAX_PATTERNS:
            _PATTERNS.clear()
        pattern = _PATTERNS[value_size] = re.compile(
            rb"([\x80-\xff]{0,4}[\x00-\x7f])\x00([\x80-\xff]{0,9}[\x00-\x7f])([\x80-\xff]{0,4}[\x00-\x7f])\x01"
            + re.escape(uvarint_bytes(value_size << 1)) + rb"(.{%d})\x00" % value_size, re.DOTALL)
    return pattern


def _first_value_size(data: bytes) -> int | None:
    """The value size of the first record when it has a null key, a value and no headers."""
    try:
        position = 0
        for _ in range(4):  # length, attributes (one byte), timestamp delta, offset delta
            while data[position] >= 0x80:
                position += 1
            position += 1
        if data[position] != 0x01:  # not a null key
            return None
        position += 1
        start = position
        while data[position] >= 0x80:
            position += 1
        size = _VARINTS.get(data[start:position + 1])
        if size is None or size < 0 or data[position + 1 + size] != 0:
            return None
        return size
    except IndexError:
        return None


def uniform_records(data: bytes, header: BatchHeader, topic: str, partition: int) -> list[ConsumerRecord] | None:
    """The batch's records (`data`: its records part, decompressed) when they all have the
    shape above, else None."""
    count = header.records_count
    if count < _MIN_RECORDS:
        return None
    value_size = _first_value_size(data)
    if value_size is None:
        return None
    matches = _pattern(value_size).findall(data)
    if len(matches) != count:
        return None
    fixed = 3 + len(uvarint_bytes(value_size << 1)) + value_size  # attributes, null key, value, header count
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    timestamp_type = header.timestamp_type
    append_time = header.max_timestamp if timestamp_type == 1 else None
    epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None
    varints = _VARINTS
    new, record_type = object.__new__, ConsumerRecord
    out: list[ConsumerRecord] = []
    add = out.append
    matched = 0
    for length, timestamp_bytes, offset_bytes, value in matches:
        try:
            body, timestamp_delta, offset_delta = varints[length], varints[timestamp_bytes], varints[offset_bytes]
        except KeyError:  # a varint of three bytes or more (past 8191 records or ms), or a non-canonical one
            body, timestamp_delta, offset_delta = (read_varint(length, 0)[0], read_varint(timestamp_bytes, 0)[0],
                                                   read_varint(offset_bytes, 0)[0])
        if body != fixed + len(timestamp_bytes) + len(offset_bytes):
            return None
        matched += len(length) + body
        record = new(record_type)  # every slot stored, as in poll_decoder
        record.topic = topic
        record.partition = partition
        record.offset = base_offset + offset_delta
        record.timestamp = base_timestamp + timestamp_delta if append_time is None else append_time
        record.timestamp_type = timestamp_type
        record.key = None
        record.value = value
        record._headers = None
        record.leader_epoch = epoch
        record.serialized_key_size = -1
        record.serialized_value_size = value_size
        add(record)
    return out if matched == len(data) else None

