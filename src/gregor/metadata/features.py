"""Feature flags (KIP-584): the levels this build supports and the levels a new cluster finalizes.

A feature's finalized level lives in the metadata log (FeatureLevelRecord) so that every node of
a cluster agrees on which protocol is in force (`transaction.version` 2 is KIP-890's transaction
protocol, `group.version` 1 turns on KIP-848 groups, and so on). Brokers register the ranges they
support; ApiVersions v3+ reports both, as Kafka's brokers do. A component that honours a new
feature adds it here with the range it implements and the level a new cluster starts at; level 0
means "off" and is never written as a record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

METADATA_VERSION = "metadata.version"
#: share.version 1: share groups (KIP-932) at Kafka 4.1's stable API versions; on in a new cluster.
SHARE_VERSION = "share.version"
#: group.version 1: the KIP-848 consumer protocol (ConsumerGroupHeartbeat); on in a new cluster, as Kafka 4.0.
GROUP_VERSION = "group.version"


@dataclass(frozen=True, slots=True)
class Feature:
    """One feature as this build implements it."""

    name: str
    min_level: int
    max_level: int
    #: The level a cluster formatted by this build finalizes (0: the feature starts off).
    bootstrap_level: int


TRANSACTION_VERSION = "transaction.version"

#: metadata.version: 1 = 3.0-IV1, 21 = 3.9-IV0 (Gregor's records are those of 3.9).
#: transaction.version: 2 is KIP-890's protocol (EndTxn v5 bumps the epoch on every transaction,
#: Produce v12 and TxnOffsetCommit v5 add partitions to it); a new cluster starts at 2, as Kafka 4.0.
#: Clients that do not speak v2 (EndTxn v4 and below) keep the classic protocol at either level.
SUPPORTED_FEATURES: tuple[Feature, ...] = (
    Feature(METADATA_VERSION, 1, 21, 21),
    Feature(SHARE_VERSION, 0, 1, 1),
    Feature(TRANSACTION_VERSION, 1, 2, 2),
    Feature(GROUP_VERSION, 0, 1, 1),
)


def bootstrap_levels(metadata_version: int | None = None) -> dict[str, int]:
    """The finalized levels a new cluster starts with (`metadata_version` overrides its default)."""
    levels = {f.name: f.bootstrap_level for f in SUPPORTED_FEATURES if f.bootstrap_level > 0}
    if metadata_version is not None:
        levels[METADATA_VERSION] = metadata_version
    return levels


def unsupported_levels(finalized: Mapping[str, int],
                       ranges: Mapping[str, tuple[int, int]]) -> list[str]:
    """The finalized features a node supporting `ranges` could not honour (KIP-584: such a node
    may not join the cluster); a feature the node does not name is supported only at level 0."""
    problems = []
    for name, level in sorted(finalized.items()):
        if level <= 0:
            continue
        low, high = ranges.get(name, (0, 0))
        if not low <= level <= high:
            problems.append(f"{name}={level} (supported {low}-{high})" if name in ranges
                            else f"{name}={level} (not supported)")
    return problems
