"""Serializers and deserializers with the byte formats of Kafka's Java serdes.

Each serializer has ``serialize(topic, value, headers=None) -> bytes | None`` and each
deserializer ``deserialize(topic, data, headers=None)``; None (a null key or value) stays None
both ways. The fixed-width numbers are big-endian as in Java (IntegerSerializer(1) is
b"\\x00\\x00\\x00\\x01"), floats are IEEE 754 with Java's single canonical NaN, UUIDs travel as
their string form, and JSON as compact UTF-8. Headers are the record's list of
``(name, bytes | None)`` pairs, which a serializer may add to, as Java's may.

`resolve_serializer`/`resolve_deserializer` turn a ``key.serializer``-style setting into an
object: a short name ("str", "json", ...), a Java class name
("org.apache.kafka.common.serialization.StringSerializer"), an import path, a class, an
instance, or a plain function, which is called with the value alone (as in kafka-python).
"""

from __future__ import annotations

import json
import math
import struct
import uuid
from typing import Any, Callable, MutableSequence, Protocol

from gregor.client.config import ConfigError, import_object

RecordHeaders = MutableSequence[tuple[str, bytes | None]]
BytesLike = bytes | bytearray | memoryview


class SerializationError(Exception):
    """Bytes that are not what a deserializer reads, or a value a serializer cannot write
    (Java's SerializationException)."""


class SerializationTypeError(SerializationError, TypeError):
    """A value of a type the serializer does not take; names the serializer and the type."""


class Serializer(Protocol):
    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None: ...


class Deserializer(Protocol):
    def deserialize(self, topic: str, data: BytesLike | None, headers: RecordHeaders | None = None) -> Any: ...


def _wrong_type(serializer: object, value: object, expected: str) -> SerializationTypeError:
    return SerializationTypeError(f"{type(serializer).__name__} takes {expected}, "
                                  f"not {type(value).__name__}")


class BytesSerializer:
    """Bytes as they are (Java's ByteArraySerializer); bytearray and memoryview are copied."""

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise _wrong_type(self, value, "bytes, bytearray or memoryview")


class BytesDeserializer:
    """Bytes as they came (Java's ByteArrayDeserializer)."""

    def deserialize(self, topic: str, data: BytesLike | None, headers: RecordHeaders | None = None) -> bytes | None:
        return None if data is None else bytes(data)


class StringSerializer:
    """Text in an encoding, UTF-8 by default (Java's StringSerializer)."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise _wrong_type(self, value, "str")
        try:
            return value.encode(self.encoding)
        except UnicodeEncodeError as error:
            raise SerializationError(f"{type(self).__name__}: {error}") from None


class StringDeserializer:
    """Text in an encoding, UTF-8 by default (Java's StringDeserializer)."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def deserialize(self, topic: str, data: BytesLike | None, headers: RecordHeaders | None = None) -> str | None:
        if data is None:
            return None
        try:
            return bytes(data).decode(self.encoding)
        except UnicodeDecodeError as error:
            raise SerializationError(f"{type(self).__name__}: {error}") from None


class _FixedWidthSerializer:
    """A number packed big-endian in a fixed width, as Java's ByteBuffer writes it."""

    layout: struct.Struct
    accepts: tuple[type, ...] = (int,)
    expected = "int"

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, self.accepts):
            raise _wrong_type(self, value, self.expected)
        try:
            return self.layout.pack(value)
        except (struct.error, OverflowError):
            raise SerializationError(f"{type(self).__name__}: {value!r} does not fit "
                                     f"{self.layout.size} bytes") from None


class _FixedWidthDeserializer:
    """A big-endian number of exactly the layout's width; any other length is an error, as in Java."""

    layout: struct.Struct

    def deserialize(self, topic: str, data: BytesLike | None, headers: RecordHeaders | None = None) -> Any:
        if data is None:
            return None
        if len(data) != self.layout.size:
            raise SerializationError(f"Size of data received by {type(self).__name__} is not "
                                     f"{self.layout.size}")
        return self.layout.unpack(data)[0]


