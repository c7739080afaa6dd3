"""The controller's part in replicating one partition, decided by Gregor's own controller code.

The simulated controller keeps a real metadata image (three registered brokers, one topic of one
partition) and changes it only through `gregor.controller.replication_control` — fencing a
broker that misses heartbeats or restarts, unfencing one that is back, checking and applying
AlterPartition — with every record replayed by `gregor.metadata.delta`, as the quorum
controller's committed records are. The simulator therefore tests the real election rules
(preferred replica first, ISR only unless unclean election is enabled, the last ISR member kept)
and the real epoch bookkeeping, not a copy of them.
"""

from __future__ import annotations

import uuid

from gregor.controller.replication_control import alter_partition, fence_broker, unfence_broker
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import MetadataImage, PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.metadata_records.partition_record import PartitionRecord
from gregor.protocol.messages.metadata_records.register_broker_record import RegisterBrokerRecord
from gregor.protocol.messages.metadata_records.topic_record import TopicRecord
from gregor.protocol.messages.metadata_records.unfence_broker_record import UnfenceBrokerRecord

TOPIC = "sim"


class ControllerStub:
    def __init__(self, replicas: tuple[int, ...], unclean_election: bool = False,
                 topic_id: uuid.UUID = uuid.UUID(int=0x5157)) -> None:
        self.unclean_election = unclean_election
        self.topic_id = topic_id
        self.unclean_elections = 0
        self.image = MetadataImage()
        self._offset = 0
        records: list = []
        for broker in replicas:
            records += [RegisterBrokerRecord(broker_id=broker, incarnation_id=uuid.UUID(int=broker), broker_epoch=1),
                        UnfenceBrokerRecord(id=broker, epoch=1)]
        records += [TopicRecord(name=TOPIC, topic_id=topic_id),
                    PartitionRecord(partition_id=0, topic_id=topic_id, replicas=list(replicas), isr=list(replicas),
                                    leader=replicas[0], leader_epoch=0, partition_epoch=0)]
        self._commit(records)

    def _commit(self, records: list) -> None:
        delta = MetadataDelta(self.image)
        for record in records:
            self._offset += 1
            delta.replay(record, self._offset)
        self.image = delta.apply()

    def _unclean(self, _topic: str) -> bool:
        return self.unclean_election

    @property
    def state(self) -> PartitionRegistration:
        return self.image.topics[TOPIC].partitions[0]

    @property
    def live(self) -> set[int]:
        return {broker_id for broker_id, broker in self.image.brokers.items() if not broker.fenced}

    def _commit_change(self, records: list) -> bool:
        """Commit the records; returns whether the partition changed."""
        before = self.state
        self._commit(records)
        after = self.state
        if after.leader not in (-1, before.leader) and after.leader not in before.isr:
            self.unclean_elections += 1
        return after != before

    def fence(self, broker: int) -> bool:
        """The broker missed its session or restarted; returns whether it was live."""
        records = fence_broker(self.image, broker, self._unclean)
        if not records:
            return False
        self._commit_change(records)
        return True

    def unfence(self, broker: int) -> bool:
        """The broker is back; returns whether the partition got a leader through it."""
        records = unfence_broker(self.image, broker, self._unclean)
        if not records:
            return False
        return self._commit_change(records)

    def alter_partition(self, broker: int, leader_epoch: int, partition_epoch: int,
                        isr: tuple[int, ...]) -> ErrorCode:
        error, record = alter_partition(self.image, broker, self.topic_id, 0, leader_epoch, partition_epoch, isr)
        if error == ErrorCode.NONE and record is not None:
            self._commit([record])
        return error
