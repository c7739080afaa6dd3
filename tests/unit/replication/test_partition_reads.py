"""What consumers and admin clients read and delete goes through the partition, which owns the
fencing (current leader epoch first, then leadership, as Kafka's localLogWithEpochOrThrow) and
the high-watermark limit."""

from __future__ import annotations

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.replication.partition import (
    EARLIEST_TIMESTAMP, LATEST_TIERED_TIMESTAMP, LATEST_TIMESTAMP, READ_COMMITTED, READ_UNCOMMITTED,
)

from tests.unit.replication.helpers import Replica, catch_up


def leader_and_follower(tmp_path) -> tuple[Replica, Replica]:
    leader, follower = Replica(tmp_path, 1), Replica(tmp_path, 2)
    leader.apply(1, 3, (1, 2), 0)
    follower.apply(1, 3, (1, 2), 0)
    for value in (b"a", b"b", b"c"):
        leader.produce(value, acks=1)
    return leader, follower


def refused(call, *args) -> ErrorCode:
    with pytest.raises(KafkaError) as raised:
        call(*args)
    return ErrorCode(raised.value.code)


def test_a_consumer_reads_below_the_high_watermark_only_whatever_its_isolation(tmp_path):
    leader, follower = leader_and_follower(tmp_path)
    assert leader.partition.high_watermark == 0  # the follower has not fetched yet
    for isolation in (READ_UNCOMMITTED, READ_COMMITTED):
        assert leader.partition.read_records(0, 1 << 20, 3, isolation).size == 0
    catch_up(follower, leader)
    catch_up(follower, leader)
    assert leader.partition.high_watermark == 3
    assert leader.partition.read_records(0, 1 << 20, 3).size == leader.log.read(0, 1 << 20).size


def test_the_current_leader_epoch_is_checked_before_leadership(tmp_path):
    leader, follower = leader_and_follower(tmp_path)
    assert refused(leader.partition.read_records, 0, 100, 2) == ErrorCode.FENCED_LEADER_EPOCH
    assert refused(leader.partition.read_records, 0, 100, 4) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert refused(follower.partition.read_records, 0, 100, 2) == ErrorCode.FENCED_LEADER_EPOCH
    assert refused(follower.partition.read_records, 0, 100, -1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert refused(follower.partition.offset_for_timestamp, LATEST_TIMESTAMP, 3) == \
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert refused(follower.partition.delete_records_before, -1) == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_list_offsets_and_delete_records_on_the_leader(tmp_path):
    leader, follower = leader_and_follower(tmp_path)
    catch_up(follower, leader)
    catch_up(follower, leader)
    partition = leader.partition
    assert partition.offset_for_timestamp(LATEST_TIMESTAMP) == (3, -1)
    assert partition.offset_for_timestamp(LATEST_TIERED_TIMESTAMP) is None
    assert refused(partition.delete_records_before, 4) == ErrorCode.OFFSET_OUT_OF_RANGE  # past the HW
    assert partition.delete_records_before(-1) == 3 == partition.log_start_offset
    assert partition.offset_for_timestamp(EARLIEST_TIMESTAMP) == (3, -1)
