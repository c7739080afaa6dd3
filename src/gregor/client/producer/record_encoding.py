"""The v2 bytes of a batch's records, from the columns that `send` queues them in (timestamps,
values, and keys and encoded headers where some record has them): varints from tables (most
lengths and deltas are small), and the bytes gathered by joins, into chunks that the batch keeps
and the request frame writes one after the other.

Records of the common shape (null keys, no headers, values of one size: a fast sender of
fixed-size events) are assembled without a Python step per record: a record then differs from
the one before only in its offset delta, its value and, between runs of one timestamp or one
offset-delta width, its length and timestamp delta, so the pieces of a run are a table slice of
offset varints interleaved with the values and two constant pieces, written into the list to
join by extended-slice assignments (in C), `_CHUNK` records at a time. Other batches take the
general loop.
"""

from __future__ import annotations

from itertools import groupby, repeat
from typing import Iterable, Iterator, Sequence

from gregor.protocol.primitives import uvarint_bytes, uvarint_table

_VARINTS = uvarint_table(1 << 15)  # the unsigned varints of 0 .. 32767
_SMALL = _VARINTS[:1 << 14]


def zigzag_varint(value: int) -> bytes:
    """The zigzag varint of a signed 64-bit value."""
    encoded = (value << 1) ^ (value >> 63)
    return _SMALL[encoded] if encoded < 16384 else uvarint_bytes(encoded)


_NULL = b"\x01"  # zigzag(-1): a null key, value or header value
NO_HEADERS = b"\x00"  # the encoded headers of a record without any
_ATTRIBUTES = b"\x00"
_LENGTH_AND_ATTRIBUTES = tuple(_SMALL[length << 1] + _ATTRIBUTES for length in range(8192))
"""A record's length (below 8192) as a varint, followed by its attributes byte (always 0)."""
_OFFSETS = _VARINTS[0:1 << 15:2]
"""The varint of each offset delta below 16384 (zigzag: twice the delta)."""
_UNIFORM_MIN = 16  # records below which the general loop is as fast
_CHUNK = 1024  # records encoded into one chunk of bytes


def encode_headers(headers: Iterable[tuple[str, bytes | None]]) -> bytes:
    """A record's header count and headers; names are UTF-8, values bytes or None."""
    items = list(headers)
    out = bytearray(zigzag_varint(len(items)))
    for name, value in items:
        encoded_name = name.encode("utf-8")
        out += zigzag_varint(len(encoded_name))
        out += encoded_name
        if value is None:
            out += _NULL
        else:
            out += zigzag_varint(len(value))
            out += value
    return bytes(out)


def encode_records(timestamps: Sequence[int], keys: Sequence[bytes | None] | None, values: Sequence[bytes | None],
                   headers: Sequence[bytes] | None, base_timestamp: int, offset_delta: int) -> list[bytes]:
    """The v2 bytes of the records given as columns (`keys` None: every key null; `headers`
    None: no record has headers), whose offset deltas start at `offset_delta`, in chunks to be
    written one after the other."""
    if keys is None and headers is None and len(values) >= _UNIFORM_MIN:
        encoded = _encode_uniform(timestamps, values, base_timestamp, offset_delta)
        if encoded is not None:
            return encoded
    return [_encode_loop(timestamps, keys, values, headers, base_timestamp, offset_delta)]


def _offset_varints(start: int, stop: int) -> Sequence[bytes]:
    """The varints of offset deltas `start` to `stop` (excluded)."""
    if stop <= len(_OFFSETS):
        return _OFFSETS[start:stop]
    return _OFFSETS[start:stop] + tuple(zigzag_varint(delta) for delta in range(max(start, len(_OFFSETS)), stop))


def _widths(start: int, stop: int) -> Iterator[tuple[int, int, int]]:
    """(first, end, varint bytes) of each run of offset deltas from `start` to `stop` whose
    varints have one width (zigzag: a delta below 64 takes one byte, below 8192 two, ...)."""
    width, limit = 1, 64
    while start < stop:
        while start >= limit:
            width, limit = width + 1, limit << 7
        end = min(stop, limit)
        yield start, end, width
        start = end


