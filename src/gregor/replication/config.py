"""Replica settings, named after the broker keys they come from (Kafka's defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class TruncationMode(Enum):
    """How a follower finds where its log stops agreeing with a new leader's.

    DIVERGING_EPOCH: fetches carry the last fetched epoch and the leader answers a mismatch with
    the diverging epoch (Fetch v12+, KIP-595/KIP-320 era Kafka). OFFSETS_FOR_LEADER_EPOCH: the
    follower asks OffsetsForLeaderEpoch before fetching (KIP-101/KIP-279, Fetch below v12).
    HIGH_WATERMARK: truncate to the own high watermark, as Kafka did before leader epochs
    (message format below v2); it loses or forks committed data, so only tests use it, to show
    the anomalies the other two prevent.
    """

    DIVERGING_EPOCH = "diverging_epoch"
    OFFSETS_FOR_LEADER_EPOCH = "offsets_for_leader_epoch"
    HIGH_WATERMARK = "high_watermark"


@dataclass(frozen=True)
class ReplicationConfig:
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_max_bytes: int = 1_048_576
    replica_fetch_backoff_ms: int = 1_000
    replica_fetch_wait_max_ms: int = 500
    replica_socket_timeout_ms: int = 30_000
    truncation: TruncationMode = TruncationMode.DIVERGING_EPOCH
