"""The raft client of one node (Kafka's KafkaRaftClient), today for a quorum of one voter.

On `start` the node restores its election state, and when it is the only voter it elects
itself at once: candidate in the next epoch, leader with its own vote, then it appends a
LeaderChangeMessage control batch, as Kafka's leader does at the start of every epoch. With
one voter an append is committed as soon as it is durable, so after each append the high
watermark is the log end offset. A multi-voter quorum keeps this API and replaces the
self-election and the immediate commit with Vote / BeginQuorumEpoch / Fetch.

Values are opaque bytes to raft (the metadata layer frames and decodes them); records are
written with a null key, one append = one batch, so an append is atomic.
"""

from __future__ import annotations

import struct
from typing import Iterable, Iterator, NamedTuple, Sequence

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import LeaderChangeMessage
from gregor.raft.quorum_state import EpochState, QuorumState, Role
from gregor.raft.quorum_state_file import QuorumStateFile
from gregor.raft.replicated_log import ReplicatedLog
from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records

MAX_BATCH_BYTES = 8 * 1024 * 1024
MAX_READ_BYTES = 8 * 1024 * 1024
LEADER_CHANGE_CONTROL_TYPE = 2
LEADER_CHANGE_VERSION = 0
_CONTROL_KEY = struct.Struct(">hh")


class CommittedEntry(NamedTuple):
    """One committed data record: offset, the leader epoch of its batch, its value."""

    offset: int
    epoch: int
    value: bytes


def leader_change_batch(leader_id: int, voters: Iterable[int], granting: Iterable[int], now_ms: int) -> bytes:
    """A control batch holding one LeaderChangeMessage (key: version 0, type LEADER_CHANGE)."""
    message = LeaderChangeMessage(
        version=LEADER_CHANGE_VERSION, leader_id=leader_id,
        voters=[LeaderChangeMessage.Voter(voter_id=v) for v in sorted(voters)],
        granting_voters=[LeaderChangeMessage.Voter(voter_id=v) for v in sorted(granting)])
    builder = BatchBuilder(is_control=True)
    builder.append(now_ms, _CONTROL_KEY.pack(0, LEADER_CHANGE_CONTROL_TYPE), message.encode(LEADER_CHANGE_VERSION))
    return builder.build()


class RaftClient:
    def __init__(self, node_id: int, voters: Iterable[int], log: ReplicatedLog, state_file: QuorumStateFile,
                 cluster_id: str = "") -> None:
        self.node_id = node_id
        self.log = log
        self.quorum = QuorumState(node_id, frozenset(voters), state_file, cluster_id)

    def start(self, now_ms: int) -> EpochState:
        """Restore the election state; a sole voter becomes leader of the next epoch."""
        self.quorum.initialize(self.log.last_fetched_epoch)
        if self.quorum.voters == {self.node_id}:
            self.quorum.transition_to_candidate()
            self.quorum.transition_to_leader()
            self._append_batch(leader_change_batch(self.node_id, self.quorum.voters,
                                                   self.quorum.state.granted, now_ms), now_ms)
        return self.quorum.state

    @property
    def is_leader(self) -> bool:
        return self.quorum.is_leader

    @property
    def leader_epoch(self) -> int:
        return self.quorum.epoch

    @property
    def leader_id(self) -> int:
        return self.quorum.leader_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def end_offset(self) -> int:
        return self.log.end_offset

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Append `values` as one batch in the current epoch; returns the last offset.

        KafkaError NOT_CONTROLLER when this node is not the leader, MESSAGE_TOO_LARGE when the
        batch would exceed 8 MiB (Kafka's limit for one raft batch).
        """
        if not self.quorum.is_leader:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"node {self.node_id} is not the metadata quorum leader")
        if not values:
            raise ValueError("nothing to append")
        builder = BatchBuilder()
        for value in values:
            builder.append(now_ms, None, value)
        if builder.estimated_size() > MAX_BATCH_BYTES:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"{len(values)} metadata records take {builder.estimated_size()} bytes, "
                             f"more than one batch may ({MAX_BATCH_BYTES})")
        return self._append_batch(builder.build(), now_ms)

    def _append_batch(self, batch: bytes, now_ms: int) -> int:
        result = self.log.append_as_leader(batch, self.quorum.epoch, now_ms)
        self.log.flush(now_ms)
        if self.quorum.voters == {self.node_id}:
            self.log.update_high_watermark(self.log.end_offset)
        return result.last_offset

    def committed(self, from_offset: int = 0) -> Iterator[CommittedEntry]:
        """Committed data records at or after `from_offset`, in order; control records skipped."""
        offset = max(from_offset, self.log.start_offset)
        high_watermark = self.log.high_watermark
        while offset < high_watermark:
            data = self.log.read(offset, high_watermark, MAX_READ_BYTES)
            batches, _ = scan_batches(data)
            if not batches:
                return
            for header, pos in batches:
                if not header.is_control:
                    for record in decode_records(data, pos, header, MAX_BATCH_BYTES * 4):
                        if offset <= record.offset < high_watermark:
                            yield CommittedEntry(record.offset, header.partition_leader_epoch,
                                                 bytes(record.value or b""))
                offset = header.last_offset + 1

    def read_committed(self, from_offset: int = 0) -> list[tuple[int, bytes]]:
        """(offset, value) of every committed data record from `from_offset`."""
        return [(entry.offset, entry.value) for entry in self.committed(from_offset)]

    def close(self) -> None:
        """Flush and close the log; a leader resigns, so its epoch is never led again."""
        if self.quorum.role == Role.LEADER:
            self.quorum.transition_to_resigned()
        self.log.flush(0)
        self.log.close()
