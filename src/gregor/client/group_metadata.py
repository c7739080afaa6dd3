"""A consumer's group membership as a transactional producer needs it (Java's ConsumerGroupMetadata).

`Producer.send_offsets_to_transaction(offsets, consumer.group_metadata())` commits the offsets
with the member's generation, member id and group instance id, so the group coordinator refuses
them (ILLEGAL_GENERATION, FENCED_INSTANCE_ID) from a member that a rebalance has replaced: a
zombie cannot commit offsets for partitions that moved.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    group_id: str
    #: -1 (and member id "") outside a generation: the coordinator then checks nothing but the group.
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
