"""One module per Kafka API; each declares the versions whose semantics it honours.

ApiVersions advertises exactly the ranges registered here (DESIGN.md principle 4).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from gregor.broker.network import CloseConnection, ConnectionInfo

if TYPE_CHECKING:
    from gregor.broker.server import Broker


class RequestContext:
    """What a handler knows about the request it answers."""

    __slots__ = ("broker", "header", "connection", "handlers", "now_ms")

    def __init__(self, broker: "Broker", header: Any, connection: ConnectionInfo,
                 handlers: dict[int, "Handler"]) -> None:
        self.broker = broker
        self.header = header
        self.connection = connection
        self.handlers = handlers
        self.now_ms = int(time.time() * 1000)

    @property
    def version(self) -> int:
        return self.header.request_api_version


@dataclass(frozen=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    handle: Callable[[RequestContext, Any], Any]
    answers_unsupported_version: bool = False
    unsupported_version_response: Callable[[], Any] | None = None


def quorum_partition(request: Any) -> Any:
    """The one `__cluster_metadata` partition a raft request names; a request naming none or
    several is malformed (raft never sends one), so the connection is closed."""
    topics = request.topics
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise CloseConnection(f"{type(request).__name__} must name exactly one metadata partition")
    return topics[0].partitions[0]


def _collect() -> dict[int, Handler]:
    from gregor.broker.handlers import (
        alter_configs, alter_partition_reassignments, api_versions, create_partitions, create_topics, delete_groups,
        delete_records, delete_topics, describe_cluster, describe_configs, describe_groups, describe_log_dirs,
        describe_quorum,
        elect_leaders, fetch, find_coordinator, heartbeat, init_producer_id, join_group, leave_group, list_groups,
        list_offsets, list_partition_reassignments, metadata, offset_commit, offset_delete, offset_fetch,
        offset_for_leader_epoch, produce, sync_group,
    )
    modules = (api_versions, metadata, produce, fetch, list_offsets, create_topics, delete_topics,
               create_partitions, describe_configs, alter_configs, delete_records,
               describe_cluster, init_producer_id, find_coordinator, join_group, sync_group, heartbeat,
               leave_group, offset_commit, offset_fetch, describe_groups, list_groups, delete_groups,
               offset_delete, describe_quorum, offset_for_leader_epoch, elect_leaders, alter_partition_reassignments,
               list_partition_reassignments, describe_log_dirs)
    handlers: dict[int, Handler] = {}
    for module in modules:
        for handler in module.HANDLERS:
            handlers[handler.api_key] = handler
    return handlers


CLIENT_HANDLERS: dict[int, Handler] = {}
QUORUM_HANDLERS: dict[int, Handler] = {}


def client_handlers() -> dict[int, Handler]:
    """A broker's client listeners: its own APIs, with the controller's (topic and config changes,
    leader elections, reassignments, DescribeQuorum) forwarded to the active controller, which on
    the embedded single node is in the same process."""
    if not CLIENT_HANDLERS:
        from gregor.broker.handlers.forward import FORWARDED, forwarding
        CLIENT_HANDLERS.update({key: forwarding(handler) if key in FORWARDED else handler
                                for key, handler in _collect().items()})
    return CLIENT_HANDLERS


def quorum_handlers() -> dict[int, Handler]:
    """The controller's APIs, on its listener and to a broker in the same process: the raft
    quorum's, the brokers' (registration, heartbeats, ISR changes), the topic, config,
    leader-election and reassignment requests brokers forward, and ApiVersions."""
    if not QUORUM_HANDLERS:
        from gregor.broker.handlers import (
            allocate_producer_ids, alter_configs, alter_partition, alter_partition_reassignments, api_versions,
            begin_quorum_epoch, broker_heartbeat, broker_registration, create_partitions, create_topics,
            delete_topics, describe_quorum, elect_leaders, end_quorum_epoch, fetch_snapshot,
            list_partition_reassignments, quorum_fetch, vote,
        )
        for module in (api_versions, vote, begin_quorum_epoch, end_quorum_epoch, quorum_fetch, fetch_snapshot,
                       describe_quorum, broker_registration, broker_heartbeat, alter_partition, create_topics,
                       delete_topics, create_partitions, alter_configs, allocate_producer_ids, elect_leaders,
                       alter_partition_reassignments, list_partition_reassignments):
            for handler in module.HANDLERS:
                QUORUM_HANDLERS[handler.api_key] = handler
    return QUORUM_HANDLERS
