"""One partition's leadership as Metadata and DescribeTopicPartitions answer it.

Both APIs describe a partition with the same fields (error, leader, leader epoch, replicas, ISR,
offline replicas); this is the one place that reads them from the metadata image, so the two
answers cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from gregor.metadata.image import PartitionRegistration
from gregor.protocol.error_codes import ErrorCode


def partition_fields(index: int, registration: PartitionRegistration) -> dict[str, Any]:
    """The response fields of partition `index` : with no
    leader it is answered LEADER_NOT_AVAILABLE and leader -1, as Kafka's metadata cache answers it."""
    leader = registration.leader
    return {"error_code": ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": index, "leader_id": leader, "leader_epoch": registration.leader_epoch,
            "replica_nodes": list(registration.replicas), "isr_nodes": list(registration.isr),
            "offline_replicas": []}
