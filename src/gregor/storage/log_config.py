"""Per-log configuration with Kafka's topic-level keys and defaults."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Mapping

LONG_MAX = 9223372036854775807
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True)
class LogConfig:
    """Field names follow the topic keys (`segment.bytes` -> `segment_bytes`).

    `message.timestamp.difference.max.ms` (deprecated in Kafka 3.6) folds into both
    `timestamp_before_max_ms` and `timestamp_after_max_ms`, whichever is tighter.
    `producer_id_expiration_ms` is the broker key `producer.id.expiration.ms`. The compaction keys
    (`min.cleanable.dirty.ratio`, `delete.retention.ms`, `min.compaction.lag.ms`,
    `max.compaction.lag.ms`) are read by the log cleaner. What is derived from the fields is
    computed once per config (cached properties): every append asks.
    """

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_index_bytes: int = 10485760
    retention_ms: int = 604800000
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    message_timestamp_type: str = CREATE_TIME
    max_message_bytes: int = 1048588
    timestamp_before_max_ms: int = LONG_MAX
    timestamp_after_max_ms: int = LONG_MAX
    cleanup_policy: str = "delete"
    min_insync_replicas: int = 1
    producer_id_expiration_ms: int = 86400000
    min_cleanable_dirty_ratio: float = 0.5
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX

    @cached_property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @cached_property
    def deletes(self) -> bool:
        """Whether retention.ms / retention.bytes apply (cleanup.policy contains `delete`)."""
        return "delete" in (policy.strip() for policy in self.cleanup_policy.split(","))

    @cached_property
    def compacts(self) -> bool:
        """Whether the log cleaner compacts this log (cleanup.policy contains `compact`)."""
        return "compact" in (policy.strip() for policy in self.cleanup_policy.split(","))

    @cached_property
    def max_segment_ms(self) -> int:
        """The age that rolls the active segment: segment.ms, or max.compaction.lag.ms when compacting.

        As Kafka's LogConfig.maxSegmentMs: the active segment is never cleaned, so a compacted log
        must roll within max.compaction.lag.ms for that bound to hold.
        """
        if self.compacts and self.max_compaction_lag_ms > 0:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    @staticmethod
    def from_properties(properties: Mapping[str, str], base: LogConfig | None = None) -> LogConfig:
        """Kafka topic-level keys over `base` (the broker defaults); unknown keys are ignored.

        Raises ValueError for a value that is not a number where one is expected, an unknown
        timestamp type, or min.compaction.lag.ms above max.compaction.lag.ms (Kafka refuses that
        pair too).
        """
        base = base or LogConfig()

        def number(key: str, default: int) -> int:
            value = properties.get(key)
            return default if value is None else int(value)

        difference = number("message.timestamp.difference.max.ms", LONG_MAX)
        timestamp_type = properties.get("message.timestamp.type", base.message_timestamp_type)
        if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError(f"message.timestamp.type must be {CREATE_TIME} or {LOG_APPEND_TIME}, "
                             f"not {timestamp_type!r}")
        ratio = properties.get("min.cleanable.dirty.ratio")
        min_lag = number("min.compaction.lag.ms", base.min_compaction_lag_ms)
        max_lag = number("max.compaction.lag.ms", base.max_compaction_lag_ms)
        if min_lag > max_lag:
            raise ValueError(f"min.compaction.lag.ms ({min_lag}) is above max.compaction.lag.ms ({max_lag})")
        return LogConfig(
            segment_bytes=number("segment.bytes", base.segment_bytes),
            segment_ms=number("segment.ms", base.segment_ms),
            segment_index_bytes=number("segment.index.bytes", base.segment_index_bytes),
            retention_ms=number("retention.ms", base.retention_ms),
            retention_bytes=number("retention.bytes", base.retention_bytes),
            index_interval_bytes=number("index.interval.bytes", base.index_interval_bytes),
            flush_messages=number("flush.messages", base.flush_messages),
            flush_ms=number("flush.ms", base.flush_ms),
            file_delete_delay_ms=number("file.delete.delay.ms", base.file_delete_delay_ms),
            message_timestamp_type=timestamp_type,
            max_message_bytes=number("max.message.bytes", base.max_message_bytes),
            timestamp_before_max_ms=min(number("message.timestamp.before.max.ms", base.timestamp_before_max_ms),
                                        difference),
            timestamp_after_max_ms=min(number("message.timestamp.after.max.ms", base.timestamp_after_max_ms),
                                       difference),
            cleanup_policy=properties.get("cleanup.policy", base.cleanup_policy),
            min_insync_replicas=number("min.insync.replicas", base.min_insync_replicas),
            producer_id_expiration_ms=number("producer.id.expiration.ms", base.producer_id_expiration_ms),
            min_cleanable_dirty_ratio=base.min_cleanable_dirty_ratio if ratio is None else float(ratio),
            delete_retention_ms=number("delete.retention.ms", base.delete_retention_ms),
            min_compaction_lag_ms=min_lag,
            max_compaction_lag_ms=max_lag,
        )
