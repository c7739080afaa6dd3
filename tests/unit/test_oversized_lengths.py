"""Oversized lengths in every primitive type are refused before anything is allocated.

Each case puts a length or count that lies about what follows in front of a few bytes and expects
`DecodeError`, with tracemalloc's peak far below what believing the length would cost.
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.messages import ProduceRequest
from gregor.protocol.primitives import MAX_ARRAY_ELEMENTS, Reader
from gregor.protocol.primitives import uvarint_bytes as uvarint

TAIL = b"\x00" * 64
PEAK_LIMIT = 64 * 1024


def int8(r: Reader) -> int:
    return r.int8()


INT16_LENGTHS = [0x7FFF, len(TAIL) + 1]
INT32_LENGTHS = [0x7FFFFFFF, 2_000_000_000, len(TAIL) + 1]
UVARINT_LENGTHS = [0xFFFFFFFF, (1 << 35) - 1, 0x7FFFFFFF, len(TAIL) + 2]

CASES = (
    [(f"string {n}", "string", struct.pack(">h", n)) for n in INT16_LENGTHS]
    + [(f"nullable_string {n}", "nullable_string", struct.pack(">h", n)) for n in INT16_LENGTHS]
    + [(f"bytes {n}", "bytes", struct.pack(">i", n)) for n in INT32_LENGTHS]
    + [(f"nullable_bytes {n}", "nullable_bytes", struct.pack(">i", n)) for n in INT32_LENGTHS]
    + [(f"records {n}", "records", struct.pack(">i", n)) for n in INT32_LENGTHS]
    + [(f"compact_string {n}", "compact_string", uvarint(n)) for n in UVARINT_LENGTHS]
    + [(f"compact_nullable_string {n}", "compact_nullable_string", uvarint(n)) for n in UVARINT_LENGTHS]
    + [(f"compact_bytes {n}", "compact_bytes", uvarint(n)) for n in UVARINT_LENGTHS]
    + [(f"compact_nullable_bytes {n}", "compact_nullable_bytes", uvarint(n)) for n in UVARINT_LENGTHS]
    + [(f"compact_records {n}", "compact_records", uvarint(n)) for n in UVARINT_LENGTHS]
    + [(f"array {n}", "array", struct.pack(">i", n)) for n in INT32_LENGTHS]
    + [(f"nullable_array {n}", "nullable_array", struct.pack(">i", n)) for n in INT32_LENGTHS]
    + [(f"compact_array {n}", "compact_array", uvarint(n)) for n in UVARINT_LENGTHS]
    + [(f"compact_nullable_array {n}", "compact_nullable_array", uvarint(n)) for n in UVARINT_LENGTHS]
    + [(f"tagged_fields {n}", "tagged_fields", uvarint(n)) for n in UVARINT_LENGTHS[:3]]
    + [("tagged field size", "tagged_fields", uvarint(1) + uvarint(0) + uvarint(0xFFFFFFFF))]
    + [("uvarint of 6 bytes", "uvarint", b"\xff" * 5 + b"\x01"), ("uvarlong of 11 bytes", "uvarlong", b"\xff" * 10 + b"\x01")]
)


def read(method: str, reader: Reader):
    if "array" in method:
        return getattr(reader, method)(int8, 1)
    if method == "tagged_fields":
        return reader.skip_tagged_fields()
    return getattr(reader, method)()


@pytest.mark.parametrize("method,prefix", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_an_oversized_length_is_refused_without_allocating_it(method, prefix):
    reader = Reader(prefix + TAIL)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            read(method, reader)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_LIMIT


@pytest.mark.parametrize("method", ["array", "compact_array"])
def test_an_array_of_more_than_a_million_elements_is_refused_even_when_its_bytes_are_there(method):
    count = MAX_ARRAY_ELEMENTS + 1
    prefix = struct.pack(">i", count) if method == "array" else uvarint(count + 1)
    data = prefix + bytes(count)
    with pytest.raises(DecodeError, match="exceeds the limit"):
        getattr(Reader(data), method)(int8, 1)
    honest = (struct.pack(">i", 1000) if method == "array" else uvarint(1001)) + bytes(1000)
    assert len(getattr(Reader(honest), method)(int8, 1)) == 1000


def test_a_struct_array_count_is_checked_against_the_smallest_encoding_of_its_element():
    """ProduceRequest v3's topic (a string and an array: at least 6 bytes): 20 topics cannot fit in
    100 bytes, so the count is refused before one topic is decoded."""
    body = struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 20) + bytes(100)
    with pytest.raises(DecodeError, match="does not fit"):
        ProduceRequest.decode(body, 3)
