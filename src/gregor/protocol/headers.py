"""Request and response headers around message bodies.

The header version depends on the API and its version (flexible versions use request header
v2 / response header v1, with exceptions the generated classes know), so it is chosen from the
request's first four bytes before the rest is read.
"""

from __future__ import annotations

import struct
from typing import Any

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.messages import REQUESTS, RESPONSES, RequestHeader, ResponseHeader
from gregor.protocol.primitives import Reader, Writer

_KEY_AND_VERSION = struct.Struct(">hh")
_SIZE = struct.Struct(">i")


def request_header_version(api_key: int, api_version: int) -> int:
    request_class = REQUESTS.get(api_key)
    if request_class is None:
        return 1
    return request_class.header_version(api_version)


def parse_request_header(frame: memoryview) -> tuple[Any, int]:
    """Decode the header of a request frame; returns the header and where the body starts."""
    reader = Reader(frame)
    return read_request_header(reader), reader.pos


def read_request_header(reader: Reader) -> Any:
    """The header of the request frame `reader` starts at; the reader is left at the body (one
    reader for a whole request: the broker's dispatch)."""
    if reader.remaining() < 4:
        raise DecodeError("request shorter than its api key and version")
    api_key, api_version = _KEY_AND_VERSION.unpack_from(reader.buf, reader.pos)
    return RequestHeader.decode(reader, request_header_version(api_key, api_version))


def encode_request(correlation_id: int, client_id: str | None, request: Any, version: int) -> bytes:
    """A whole request frame, size prefix included (used by clients and tests)."""
    writer = Writer()
    encode_request_into(writer, correlation_id, client_id, request, version)
    body = writer.getvalue()
    return _SIZE.pack(len(body)) + body


def encode_request_into(writer: Writer, correlation_id: int, client_id: str | None, request: Any,
                        version: int) -> None:
    """The request's header and body, without the size prefix, into `writer`."""
    header = RequestHeader(request_api_key=request.API_KEY, request_api_version=version,
                           correlation_id=correlation_id, client_id=client_id)
    header.encode_into(writer, request.header_version(version))
    request.encode_into(writer, version)


def encode_response(correlation_id: int, response: Any, api_key: int, version: int) -> list:
    """A whole response frame as a list of parts, size prefix first; opaque parts stay uncopied."""
    writer = Writer()
    # ResponseHeader: the correlation id, and from header v1 an (always empty) tagged-field section
    writer.raw(_SIZE.pack(correlation_id))
    if RESPONSES[api_key].header_version(version) >= 1:
        writer.no_tagged_fields()
    response.encode_into(writer, version)
    parts = writer.parts()
    size = writer.size()
    first = parts[0]
    if isinstance(first, bytes):
        parts[0] = _SIZE.pack(size) + first
    else:
        parts.insert(0, _SIZE.pack(size))
    return parts


def decode_response_header(frame: memoryview, api_key: int, version: int) -> tuple[Any, int]:
    reader = Reader(frame)
    return read_response_header(reader, api_key, version), reader.pos


def read_response_header(reader: Reader, api_key: int, version: int) -> Any:
    """The header of the response frame `reader` starts at (answering `api_key` at `version`);
    the reader is left at the body."""
    return ResponseHeader.decode(reader, RESPONSES[api_key].header_version(version))