class ShortSerializer(_FixedWidthSerializer):
    """2-byte signed (Java's ShortSerializer)."""

    layout = struct.Struct(">h")


class ShortDeserializer(_FixedWidthDeserializer):
    layout = ShortSerializer.layout


class IntegerSerializer(_FixedWidthSerializer):
    """4-byte signed (Java's IntegerSerializer)."""

    layout = struct.Struct(">i")


class IntegerDeserializer(_FixedWidthDeserializer):
    layout = IntegerSerializer.layout


class LongSerializer(_FixedWidthSerializer):
    """8-byte signed (Java's LongSerializer)."""

    layout = struct.Struct(">q")


class LongDeserializer(_FixedWidthDeserializer):
    layout = LongSerializer.layout


class FloatSerializer(_FixedWidthSerializer):
    """4-byte IEEE 754 (Java's FloatSerializer); every NaN is written as Java's 0x7fc00000."""

    layout = struct.Struct(">f")
    accepts = (int, float)
    expected = "float or int"

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if isinstance(value, float) and math.isnan(value):
            return b"\x7f\xc0\x00\x00"
        return super().serialize(topic, value, headers)


class FloatDeserializer(_FixedWidthDeserializer):
    layout = FloatSerializer.layout


class DoubleSerializer(_FixedWidthSerializer):
    """8-byte IEEE 754 (Java's DoubleSerializer); every NaN is written as Java's 0x7ff8000000000000."""

    layout = struct.Struct(">d")
    accepts = (int, float)
    expected = "float or int"

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if isinstance(value, float) and math.isnan(value):
            return b"\x7f\xf8\x00\x00\x00\x00\x00\x00"
        return super().serialize(topic, value, headers)


class DoubleDeserializer(_FixedWidthDeserializer):
    layout = DoubleSerializer.layout


class BooleanSerializer:
    """One byte, 1 or 0 (Java's BooleanSerializer)."""

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise _wrong_type(self, value, "bool")
        return b"\x01" if value else b"\x00"


class BooleanDeserializer:
    def deserialize(self, topic: str, data: BytesLike | None, headers: RecordHeaders | None = None) -> bool | None:
        if data is None:
            return None
        if len(data) != 1:
            raise SerializationError("Size of data received by BooleanDeserializer is not 1")
        if data[0] not in (0, 1):
            raise SerializationError(f"Unexpected byte received by BooleanDeserializer: {data[0]}")
        return data[0] == 1


class UUIDSerializer:
    """The UUID's string form, 36 characters (Java's UUIDSerializer)."""

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, uuid.UUID):
            raise _wrong_type(self, value, "uuid.UUID")
        return str(value).encode("utf-8")


