"""Framing of KRaft metadata records as stored in `__cluster_metadata`.

Each record's value is: unsigned varint frame version (1), unsigned varint record type (the
spec's apiKey), unsigned varint record version, then the record encoded at that version.
"""

from __future__ import annotations

from typing import Any

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.messages import METADATA_RECORDS
from gregor.protocol.primitives import Reader, uvarint_bytes

FRAME_VERSION = 1


def encode_metadata_record(record: Any, version: int | None = None) -> bytes:
    version = record.VALID_VERSIONS[1] if version is None else version
    return (uvarint_bytes(FRAME_VERSION) + uvarint_bytes(record.API_KEY) + uvarint_bytes(version)
            + record.encode(version))


def decode_metadata_record(value: bytes | memoryview) -> Any:
    reader = Reader(value)
    frame_version = reader.uvarint()
    if frame_version != FRAME_VERSION:
        raise DecodeError(f"metadata record frame version {frame_version}, expected {FRAME_VERSION}")
    record_type = reader.uvarint()
    version = reader.uvarint()
    record_class = METADATA_RECORDS.get(record_type)
    if record_class is None:
        raise DecodeError(f"unknown metadata record type {record_type}")
    record = record_class.decode(reader, version)
    reader.expect_end()
    return record
