"""The sans-IO half of a broker connection: framing, correlation ids, matching responses.

In the manner of h11's `Connection`: `encode_request` turns a request into the bytes to write
and remembers which answer to expect; `receive_data` takes whatever bytes the socket produced
and returns the replies they complete. No socket, clock or event loop is touched, so the
pipelining rules are testable with plain bytes.

A Kafka broker answers the requests of one connection in the order it received them, so each
response belongs to the oldest request still waiting for one; a response carrying any other
correlation id is a protocol violation after which the connection cannot be trusted. A Produce
with acks=0 gets no response and never enters the queue.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from gregor.client.errors import ClientErrorCode, KafkaException
from gregor.client.network.request_frames import request_frame
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.headers import decode_response_header
from gregor.protocol.messages import RESPONSES, ApiKey

_SIZE = struct.Struct(">i")
_ERROR_CODE = struct.Struct(">h")
_MAX_CORRELATION_ID = 2**31 - 1


@dataclass(frozen=True)
class PendingRequest:
    """A request on the wire whose response has not arrived yet."""

    correlation_id: int
    api_key: int
    version: int


@dataclass(frozen=True)
class Reply:
    """The outcome of one pending request: its decoded response, or why there is none."""

    request: PendingRequest
    response: Any = None
    error: KafkaException | None = None


class WireSession:
    """Correlation ids, the in-flight queue and frame reassembly for one connection."""

    def __init__(self, client_id: str | None) -> None:
        self._client_id = client_id
        self._next_correlation_id = 0
        self._in_flight: deque[PendingRequest] = deque()
        self._buffer = bytearray()
        self._frame_size: int | None = None
        self.violation: KafkaException | None = None

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def encode_request(self, request: Any, version: int, expect_response: bool = True) -> tuple[int, list[bytes]]:
        """The correlation id and the parts of the whole frame to write for `request` at `version`
        (one part, or a large records field apart: see `request_frames`)."""
        correlation_id = self._next_correlation_id
        self._next_correlation_id = 0 if correlation_id == _MAX_CORRELATION_ID else correlation_id + 1
        frame = request_frame(correlation_id, self._client_id, request, version)
        if expect_response:
            self._in_flight.append(PendingRequest(correlation_id, request.API_KEY, version))
        return correlation_id, frame

    def receive_data(self, data: bytes) -> list[Reply]:
        """Replies completed by `data`; after a violation (see `.violation`) nothing more is read."""
        if self.violation is not None:
            return []
        self._buffer += data
        replies = []
        consumed = 0
        buffer = self._buffer
        while self.violation is None:
            if self._frame_size is None:
                if len(buffer) - consumed < _SIZE.size:
                    break
                (size,) = _SIZE.unpack_from(buffer, consumed)
                consumed += _SIZE.size
                if size < 0:
                    self.violation = KafkaException(ClientErrorCode._BAD_MSG, f"negative frame size {size}")
                    break
                self._frame_size = size
            if len(buffer) - consumed < self._frame_size:
                break
            with memoryview(buffer) as view:
                frame = bytes(view[consumed:consumed + self._frame_size])
            consumed += self._frame_size
            self._frame_size = None
            reply = self._match(frame)
            if reply is not None:
                replies.append(reply)
        del buffer[:consumed]
        return replies

    def take_in_flight(self) -> list[PendingRequest]:
        """Forget every pending request (the connection is closing) and return them."""
        pending = list(self._in_flight)
        self._in_flight.clear()
        return pending

    def _match(self, frame: bytes) -> Reply | None:
        if not self._in_flight:
            self.violation = KafkaException(ClientErrorCode._BAD_MSG, "a response arrived with no request in flight")
            return None
        pending = self._in_flight[0]
        try:
            header, body_start = decode_response_header(memoryview(frame), pending.api_key, pending.version)
        except DecodeError as error:
            self.violation = KafkaException(ClientErrorCode._BAD_MSG, f"undecodable response header: {error}")
            return None
        if header.correlation_id != pending.correlation_id:
            self.violation = KafkaException(
                ClientErrorCode._BAD_MSG,
                f"response correlation id {header.correlation_id}, expected {pending.correlation_id}")
            return None
        self._in_flight.popleft()
        try:
            return Reply(pending, response=_decode_body(memoryview(frame)[body_start:], pending))
        except DecodeError as error:
            self.violation = KafkaException(
                ClientErrorCode._BAD_MSG,
                f"undecodable {ApiKey(pending.api_key).name} v{pending.version} response: {error}")
            return Reply(pending, error=self.violation)


def _decode_body(body: memoryview, pending: PendingRequest) -> Any:
    response_class = RESPONSES[pending.api_key]
    if pending.api_key == ApiKey.API_VERSIONS and pending.version > 0 and len(body) >= _ERROR_CODE.size:
        # KIP-511: a broker that does not know our ApiVersions version answers in the v0
        # format with UNSUPPORTED_VERSION and its own range, so that we can retry lower.
        (error_code,) = _ERROR_CODE.unpack_from(body, 0)
        if error_code == ErrorCode.UNSUPPORTED_VERSION:
            return response_class.decode(body, 0)
    return response_class.decode(body, pending.version)