class UUIDDeserializer:
    def deserialize(self, topic: str, data: BytesLike | None, headers: RecordHeaders | None = None) -> uuid.UUID | None:
        if data is None:
            return None
        try:
            return uuid.UUID(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SerializationError(f"Error parsing data into UUID: {bytes(data)!r}") from None


class JSONSerializer:
    """Compact JSON in UTF-8 (no Java counterpart in the clients; what Kafka Connect's JSON
    converter and most Python producers write)."""

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if value is None:
            return None
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
        except TypeError:
            raise _wrong_type(self, value, "JSON-encodable values") from None
        except ValueError as error:
            raise SerializationError(f"JSONSerializer: {error}") from None


class JSONDeserializer:
    def deserialize(self, topic: str, data: BytesLike | None, headers: RecordHeaders | None = None) -> Any:
        if data is None:
            return None
        try:
            return json.loads(bytes(data))
        except ValueError as error:
            raise SerializationError(f"JSONDeserializer: not JSON: {error}") from None


class FunctionSerializer:
    """A function of the value alone that returns bytes (kafka-python's convention)."""

    def __init__(self, function: Callable[[Any], BytesLike | None]) -> None:
        self.function = function

    def serialize(self, topic: str, value: Any, headers: RecordHeaders | None = None) -> bytes | None:
        if value is None:
            return None
        result = self.function(value)
        if result is None or isinstance(result, bytes):
            return result
        if isinstance(result, (bytearray, memoryview)):
            return bytes(result)
        name = getattr(self.function, "__qualname__", repr(self.function))
        raise SerializationTypeError(f"serializer function {name} returned "
                                     f"{type(result).__name__}, not bytes")


class FunctionDeserializer:
    """A function of the bytes alone."""

    def __init__(self, function: Callable[[bytes], Any]) -> None:
        self.function = function

    def deserialize(self, topic: str, data: BytesLike | None, headers: RecordHeaders | None = None) -> Any:
        return None if data is None else self.function(bytes(data))


_BY_NAME: dict[str, tuple[type, type]] = {
    "bytes": (BytesSerializer, BytesDeserializer),
    "str": (StringSerializer, StringDeserializer),
    "string": (StringSerializer, StringDeserializer),
    "short": (ShortSerializer, ShortDeserializer),
    "int": (IntegerSerializer, IntegerDeserializer),
    "integer": (IntegerSerializer, IntegerDeserializer),
    "long": (LongSerializer, LongDeserializer),
    "float": (FloatSerializer, FloatDeserializer),
    "double": (DoubleSerializer, DoubleDeserializer),
    "bool": (BooleanSerializer, BooleanDeserializer),
    "boolean": (BooleanSerializer, BooleanDeserializer),
    "uuid": (UUIDSerializer, UUIDDeserializer),
    "json": (JSONSerializer, JSONDeserializer),
}
_JAVA_PACKAGE = "org.apache.kafka.common.serialization."
_JAVA_NAMES = {"ByteArray": "bytes", "ByteBuffer": "bytes", "Bytes": "bytes", "String": "str",
               "Short": "short", "Integer": "int", "Long": "long", "Float": "float",
               "Double": "double", "Boolean": "bool", "UUID": "uuid"}


def _java_name(text: str, suffix: str) -> str | None:
    """The short name of a Kafka serde class name ending in `suffix`, e.g. StringSerializer."""
    simple = text.removeprefix(_JAVA_PACKAGE)
    if "." in simple or not simple.endswith(suffix):
        return None
    return _JAVA_NAMES.get(simple.removesuffix(suffix))


def _resolve(value: Any, key: str, index: int, method: str, wrap: Callable[[Any], Any]) -> Any:
    role, other = ("serializer", "deserializer") if method == "serialize" else ("deserializer", "serializer")
    if value is None:
        return _BY_NAME["bytes"][index]()
    if isinstance(value, str):
        name = value.strip()
        if name.lower() in _BY_NAME:
            return _BY_NAME[name.lower()][index]()
        java = _java_name(name, role.capitalize())
        if java:
            return _BY_NAME[java][index]()
        if _java_name(name, other.capitalize()):
            raise ConfigError(f"{key}: {value} is a {other}; {key} needs a {role}")
        value = import_object(name, key)
    if isinstance(value, type):
        if not callable(getattr(value, method, None)):
            raise ConfigError(f"{key}: class {value.__qualname__} has no {method}() method")
        return value()
    if callable(getattr(value, method, None)):
        return value
    if callable(value):
        return wrap(value)
    raise ConfigError(f"{key}: {value!r} is neither a {role} nor a function")


def resolve_serializer(value: Any, key: str = "value.serializer") -> Serializer:
    """Turn a ``key.serializer``/``value.serializer`` setting into a serializer (None: bytes)."""
    serializer: Serializer = _resolve(value, key, 0, "serialize", FunctionSerializer)
    return serializer


def resolve_deserializer(value: Any, key: str = "value.deserializer") -> Deserializer:
    """Turn a ``key.deserializer``/``value.deserializer`` setting into a deserializer (None: bytes)."""
    deserializer: Deserializer = _resolve(value, key, 1, "deserialize", FunctionDeserializer)
    return deserializer
