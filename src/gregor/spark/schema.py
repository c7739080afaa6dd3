"""The source's schema (Spark's Kafka source schema, field for field) and the sink's accepted columns.

`read()` yields Arrow record batches, which Spark accepts only when their schema equals the one it
derives from the Spark schema (types and nullability): every field nullable, timestamps in
microseconds tagged UTC. `arrow_schema` builds exactly that.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType, BinaryType, DataType, IntegerType, LongType, StringType, StructField, StructType, TimestampType,
)

from gregor.spark.errors import OptionError

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
ARROW_HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))

_SOURCE_FIELDS = [
    ("key", BinaryType(), pa.binary()),
    ("value", BinaryType(), pa.binary()),
    ("topic", StringType(), pa.string()),
    ("partition", IntegerType(), pa.int32()),
    ("offset", LongType(), pa.int64()),
    ("timestamp", TimestampType(), pa.timestamp("us", tz="UTC")),
    ("timestampType", IntegerType(), pa.int32()),
]


def source_schema(include_headers: bool) -> StructType:
    """key, value, topic, partition, offset, timestamp, timestampType (+ headers)."""
    fields = [StructField(name, spark_type) for name, spark_type, _ in _SOURCE_FIELDS]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema Spark expects from `read()` for `source_schema(include_headers)`."""
    fields = [pa.field(name, arrow_type) for name, _, arrow_type in _SOURCE_FIELDS]
    if include_headers:
        fields.append(pa.field("headers", ARROW_HEADERS_TYPE))
    return pa.schema(fields)


_SINK_TYPES: dict[str, tuple[tuple[type[DataType], ...], str]] = {
    "value": ((StringType, BinaryType), "string or binary"),
    "key": ((StringType, BinaryType), "string or binary"),
    "topic": ((StringType,), "string"),
    "partition": ((IntegerType,), "int"),
}


def check_sink_schema(schema: StructType, topic_option: str | None) -> None:
    """Refuse, before any task runs, a DataFrame the sink cannot write (as Spark's Kafka sink does).
    Other columns are ignored."""
    columns = {field.name: field.dataType for field in schema.fields}
    if "value" not in columns:
        raise OptionError("value", "the DataFrame to write needs a value column (string or binary)")
    if "topic" not in columns and topic_option is None:
        raise OptionError("topic", "set the topic option or give the DataFrame a topic column")
    for name, (accepted, described) in _SINK_TYPES.items():
        if name in columns and not isinstance(columns[name], accepted):
            raise OptionError(name, f"the {name} column must be {described}, not {columns[name].simpleString()}")
    if "headers" in columns and columns["headers"].simpleString() != HEADERS_TYPE.simpleString():
        raise OptionError("headers", f"the headers column must be {HEADERS_TYPE.simpleString()}, "
                                     f"not {columns['headers'].simpleString()}")
