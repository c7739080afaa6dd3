"""A scripted one-node broker that takes Produce and InitProducerId, for producer tests.

It keeps what it appended per partition and checks idempotent sequences as a Kafka broker does:
a retry of a recent batch is answered with its original offset and not appended again, a gap is
OUT_OF_ORDER_SEQUENCE_NUMBER, and a producer whose state the broker lost (`forget_producers`)
gets UNKNOWN_PRODUCER_ID. `produce_actions` scripts the next Produce requests, one action each:
answer, close the connection before reading the request, stay silent, append and then close
without answering (a lost response), or answer with an error code for every partition.
"""

from __future__ import annotations

import socket
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import encode_response, parse_request_header
from gregor.protocol.messages import (
    REQUESTS, ApiKey, ApiVersionsResponse, InitProducerIdResponse, MetadataResponse, ProduceResponse,
)
from gregor.records import Record, decode_records, parse_header
from tests.client.fake_broker import ANSWER, CLOSE, IGNORE, FakeBroker, _close, _read_frame

LOSE_RESPONSE = "lose-response"
RECENT_BATCHES = 5  # a Kafka broker remembers this many batches per producer and partition


@dataclass
class ReceivedBatch:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    values: list[bytes | None]


@dataclass
class _SequenceState:
    last_sequence: int = -1
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_BATCHES))  # (first seq, last seq, offset)


class FakeProducerBroker(FakeBroker):
    def __init__(self, topics: dict[str, int] | None = None, *, auto_create: bool = False) -> None:
        super().__init__()
        self.topics = dict(topics or {"fake-topic": 1})
        self.auto_create = auto_create
        self.produce_actions: deque = deque()
        self.logs: dict[tuple[str, int], list[Record]] = defaultdict(list)
        self.received: list[ReceivedBatch] = []
        self.producer_ids_given = 0
        self._sequences: dict[tuple[int, str, int], _SequenceState] = {}
        self._known_producers: set[int] = set()
        self._state_lock = threading.Lock()

    def values(self, topic: str, partition: int = 0) -> list[bytes | None]:
        with self._state_lock:
            return [record.value for record in self.logs[(topic, partition)]]

    def forget_producers(self) -> None:
        """Lose every producer's sequence state, as a broker whose producer state expired."""
        with self._state_lock:
            self._sequences.clear()

    def api_count(self, api_key: int) -> int:
        with self._lock:
            return sum(1 for _, key, _ in self.requests if key == api_key)

    def _serve(self, sock: socket.socket, connection: int) -> None:
        while True:
            frame = _read_frame(sock)
            if frame is None:
                _close(sock)
                return
            header, body_start = parse_request_header(memoryview(frame))
            api_key, version = header.request_api_key, header.request_api_version
            with self._lock:
                self.requests.append((connection, api_key, version))
            action = ANSWER
            if api_key == ApiKey.PRODUCE and self.produce_actions:
                action = self.produce_actions.popleft()
            if action == CLOSE:
                _close(sock)
                return
            if action == IGNORE:
                continue
            request = REQUESTS[api_key].decode(memoryview(frame)[body_start:], version)
            if api_key == ApiKey.PRODUCE:
                response = self._produce(request, action if isinstance(action, int) else None)
            elif api_key == ApiKey.INIT_PRODUCER_ID:
                response = self._init_producer_id()
            else:
                response, version = self._answer(api_key, version, request)
            if action == LOSE_RESPONSE:
                _close(sock)
                return
            try:
                sock.sendall(b"".join(encode_response(header.correlation_id, response, api_key, version)))
            except OSError:
                return

    def _answer(self, api_key: int, version: int, request: object) -> tuple[object, int]:
        response, version = super()._answer(api_key, version, request)
        if api_key == ApiKey.API_VERSIONS and response.error_code == ErrorCode.NONE:
            response.api_keys += [
                ApiVersionsResponse.ApiVersion(api_key=ApiKey.PRODUCE, min_version=3, max_version=9),
                ApiVersionsResponse.ApiVersion(api_key=ApiKey.INIT_PRODUCER_ID, min_version=0, max_version=4)]
        return response, version

    def _metadata(self, request: object) -> MetadataResponse:
        names = [topic.name for topic in request.topics] if request.topics is not None else list(self.topics)
        topics = []
        for name in names:
            if name not in self.topics:
                if self.auto_create and request.allow_auto_topic_creation:
                    self.topics[name] = 1
                    code = ErrorCode.LEADER_NOT_AVAILABLE  # Kafka's answer while it creates the topic
                else:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics.append(MetadataResponse.MetadataResponseTopic(name=name, error_code=code))
                continue
            topics.append(MetadataResponse.MetadataResponseTopic(name=name, partitions=[
                MetadataResponse.MetadataResponsePartition(partition_index=index, leader_id=0, replica_nodes=[0],
                                                           isr_nodes=[0])
                for index in range(self.topics[name])]))
        return MetadataResponse(
            brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
            cluster_id="fake", controller_id=0, topics=topics)

    def _init_producer_id(self) -> InitProducerIdResponse:
        with self._state_lock:
            self.producer_ids_given += 1
            producer_id = 1000 + self.producer_ids_given
            self._known_producers.add(producer_id)
        return InitProducerIdResponse(producer_id=producer_id, producer_epoch=0)

    def _produce(self, request: object, forced_error: int | None) -> ProduceResponse:
        topics = []
        for topic in request.topic_data:
            partitions = []
            for data in topic.partition_data:
                if forced_error is not None:
                    code, offset = forced_error, -1
                else:
                    code, offset = self._append(topic.name, data.index, data.records)
                partitions.append(ProduceResponse.PartitionProduceResponse(
                    index=data.index, error_code=code, base_offset=offset))
            topics.append(ProduceResponse.TopicProduceResponse(name=topic.name, partition_responses=partitions))
        return ProduceResponse(responses=topics)

    def _append(self, topic: str, partition: int, records: bytes) -> tuple[int, int]:
        header = parse_header(records)
        batch = decode_records(records, 0, header, 1 << 30)
        with self._state_lock:
            self.received.append(ReceivedBatch(topic, partition, header.producer_id, header.producer_epoch,
                                               header.base_sequence, [record.value for record in batch]))
            if partition >= self.topics.get(topic, 0):
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
            log = self.logs[(topic, partition)]
            if header.producer_id >= 0:
                code, offset = self._check_sequence(topic, partition, header, len(batch), len(log))
                if code is not None:
                    return code, offset
            base_offset = len(log)
            for index, record in enumerate(batch):
                log.append(Record(base_offset + index, record.timestamp, record.key, record.value, record.headers))
            return ErrorCode.NONE, base_offset

    def _check_sequence(self, topic: str, partition: int, header: object, count: int,
                        next_offset: int) -> tuple[int | None, int]:
        if header.producer_id not in self._known_producers:
            return ErrorCode.UNKNOWN_PRODUCER_ID, -1
        state = self._sequences.get((header.producer_id, topic, partition))
        first, last = header.base_sequence, header.base_sequence + count - 1
        if state is None:
            if first != 0:
                return ErrorCode.UNKNOWN_PRODUCER_ID, -1
            state = self._sequences[(header.producer_id, topic, partition)] = _SequenceState()
        for recent_first, recent_last, offset in state.recent:
            if (recent_first, recent_last) == (first, last):
                return ErrorCode.NONE, offset
        if first != state.last_sequence + 1:
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        state.last_sequence = last
        state.recent.append((first, last, next_offset))
        return None, -1
