"""The decoders under fuzz, called as the broker calls them, and the errors each may raise.

A target returns an outcome name (for the run's statistics) or raises; `ALLOWED` says which
exception types are typed answers. Anything else escaping a target is a finding.
"""

from __future__ import annotations

import struct
import zlib
from typing import Callable

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.headers import parse_request_header
from gregor.protocol.messages import REQUESTS
from gregor.protocol.primitives import Reader
from gregor.records.batch import magic_of, scan_batches, validate_batch
from gregor.records.compression import Compression, decompress
from gregor.records.convert import downconvert, upconvert_to_v2
from gregor.records.crc import crc32c
from gregor.records.errors import RecordsError
from gregor.records.legacy import iter_legacy
from gregor.records.record import decode_records

# What a fuzzed record set may expand to: small, so that memory stays flat whatever the input.
MAX_UNCOMPRESSED = 1 << 20

REQUEST_ALLOWED: tuple[type[BaseException], ...] = (DecodeError,)
RECORDS_ALLOWED: tuple[type[BaseException], ...] = (RecordsError,)

_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


def request_frame(frame: bytes, advertised: dict[int, tuple[int, int]]) -> str:
    """A request frame as `Dispatcher.dispatch` reads it: the header, then the body at the
    header's version when that version is advertised (others are refused before decoding)."""
    view = memoryview(frame)
    header, body_offset = parse_request_header(view)
    bounds = advertised.get(header.request_api_key)
    version = header.request_api_version
    if bounds is None or not bounds[0] <= version <= bounds[1]:
        return "not advertised"
    REQUESTS[header.request_api_key].decode(Reader(view, body_offset), version)
    return "decoded"


def request_body(api_key: int, version: int, body: bytes) -> str:
    """A whole body decoded at a given version (trailing bytes refused), as clients and tools do."""
    REQUESTS[api_key].decode(body, version)
    return "decoded"


def record_set(data: bytes) -> str:
    """A produce's record set: legacy sets up-converted, v2 batches checked as the log appends
    them, every batch's records decoded (compacted topics, the cleaner) and down-converted (old
    fetchers)."""
    if magic_of(data) < 2:
        data = upconvert_to_v2(data, MAX_UNCOMPRESSED)
    batches, end = scan_batches(data)
    for header, pos in batches:
        validate_batch(data, pos, header)
        decode_records(data, pos, header, MAX_UNCOMPRESSED)
    if all(header.compression != Compression.ZSTD for header, _ in batches):  # no zstd below magic 2
        downconvert(data, 1, MAX_UNCOMPRESSED)
        downconvert(data, 0, MAX_UNCOMPRESSED)
    return "valid" if batches and end == len(data) else "partial"


def record_set_unchecked(data: bytes) -> str:
    """The records of every batch decoded without the CRC check first (what the storage layer's
    readers and the cleaner do with bytes already on disk), and legacy sets walked."""
    if magic_of(data) < 2:
        return "legacy" if list(iter_legacy(data, MAX_UNCOMPRESSED)) else "legacy, empty"
    batches, _ = scan_batches(data)
    for header, pos in batches:
        decode_records(data, pos, header, MAX_UNCOMPRESSED)
    return "batches" if batches else "no batch"


def decompressed(codec: int, magic: int) -> Callable[[bytes], str]:
    def target(data: bytes) -> str:
        decompress(codec, data, MAX_UNCOMPRESSED, magic)
        return "decompressed"
    return target


def fix_crcs(data: bytes) -> bytes:
    """Recompute the CRC of every v2 batch and legacy entry whose length fits in `data`, so that a
    mutation reaches the code behind the CRC check (the structure-aware part of the fuzzer)."""
    out = bytearray(data)
    pos = 0
    while len(out) - pos >= 17:
        (length,) = _I32.unpack_from(out, pos + 8)
        end = pos + 12 + length
        if length < 6 or end > len(out):
            break
        if out[pos + 16] == 2:
            if length >= 9:
                _U32.pack_into(out, pos + 17, crc32c(memoryview(out)[pos + 21:end]))
        else:
            _U32.pack_into(out, pos + 12, zlib.crc32(out[pos + 16:end]))
        pos = end
    return bytes(out)
