"""A scripted one-node Kafka broker for network tests, misbehaving on demand.

It answers ApiVersions and Metadata like a one-node cluster with one topic ("fake-topic") and
lets a test decide, per request, to answer, to close the connection instead, or to stay silent.
Blocking sockets, one thread per connection, 127.0.0.1 only.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Callable

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import encode_response, parse_request_header
from gregor.protocol.messages import REQUESTS, ApiKey, ApiVersionsResponse, MetadataResponse

TOPIC = "fake-topic"
ANSWER, CLOSE, IGNORE = "answer", "close", "ignore"

Behaviour = Callable[[int, int, int], str]
"""(connection number from 1, api key, request number on that connection from 1) -> action."""


def always_answer(connection: int, api_key: int, request: int) -> str:
    return ANSWER


class FakeBroker:
    def __init__(self, behaviour: Behaviour = always_answer, api_versions_max: int = 4) -> None:
        self.behaviour = behaviour
        self.api_versions_max = api_versions_max
        self.requests: list[tuple[int, int, int]] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stopped = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> FakeBroker:
        self._spawn(self._accept_loop)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped = True
        _close(self._listener)
        with self._lock:
            for sock in self._sockets:
                _close(sock)
        for thread in self._threads:
            thread.join(5)

    def _spawn(self, target: Callable, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._stopped:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._sockets.append(sock)
                number = self.connections
            self._spawn(self._serve, sock, number)

    def _serve(self, sock: socket.socket, connection: int) -> None:
        count = 0
        while True:
            frame = _read_frame(sock)
            if frame is None:
                _close(sock)
                return
            header, body_start = parse_request_header(memoryview(frame))
            api_key, version = header.request_api_key, header.request_api_version
            count += 1
            with self._lock:
                self.requests.append((connection, api_key, version))
            action = self.behaviour(connection, api_key, count)
            if action == CLOSE:
                _close(sock)
                return
            if action == IGNORE:
                continue
            request = REQUESTS[api_key].decode(memoryview(frame)[body_start:], version)
            response, version = self._answer(api_key, version, request)
            try:
                sock.sendall(b"".join(encode_response(header.correlation_id, response, api_key, version)))
            except OSError:
                return

    def _answer(self, api_key: int, version: int, request: object) -> tuple[object, int]:
        if api_key == ApiKey.API_VERSIONS:
            if version > self.api_versions_max:
                return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
                    ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0,
                                                   max_version=self.api_versions_max)]), 0
            return ApiVersionsResponse(api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0,
                                               max_version=self.api_versions_max),
                ApiVersionsResponse.ApiVersion(api_key=ApiKey.METADATA, min_version=0, max_version=12)]), version
        if api_key == ApiKey.METADATA:
            return self._metadata(request), version
        raise AssertionError(f"the fake broker does not answer API key {api_key}")

    def _metadata(self, request: object) -> MetadataResponse:
        names = [topic.name for topic in request.topics] if request.topics is not None else [TOPIC]
        topics = []
        for name in names:
            if name == TOPIC:
                topics.append(MetadataResponse.MetadataResponseTopic(name=name, partitions=[
                    MetadataResponse.MetadataResponsePartition(partition_index=0, leader_id=0, replica_nodes=[0],
                                                               isr_nodes=[0])]))
            else:
                topics.append(MetadataResponse.MetadataResponseTopic(
                    name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        return MetadataResponse(
            brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
            cluster_id="fake", controller_id=0, topics=topics)


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    return _read_exactly(sock, struct.unpack(">i", head)[0])


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
