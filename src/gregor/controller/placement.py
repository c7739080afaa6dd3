"""Replica placement over unfenced brokers: Kafka's rack-unaware round robin.

The first replica of partition p goes to broker (start + p) mod n; the others follow at a
shift that grows every n partitions, so leadership and followers spread evenly. `start` and
the initial shift are random (injected rng), as in Kafka's AdminUtils.
"""

from __future__ import annotations

import random
from typing import Sequence


def place_replicas(brokers: Sequence[int], partitions: range, replication_factor: int,
                   rng: random.Random) -> dict[int, list[int]]:
    """partition → replica list; `brokers` sorted, `replication_factor` ≤ len(brokers)."""
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
