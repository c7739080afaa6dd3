"""Replica placement over unfenced brokers: Kafka's AdminUtils assignment, rack-aware when every
broker has a `broker.rack`.

Rack-unaware: the first replica of partition p goes to broker (start + p) mod n; the others
follow at a shift that grows every n partitions, so leadership and followers spread evenly.
`start` and the initial shift are random (injected rng), as in Kafka.

Rack-aware: the same walk over the brokers listed rack by rack in turn (one from each rack, then
the next from each, ...), taking a candidate only if its rack holds no replica of the partition
yet (until every rack has one) and it holds none itself, so the replicas of a partition land on
as many racks as possible and a rack's loss leaves the others. Brokers of which only some have a
rack are placed rack-unaware (Kafka refuses such a cluster unless told to ignore racks).
"""

from __future__ import annotations

import random
from typing import Mapping, Sequence


def place_replicas(brokers: Sequence[int], partitions: range, replication_factor: int,
                   rng: random.Random, racks: Mapping[int, str | None] | None = None) -> dict[int, list[int]]:
    """partition → replica list; `brokers` sorted, `replication_factor` ≤ len(brokers)."""
    racks = racks or {}
    known = {broker: rack for broker in brokers if (rack := racks.get(broker))}
    if brokers and all(broker in known for broker in brokers):
        return _rack_aware(brokers, partitions, replication_factor, rng, known)
    count = len(brokers)
    start = rng.randrange(count)
    shift = rng.randrange(count)
    placement: dict[int, list[int]] = {}
    for index, partition in enumerate(partitions):
        if index > 0 and (start + index) % count == 0:
            shift += 1
        first = (start + index) % count
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (count - 1)) % count])
        placement[partition] = replicas
    return placement


def rack_alternated(brokers: Sequence[int], racks: Mapping[int, str]) -> list[int]:
    """The brokers one rack at a time in turn: the first of each rack, then the second, ..."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(brokers):
        by_rack.setdefault(racks[broker], []).append(broker)
    ordered = [by_rack[rack] for rack in sorted(by_rack)]
    return [rack_brokers[i] for i in range(max(map(len, ordered))) for rack_brokers in ordered if i < len(rack_brokers)]


def _rack_aware(brokers: Sequence[int], partitions: range, replication_factor: int, rng: random.Random,
                racks: Mapping[int, str]) -> dict[int, list[int]]:
    arranged = rack_alternated(brokers, racks)
    count, rack_count = len(arranged), len(set(racks[broker] for broker in arranged))
    start = rng.randrange(count)
    shift = rng.randrange(count)
    placement: dict[int, list[int]] = {}
    for index, partition in enumerate(partitions):
        if index > 0 and index % count == 0:
            shift += 1
        first = (index + start) % count
        replicas = [arranged[first]]
        used_racks = {racks[arranged[first]]}
        step = 0
        while len(replicas) < replication_factor:
            candidate = arranged[(first + 1 + (shift * rack_count + step) % (count - 1)) % count]
            step += 1
            if (racks[candidate] not in used_racks or len(used_racks) == rack_count) and (
                    candidate not in replicas or len(replicas) == count):
                replicas.append(candidate)
                used_racks.add(racks[candidate])
        placement[partition] = replicas
    return placement