def _encode_uniform(timestamps: Sequence[int], values: Sequence[bytes | None], base_timestamp: int,
                    offset_delta: int) -> list[bytes] | None:
    """`encode_records` for keyless, headerless records whose values have one size (see the
    module doc); None for others. The checks and the assembly are C loops (map, set, groupby,
    slices, join), a chunk of `_CHUNK` records at a time: the list of pieces and the bytes
    joined from it stay small enough to be reused warm by the allocator, where one join of a
    whole batch's pieces writes a megabyte into memory never touched before."""
    try:
        sizes = set(map(len, values))
    except TypeError:  # a null value
        return None
    if len(sizes) != 1:
        return None
    size, = sizes
    count = len(values)
    middle = _NULL + zigzag_varint(size)  # the null key and the value's length
    fixed = 2 + len(middle) + size  # attributes, null key and value length, value, header count
    chunks = []
    for start in range(0, count, _CHUNK):
        stop = min(start + _CHUNK, count)
        pieces = _uniform_pieces(timestamps[start:stop], values[start:stop], base_timestamp, offset_delta + start,
                                 middle, fixed)
        if start == 0:
            pieces[0] = pieces[0][1:]  # the first record has no record before it
        if stop == count:
            pieces.append(NO_HEADERS)  # the last record's header count
        chunks.append(b"".join(pieces))
    return chunks


def _uniform_pieces(timestamps: Sequence[int], values: Sequence[bytes | None], base_timestamp: int,
                    offset_delta: int, middle: bytes, fixed: int) -> list[bytes]:
    """Per record: the header count ending the record before, its length, attributes and
    timestamp delta (one piece per run), its offset delta, `middle`, its value."""
    count = len(values)
    pieces = [middle] * (4 * count)
    pieces[3::4] = values
    taken = 0
    for timestamp, same in groupby(timestamps):
        delta = zigzag_varint(timestamp - base_timestamp)
        stop = taken + len(list(same))
        for first, end, width in _widths(offset_delta + taken, offset_delta + stop):
            separator = NO_HEADERS + zigzag_varint(fixed + len(delta) + width) + _ATTRIBUTES + delta
            length = end - first
            pieces[4 * taken:4 * (taken + length):4] = [separator] * length
            pieces[4 * taken + 1:4 * (taken + length):4] = _offset_varints(first, end)
            taken += length
    return pieces


def _encode_loop(timestamps: Sequence[int], keys: Sequence[bytes | None] | None, values: Sequence[bytes | None],
                 headers: Sequence[bytes] | None, base_timestamp: int, offset_delta: int) -> bytes:
    """`encode_records` for any records: one loop gathering the pieces, one join. The offset
    deltas' varints come sliced from a table, and a run of records with one timestamp (most of a
    fast sender's) reuses its delta's varint."""
    small, length_and_attributes = _SMALL, _LENGTH_AND_ATTRIBUTES
    offsets = _offset_varints(offset_delta, offset_delta + len(values))
    parts: list[bytes] = []
    add = parts.extend
    last_timestamp = last_value_size = delta_bytes = value_length = None
    fixed = 0  # the record's length less its offset delta and header bytes: attributes, timestamp delta, value
    for timestamp, key, value, encoded_headers, offset_bytes in zip(
            timestamps, repeat(None) if keys is None else keys, values,
            repeat(NO_HEADERS) if headers is None else headers, offsets):
        if value is None:
            value_size = -1
            value = b""
        else:
            value_size = len(value)
        if timestamp != last_timestamp or value_size != last_value_size:
            delta = timestamp - base_timestamp
            delta_bytes = small[delta << 1] if 0 <= delta < 8192 else zigzag_varint(delta)
            value_length = _NULL if value_size < 0 else \
                small[value_size << 1] if value_size < 8192 else zigzag_varint(value_size)
            fixed = 1 + len(delta_bytes) + len(value_length) + len(value)
            last_timestamp, last_value_size = timestamp, value_size
        length = fixed + len(offset_bytes) + len(encoded_headers)
        if key is None:
            length += 1
            add((length_and_attributes[length] if length < 8192 else zigzag_varint(length) + _ATTRIBUTES,
                 delta_bytes, offset_bytes, _NULL, value_length, value, encoded_headers))
        else:
            key_size = len(key)
            key_length = small[key_size << 1] if key_size < 8192 else zigzag_varint(key_size)
            length += len(key_length) + key_size
            add((length_and_attributes[length] if length < 8192 else zigzag_varint(length) + _ATTRIBUTES,
                 delta_bytes, offset_bytes, key_length, key, value_length, value, encoded_headers))
    return b"".join(parts)


