"""What the Prometheus endpoint reads of a broker at each scrape (`gregor.metrics`' BrokerState).

State metrics are computed when scraped, on the event loop's thread, from the components that
hold the state: the hosted partitions, the committed image, the group and transaction coordinators, the client
listener's connections and, on a node that runs one, the controller. The network server and the
controller are set when the broker starts them.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Iterator, Mapping

from gregor.broker.controller_server import ControllerServer
from gregor.broker.group_runtime import GroupRuntime
from gregor.broker.network import KafkaServer
from gregor.broker.services import MetadataView
from gregor.broker.share_runtime import ShareRuntime
from gregor.broker.transaction_runtime import TransactionRuntime
from gregor.controller.replication_control import partition_state, replica_state
from gregor.replication.partition import Partition


class BrokerScrapeState:
    def __init__(self, metadata: MetadataView, partitions: Mapping[tuple[str, int], Partition],
                 groups: GroupRuntime, shares: ShareRuntime | None = None,
                 transactions: TransactionRuntime | None = None) -> None:
        self.node_id = metadata.node_id
        self._metadata = metadata
        self._partitions = partitions
        self._groups = groups
        self._shares = shares
        self._transactions = transactions
        self.server: KafkaServer | None = None
        self.controller_server: ControllerServer | None = None

    def metric_partitions(self) -> Iterable[Partition]:
        return self._partitions.values()

    def metric_offline_partitions(self) -> int:
        return sum(1 for topic in self._metadata.image.topics.values() for partition in topic.partitions.values()
                   if not partition.has_leader)

    def metric_partition_states(self) -> dict[str, int]:
        states = Counter(partition_state(registration).value for topic in self._metadata.image.topics.values()
                         for registration in topic.partitions.values())
        return dict(states)

    def metric_replica_states(self) -> dict[str, int]:
        image = self._metadata.image
        states = Counter(replica_state(image, replica).value for topic in image.topics.values()
                         for registration in topic.partitions.values() for replica in registration.replicas)
        return dict(states)

    def metric_is_active_controller(self) -> bool:
        return self.controller_server is not None and self.controller_server.raft.is_leader

    def metric_connections(self) -> int:
        return len(self.server.connections) if self.server is not None else 0

    def metric_request_queue(self) -> int:
        return sum(connection.queued for connection in self.server.connections) if self.server is not None else 0

    def metric_group_lag(self) -> Iterator[tuple[str, str, int, int]]:
        coordinator = self._groups.coordinator
        for group_id in list(coordinator.groups):
            fetched = coordinator.fetch_offsets(group_id=group_id, partitions=None, require_stable=False, now_ms=0)
            for (topic, index), committed in fetched.partitions.items():
                partition = self._partitions.get((topic, index))
                if partition is not None and committed.offset >= 0:
                    yield group_id, topic, index, max(partition.high_watermark - committed.offset, 0)

    def metric_share_partitions(self) -> Iterator[tuple[str, str, int, int, int, int]]:
        """(group, topic, partition, lag, in-flight, acquired) of each share-partition this broker
        leads: lag is the high watermark minus the share-partition start offset."""
        if self._shares is None:
            return
        for (group_id, topic, index), share, partition in self._shares.share_partitions():
            lag = max(partition.high_watermark - share.start_offset, 0)
            yield group_id, topic, index, lag, share.in_flight_count, share.acquired_count

    def metric_transaction_states(self) -> dict[str, int]:
        """The transactions this broker coordinates, per state (Ongoing, PrepareCommit, ...)."""
        if self._transactions is None:
            return {}
        return dict(Counter(txn.state.display_name for txn in self._transactions.coordinator.transactions.values()))

    def metric_transaction_outcomes(self) -> dict[str, int]:
        """Transactions completed by this coordinator since it started, and transactional ids expired."""
        if self._transactions is None:
            return {}
        coordinator = self._transactions.coordinator
        return {"committed": coordinator.completed["CompleteCommit"], "aborted": coordinator.completed["CompleteAbort"],
                "expired": coordinator.expired}
