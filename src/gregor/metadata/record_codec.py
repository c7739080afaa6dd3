"""Framing of KRaft metadata records as stored in `__cluster_metadata`.

Each record's value is: unsigned varint frame version (1), unsigned varint record type (the
spec's apiKey), unsigned varint record version, then the record encoded at that version. The
key is null. This is Kafka's `MetadataRecordSerde`, so a Gregor metadata log can be read by
Kafka's dump tools and vice versa.
"""

from __future__ import annotations

from gregor.protocol.exceptions import DecodeError, EncodeError
from gregor.protocol.messages import METADATA_RECORDS, Message
from gregor.protocol.primitives import Reader, uvarint_bytes

FRAME_VERSION = 1
_TYPE_OF_CLASS = {cls: api_key for api_key, cls in METADATA_RECORDS.items()}


class MetadataRecordError(DecodeError):
    """A metadata log value that this build cannot read: bad frame, unknown type or version."""


def encode_metadata_record(record: Message, version: int | None = None) -> bytes:
    """Frame `record` at `version` (default: the highest version the codec knows)."""
    api_key = _TYPE_OF_CLASS.get(type(record))
    if api_key is None:
        raise EncodeError(f"{type(record).__name__} is not a metadata record")
    low, high = record.VALID_VERSIONS
    version = high if version is None else version
    if not low <= version <= high:
        raise EncodeError(f"{type(record).__name__} has versions {low}..{high}, not {version}")
    return uvarint_bytes(FRAME_VERSION) + uvarint_bytes(api_key) + uvarint_bytes(version) + record.encode(version)


def decode_metadata_record(value: bytes | bytearray | memoryview) -> Message:
    """The record framed in `value`; MetadataRecordError if it is not one we can read."""
    reader = Reader(value)
    frame_version = reader.uvarint()
    if frame_version != FRAME_VERSION:
        raise MetadataRecordError(f"metadata record frame version {frame_version}, expected {FRAME_VERSION}")
    record_type = reader.uvarint()
    version = reader.uvarint()
    record_class = METADATA_RECORDS.get(record_type)
    if record_class is None:
        raise MetadataRecordError(f"unknown metadata record type {record_type}")
    low, high = record_class.VALID_VERSIONS
    if not low <= version <= high:
        raise MetadataRecordError(
            f"{record_class.__name__} version {version} is not supported (supported: {low}..{high})")
    record = record_class.decode(reader, version)
    reader.expect_end()
    return record
