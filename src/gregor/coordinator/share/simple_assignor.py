"""The share groups' server-side assignor (Kafka's `simple`): every subscribed partition to at
least one member, members spread evenly over partitions.

Share groups need no exclusive ownership (records, not partitions, are what a member holds), so
with more members than partitions a partition goes to several members; with fewer, each
partition goes to exactly one. Deterministic: members are taken in member-id order.
"""

from __future__ import annotations

from typing import Mapping


def assign(subscriptions: Mapping[str, frozenset[str]],
           partition_counts: Mapping[str, int]) -> dict[str, dict[str, list[int]]]:
    """{member id: {topic: partitions}} for every member, empty for those with nothing."""
    assignment: dict[str, dict[str, list[int]]] = {member: {} for member in subscriptions}
    for topic in sorted({t for topics in subscriptions.values() for t in topics}):
        count = partition_counts.get(topic, 0)
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if count <= 0 or not members:
            continue
        if len(members) <= count:
            for partition in range(count):
                assignment[members[partition % len(members)]].setdefault(topic, []).append(partition)
        else:
            for index, member in enumerate(members):
                assignment[member].setdefault(topic, []).append(index % count)
    return assignment
