"""Consumer-group partition assignment for Gregor's client: Kafka's ConsumerProtocol formats, the
range, roundrobin, sticky and cooperative-sticky assignors, and the rebalance bookkeeping the
consumer needs to call its rebalance listener as Java's client does. Pure logic, no I/O.
"""

from gregor.client.assignors.assignor import PartitionAssignor, RebalanceProtocol
from gregor.client.assignors.consumer_protocol import (
    Assignment, ConsumerProtocolError, Subscription, decode_assignment, decode_subscription,
    encode_assignment, encode_subscription,
)
from gregor.client.assignors.cooperative_sticky import CooperativeStickyAssignor
from gregor.client.assignors.range import RangeAssignor
from gregor.client.assignors.rebalance_changes import (
    RebalanceChanges, changes_before_join, changes_before_leave, changes_on_assignment,
    partitions_changing_owner,
)
from gregor.client.assignors.round_robin import RoundRobinAssignor
from gregor.client.assignors.sticky import StickyAssignor
from gregor.client.assignors.topic_partition import TopicPartition

ASSIGNORS: dict[str, type[PartitionAssignor]] = {
    assignor.name: assignor
    for assignor in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)
}
"""The built-in assignors by their protocol name, as `partition.assignment.strategy` names them."""

__all__ = [
    "ASSIGNORS", "Assignment", "ConsumerProtocolError", "CooperativeStickyAssignor",
    "PartitionAssignor", "RangeAssignor", "RebalanceChanges", "RebalanceProtocol",
    "RoundRobinAssignor", "StickyAssignor", "Subscription", "TopicPartition",
    "changes_before_join", "changes_before_leave", "changes_on_assignment", "decode_assignment",
    "decode_subscription", "encode_assignment", "encode_subscription", "partitions_changing_owner",
]
