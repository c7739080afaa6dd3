"""The driver's view of the cluster: which partitions a subscription covers and their offsets.

One standalone Consumer (no group, nothing committed) answers the metadata and ListOffsets
lookups; the stream reader keeps it open for the life of the query, since Spark runs the reader
in one long-lived Python process on the driver.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from gregor.client import Consumer, TopicPartition
from gregor.spark.offsets import PartitionOffsets
from gregor.spark.subscription import Subscription


class Catalog:
    """Cluster lookups for planning; `close()` (or `with`) releases the connection."""

    def __init__(self, client_config: Mapping[str, Any]) -> None:
        self._consumer = Consumer({**client_config, "enable.auto.commit": False})

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        """The partitions `subscription` covers right now (one metadata request)."""
        cluster = {topic: len(partitions) for topic, partitions in self._consumer.list_topics().items()}
        return subscription.select(cluster)

    def earliest(self, partitions: Iterable[TopicPartition]) -> PartitionOffsets:
        """Log start offsets."""
        wanted = list(partitions)
        return dict(self._consumer.beginning_offsets(wanted)) if wanted else {}

    def latest(self, partitions: Iterable[TopicPartition]) -> PartitionOffsets:
        """End offsets: the high watermark, or the last stable offset with read_committed."""
        wanted = list(partitions)
        return dict(self._consumer.end_offsets(wanted)) if wanted else {}

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """The first offset at or after each timestamp (ms); None when every record is older."""
        if not timestamps:
            return {}
        found = self._consumer.offsets_for_times(timestamps)
        return {tp: None if hit is None else hit.offset for tp, hit in found.items()}

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
