"""Kafka's RangeAssignor ("range"): per topic, contiguous ranges of partitions over the sorted members.

For each topic, the members subscribed to it are sorted (static members by group.instance.id
first, then dynamic ones by member id) and each takes a contiguous run of partitions; the first
`partitions % members` members take one extra. Topics with the same partition count and the same
subscribers are therefore co-partitioned: partition N of each goes to the same member.

Kafka 3.5's rack-aware variant (KIP-881) is not implemented: rack ids are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

from gregor.client.assignors.assignor import PartitionAssignor, member_order_key
from gregor.client.assignors.consumer_protocol import Subscription
from gregor.client.assignors.topic_partition import TopicPartition


class RangeAssignor(PartitionAssignor):
    """Contiguous partition ranges per topic, so equally partitioned topics stay co-partitioned."""

    name = "range"

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        """Split each topic's partitions into contiguous ranges over its sorted subscribers."""
        assignment: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
        for topic, count in partitions_per_topic.items():
            members = sorted((member for member, subscription in subscriptions.items()
                              if topic in subscription.topics),
                             key=lambda member: member_order_key(member, subscriptions[member]))
            share, extra = divmod(count, len(members))
            start = 0
            for index, member in enumerate(members):
                length = share + (1 if index < extra else 0)
                assignment[member].extend(TopicPartition(topic, partition)
                                          for partition in range(start, start + length))
                start += length
        return assignment
