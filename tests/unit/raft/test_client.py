"""A sole voter leads at once, marks each epoch with a LeaderChangeMessage, commits on append."""

from __future__ import annotations

import struct

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import LeaderChangeMessage
from gregor.raft.client import RaftClient
from gregor.raft.effects import HighWatermarkChanged, StateChanged
from gregor.raft.memory_log import MemoryLog
from gregor.raft.quorum_state import Role
from gregor.raft.quorum_state_file import QuorumStateFile
from gregor.raft.storage_log import StorageLog, metadata_partition_dir
from gregor.records.batch import scan_batches
from gregor.records.record import decode_records


def open_client(tmp_path, log=None) -> RaftClient:
    log = log or StorageLog.open(str(tmp_path), 1000)
    return RaftClient(1, [1], log, QuorumStateFile(metadata_partition_dir(str(tmp_path))), "cid")


def test_start_elects_itself_and_writes_a_leader_change_control_batch(tmp_path):
    client = open_client(tmp_path)
    state = client.start(1000)
    assert (state.role, state.epoch, client.leader_id, client.is_leader) == (Role.LEADER, 1, 1, True)
    assert client.high_watermark == client.end_offset == 1
    data = client.log.read(0, 1, 1 << 20)
    [(header, pos)], _ = scan_batches(data)
    assert header.is_control and header.partition_leader_epoch == 1
    [record] = decode_records(data, pos, header, 1 << 20)
    assert struct.unpack(">hh", record.key) == (0, 2)
    message = LeaderChangeMessage.decode(record.value, 0)
    assert message.leader_id == 1 and [v.voter_id for v in message.voters] == [1]
    assert client.read_committed() == []
    client.close()


def test_appends_commit_at_once_and_read_back_in_order(tmp_path):
    client = open_client(tmp_path)
    client.start(1000)
    assert client.append([b"a", b"b"], 1001) == 2
    assert client.append([b"c"], 1002) == 3
    assert client.high_watermark == 4
    assert client.read_committed() == [(1, b"a"), (2, b"b"), (3, b"c")]
    assert client.read_committed(3) == [(3, b"c")]
    assert [tuple(e) for e in client.committed(2)] == [(2, 1, b"b"), (3, 1, b"c")]
    with pytest.raises(ValueError):
        client.append([], 1003)
    client.close()


def test_restart_bumps_the_epoch_and_keeps_the_log(tmp_path):
    client = open_client(tmp_path)
    client.start(1000)
    client.append([b"a"], 1001)
    client.close()
    again = open_client(tmp_path)
    assert again.start(2000).epoch == 2
    assert again.read_committed() == [(1, b"a")]
    assert again.append([b"b"], 2001) == 3
    assert [tuple(e) for e in again.committed()] == [(1, 1, b"a"), (3, 2, b"b")]
    again.close()
    assert QuorumStateFile(metadata_partition_dir(str(tmp_path))).read().epoch == 2


def test_only_the_leader_appends_and_batches_are_bounded(tmp_path):
    follower = RaftClient(1, [1, 2, 3], MemoryLog(), QuorumStateFile(str(tmp_path)))
    assert follower.start(1000).role == Role.UNATTACHED
    with pytest.raises(KafkaError) as error:
        follower.append([b"a"], 1000)
    assert error.value.code == ErrorCode.NOT_CONTROLLER
    leader = open_client(tmp_path, MemoryLog())
    leader.start(1000)
    with pytest.raises(KafkaError) as error:
        leader.append([b"x" * (1 << 20)] * 9, 1000)
    assert error.value.code == ErrorCode.MESSAGE_TOO_LARGE


def test_a_snapshot_survives_restart_and_counts_as_committed(tmp_path):
    client = open_client(tmp_path)
    client.start(1000)
    client.append([b"a"], 1001)
    client.append([b"b"], 1002)
    snapshot_id = client.create_snapshot(client.high_watermark, b"image of a and b")
    assert tuple(snapshot_id) == (3, 1)
    client.append([b"c"], 1003)
    client.close()
    again = open_client(tmp_path)
    again.start(2000)
    assert again.log.latest_snapshot().data == b"image of a and b"
    assert again.high_watermark == again.end_offset
    assert again.read_committed(snapshot_id.end_offset) == [(3, b"c")]
    again.close()


def test_a_sole_voter_reports_one_high_watermark_however_many_appends(tmp_path):
    client = open_client(tmp_path, MemoryLog())
    client.start(1000)
    for index in range(100):
        client.append([b"v%d" % index], 1001)
    effects = client.poll(1002)
    assert [e for e in effects if isinstance(e, HighWatermarkChanged)] == [HighWatermarkChanged(101)]
    assert [e.state.role for e in effects if isinstance(e, StateChanged)] == [Role.CANDIDATE, Role.LEADER]
    assert client.poll(1003) == []
