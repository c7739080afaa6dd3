"""Each committed metadata image, applied to this broker (Kafka's BrokerMetadataPublisher).

The metadata source (the ControllerServer in this process, or the raft observer of a broker-only
node) calls `on_metadata_update` with every committed image. It becomes the broker's current
image, the hosted partitions follow it (created, led or followed, stopped, reconfigured) and the
group and transaction coordinators load or unload the `__consumer_offsets` and
`__transaction_state` partitions this broker now leads.

The first image is applied whole, and only then: the broker installs the publisher once it has
caught up with the quorum's committed log, so a restart never mistakes a stale image for deleted
topics.
"""

from __future__ import annotations

from gregor.broker.broker_metadata import BrokerMetadata
from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.group_runtime import GroupRuntime
from gregor.broker.hosted_partitions import HostedPartitions
from gregor.broker.transaction_runtime import TransactionRuntime
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import MetadataImage


class BrokerMetadataPublisher:
    def __init__(self, metadata: BrokerMetadata, partitions: HostedPartitions, groups: GroupRuntime,
                 clock: Clock = wall_clock_ms, transactions: TransactionRuntime | None = None) -> None:
        self._metadata = metadata
        self._partitions = partitions
        self._groups = groups
        self._transactions = transactions
        self._clock = clock
        self._synced = False

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Bring local partitions and groups in line with a newly committed image."""
        previous, self._metadata.image = self._metadata.image, image
        now_ms = self._clock()
        if not self._synced:
            self._synced = True
            self._partitions.sync_all(now_ms)
            self._groups.sync_leadership()
            if self._transactions is not None:
                self._transactions.sync_leadership()
            return
        deleted = delta.deleted_topics()
        for name in deleted.values():
            self._partitions.remove_topic(name, now_ms)
        if deleted:
            self._groups.forget_partitions([(topic.name, index) for topic_id in deleted
                                            if (topic := previous.topics_by_id.get(topic_id)) is not None
                                            for index in topic.partitions])
        changed = delta.changed_partitions()
        for name, index in changed:
            self._partitions.sync_partition(name, index, now_ms)
        if changed or deleted:
            self._groups.sync_leadership()
            if self._transactions is not None:
                self._transactions.sync_leadership()
        elif _racks(previous) != _racks(image):  # the racks of partitions' replicas changed
            self._groups.sync_leadership()
        self._partitions.update_log_configs(delta.changed_configs())


def _racks(image: MetadataImage) -> dict[int, str | None]:
    """Each broker's `broker.rack`: consumer groups' rack-aware assignment reads them."""
    return {broker_id: registration.rack for broker_id, registration in image.brokers.items()}
