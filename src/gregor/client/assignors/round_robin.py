"""Kafka's RoundRobinAssignor ("roundrobin"): all partitions dealt in turn to the sorted members.

Partitions of all subscribed topics, sorted by topic then partition, are dealt one at a time
to the members in order (static members by group.instance.id first, then dynamic ones by member
id), skipping a member that does not subscribe to the partition's topic. With identical
subscriptions the counts differ by at most one; with differing ones they may not.
"""

from __future__ import annotations

from collections.abc import Mapping

from gregor.client.assignors.assignor import PartitionAssignor, member_order_key
from gregor.client.assignors.consumer_protocol import Subscription
from gregor.client.assignors.topic_partition import TopicPartition, java_string_key


class RoundRobinAssignor(PartitionAssignor):
    """Deals every partition in turn over the members that subscribe to its topic."""

    name = "roundrobin"

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        """Deal the sorted partitions round robin, skipping members not subscribed to the topic."""
        assignment: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
        members = sorted(subscriptions, key=lambda member: member_order_key(member, subscriptions[member]))
        turn = 0
        for topic in sorted(partitions_per_topic, key=java_string_key):
            for partition in range(partitions_per_topic[topic]):
                while topic not in subscriptions[members[turn]].topics:
                    turn = (turn + 1) % len(members)
                assignment[members[turn]].append(TopicPartition(topic, partition))
                turn = (turn + 1) % len(members)
        return assignment
