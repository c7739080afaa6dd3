"""CRC32C (Castagnoli), the checksum of record batch v2, in C via the crc32c package."""

from __future__ import annotations

from crc32c import crc32c as _crc32c


def crc32c(data: bytes | bytearray | memoryview) -> int:
    return _crc32c(data)
