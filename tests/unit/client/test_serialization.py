"""Serializers: Kafka's byte formats, round trips, None, type errors and resolution from settings."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gregor.client.config import ConfigError
from gregor.client.serialization import (
    BooleanDeserializer,
    BooleanSerializer,
    BytesDeserializer,
    BytesSerializer,
    DoubleDeserializer,
    DoubleSerializer,
    FloatDeserializer,
    FloatSerializer,
    FunctionDeserializer,
    FunctionSerializer,
    IntegerDeserializer,
    IntegerSerializer,
    JSONDeserializer,
    JSONSerializer,
    LongDeserializer,
    LongSerializer,
    SerializationError,
    SerializationTypeError,
    ShortDeserializer,
    ShortSerializer,
    StringDeserializer,
    StringSerializer,
    UUIDDeserializer,
    UUIDSerializer,
    resolve_deserializer,
    resolve_serializer,
)

PAIRS = [
    (BytesSerializer, BytesDeserializer), (StringSerializer, StringDeserializer),
    (ShortSerializer, ShortDeserializer), (IntegerSerializer, IntegerDeserializer),
    (LongSerializer, LongDeserializer), (FloatSerializer, FloatDeserializer),
    (DoubleSerializer, DoubleDeserializer), (BooleanSerializer, BooleanDeserializer),
    (UUIDSerializer, UUIDDeserializer), (JSONSerializer, JSONDeserializer),
]

# What Kafka's Java serializers write for these values.
KNOWN_BYTES = [
    (IntegerSerializer(), 1, b"\x00\x00\x00\x01"),
    (IntegerSerializer(), -1, b"\xff\xff\xff\xff"),
    (IntegerSerializer(), 2**31 - 1, b"\x7f\xff\xff\xff"),
    (ShortSerializer(), 258, b"\x01\x02"),
    (ShortSerializer(), -2, b"\xff\xfe"),
    (LongSerializer(), 1, b"\x00" * 7 + b"\x01"),
    (LongSerializer(), -(2**63), b"\x80" + b"\x00" * 7),
    (DoubleSerializer(), 1.0, bytes.fromhex("3ff0000000000000")),
    (DoubleSerializer(), -2.5, bytes.fromhex("c004000000000000")),
    (DoubleSerializer(), 0.1, bytes.fromhex("3fb999999999999a")),
    (DoubleSerializer(), float("-nan"), bytes.fromhex("7ff8000000000000")),
    (DoubleSerializer(), 3, bytes.fromhex("4008000000000000")),
    (FloatSerializer(), 1.0, bytes.fromhex("3f800000")),
    (FloatSerializer(), -0.0, bytes.fromhex("80000000")),
    (FloatSerializer(), float("nan"), bytes.fromhex("7fc00000")),
    (BooleanSerializer(), True, b"\x01"),
    (BooleanSerializer(), False, b"\x00"),
    (StringSerializer(), "héllo", "héllo".encode("utf-8")),
    (StringSerializer("latin-1"), "héllo", b"h\xe9llo"),
    (UUIDSerializer(), uuid.UUID("123e4567-e89b-12d3-a456-426614174000"),
     b"123e4567-e89b-12d3-a456-426614174000"),
    (JSONSerializer(), {"a": [1, 2.5, None, True], "é": "ü"}, '{"a":[1,2.5,null,true],"é":"ü"}'.encode()),
    (BytesSerializer(), bytearray(b"\x00\x01"), b"\x00\x01"),
    (BytesSerializer(), memoryview(b"abc")[1:], b"bc"),
]


@pytest.mark.parametrize("serializer, value, expected", KNOWN_BYTES)
def test_kafka_byte_formats(serializer: Any, value: Any, expected: bytes) -> None:
    data = serializer.serialize("t", value)
    assert data == expected and type(data) is bytes


@pytest.mark.parametrize("serializer_class, deserializer_class", PAIRS)
def test_none_stays_none(serializer_class: type, deserializer_class: type) -> None:
    assert serializer_class().serialize("t", None) is None
    assert deserializer_class().deserialize("t", None) is None


@given(st.data())
def test_round_trips(data: st.DataObject) -> None:
    cases = [
        (BytesSerializer(), BytesDeserializer(), st.binary()),
        (StringSerializer(), StringDeserializer(), st.text()),
        (StringSerializer("utf-16"), StringDeserializer("utf-16"), st.text()),
        (ShortSerializer(), ShortDeserializer(), st.integers(-(2**15), 2**15 - 1)),
        (IntegerSerializer(), IntegerDeserializer(), st.integers(-(2**31), 2**31 - 1)),
        (LongSerializer(), LongDeserializer(), st.integers(-(2**63), 2**63 - 1)),
        (DoubleSerializer(), DoubleDeserializer(), st.floats(allow_nan=False)),
        (FloatSerializer(), FloatDeserializer(), st.floats(width=32, allow_nan=False)),
        (BooleanSerializer(), BooleanDeserializer(), st.booleans()),
        (UUIDSerializer(), UUIDDeserializer(), st.uuids()),
        (JSONSerializer(), JSONDeserializer(), st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
            lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=10)),
    ]
    serializer, deserializer, values = data.draw(st.sampled_from(cases))
    value = data.draw(values)
    assert deserializer.deserialize("t", serializer.serialize("t", value)) == value


@given(st.integers(-(2**31), 2**31 - 1))
def test_integer_bytes_are_javas_big_endian_int(number: int) -> None:
    assert IntegerSerializer().serialize("t", number) == number.to_bytes(4, "big", signed=True)


def test_nan_round_trips_as_nan() -> None:
    assert math.isnan(DoubleDeserializer().deserialize("t", DoubleSerializer().serialize("t", math.nan)))
    assert math.isnan(FloatDeserializer().deserialize("t", FloatSerializer().serialize("t", math.nan)))


@pytest.mark.parametrize("serializer, value, message", [
    (IntegerSerializer(), "1", "IntegerSerializer takes int, not str"),
    (IntegerSerializer(), True, "IntegerSerializer takes int, not bool"),
    (IntegerSerializer(), 1.0, "IntegerSerializer takes int, not float"),
    (LongSerializer(), b"1", "LongSerializer takes int, not bytes"),
    (DoubleSerializer(), "1.0", "DoubleSerializer takes float or int, not str"),
    (StringSerializer(), b"x", "StringSerializer takes str, not bytes"),
    (BytesSerializer(), "x", "BytesSerializer takes bytes, bytearray or memoryview, not str"),
    (BooleanSerializer(), 1, "BooleanSerializer takes bool, not int"),
    (UUIDSerializer(), "123e4567-e89b-12d3-a456-426614174000", "UUIDSerializer takes uuid.UUID, not str"),
    (JSONSerializer(), {1, 2}, "JSONSerializer takes JSON-encodable values, not set"),
])
def test_type_errors_name_the_serializer_and_the_type(serializer: Any, value: Any, message: str) -> None:
    with pytest.raises(SerializationTypeError, match=message) as raised:
        serializer.serialize("t", value)
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, SerializationError)


@pytest.mark.parametrize("serializer, value, message", [
    (IntegerSerializer(), 2**31, "IntegerSerializer: 2147483648 does not fit 4 bytes"),
    (ShortSerializer(), -(2**15) - 1, "ShortSerializer: -32769 does not fit 2 bytes"),
    (FloatSerializer(), 1e40, "FloatSerializer: 1e\\+40 does not fit 4 bytes"),
    (StringSerializer("ascii"), "é", "StringSerializer: 'ascii' codec can't encode"),
    (JSONSerializer(), {"x": math.inf}, "JSONSerializer: Out of range float values"),
])
def test_values_that_do_not_fit(serializer: Any, value: Any, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        serializer.serialize("t", value)


@pytest.mark.parametrize("deserializer, data, message", [
    (IntegerDeserializer(), b"\x00\x01", "Size of data received by IntegerDeserializer is not 4"),
    (LongDeserializer(), b"\x00" * 4, "Size of data received by LongDeserializer is not 8"),
    (ShortDeserializer(), b"", "Size of data received by ShortDeserializer is not 2"),
    (DoubleDeserializer(), b"\x00", "Size of data received by DoubleDeserializer is not 8"),
    (BooleanDeserializer(), b"\x02", "Unexpected byte received by BooleanDeserializer: 2"),
    (BooleanDeserializer(), b"", "Size of data received by BooleanDeserializer is not 1"),
    (UUIDDeserializer(), b"not-a-uuid", "Error parsing data into UUID"),
    (StringDeserializer(), b"\xff", "StringDeserializer: 'utf-8' codec can't decode"),
    (JSONDeserializer(), b"{", "JSONDeserializer: not JSON"),
])
def test_bad_bytes_are_serialization_errors(deserializer: Any, data: bytes, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        deserializer.deserialize("t", data)


def test_deserializers_take_bytearray_and_memoryview() -> None:
    assert IntegerDeserializer().deserialize("t", bytearray(b"\x00\x00\x01\x00")) == 256
    assert StringDeserializer().deserialize("t", memoryview(b"hi")) == "hi"
    assert BytesDeserializer().deserialize("t", bytearray(b"x")) == b"x"


def test_function_serializers() -> None:
    serializer = FunctionSerializer(lambda value: json.dumps(value).encode())
    assert serializer.serialize("t", [1]) == b"[1]"
    assert serializer.serialize("t", None) is None
    assert FunctionSerializer(bytearray).serialize("t", b"ab") == b"ab"
    with pytest.raises(SerializationTypeError, match="serializer function str returned str, not bytes"):
        FunctionSerializer(str).serialize("t", 1)
    deserializer = FunctionDeserializer(lambda data: data.decode().upper())
    assert deserializer.deserialize("t", bytearray(b"ab")) == "AB"
    assert deserializer.deserialize("t", None) is None


def test_serializers_may_add_headers() -> None:
    class Tagging:
        def serialize(self, topic: str, value: Any, headers: Any = None) -> bytes:
            headers.append(("type", b"tag"))
            return b"v"

    headers: list[tuple[str, bytes | None]] = []
    assert resolve_serializer(Tagging).serialize("t", 1, headers) == b"v"
    assert headers == [("type", b"tag")]


# -- resolution ------------------------------------------------------------------------------

@pytest.mark.parametrize("setting, serializer_class, deserializer_class", [
    (None, BytesSerializer, BytesDeserializer),
    ("bytes", BytesSerializer, BytesDeserializer),
    ("str", StringSerializer, StringDeserializer),
    ("String", StringSerializer, StringDeserializer),
    (" JSON ", JSONSerializer, JSONDeserializer),
    ("int", IntegerSerializer, IntegerDeserializer),
    ("long", LongSerializer, LongDeserializer),
    ("short", ShortSerializer, ShortDeserializer),
    ("float", FloatSerializer, FloatDeserializer),
    ("double", DoubleSerializer, DoubleDeserializer),
    ("boolean", BooleanSerializer, BooleanDeserializer),
    ("uuid", UUIDSerializer, UUIDDeserializer),
])
def test_resolve_short_names(setting: Any, serializer_class: type, deserializer_class: type) -> None:
    assert type(resolve_serializer(setting)) is serializer_class
    assert type(resolve_deserializer(setting)) is deserializer_class


@pytest.mark.parametrize("java, serializer_class", [
    ("ByteArray", BytesSerializer), ("ByteBuffer", BytesSerializer), ("Bytes", BytesSerializer),
    ("String", StringSerializer), ("Integer", IntegerSerializer), ("Long", LongSerializer),
    ("Short", ShortSerializer), ("Float", FloatSerializer), ("Double", DoubleSerializer),
    ("Boolean", BooleanSerializer), ("UUID", UUIDSerializer),
])
def test_resolve_java_class_names(java: str, serializer_class: type) -> None:
    package = "org.apache.kafka.common.serialization."
    assert type(resolve_serializer(f"{package}{java}Serializer", "key.serializer")) is serializer_class
    assert type(resolve_serializer(f"{java}Serializer")) is serializer_class
    deserializer = resolve_deserializer(f"{package}{java}Deserializer")
    assert type(deserializer).__name__ == serializer_class.__name__.replace("Serializer", "Deserializer")


def test_resolve_classes_instances_functions_and_import_paths() -> None:
    instance = StringSerializer("utf-16")
    assert resolve_serializer(instance) is instance
    assert type(resolve_serializer(LongSerializer)) is LongSerializer
    function = resolve_serializer(str.encode)
    assert isinstance(function, FunctionSerializer) and function.serialize("t", "x") == b"x"
    imported = resolve_serializer("gregor.client.serialization:JSONSerializer")
    assert type(imported) is JSONSerializer
    loads = resolve_deserializer("json:loads")
    assert isinstance(loads, FunctionDeserializer) and loads.deserialize("t", b"[2]") == [2]


@pytest.mark.parametrize("setting, message", [
    ("org.apache.kafka.common.serialization.StringDeserializer",
     "key.serializer: org.apache.kafka.common.serialization.StringDeserializer is a deserializer; "
     "key.serializer needs a serializer"),
    ("yaml", "key.serializer: 'yaml' is neither a known name nor an import path"),
    ("org.apache.kafka.common.serialization.VoidSerializer", "key.serializer: cannot import"),
    (StringDeserializer, "key.serializer: class StringDeserializer has no serialize\\(\\) method"),
    (42, "key.serializer: 42 is neither a serializer nor a function"),
])
def test_resolve_errors_name_the_key(setting: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_serializer(setting, "key.serializer")


def test_resolve_deserializer_refuses_a_serializer() -> None:
    with pytest.raises(ConfigError, match="value.deserializer: IntegerSerializer is a serializer"):
        resolve_deserializer("IntegerSerializer")

