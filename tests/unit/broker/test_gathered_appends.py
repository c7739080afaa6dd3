"""The acks=all produce requests of one connection step are appended together when it ends (one
write and one wake-up per partition), each answered with its own offsets or error, in request order;
an append answered at once first appends what was gathered before it."""

from __future__ import annotations

import asyncio

from gregor.broker.gathered_appends import GatheredAppends
from gregor.broker.handlers import BrokerContext, BrokerServices, produce
from gregor.broker.network import Pipelined
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ProduceRequest, ProduceResponse, RequestHeader
from gregor.replication.effects import ProduceCompleted

from tests.unit.replication.helpers import Replica
from tests.unit.storage.helpers import NOW, batch, count_writes


class _Events:
    def produced(self, topic: str, size: int, records: int) -> None:
        pass


class _Host:
    """The PartitionHost side: partition "t"-0 with one replica, led here; counts the wake-ups."""

    max_uncompressed_bytes = 1 << 20

    def __init__(self, tmp_path, leader: int = 1) -> None:
        self.replica = Replica(tmp_path, 1, replicas=(1,))
        self.replica.apply(leader, 0, (1,), 0)
        self.woken = 0

    def partition(self, topic: str, index: int):
        return self.replica.partition if (topic, index) == ("t", 0) else None

    def on_leader_append(self, partition, effects=None) -> None:
        self.woken += 1
        self.apply(partition, effects or [])

    def apply(self, partition, effects) -> None:
        for effect in effects:
            if isinstance(effect, ProduceCompleted):
                effect.token(effect.error)


def _produce(host: _Host, appends: GatheredAppends, records: bytes, acks: int = -1):
    header = RequestHeader(request_api_key=produce.API_KEY, request_api_version=9, correlation_id=1)
    services = BrokerServices(partitions=host, metadata=None, controller=None, groups=None, metrics=_Events(),
                              shares=None, appends=appends)
    request = ProduceRequest(acks=acks, timeout_ms=5_000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=memoryview(records))])])
    return produce.handle(BrokerContext(services, header, None, {}, NOW), request)


async def _answer(result) -> tuple[int, int]:
    response = await result.awaitable if isinstance(result, Pipelined) else result
    assert isinstance(response, ProduceResponse)
    (answer,) = response.responses[0].partition_responses
    return answer.error_code, answer.base_offset


def _corrupt(records: bytes) -> bytes:
    return records[:70] + bytes([records[70] ^ 1]) + records[71:]


def test_a_steps_acks_all_requests_are_appended_at_its_end_in_one_write(tmp_path, monkeypatch):
    async def run():
        host = _Host(tmp_path)
        appends = GatheredAppends(host.on_leader_append)
        writes = count_writes(monkeypatch)
        results = [_produce(host, appends, records) for records in
                   (batch(1, tag=b"a"), batch(2, tag=b"b"), _corrupt(batch(1)), batch(1, tag=b"d"))]
        assert all(isinstance(result, Pipelined) for result in results)
        assert host.replica.log.log_end_offset == 0 and writes == []
        appends.flush()
        assert len(writes) == 1 and host.woken == 1
        assert [await _answer(result) for result in results] == [
            (ErrorCode.NONE, 0), (ErrorCode.NONE, 1), (ErrorCode.CORRUPT_MESSAGE, -1), (ErrorCode.NONE, 3)]
        assert [value for _, value in host.replica.values()] == [b"a", b"b", b"b", b"d"]
        appends.flush()  # nothing left: no write, no wake-up
        assert len(writes) == 1 and host.woken == 1
    asyncio.run(run())


def test_an_append_answered_at_once_comes_after_the_gathered_ones(tmp_path):
    async def run():
        host = _Host(tmp_path)
        appends = GatheredAppends(host.on_leader_append)
        gathered = _produce(host, appends, batch(1, tag=b"a"))
        at_once = _produce(host, appends, batch(1, tag=b"b"), acks=1)
        assert await _answer(at_once) == (ErrorCode.NONE, 1)
        assert await _answer(gathered) == (ErrorCode.NONE, 0)
        assert [value for _, value in host.replica.values()] == [b"a", b"b"]
    asyncio.run(run())


def test_gathered_requests_to_a_partition_no_longer_led_here_get_not_leader(tmp_path):
    async def run():
        host = _Host(tmp_path)
        appends = GatheredAppends(host.on_leader_append)
        results = [_produce(host, appends, batch(1)) for _ in range(2)]
        host.replica.apply(2, 1, (1,), 1)  # leadership moved before the step ended
        appends.flush()
        assert [await _answer(result) for result in results] == [(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)] * 2
        assert host.replica.log.log_end_offset == 0 and host.woken == 0
    asyncio.run(run())


def test_each_gathered_request_is_charged_its_share_of_the_append_for_the_request_quota(tmp_path):
    """The request-time quota counts a handler's time; a gathered append runs after the handler,
    so each request is told its share of its partition's flush."""
    async def run():
        host = _Host(tmp_path)
        appends = GatheredAppends(host.on_leader_append)
        charged: list[tuple[str, float, int]] = []
        for name in ("a", "b", "c"):
            appends.add(host.replica.partition, batch(1), NOW, 5_000, lambda error: None, lambda outcome: None,
                        lambda seconds, now_ms, name=name: charged.append((name, seconds, now_ms)))
        appends.add(host.replica.partition, batch(1), NOW, 5_000, lambda error: None, lambda outcome: None)
        appends.flush()
        assert [name for name, _, _ in charged] == ["a", "b", "c"]
        assert len({seconds for _, seconds, _ in charged}) == 1 and charged[0][1] > 0
        assert {now_ms for _, _, now_ms in charged} == {NOW}
    asyncio.run(run())
