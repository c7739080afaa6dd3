"""Wire primitives of the Kafka protocol: a bounds-checked Reader and a part-collecting Writer.

Every length read from the wire is checked against the bytes that remain before anything is
allocated or looped over (Kafka's CVE-2022-34917 was the opposite), so a hostile frame costs
at most its own size: an array's claimed count times the fewest bytes one element takes at that
version (the generator computes it per field) must fit in what remains, and no array may claim
more than MAX_ARRAY_ELEMENTS elements, which bounds the Python objects one frame can make (each
costs far more than the byte it may be encoded in). All failures surface as DecodeError.
"""

from __future__ import annotations

import builtins
import functools
import struct
import uuid
from typing import Any, Callable

from gregor.protocol.exceptions import DecodeError, EncodeError

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")
_UUID = struct.Struct(">16s")

ZERO_UUID = uuid.UUID(int=0)
# Topic ids decoded before, by their bytes: the same few come in every request of a busy broker, and
# uuid.UUID's constructor is Python code (UUIDs are immutable, so one object serves every decode).
_UUIDS: dict[bytes, uuid.UUID] = {}
_MAX_UUIDS = 4096
MAX_ARRAY_ELEMENTS = 1_000_000


class Reader:
    """Sequential reader over a memoryview; raises DecodeError on any violation."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = data if isinstance(data, memoryview) else memoryview(data)
        if self.buf.format != "B" or self.buf.ndim != 1:
            self.buf = self.buf.cast("B")
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, size: int) -> int:
        pos = self.pos
        if size < 0 or pos + size > self.end:
            raise DecodeError(f"need {size} bytes at offset {pos}, {self.end - pos} remain")
        self.pos = pos + size
        return pos

    def fixed(self, packer: struct.Struct) -> tuple[Any, ...]:
        """A run of fixed-width fields read with one precompiled struct (the generated decoders)."""
        pos = self.pos
        end = pos + packer.size
        if end > self.end:
            raise DecodeError(f"need {packer.size} bytes at offset {pos}, {self.end - pos} remain")
        self.pos = end
        return packer.unpack_from(self.buf, pos)

    def int8(self) -> int:
        return _I8.unpack_from(self.buf, self._take(1))[0]

    def int16(self) -> int:
        return _I16.unpack_from(self.buf, self._take(2))[0]

    def uint16(self) -> int:
        return _U16.unpack_from(self.buf, self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack_from(self.buf, self._take(4))[0]

    def uint32(self) -> int:
        return _U32.unpack_from(self.buf, self._take(4))[0]

    def int64(self) -> int:
        return _I64.unpack_from(self.buf, self._take(8))[0]

    def float64(self) -> float:
        return _F64.unpack_from(self.buf, self._take(8))[0]

    def bool(self) -> bool:
        return self.buf[self._take(1)] != 0

    def uuid(self) -> uuid.UUID:
        pos = self._take(16)
        raw = bytes(self.buf[pos:pos + 16])
        found = _UUIDS.get(raw)
        if found is None:
            if len(_UUIDS) >= _MAX_UUIDS:
                _UUIDS.clear()
            found = _UUIDS[raw] = uuid.UUID(bytes=raw)
        return found

    def uvarint(self) -> int:
        """Unsigned varint of at most 5 bytes (an int32 on the wire)."""
        pos = self.pos
        if pos < self.end:
            byte = self.buf[pos]
            if byte < 0x80:  # one byte: array lengths, string sizes, tag counts
                self.pos = pos + 1
                return byte
            if pos + 1 < self.end:
                second = self.buf[pos + 1]
                if second < 0x80:  # two bytes: the size of a records field of 128 B to 16 KB
                    self.pos = pos + 2
                    return (byte & 0x7F) | (second << 7)
        return self._long_uvarint()

    def _long_uvarint(self) -> int:
        result = 0
        shift = 0
        buf = self.buf
        for _ in range(5):
            if self.pos >= self.end:
                raise DecodeError("truncated varint")
            byte = buf[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
        raise DecodeError("varint longer than 5 bytes")

    def uvarlong(self) -> int:
        result = 0
        shift = 0
        buf = self.buf
        for _ in range(10):
            if self.pos >= self.end:
                raise DecodeError("truncated varlong")
            byte = buf[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
        raise DecodeError("varlong longer than 10 bytes")

    def varint(self) -> int:
        value = self.uvarint()
        return (value >> 1) ^ -(value & 1)

    def varlong(self) -> int:
        value = self.uvarlong()
        return (value >> 1) ^ -(value & 1)

    def _text(self, size: int) -> str:
        pos = self._take(size)
        try:
            return str(self.buf[pos:pos + size], "utf-8")
        except UnicodeDecodeError as error:
            raise DecodeError(f"invalid UTF-8 in string: {error.reason}") from None

    def string(self) -> str:
        size = self.int16()
        if size < 0:
            raise DecodeError("null string where a string is required")
        return self._text(size)

    def nullable_string(self) -> str | None:
        size = self.int16()
        return None if size < 0 else self._text(size)

    def compact_string(self) -> str:
        size = self.uvarint() - 1
        if size < 0:
            raise DecodeError("null string where a string is required")
        return self._text(size)

    def compact_nullable_string(self) -> str | None:
        size = self.uvarint() - 1
        return None if size < 0 else self._text(size)

    def _blob(self, size: int) -> bytes:
        pos = self._take(size)
        return bytes(self.buf[pos:pos + size])

    def bytes(self) -> bytes:
        size = self.int32()
        if size < 0:
            raise DecodeError("null bytes where bytes are required")
        return self._blob(size)

    def nullable_bytes(self) -> builtins.bytes | None:
        size = self.int32()
        return None if size < 0 else self._blob(size)

    def compact_bytes(self) -> builtins.bytes:
        size = self.uvarint() - 1
        if size < 0:
            raise DecodeError("null bytes where bytes are required")
        return self._blob(size)

    def compact_nullable_bytes(self) -> builtins.bytes | None:
        size = self.uvarint() - 1
        return None if size < 0 else self._blob(size)

    def records(self) -> memoryview | None:
        """A records field as a zero-copy slice of the frame."""
        size = self.int32()
        if size < 0:
            return None
        pos = self._take(size)
        return self.buf[pos:pos + size]

    def compact_records(self) -> memoryview | None:
        size = self.uvarint() - 1
        if size < 0:
            return None
        pos = self._take(size)
        return self.buf[pos:pos + size]

    def _count(self, count: int, min_element_size: int) -> int:
        if count > MAX_ARRAY_ELEMENTS:
            raise DecodeError(f"array of {count} elements exceeds the limit of {MAX_ARRAY_ELEMENTS}")
        if count * min_element_size > self.end - self.pos:
            raise DecodeError(f"array of {count} elements does not fit in the {self.end - self.pos} bytes left")
        return count

    def array(self, read: Callable[["Reader"], Any], min_element_size: int = 1) -> list:
        count = self.int32()
        if count < 0:
            raise DecodeError("null array where an array is required")
        return [read(self) for _ in range(self._count(count, min_element_size))]

    def nullable_array(self, read: Callable[["Reader"], Any], min_element_size: int = 1) -> list | None:
        count = self.int32()
        if count < 0:
            return None
        return [read(self) for _ in range(self._count(count, min_element_size))]

    def compact_array(self, read: Callable[["Reader"], Any], min_element_size: int = 1) -> list:
        count = self.uvarint() - 1
        if count < 0:
            raise DecodeError("null array where an array is required")
        return [read(self) for _ in range(self._count(count, min_element_size))]

    def compact_nullable_array(self, read: Callable[["Reader"], Any], min_element_size: int = 1) -> list | None:
        count = self.uvarint() - 1
        if count < 0:
            return None
        return [read(self) for _ in range(self._count(count, min_element_size))]

    def tagged_fields(self, known: Callable[["Reader", int, int], builtins.bool]) -> list[tuple[int, builtins.bytes]] | None:
        """Read a tagged-field section; `known(reader, tag, size)` decodes the tags it knows.

        Unknown tags are returned raw so that they survive a decode/encode round trip.
        """
        pos = self.pos
        if pos < self.end and self.buf[pos] == 0:  # the common case: no tagged field at all
            self.pos = pos + 1
            return None
        count = self._count(self.uvarint(), 2)
        unknown = None
        for _ in range(count):
            tag = self.uvarint()
            size = self.uvarint()
            start = self._take(size)
            sub = Reader(self.buf, start, start + size)
            if not known(sub, tag, size):
                if unknown is None:
                    unknown = []
                unknown.append((tag, bytes(self.buf[start:start + size])))
        return unknown

    def skip_tagged_fields(self) -> list[tuple[int, builtins.bytes]] | None:
        pos = self.pos
        if pos < self.end and self.buf[pos] == 0:  # no tagged field, as `tagged_fields` without a call
            self.pos = pos + 1
            return None
        return self.tagged_fields(_unknown_tag)

    def expect_end(self) -> None:
        if self.pos != self.end:
            raise DecodeError(f"{self.end - self.pos} unexpected bytes after the message")


def _unknown_tag(reader: Reader, tag: int, size: int) -> bool:
    return False


def uvarint_bytes(value: int) -> bytes:
    if value < 0:
        raise EncodeError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@functools.cache
def uvarint_table(count: int) -> tuple[bytes, ...]:
    """`uvarint_bytes` of 0 .. count - 1 (count up to 2**21, three bytes), built a byte pattern at a
    time: encoders and decoders keep such tables, and building them value by value cost each
    client process 75 ms at import. Built once per count: the producer's and the consumer's
    encoders share the same (immutable) table."""
    if count > 1 << 21:
        raise ValueError(f"uvarint_table holds up to 2**21 values, not {count}")
    one = [bytes((value,)) for value in range(min(count, 128))]
    two = [bytes((value & 0x7F | 0x80, value >> 7)) for value in range(128, min(count, 1 << 14))]
    three = [bytes((value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14)) for value in range(1 << 14, count)]
    return tuple(one + two + three)


def zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


class Writer:
    """Collects encoded bytes; opaque parts (file regions) are kept uncopied, in order."""

    __slots__ = ("_buf", "_parts", "_opaque_size")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._parts: list[Any] | None = None
        self._opaque_size = 0

    def int8(self, value: int) -> None:
        self._buf += _I8.pack(value)

    def int16(self, value: int) -> None:
        self._buf += _I16.pack(value)

    def uint16(self, value: int) -> None:
        self._buf += _U16.pack(value)

    def int32(self, value: int) -> None:
        self._buf += _I32.pack(value)

    def uint32(self, value: int) -> None:
        self._buf += _U32.pack(value)

    def int64(self, value: int) -> None:
        self._buf += _I64.pack(value)

    def float64(self, value: float) -> None:
        self._buf += _F64.pack(value)

    def bool(self, value: bool) -> None:
        self._buf.append(1 if value else 0)

    def uuid(self, value: uuid.UUID | None) -> None:
        self._buf += (value or ZERO_UUID).bytes

    def uvarint(self, value: int) -> None:
        while value > 0x7F:
            self._buf.append((value & 0x7F) | 0x80)
            value >>= 7
        if value < 0:
            raise EncodeError("unsigned varint cannot be negative")
        self._buf.append(value)

    def varint(self, value: int) -> None:
        self.uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)

    def varlong(self, value: int) -> None:
        self.uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def string(self, value: str) -> None:
        if value is None:
            raise EncodeError("null where a string is required")
        data = value.encode("utf-8")
        if len(data) > 0x7FFF:
            raise EncodeError(f"string of {len(data)} bytes exceeds 32767")
        self._buf += _I16.pack(len(data))
        self._buf += data

    def nullable_string(self, value: str | None) -> None:
        if value is None:
            self._buf += b"\xff\xff"
        else:
            self.string(value)

    def compact_string(self, value: str) -> None:
        if value is None:
            raise EncodeError("null where a string is required")
        data = value.encode("utf-8")
        self.uvarint(len(data) + 1)
        self._buf += data

    def compact_nullable_string(self, value: str | None) -> None:
        if value is None:
            self._buf.append(0)
        else:
            self.compact_string(value)

    def bytes(self, value: bytes) -> None:
        if value is None:
            raise EncodeError("null where bytes are required")
        self._buf += _I32.pack(len(value))
        self._buf += value

    def nullable_bytes(self, value: builtins.bytes | None) -> None:
        if value is None:
            self._buf += b"\xff\xff\xff\xff"
        else:
            self.bytes(value)

    def compact_bytes(self, value: builtins.bytes) -> None:
        if value is None:
            raise EncodeError("null where bytes are required")
        self.uvarint(len(value) + 1)
        self._buf += value

    def compact_nullable_bytes(self, value: builtins.bytes | None) -> None:
        if value is None:
            self._buf.append(0)
        else:
            self.compact_bytes(value)

    def _records_body(self, value: Any) -> None:
        if isinstance(value, (bytes, bytearray, memoryview)):
            self._buf += value
        else:
            self.opaque(value)

    def records(self, value: Any) -> None:
        if value is None:
            self._buf += b"\xff\xff\xff\xff"
            return
        self._buf += _I32.pack(len(value))
        self._records_body(value)

    def compact_records(self, value: Any) -> None:
        if value is None:
            self._buf.append(0)
            return
        self.uvarint(len(value) + 1)
        self._records_body(value)

    def opaque(self, part: Any) -> None:
        """Append a part that is sent as is (e.g. a file region for sendfile)."""
        if self._parts is None:
            self._parts = []
        if self._buf:
            self._parts.append(bytes(self._buf))
            self._buf = bytearray()
        self._parts.append(part)
        self._opaque_size += len(part)

    def array_length(self, value: list | None, nullable: builtins.bool = False) -> None:
        if value is None:
            if not nullable:
                raise EncodeError("null where an array is required")
            self._buf += b"\xff\xff\xff\xff"
        else:
            self._buf += _I32.pack(len(value))

    def compact_array_length(self, value: list | None, nullable: builtins.bool = False) -> None:
        if value is None:
            if not nullable:
                raise EncodeError("null where an array is required")
            self._buf.append(0)
        else:
            self.uvarint(len(value) + 1)

    def no_tagged_fields(self) -> None:
        """An empty tagged-field section (its count, 0)."""
        self._buf.append(0)

    def tagged_fields(self, fields: list[tuple[int, builtins.bytes]]) -> None:
        """Write a tagged-field section from (tag, encoded value) pairs, in tag order."""
        fields.sort(key=lambda item: item[0])
        self.uvarint(len(fields))
        for tag, data in fields:
            self.uvarint(tag)
            self.uvarint(len(data))
            self._buf += data

    def size(self) -> int:
        return len(self._buf) + self._opaque_size + sum(
            len(p) for p in (self._parts or ()) if isinstance(p, bytes))

    def parts(self) -> list[Any]:
        if self._parts is None:
            return [bytes(self._buf)]
        parts = list(self._parts)
        if self._buf:
            parts.append(bytes(self._buf))
        return parts

    def getvalue(self) -> builtins.bytes:
        if self._parts is not None:
            raise EncodeError("the message holds opaque parts; use parts()")
        return bytes(self._buf)
