"""A share group survives its coordinator's restart: its membership is written to
`__consumer_offsets` as Kafka's ShareGroup* records and replayed by the next coordinator, so a
member heartbeats on with its epoch (not UNKNOWN_MEMBER_ID) and the group describes the same, a
member whose client is gone times out there; a deleted group stays deleted."""

from __future__ import annotations

import asyncio

from gregor.broker.config import BrokerConfig
from gregor.broker.server import Broker
from gregor.protocol.error_codes import ErrorCode as E
from gregor.protocol.messages import (
    CreateTopicsRequest, DeleteGroupsRequest, ShareGroupDescribeRequest, ShareGroupHeartbeatRequest,
)
from tests.unit.broker.test_authorization_matrix import Node

ADMIN = "User:ANONYMOUS"


def _config(tmp_path) -> BrokerConfig:
    return BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                         "offsets.topic.num.partitions": "1", "share.coordinator.state.topic.num.partitions": "1",
                         "group.share.session.timeout.ms": "1000"})


async def _started(tmp_path) -> tuple[Broker, Node]:
    broker = Broker(_config(tmp_path))
    await broker.start()
    for _ in range(300):
        partition = broker.partitions.partition("__consumer_offsets", 0)
        if partition is not None and partition.is_leader:
            break
        if "__consumer_offsets" not in broker.metadata.image.topics:
            await broker.groups.ensure_offsets_topic()
        await asyncio.sleep(0.01)
    return broker, Node(broker)


def _heartbeat(member_id: str, epoch: int, topics: list[str] | None) -> ShareGroupHeartbeatRequest:
    return ShareGroupHeartbeatRequest(group_id="keep", member_id=member_id, member_epoch=epoch,
                                      subscribed_topic_names=topics)


async def _restarts(tmp_path) -> tuple[list, list]:
    broker, node = await _started(tmp_path)
    try:
        created = await node.call(ADMIN, CreateTopicsRequest(timeout_ms=5000, topics=[
            CreateTopicsRequest.CreatableTopic(name="t", num_partitions=2, replication_factor=1)]), 5)
        assert created.topics[0].error_code == 0
        joined = [await node.call(ADMIN, _heartbeat(m, 0, ["t"]), 1) for m in ("m-a", "m-b")]
        assert [j.error_code for j in joined] == [0, 0]
        again = await node.call(ADMIN, _heartbeat("m-a", joined[0].member_epoch, None), 1)
        before = (await node.call(ADMIN, ShareGroupDescribeRequest(group_ids=["keep"]), 1)).groups[0]
    finally:
        await broker.stop()
    broker, node = await _started(tmp_path)
    try:
        after = (await node.call(ADMIN, ShareGroupDescribeRequest(group_ids=["keep"]), 1)).groups[0]
        beat = await node.call(ADMIN, _heartbeat("m-a", again.member_epoch, None), 1)
        assert beat.error_code == E.NONE, beat.error_message
        for _ in range(6):  # m-b, whose client is gone, times out on the new coordinator too
            await asyncio.sleep(0.3)
            assert (await node.call(ADMIN, _heartbeat("m-a", beat.member_epoch, None), 1)).error_code == E.NONE
        left = (await node.call(ADMIN, ShareGroupDescribeRequest(group_ids=["keep"]), 1)).groups[0]
        assert [m.member_id for m in left.members] == ["m-a"]
        assert (await node.call(ADMIN, _heartbeat("m-a", -1, None), 1)).error_code == E.NONE
        deleted = await node.call(ADMIN, DeleteGroupsRequest(groups_names=["keep"]), 2)
        assert deleted.results[0].error_code == E.NONE
    finally:
        await broker.stop()
    broker, node = await _started(tmp_path)
    try:
        gone = (await node.call(ADMIN, ShareGroupDescribeRequest(group_ids=["keep"]), 1)).groups[0]
        assert gone.error_code == E.GROUP_ID_NOT_FOUND
    finally:
        await broker.stop()
    return [before, after], [beat]


def _summary(group) -> tuple:
    return (group.error_code, group.group_state, group.group_epoch, group.assignment_epoch, sorted(
        (m.member_id, m.member_epoch, sorted((t.topic_name, tuple(t.partitions)) for t in m.assignment.topic_partitions))
        for m in group.members))


def test_a_share_group_survives_its_coordinators_restart_and_a_deleted_one_stays_deleted(tmp_path):
    (before, after), _ = asyncio.run(_restarts(tmp_path))
    assert before.error_code == 0 and len(before.members) == 2
    assert _summary(after) == _summary(before)
