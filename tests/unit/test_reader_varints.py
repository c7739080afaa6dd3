"""`Reader.uvarint` and `Reader.skip_tagged_fields` answer their common cases (one or two bytes; no
tagged field) without their general loop: every path must give the same values, positions and
errors."""

from __future__ import annotations

import pytest

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.primitives import Reader, uvarint_bytes


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, (1 << 28) - 1, (1 << 32) - 1])
def test_a_varint_reads_back_and_leaves_the_reader_after_it(value: int) -> None:
    encoded = uvarint_bytes(value)
    reader = Reader(b"\x07" + encoded + b"\x09", 1)
    assert reader.uvarint() == value
    assert reader.pos == 1 + len(encoded)
    assert reader.uvarint() == 9


@pytest.mark.parametrize("value", [5, 300, 16383, 16384])
def test_a_varint_ending_the_reader_reads_back(value: int) -> None:
    encoded = uvarint_bytes(value)
    reader = Reader(b"\x07" + encoded, 1)
    assert reader.uvarint() == value
    assert reader.pos == reader.end


def test_a_varint_past_the_end_of_the_reader_is_refused() -> None:
    with pytest.raises(DecodeError, match="truncated varint"):
        Reader(b"\xac\x02", 0, 1).uvarint()  # 300's second byte is there, outside the reader's end
    with pytest.raises(DecodeError, match="truncated varint"):
        Reader(b"").uvarint()
    with pytest.raises(DecodeError, match="truncated varint"):
        Reader(b"\x05\x80", 0, 0).uvarint()  # the byte is there, outside the reader's end
    with pytest.raises(DecodeError, match="truncated varint"):
        Reader(b"\x80\x80").uvarint()
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        Reader(b"\x80\x80\x80\x80\x80\x01").uvarint()


def test_tagged_fields_are_skipped_whether_there_are_none_or_some() -> None:
    none = Reader(b"\x00\x2a")
    assert none.skip_tagged_fields() is None
    assert none.pos == 1
    some = Reader(b"\x02" + b"\x00\x01\x05" + b"\x03\x02\x06\x07" + b"\x2a")  # tags 0 and 3, unknown here
    assert some.skip_tagged_fields() == [(0, b"\x05"), (3, b"\x06\x07")]
    assert some.pos == 8
    with pytest.raises(DecodeError):
        Reader(b"").skip_tagged_fields()
