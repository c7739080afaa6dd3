"""Raft's requests and responses as gregor.protocol messages for `__cluster_metadata-0`.

One builder or reader per shape, so the client speaks in epochs and offsets and the edge only
encodes what it is handed. Fetch carries the replica id both in `replica_id` (before v15) and in
`replica_state` (v15 on); `fetch_replica_id` reads whichever the decoded version filled.
"""

from __future__ import annotations

import uuid

from gregor.protocol.messages.begin_quorum_epoch import BeginQuorumEpochRequest, BeginQuorumEpochResponse
from gregor.protocol.messages.describe_quorum import DescribeQuorumResponse
from gregor.protocol.messages.end_quorum_epoch import EndQuorumEpochRequest, EndQuorumEpochResponse
from gregor.protocol.messages.fetch import FetchRequest, FetchResponse
from gregor.protocol.messages.fetch_snapshot import FetchSnapshotRequest, FetchSnapshotResponse
from gregor.protocol.messages.vote import VoteRequest, VoteResponse
from gregor.raft.replicated_log import SnapshotId

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)
NO_LEADER = -1


def vote_request(cluster_id: str, voter_id: int, epoch: int, candidate_id: int, last_epoch: int,
                 end_offset: int) -> VoteRequest:
    partition = VoteRequest.PartitionData(candidate_epoch=epoch, candidate_id=candidate_id,
                                          last_offset_epoch=last_epoch, last_offset=end_offset)
    return VoteRequest(cluster_id=cluster_id, voter_id=voter_id,
                       topics=[VoteRequest.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])


def vote_response(error: int, leader_id: int, epoch: int, granted: bool) -> VoteResponse:
    partition = VoteResponse.PartitionData(error_code=error, leader_id=leader_id, leader_epoch=epoch,
                                           vote_granted=granted)
    return VoteResponse(topics=[VoteResponse.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])


def begin_quorum_epoch_request(cluster_id: str, voter_id: int, leader_id: int, epoch: int) -> BeginQuorumEpochRequest:
    partition = BeginQuorumEpochRequest.PartitionData(leader_id=leader_id, leader_epoch=epoch)
    return BeginQuorumEpochRequest(cluster_id=cluster_id, voter_id=voter_id, topics=[
        BeginQuorumEpochRequest.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])


def begin_quorum_epoch_response(error: int, leader_id: int, epoch: int) -> BeginQuorumEpochResponse:
    partition = BeginQuorumEpochResponse.PartitionData(error_code=error, leader_id=leader_id, leader_epoch=epoch)
    return BeginQuorumEpochResponse(topics=[
        BeginQuorumEpochResponse.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])


def end_quorum_epoch_request(cluster_id: str, leader_id: int, epoch: int,
                             successors: list[int]) -> EndQuorumEpochRequest:
    partition = EndQuorumEpochRequest.PartitionData(
        leader_id=leader_id, leader_epoch=epoch, preferred_successors=list(successors),
        preferred_candidates=[EndQuorumEpochRequest.ReplicaInfo(candidate_id=s) for s in successors])
    return EndQuorumEpochRequest(cluster_id=cluster_id, topics=[
        EndQuorumEpochRequest.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])


def end_quorum_epoch_successors(partition: EndQuorumEpochRequest.PartitionData) -> list[int]:
    """Preferred successors from whichever field the decoded version filled (v0 ids, v1 infos)."""
    if partition.preferred_candidates:
        return [candidate.candidate_id for candidate in partition.preferred_candidates]
    return list(partition.preferred_successors)


def end_quorum_epoch_response(error: int, leader_id: int, epoch: int) -> EndQuorumEpochResponse:
    partition = EndQuorumEpochResponse.PartitionData(error_code=error, leader_id=leader_id, leader_epoch=epoch)
    return EndQuorumEpochResponse(topics=[
        EndQuorumEpochResponse.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])


