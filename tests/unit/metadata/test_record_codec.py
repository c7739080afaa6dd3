"""Metadata record framing round-trips every record type at every version, and refuses garbage."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.metadata.record_codec import MetadataRecordError, decode_metadata_record, encode_metadata_record
from gregor.protocol.exceptions import DecodeError, EncodeError
from gregor.protocol.messages import METADATA_RECORDS, TopicRecord
from gregor.protocol.primitives import uvarint_bytes

_SCALARS = {
    "bool": st.booleans(),
    "int8": st.integers(-2 ** 7, 2 ** 7 - 1),
    "int16": st.integers(-2 ** 15, 2 ** 15 - 1),
    "uint16": st.integers(0, 2 ** 16 - 1),
    "int32": st.integers(-2 ** 31, 2 ** 31 - 1),
    "int64": st.integers(-2 ** 63, 2 ** 63 - 1),
    "float64": st.floats(allow_nan=False),
    "uuid": st.uuids(),
    "string": st.text(max_size=12),
    "bytes": st.binary(max_size=12),
}


def _in(versions: tuple[int, int], version: int) -> bool:
    return versions[0] <= version <= versions[1]


def struct_of(cls: type, version: int) -> st.SearchStrategy:
    """Instances of a generated struct with every field of `version` drawn at random."""
    fields = {}
    for name, type_, versions, nullable, _, _ in cls._SCHEMA:
        if not _in(versions, version):
            continue
        element = type_[2:] if type_.startswith("[]") else type_
        base = _SCALARS.get(element)
        if base is None:
            base = struct_of(getattr(cls, element), version)
        strategy = st.lists(base, max_size=3) if type_.startswith("[]") else base
        if _in(nullable, version):
            strategy = st.none() | strategy
        fields[name] = strategy

    def build(values: dict) -> object:
        instance = cls()
        for key, value in values.items():
            setattr(instance, key, value)
        return instance
    return st.fixed_dictionaries(fields).map(build)


RECORD_VERSIONS = [(cls, v) for _, cls in sorted(METADATA_RECORDS.items())
                   for v in range(cls.VALID_VERSIONS[0], cls.VALID_VERSIONS[1] + 1)]


@pytest.mark.parametrize("cls,version", RECORD_VERSIONS, ids=[f"{c.__name__}-v{v}" for c, v in RECORD_VERSIONS])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_every_record_round_trips_at_every_version(cls, version, data):
    record = data.draw(struct_of(cls, version))
    value = encode_metadata_record(record, version)
    assert value[0] == 1
    assert value[1:].startswith(uvarint_bytes(cls.API_KEY) + uvarint_bytes(version))
    assert decode_metadata_record(value) == record


def test_default_version_is_the_highest_and_the_frame_is_kafkas():
    record = TopicRecord(name="t", topic_id=uuid.UUID(int=7))
    assert encode_metadata_record(record) == b"\x01\x02\x00" + record.encode(0)


def test_unknown_type_version_and_frame_are_refused_clearly():
    body = TopicRecord(name="t", topic_id=uuid.UUID(int=7)).encode(0)
    with pytest.raises(MetadataRecordError, match="unknown metadata record type 99"):
        decode_metadata_record(b"\x01\x63\x00" + body)
    with pytest.raises(MetadataRecordError, match="TopicRecord version 5 is not supported"):
        decode_metadata_record(b"\x01\x02\x05" + body)
    with pytest.raises(MetadataRecordError, match="frame version 2"):
        decode_metadata_record(b"\x02\x02\x00" + body)
    with pytest.raises(DecodeError):
        decode_metadata_record(b"\x01\x02\x00" + body + b"\x00")
    with pytest.raises(EncodeError):
        encode_metadata_record(TopicRecord(name="t"), 3)
    with pytest.raises(EncodeError):
        encode_metadata_record(object())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_raises_only_decode_errors(data):
    try:
        decode_metadata_record(data)
    except DecodeError:
        pass
