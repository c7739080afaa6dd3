"""Columnar produce: many records from columns encoded into v2 record batches in one vectorized
pass (pyarrow compute), without a Python object per record.

A record inside a v2 batch is `length, attributes, timestampDelta, offsetDelta, keyLength, key,
valueLength, value, headers` with zigzag varints. Here each of those is a column: varints come
from a table of every 1- and 2-byte varint (`take` by value) or, for larger values, are built
byte by byte; each record's length is summed from its pieces' lengths, and one
`binary_join_element_wise` concatenates the columns row by row: the joined array's data buffer
is the records' bytes, back to back. Rows are cut into batches of
about `batch.size` bytes before encoding (offset deltas count from each batch's first row), so a
batch is a slice of that buffer.

Sans-IO: the producer decides partitions, reserves memory and queues the batches.

Every literal given to a compute function is a prebuilt Arrow scalar: a Python int or bytes is
converted on each call, and without numpy installed pyarrow's conversion tries to import it each
time (about 0.1 ms per call).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from gregor.client.errors import ClientErrorCode, KafkaException
from gregor.client.partitioner import partition_for_key
from gregor.client.producer.batch import EncodedBatch, encode_headers
from gregor.protocol.primitives import uvarint_bytes

_SMALL_LIMIT = 1 << 14
_RECORD_OVERHEAD_BOUND = 1 + 10 + 3  # attributes, timestampDelta and offsetDelta varints (upper bound)
_small_table: pa.Array | None = None
_byte_table: pa.Array | None = None


def _int(value: int) -> pa.Scalar:
    return pa.scalar(value, pa.int64())


_ZERO, _ONE, _TWO, _MINUS_ONE = _int(0), _int(1), _int(2), _int(-1)
_EMPTY, _NULL_BYTE = pa.scalar(b"", pa.binary()), pa.scalar(b"\x00", pa.binary())
_NO_BYTES = pa.scalar(None, pa.binary())
_U7, _U127, _U128, _U0 = (pa.scalar(value, pa.uint64()) for value in (7, 127, 128, 0))


def _small() -> pa.Array:
    """Every unsigned varint below 2**14, by value (one or two bytes each)."""
    global _small_table
    if _small_table is None:
        _small_table = pa.array([uvarint_bytes(value) for value in range(_SMALL_LIMIT)], pa.binary())
    return _small_table


def _bytes() -> pa.Array:
    global _byte_table
    if _byte_table is None:
        _byte_table = pa.array([bytes([value]) for value in range(256)], pa.binary())
    return _byte_table


def zigzag(values: pa.Array) -> pa.Array:
    """Zigzag of signed int64 values (-1 → 1, 0 → 0, 1 → 2, ...)."""
    values = values.cast(pa.int64())
    return pc.if_else(pc.greater_equal(values, _ZERO), pc.multiply(values, _TWO),
                      pc.subtract(pc.multiply(pc.negate(values), _TWO), _ONE))


def varints(unsigned: pa.Array) -> pa.Array:
    """The unsigned varint of each value, as a binary array."""
    if len(unsigned) == 0 or pc.max(unsigned).as_py() < _SMALL_LIMIT:
        return _small().take(unsigned)
    table, rest = _bytes(), unsigned.cast(pa.uint64())
    pieces = []
    for index in range(10):
        more = pc.greater_equal(rest, _U128)
        low = pc.bit_wise_and(rest, _U127)
        byte = pc.if_else(more, pc.bit_wise_or(low, _U128), low)
        piece = table.take(byte)
        pieces.append(pc.if_else(pc.greater(rest, _U0), piece, _NO_BYTES) if index else piece)
        rest = pc.shift_right(rest, _U7)
        if not pc.any(pc.greater(rest, _U0)).as_py():
            break
    return pc.binary_join_element_wise(*pieces, _EMPTY, null_handling="skip")


@dataclass(frozen=True)
class RecordColumns:
    """Rows to send: values and keys (binary, nullable), timestamps (epoch ms), encoded headers
    (binary: a record's header count and headers), partitions (null: the partitioner decides)."""

    values: pa.Array
    keys: pa.Array
    timestamps: pa.Array
    headers: pa.Array | None
    partitions: pa.Array | None

    def __len__(self) -> int:
        return len(self.values)

    def take(self, indices: pa.Array) -> RecordColumns:
        return RecordColumns(self.values.take(indices), self.keys.take(indices), self.timestamps.take(indices),
                             None if self.headers is None else self.headers.take(indices),
                             None if self.partitions is None else self.partitions.take(indices))

    def upper_bound_sizes(self) -> pa.Array:
        """Each record's encoded size or a little more (without its length prefix of <= 5 bytes)."""
        sizes = pc.add(_lengths(self.values), _lengths(self.keys))
        sizes = pc.add(sizes, _int(_RECORD_OVERHEAD_BOUND + 10 + 5))
        if self.headers is not None:
            sizes = pc.add(sizes, pc.binary_length(self.headers))
        return sizes


def _lengths(column: pa.Array) -> pa.Array:
    return pc.fill_null(pc.binary_length(column).cast(pa.int64()), _ZERO)


def record_columns(values: Any, keys: Any = None, *, timestamps: Any = None, headers: Any = None,
                   partitions: Any = None) -> RecordColumns:
    """Columns from lists or pyarrow arrays, or from a pyarrow Table/RecordBatch given as `values`
    with columns `value` and optional `key`, `timestamp`, `headers`, `partition`."""
    if isinstance(values, (pa.Table, pa.RecordBatch)):
        if any(item is not None for item in (keys, timestamps, headers, partitions)):
            raise TypeError("with a pyarrow table, keys, timestamps, headers and partitions are its columns")
        names = values.schema.names
        if "value" not in names:
            raise ValueError(f"a table to send needs a 'value' column (it has {', '.join(names)})")

        def column(name: str) -> Any:
            return values.column(name) if name in names else None
        return record_columns(column("value"), column("key"), timestamps=column("timestamp"),
                              headers=column("headers"), partitions=column("partition"))
    value_array = _binary_column(values, "values")
    count = len(value_array)
    key_array = pa.nulls(count, pa.binary()) if keys is None else _binary_column(keys, "keys")
    if len(key_array) != count:
        raise ValueError(f"keys has {len(key_array)} rows and values {count}")
    if timestamps is None:
        timestamp_array = pc.fill_null(pa.nulls(count, pa.int64()), _int(int(time.time() * 1000)))
    else:
        timestamp_array = _timestamp_column(timestamps, count)
    return RecordColumns(value_array, key_array, timestamp_array,
                         None if headers is None else _header_column(headers, count),
                         None if partitions is None else _partition_column(partitions, count))


def _combined(column: Any) -> Any:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _binary_column(column: Any, name: str) -> pa.Array:
    column = _combined(column)
    if isinstance(column, pa.Array):
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or \
                pa.types.is_large_binary(column.type) or pa.types.is_string_view(column.type) or \
                pa.types.is_binary_view(column.type):
            return column.cast(pa.binary())
        if not pa.types.is_binary(column.type):
            raise TypeError(f"{name} must be binary or string, not {column.type}")
        return column
    if isinstance(column, (str, bytes)) or not isinstance(column, Iterable):
        raise TypeError(f"{name} must be a list of bytes (or None) or a pyarrow array, not {type(column).__name__}")
    try:
        return pa.array(column, pa.binary())
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise TypeError(f"{name} must hold bytes or None: {error}") from None


def _timestamp_column(column: Any, count: int) -> pa.Array:
    column = _combined(column)
    if not isinstance(column, pa.Array):
        column = pa.array(column, pa.int64())
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms")).cast(pa.int64())
    if not pa.types.is_integer(column.type):
        raise TypeError(f"timestamps must be epoch milliseconds or a timestamp column, not {column.type}")
    if len(column) != count:
        raise ValueError(f"timestamps has {len(column)} rows and values {count}")
    return pc.fill_null(column.cast(pa.int64()), _int(int(time.time() * 1000)))


def _partition_column(column: Any, count: int) -> pa.Array:
    column = _combined(column)
    if not isinstance(column, pa.Array):
        column = pa.array(column, pa.int64())
    if not pa.types.is_integer(column.type):
        raise TypeError(f"partitions must be integers, not {column.type}")
    if len(column) != count:
        raise ValueError(f"partitions has {len(column)} rows and values {count}")
    return column.cast(pa.int64())


def _header_column(column: Any, count: int) -> pa.Array:
    """Each row's headers encoded (count and pairs); from a list of mappings or pair lists, or an
    Arrow list<struct<key, value>> (Spark's headers column). One Python step per row: headers
    have no vectorized path."""
    column = _combined(column)
    rows = column.to_pylist() if isinstance(column, pa.Array) else list(column)
    if len(rows) != count:
        raise ValueError(f"headers has {len(rows)} rows and values {count}")
    return pa.array([b"\x00" if not row else encode_headers(_pairs(row)) for row in rows], pa.binary())


def _pairs(row: Any) -> list[tuple[str, bytes | None]]:
    items: Iterable[Any] = row.items() if isinstance(row, Mapping) else row
    pairs = []
    for item in items:
        name, value = (item["key"], item["value"]) if isinstance(item, Mapping) else item
        if not isinstance(name, str):
            raise TypeError(f"a header name must be str, not {type(name).__name__}")
        if isinstance(value, str):
            value = value.encode("utf-8")
        pairs.append((name, value))
    return pairs


def partition_groups(columns: RecordColumns, partition: int | None, num_partitions: int,
                     keys_place_records: bool) -> list[tuple[int, RecordColumns]]:
    """The rows of each target partition, in their order: `partition` for all, else each row's
    partition column, else murmur2 of its key (one Python step per keyed row), else -1 (the
    partitioner places each batch)."""
    count = len(columns)
    if partition is not None:
        if not 0 <= partition < num_partitions:
            raise _unknown_partition(partition, num_partitions)
        return [(partition, columns)]
    targets = columns.partitions if columns.partitions is not None else pa.nulls(count, pa.int64())
    if keys_place_records and columns.keys.null_count < count:
        keyed = pc.and_(pc.is_null(targets), pc.is_valid(columns.keys))
        if pc.any(keyed).as_py():
            keys = columns.keys.filter(keyed).to_pylist()
            targets = pc.replace_with_mask(targets, keyed, pa.array(
                [partition_for_key(key, num_partitions) for key in keys], pa.int64()))
    targets = pc.fill_null(targets, _MINUS_ONE)
    low, high = pc.min_max(targets).values()
    if high.as_py() >= num_partitions or low.as_py() < -1:
        bad = high.as_py() if high.as_py() >= num_partitions else low.as_py()
        raise _unknown_partition(bad, num_partitions)
    distinct = pc.unique(targets).to_pylist()
    if len(distinct) == 1:
        return [(distinct[0], columns)]
    return [(target, columns.take(pc.indices_nonzero(pc.equal(targets, _int(target)))))
            for target in sorted(distinct)]


def _unknown_partition(partition: int, num_partitions: int) -> KafkaException:
    return KafkaException(ClientErrorCode._UNKNOWN_PARTITION,
                          f"partition {partition} does not exist (the topic has partitions 0 to {num_partitions - 1})")


def batch_bounds(columns: RecordColumns, batch_size: int) -> list[tuple[int, int]]:
    """(start, end) rows of consecutive batches of about `batch_size` bytes each (at least one row)."""
    count = len(columns)
    if count == 0:
        return []
    ends = pc.cumulative_sum(columns.upper_bound_sizes())
    batch_ids = pc.divide(pc.subtract(ends, _ONE), _int(max(batch_size, 1)))
    run_ends = pc.run_end_encode(batch_ids).run_ends.to_pylist()
    starts = [0, *run_ends[:-1]]
    return list(zip(starts, run_ends))


def encode_batches(columns: RecordColumns, bounds: Sequence[tuple[int, int]]) -> list[EncodedBatch]:
    """The records of each row range, encoded in one pass over the columns."""
    count = len(columns)
    if count == 0:
        return []
    starts = pa.array([start for start, _ in bounds], pa.int64())
    run_ends = pa.array([end for _, end in bounds], pa.int32())
    batch_start = pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(run_ends, starts))
    rows = pc.subtract(pc.cumulative_sum(pc.fill_null(pa.nulls(count, pa.int64()), _ONE)), _ONE)
    offset_deltas = varints(pc.multiply(pc.subtract(rows, batch_start), _TWO))
    timestamps = columns.timestamps
    base_timestamps = timestamps.take(starts)
    timestamp_deltas = varints(zigzag(pc.subtract(
        timestamps, pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(run_ends, base_timestamps)))))
    key_lengths = pc.fill_null(pc.binary_length(columns.keys).cast(pa.int64()), _MINUS_ONE)
    value_lengths = pc.fill_null(pc.binary_length(columns.values).cast(pa.int64()), _MINUS_ONE)
    key_varints, value_varints = varints(zigzag(key_lengths)), varints(zigzag(value_lengths))
    headers = columns.headers if columns.headers is not None else _NULL_BYTE
    # each record's length, summed from its pieces' lengths, so that one join writes the records
    body_lengths = pc.add(pc.add(_lengths(timestamp_deltas), _lengths(offset_deltas)),
                          pc.add(_lengths(key_varints), _lengths(value_varints)))
    body_lengths = pc.add(body_lengths, pc.add(pc.add(_lengths(columns.keys), _lengths(columns.values)),
                                               _lengths(headers) if columns.headers is not None else _ONE))
    records = pc.binary_join_element_wise(
        varints(zigzag(pc.add(body_lengths, _ONE))), _NULL_BYTE, timestamp_deltas, offset_deltas, key_varints,
        pc.fill_null(columns.keys, _EMPTY), value_varints, pc.fill_null(columns.values, _EMPTY), headers, _EMPTY)
    _, offset_buffer, data = records.buffers()
    offsets = pa.Array.from_buffers(pa.int32(), len(records) + 1, [None, offset_buffer], offset=records.offset)
    cuts = offsets.take(pa.array([0, *(end for _, end in bounds)], pa.int64())).to_pylist()
    bases = base_timestamps.to_pylist()
    extremes = pc.min_max(timestamps)
    if extremes["min"] == extremes["max"]:
        maxima = bases
    else:
        maxima = [pc.max(timestamps.slice(start, end - start)).as_py() for start, end in bounds]
    return [EncodedBatch(data[cuts[index]:cuts[index + 1]].to_pybytes(), end - start, bases[index], maxima[index])
            for index, (start, end) in enumerate(bounds)]