def fetch_request(cluster_id: str, replica_id: int, epoch: int, fetch_offset: int, last_fetched_epoch: int,
                  log_start_offset: int, max_wait_ms: int, max_bytes: int) -> FetchRequest:
    partition = FetchRequest.FetchPartition(current_leader_epoch=epoch, fetch_offset=fetch_offset,
                                            last_fetched_epoch=last_fetched_epoch,
                                            log_start_offset=log_start_offset, partition_max_bytes=max_bytes)
    return FetchRequest(cluster_id=cluster_id, replica_id=replica_id,
                        replica_state=FetchRequest.ReplicaState(replica_id=replica_id, replica_epoch=-1),
                        max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes, topics=[
                            FetchRequest.FetchTopic(topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID,
                                                    partitions=[partition])])


def fetch_replica_id(request: FetchRequest) -> int:
    return request.replica_state.replica_id if request.replica_state.replica_id >= 0 else request.replica_id


def fetch_response(error: int, leader_id: int, epoch: int, high_watermark: int, log_start_offset: int,
                   records: bytes = b"", diverging: tuple[int, int] | None = None,
                   snapshot_id: SnapshotId | None = None) -> FetchResponse:
    partition = FetchResponse.PartitionData(
        error_code=error, high_watermark=high_watermark, log_start_offset=log_start_offset,
        current_leader=FetchResponse.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
        records=records or None)
    if diverging is not None:
        partition.diverging_epoch = FetchResponse.EpochEndOffset(epoch=diverging[0], end_offset=diverging[1])
    if snapshot_id is not None:
        partition.snapshot_id = FetchResponse.SnapshotId(end_offset=snapshot_id.end_offset, epoch=snapshot_id.epoch)
    return FetchResponse(responses=[FetchResponse.FetchableTopicResponse(
        topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID, partitions=[partition])])


def fetch_snapshot_request(cluster_id: str, replica_id: int, epoch: int, snapshot_id: SnapshotId, position: int,
                           max_bytes: int) -> FetchSnapshotRequest:
    partition = FetchSnapshotRequest.PartitionSnapshot(
        current_leader_epoch=epoch, position=position,
        snapshot_id=FetchSnapshotRequest.SnapshotId(end_offset=snapshot_id.end_offset, epoch=snapshot_id.epoch))
    return FetchSnapshotRequest(cluster_id=cluster_id, replica_id=replica_id, max_bytes=max_bytes, topics=[
        FetchSnapshotRequest.TopicSnapshot(name=METADATA_TOPIC, partitions=[partition])])


def fetch_snapshot_response(error: int, leader_id: int, epoch: int, snapshot_id: SnapshotId | None = None,
                            size: int = 0, position: int = 0, chunk: bytes = b"") -> FetchSnapshotResponse:
    partition = FetchSnapshotResponse.PartitionSnapshot(
        error_code=error, size=size, position=position, unaligned_records=chunk,
        current_leader=FetchSnapshotResponse.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch))
    if snapshot_id is not None:
        partition.snapshot_id = FetchSnapshotResponse.SnapshotId(end_offset=snapshot_id.end_offset,
                                                                 epoch=snapshot_id.epoch)
    return FetchSnapshotResponse(topics=[FetchSnapshotResponse.TopicSnapshot(name=METADATA_TOPIC,
                                                                             partitions=[partition])])


def describe_quorum_response(error: int, leader_id: int, epoch: int, high_watermark: int,
                             voters: list[DescribeQuorumResponse.ReplicaState],
                             observers: list[DescribeQuorumResponse.ReplicaState]) -> DescribeQuorumResponse:
    partition = DescribeQuorumResponse.PartitionData(error_code=error, leader_id=leader_id, leader_epoch=epoch,
                                                     high_watermark=high_watermark, current_voters=voters,
                                                     observers=observers)
    return DescribeQuorumResponse(topics=[DescribeQuorumResponse.TopicData(topic_name=METADATA_TOPIC,
                                                                           partitions=[partition])])
