"""The controller's decisions: validate a topic/config change and say which records make it.

Sans-IO: every method takes the current image and returns a result plus the metadata records
to append; the caller appends them to the metadata log and replays them into a new image.
"""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping

from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from gregor.metadata.topic_configs import validate_topic_config
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    ConfigRecord, FeatureLevelRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord,
    RemoveTopicRecord, TopicRecord,
)

LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249
METADATA_VERSION = 21
PRODUCER_ID_BLOCK = 1000


@dataclass
class Outcome:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    records: list[Any] = field(default_factory=list)
    topic_id: uuid.UUID | None = None
    value: int = 0


def topic_name_error(name: str) -> str | None:
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name cannot be '{name}'"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters"
    if not LEGAL_TOPIC_NAME.match(name):
        return f"topic name '{name}' contains characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


class QuorumController:
    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def register_broker(self, image: MetadataImage, broker_id: int, endpoints: list[tuple[str, str, int]],
                        rack: str | None) -> list[Any]:
        records: list[Any] = []
        if image.metadata_version == 0:
            records.append(FeatureLevelRecord(name="metadata.version", feature_level=METADATA_VERSION))
        previous = image.brokers.get(broker_id)
        records.append(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=uuid.UUID(int=self._rng.getrandbits(128)),
            broker_epoch=(previous.epoch + 1) if previous else 0,
            end_points=[RegisterBrokerRecord.BrokerEndpoint(name=name, host=host, port=port, security_protocol=0)
                        for name, host, port in endpoints],
            rack=rack, fenced=False,
        ))
        return records

    def _live_brokers(self, image: MetadataImage) -> list[int]:
        return sorted(b for b, registration in image.brokers.items() if not registration.fenced)

    def _place(self, image: MetadataImage, partitions: range, replication_factor: int) -> dict[int, list[int]]:
        brokers = self._live_brokers(image)
        start = self._rng.randrange(len(brokers))
        return {p: [brokers[(start + p + r) % len(brokers)] for r in range(replication_factor)]
                for p in partitions}

    def create_topic(self, image: MetadataImage, name: str, num_partitions: int, replication_factor: int,
                     assignments: Mapping[int, list[int]], configs: Mapping[str, str | None],
                     default_partitions: int, default_replication_factor: int) -> Outcome:
        reason = topic_name_error(name)
        if reason:
            return Outcome(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        if name in image.topics:
            return Outcome(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic '{name}' already exists")
        live = self._live_brokers(image)
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                return Outcome(ErrorCode.INVALID_REQUEST,
                               "give either replica assignments or partitions and replication factor")
            if sorted(assignments) != list(range(len(assignments))):
                return Outcome(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partition ids must be 0..N-1")
            placement = {p: list(r) for p, r in assignments.items()}
            for replicas in placement.values():
                if not replicas or len(set(replicas)) != len(replicas) or not set(replicas) <= set(live):
                    return Outcome(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"replicas {replicas} must be distinct live brokers of {live}")
        else:
            partitions = default_partitions if num_partitions == -1 else num_partitions
            factor = default_replication_factor if replication_factor == -1 else replication_factor
            if partitions <= 0:
                return Outcome(ErrorCode.INVALID_PARTITIONS, f"number of partitions must be positive, not {partitions}")
            if factor <= 0 or factor > len(live):
                return Outcome(ErrorCode.INVALID_REPLICATION_FACTOR,
                               f"replication factor {factor} is not within 1..{len(live)} (live brokers)")
            placement = self._place(image, range(partitions), factor)
        for key, value in configs.items():
            reason = validate_topic_config(key, value)
            if reason:
                return Outcome(ErrorCode.INVALID_CONFIG, reason)
        topic_id = uuid.UUID(int=self._rng.getrandbits(128))
        records: list[Any] = [TopicRecord(name=name, topic_id=topic_id)]
        records.extend(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=k, value=v)
                       for k, v in sorted(configs.items()) if v is not None)
        records.extend(PartitionRecord(partition_id=p, topic_id=topic_id, replicas=r, isr=r, leader=r[0],
                                       leader_epoch=0, partition_epoch=0)
                       for p, r in sorted(placement.items()))
        return Outcome(records=records, topic_id=topic_id, value=len(placement))

    def delete_topic(self, image: MetadataImage, name: str) -> Outcome:
        topic = image.topics.get(name)
        if topic is None:
            return Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{name}' does not exist")
        return Outcome(records=[RemoveTopicRecord(topic_id=topic.topic_id)], topic_id=topic.topic_id)

    def create_partitions(self, image: MetadataImage, name: str, count: int,
                          assignments: list[list[int]] | None) -> Outcome:
        topic = image.topics.get(name)
        if topic is None:
            return Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{name}' does not exist")
        current = len(topic.partitions)
        if count <= current:
            return Outcome(ErrorCode.INVALID_PARTITIONS,
                           f"topic '{name}' has {current} partitions; the new count must be larger, not {count}")
        new = range(current, count)
        factor = len(next(iter(topic.partitions.values())).replicas)
        if assignments:
            if len(assignments) != len(new):
                return Outcome(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"{len(assignments)} assignments given for {len(new)} new partitions")
            placement = dict(zip(new, assignments))
        else:
            placement = self._place(image, new, factor)
        records = [PartitionRecord(partition_id=p, topic_id=topic.topic_id, replicas=r, isr=r, leader=r[0],
                                   leader_epoch=0, partition_epoch=0) for p, r in placement.items()]
        return Outcome(records=records, topic_id=topic.topic_id)

    def alter_configs(self, image: MetadataImage, resource_type: int, resource_name: str,
                      changes: Mapping[str, str | None], replace_all: bool,
                      broker_keys: frozenset[str]) -> Outcome:
        """Set (value) or delete (None) config keys; `replace_all` is AlterConfigs' semantics."""
        if resource_type == TOPIC_RESOURCE:
            if resource_name not in image.topics:
                return Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{resource_name}' does not exist")
            for key, value in changes.items():
                reason = validate_topic_config(key, value)
                if reason:
                    return Outcome(ErrorCode.INVALID_CONFIG, reason)
        elif resource_type == BROKER_RESOURCE:
            unknown = [key for key in changes if key not in broker_keys]
            if unknown:
                return Outcome(ErrorCode.INVALID_CONFIG, f"unknown broker config '{unknown[0]}'")
        else:
            return Outcome(ErrorCode.INVALID_REQUEST, f"unsupported resource type {resource_type}")
        current = image.configs.get((resource_type, resource_name), {})
        final = dict(changes)
        if replace_all:
            final.update({key: None for key in current if key not in changes})
        records = [ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=k, value=v)
                   for k, v in sorted(final.items()) if not (v is None and k not in current)]
        return Outcome(records=records)

    def allocate_producer_ids(self, image: MetadataImage, broker_id: int, broker_epoch: int) -> Outcome:
        first = image.next_producer_id
        record = ProducerIdsRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                   next_producer_id=first + PRODUCER_ID_BLOCK)
        return Outcome(records=[record], value=first)
