"""Small metadata images for the controller's replication decisions: four registered brokers
(epoch 5) and one topic `t` with one partition."""

from __future__ import annotations

import uuid

from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import MetadataImage
from gregor.protocol.messages.metadata_records.partition_record import PartitionRecord
from gregor.protocol.messages.metadata_records.register_broker_record import RegisterBrokerRecord
from gregor.protocol.messages.metadata_records.topic_record import TopicRecord
from gregor.protocol.messages.metadata_records.unfence_broker_record import UnfenceBrokerRecord

TOPIC_ID = uuid.UUID(int=7)


def CLEAN(topic: str) -> bool:
    return False


def UNCLEAN(topic: str) -> bool:
    return True


def replay(image: MetadataImage, records) -> MetadataImage:
    delta = MetadataDelta(image)
    for offset, record in enumerate(records, image.highest_offset + 1):
        delta.replay(record, offset)
    return delta.apply()


def cluster(replicas=(1, 2, 3), isr=None, leader=None, live=(1, 2, 3, 4)) -> MetadataImage:
    records: list = []
    for broker in (1, 2, 3, 4):
        records.append(RegisterBrokerRecord(broker_id=broker, incarnation_id=uuid.UUID(int=broker), broker_epoch=5))
        if broker in live:
            records.append(UnfenceBrokerRecord(id=broker, epoch=5))
    records += [TopicRecord(name="t", topic_id=TOPIC_ID),
                PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=list(replicas),
                                isr=list(replicas if isr is None else isr),
                                leader=replicas[0] if leader is None else leader, leader_epoch=3, partition_epoch=8)]
    return replay(MetadataImage(), records)


def partition(image: MetadataImage):
    return image.topics["t"].partitions[0]
