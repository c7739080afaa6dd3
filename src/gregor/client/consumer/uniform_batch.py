"""Decoding the common batch shape in C: every record with a null key, no headers and a value of
one size (what most producers of fixed-size events write).

Such a record is `length, 0, timestampDelta, offsetDelta, 0x01, valueLength, value, 0x00`, whose
only variable parts are three varints and the value. Per value size, two regular expressions
(the `re` engine, in C) do the work. The first, `fullmatch`ed against the whole batch, proves it
is a sequence of such records from its first byte to its last, each with the length its fields
add up to (the pattern has one branch per pair of varint sizes, each with its length spelled
out), so that a sequential parse would read exactly them. The second, with `split`, then cuts
the batch into a flat list of (timestamp delta, offset delta, value) groups (a tuple per record,
as `findall` makes, costs more); a match starts where the last one ended, since varints are
read by their continuation bits. Anything else (another shape, a malformed record, a delta of
more than ten or five varint bytes) returns None, and the caller's general loop decodes the
batch, raising what it raises for bad input.

The records are built `take` at a time, as `poll` hands them over, so that they die young
instead of outliving the garbage collector's young generations while a whole batch waits. A
take decodes its varints by table in C (`map`), or sees in one list comparison that the offset
deltas are those of a batch without gaps.
"""

from __future__ import annotations

import re
from itertools import chain, repeat
from operator import add
from typing import Sequence

from gregor.client.consumer.record_decoder import read_varint
from gregor.client.consumer.records import ConsumerRecord
from gregor.protocol.primitives import uvarint_bytes, uvarint_table
from gregor.records.batch import BatchHeader

_ENCODED = uvarint_table(1 << 15)  # the unsigned varints of 0 .. 32767
_VARINTS = {_ENCODED[raw]: (raw >> 1) ^ -(raw & 1) for raw in chain(range(1 << 14), range(1 << 14, 1 << 15, 2))}
"""Zigzag-decoded value of every canonical varint of one or two bytes, and of the three-byte ones
of 8192 to 16383 (the offset deltas of a batch of up to 16384 records), by its bytes."""
_SEQUENTIAL = list(_ENCODED[0:1 << 15:2])
"""The offset-delta varints of a batch without gaps, whose record i has the offset delta i."""
_MIN_RECORDS = 8  # below this the general loop is as fast
_MAX_TIMESTAMP_BYTES, _MAX_OFFSET_BYTES = 10, 5  # a 64-bit delta, and a 32-bit one (offset deltas are ints)
_PATTERNS: dict[int, tuple[re.Pattern[bytes], re.Pattern[bytes]]] = {}
_MAX_PATTERNS = 64


def _varint(size: int) -> bytes:
    """A pattern matching a varint of exactly `size` bytes."""
    return rb"[\x80-\xff]" * (size - 1) + rb"[\x00-\x7f]"


def _patterns(value_size: int) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """(the whole-batch check, the record splitter) for records with values of `value_size` bytes."""
    patterns = _PATTERNS.get(value_size)
    if patterns is None:
        if len(_PATTERNS) >= _MAX_PATTERNS:
            _PATTERNS.clear()
        value_length = re.escape(uvarint_bytes(value_size << 1))
        tail = rb"\x01" + value_length + rb".{%d}\x00" % value_size
        fixed = 3 + len(uvarint_bytes(value_size << 1)) + value_size  # attributes, null key, value, header count
        branches = []
        for deltas in range(2, _MAX_TIMESTAMP_BYTES + _MAX_OFFSET_BYTES + 1):  # the two deltas' varint bytes
            pairs = [_varint(first) + _varint(deltas - first) for first in range(1, _MAX_TIMESTAMP_BYTES + 1)
                     if 1 <= deltas - first <= _MAX_OFFSET_BYTES]
            branches.append(re.escape(uvarint_bytes((fixed + deltas) << 1)) + rb"\x00(?:" + b"|".join(pairs) + rb")"
                            + tail)
        check = re.compile(rb"(?:" + b"|".join(branches) + rb")*", re.DOTALL)
        delta_groups = rb"([\x80-\xff]{0,%d}[\x00-\x7f])([\x80-\xff]{0,%d}[\x00-\x7f])" % (
            _MAX_TIMESTAMP_BYTES - 1, _MAX_OFFSET_BYTES - 1)
        split = re.compile(rb"[\x80-\xff]{0,4}[\x00-\x7f]\x00" + delta_groups + rb"\x01" + value_length
                           + rb"(.{%d})\x00" % value_size, re.DOTALL)
        patterns = _PATTERNS[value_size] = (check, split)
    return patterns


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


