"""Request frames whose record batches are written as they are, not copied into the frame.

A Produce request is mostly its record batches (up to max.request.size). Encoded into one
buffer, as `protocol.headers.encode_request` does, they are copied three times: into the
writer's buffer, out of it, and behind the size prefix; for a producer sending as fast as it
can that was about a tenth of its time, measured. Here a records field of `LARGE_RECORDS` bytes
or more becomes a part of its own (the writer's opaque parts, as the broker's file regions), and
the connection writes the frame's parts one after the other. A records field may also be
`RecordChunks`, a batch given as the pieces it was built from (its header and its records
encoded in chunks): each piece is then a part, so the batch is never gathered into one buffer
at all.
"""

from __future__ import annotations

import struct
from typing import Any, Sequence

from gregor.protocol.headers import encode_request_into
from gregor.protocol.primitives import Writer

LARGE_RECORDS = 16 * 1024
_SIZE = struct.Struct(">i")


class RecordChunks:
    """A records field as chunks of bytes that follow one another, written without joining them."""

    __slots__ = ("chunks", "size")

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self.chunks = chunks
        self.size = sum(map(len, chunks))

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.chunks)


class _FrameWriter(Writer):
    """A Writer that keeps large records fields out of its buffer."""

    def records(self, value: Any) -> None:
        if value is not None and len(value) >= LARGE_RECORDS:
            self.int32(len(value))
            self._large_records(value)
        else:
            super().records(bytes(value) if type(value) is RecordChunks else value)

    def compact_records(self, value: Any) -> None:
        if value is not None and len(value) >= LARGE_RECORDS:
            self.uvarint(len(value) + 1)
            self._large_records(value)
        else:
            super().compact_records(bytes(value) if type(value) is RecordChunks else value)

    def _large_records(self, value: Any) -> None:
        if type(value) is RecordChunks:
            for chunk in value.chunks:
                self.opaque(chunk)
        else:
            self.opaque(value)


def request_frame(correlation_id: int, client_id: str | None, request: Any, version: int) -> list[bytes]:
    """The parts of the whole frame for `request`, size prefix first: their concatenation is
    `encode_request(correlation_id, client_id, request, version)`."""
    writer = _FrameWriter()
    encode_request_into(writer, correlation_id, client_id, request, version)
    parts = writer.parts()
    parts[0] = _SIZE.pack(sum(len(part) for part in parts)) + parts[0]
    return parts
