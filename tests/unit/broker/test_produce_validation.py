"""The produce path parses a batch's header once (in the partition's log) and still answers each
bad input with Kafka's error code; nothing of a refused request is appended."""

from __future__ import annotations

import pytest

from gregor.broker.handlers import BrokerContext, BrokerServices, produce
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ProduceRequest, RequestHeader
from gregor.records import batch as batch_module
from gregor.records.legacy import build_legacy
from gregor.records.record import BatchBuilder

from tests.unit.replication.helpers import Replica
from tests.unit.storage.helpers import NOW, batch


class _Events:
    def produced(self, topic: str, size: int, records: int) -> None:
        pass


class _Partitions:
    """The PartitionHost the produce handler uses: one partition "t"-0, led here, one replica."""

    max_uncompressed_bytes = 1 << 20

    def __init__(self, tmp_path) -> None:
        self.replica = Replica(tmp_path, 1, replicas=(1,))
        self.replica.apply(1, 0, (1,), 0)

    def partition(self, topic: str, index: int):
        return self.replica.partition if (topic, index) == ("t", 0) else None

    def on_leader_append(self, partition) -> None:
        pass

    def apply(self, partition, effects) -> None:
        self.replica.outbox += effects


def _produce(partitions: _Partitions, records: bytes, version: int = 9) -> tuple[ErrorCode, int]:
    header = RequestHeader(request_api_key=produce.API_KEY, request_api_version=version, correlation_id=1)
    services = BrokerServices(partitions=partitions, metadata=None, controller=None, groups=None, metrics=_Events(),
                              shares=None)
    request = ProduceRequest(acks=1, timeout_ms=5_000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=memoryview(records))])])
    response = produce.handle(BrokerContext(services, header, None, {}, NOW), request)
    (answer,) = response.responses[0].partition_responses
    return ErrorCode(answer.error_code), partitions.replica.log.log_end_offset


def _special(transactional: bool = False, control: bool = False, sequence: int = 0) -> bytes:
    builder = BatchBuilder(producer_id=7, producer_epoch=0, base_sequence=sequence, is_transactional=transactional,
                           is_control=control)
    builder.append(NOW, b"\x00\x00\x00\x00" if control else None, b"v")
    return builder.build()


def _corrupt_crc(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


def _lying_delta(data: bytes) -> bytes:
    """lastOffsetDelta says 8 records; the CRC covers it, so it is recomputed."""
    from gregor.records.crc import crc32c
    body = bytearray(data)
    body[23:27] = (7).to_bytes(4, "big")
    body[17:21] = crc32c(memoryview(body)[21:]).to_bytes(4, "big")
    return bytes(body)


def test_a_produce_parses_each_batch_header_once(tmp_path, monkeypatch):
    parsed = []
    real = batch_module.BatchHeader._make
    monkeypatch.setattr(batch_module.BatchHeader, "_make", lambda values: parsed.append(1) or real(values))
    partitions = _Partitions(tmp_path)
    assert _produce(partitions, batch(3)) == (ErrorCode.NONE, 3)
    assert len(parsed) == 1, "the header of the one batch is unpacked once, by the log's append"
    parsed.clear()
    assert _produce(partitions, batch(1) + batch(2)) == (ErrorCode.NONE, 6)
    assert len(parsed) == 2


@pytest.mark.parametrize("records,version,expected", [
    (_special(transactional=True) + _special(sequence=1), 9, ErrorCode.INVALID_TXN_STATE),
    (batch(1) + _special(transactional=True) + _special(sequence=1), 9, ErrorCode.INVALID_TXN_STATE),
    (_special(control=True), 9, ErrorCode.INVALID_RECORD),
    (_corrupt_crc(batch(2)), 9, ErrorCode.CORRUPT_MESSAGE),
    (_lying_delta(batch(2)), 9, ErrorCode.INVALID_RECORD),
    (batch(2)[:-5], 9, ErrorCode.CORRUPT_MESSAGE),
    (batch(1) + b"\x00" * 7, 9, ErrorCode.CORRUPT_MESSAGE),
    (b"", 9, ErrorCode.CORRUPT_MESSAGE),
    (build_legacy([(0, NOW, None, b"v")], 1), 3, ErrorCode.INVALID_RECORD),
], ids=["non-transactional-inside-a-transaction", "inside-a-transaction-second-batch", "control-from-a-client", "bad-crc", "lying-offset-delta",
        "truncated", "trailing-bytes", "empty", "legacy-at-v3"])
def test_bad_input_gets_kafkas_error_and_nothing_is_appended(tmp_path, records, version, expected):
    partitions = _Partitions(tmp_path)
    assert _produce(partitions, records, version) == (expected, 0)
    assert _produce(partitions, batch(1)) == (ErrorCode.NONE, 1)


def test_a_legacy_message_set_below_v3_is_up_converted_and_appended(tmp_path):
    partitions = _Partitions(tmp_path)
    legacy = build_legacy([(0, NOW, None, b"a"), (1, NOW, None, b"b")], 1)
    assert _produce(partitions, legacy, version=2) == (ErrorCode.NONE, 2)