class UniformRecords:
    """The records of a batch of the shape above, built as they are taken."""

    __slots__ = ("_parts", "_taken", "remaining", "_topic", "_partition", "_base_offset", "_base_timestamp",
                 "_timestamp_type", "_append_time", "_epoch", "_value_size")

    def __init__(self, parts: list[bytes], header: BatchHeader, topic: str, partition: int, value_size: int) -> None:
        self._parts = parts  # b"", then timestamp delta, offset delta, value and b"" for each record
        self._taken = 0
        self.remaining = header.records_count
        self._topic = topic
        self._partition = partition
        self._base_offset = header.base_offset
        self._base_timestamp = header.base_timestamp
        self._timestamp_type = header.timestamp_type
        self._append_time = header.max_timestamp if header.timestamp_type == 1 else None
        self._epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None
        self._value_size = value_size

    def take(self, limit: int) -> list[ConsumerRecord]:
        """The next `limit` records (fewer at the end of the batch)."""
        start = self._taken
        taking = min(limit, self.remaining)
        stop = start + taking
        self._taken = stop
        self.remaining -= taking
        parts, first, end = self._parts, 1 + 4 * start, 1 + 4 * stop
        topic, partition, base_offset, base_timestamp = self._topic, self._partition, self._base_offset, \
            self._base_timestamp
        timestamp_type, append_time, epoch, value_size = self._timestamp_type, self._append_time, self._epoch, \
            self._value_size
        offsets = _offsets(parts[first + 1:end:4], start, base_offset)
        timestamps = _values(parts[first:end:4], base_timestamp) if append_time is None else repeat(append_time)
        new, record_type = object.__new__, ConsumerRecord
        out: list[ConsumerRecord] = []
        append = out.append
        for offset, timestamp, value in zip(offsets, timestamps, parts[first + 2:end:4]):
            record = new(record_type)  # every slot stored, as in poll_decoder
            record.topic = topic
            record.partition = partition
            record.offset = offset
            record.timestamp = timestamp
            record.timestamp_type = timestamp_type
            record.key = None
            record.value = value
            record._headers = None
            record.leader_epoch = epoch
            record.serialized_key_size = -1
            record.serialized_value_size = value_size
            append(record)
        if not self.remaining:
            self._parts = []
        return out


def _offsets(varints: list[bytes], start: int, base_offset: int) -> Sequence[int]:
    """The offsets of the records `start` on whose offset-delta varints are `varints`: without a
    gap (a record's delta is its index, as producers write them), one comparison in C says so."""
    stop = start + len(varints)
    if stop <= len(_SEQUENTIAL) and varints == _SEQUENTIAL[start:stop]:
        return range(base_offset + start, base_offset + stop)
    return _values(varints, base_offset)


def _values(varints: list[bytes], base: int) -> list[int]:
    """`base` plus each zigzag varint (decoded in C, by table, when all are in `_VARINTS`)."""
    try:
        return list(map(add, repeat(base), map(_VARINTS.__getitem__, varints)))
    except KeyError:  # a longer varint (a timestamp delta past 8191 ms, or 16383 records), or a non-canonical one
        return [base + read_varint(varint, 0)[0] for varint in varints]


def uniform_records(data: bytes, header: BatchHeader, topic: str, partition: int) -> UniformRecords | None:
    """The batch's records (`data`: its records part, decompressed) when they all have the
    shape above, else None."""
    count = header.records_count
    if count < _MIN_RECORDS:
        return None
    value_size = _first_value_size(data)
    if value_size is None:
        return None
    check, split = _patterns(value_size)
    if check.fullmatch(data) is None:
        return None
    parts = split.split(data)
    if len(parts) != 4 * count + 1:
        return None
    return UniformRecords(parts, header, topic, partition, value_size)
