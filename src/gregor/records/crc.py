"""CRC32C (Castagnoli), the checksum of record batch v2, in C via the crc32c package."""

from __future__ import annotations

from crc32c import crc32c as _crc32c


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """The CRC32C of `data`, or of the bytes before it (whose CRC32C is `value`) and `data`."""
    return _crc32c(data, value)
