"""One module per Kafka API; each declares the versions whose semantics it honours.

ApiVersions advertises exactly the ranges registered here (DESIGN.md principle 4). A handler
is typed by the listener that serves it: a broker listener's handler gets a `BrokerContext`,
whose services (`gregor.broker.services`) it calls; a controller listener's a `QuorumContext`,
with the quorum. ApiVersions, served on both, reads only what every context has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Mapping, TypeVar

from gregor.broker.authorization import OPEN, BrokerAuthorizer
from gregor.broker.client_quotas import UNLIMITED_QUOTAS, ClientQuotas
from gregor.broker.events import BrokerEvents
from gregor.broker.gathered_appends import GatheredAppends
from gregor.broker.group_runtime import GroupRuntime
from gregor.broker.network import CloseConnection, ConnectionInfo
from gregor.broker.security.listener_tls import ListenerTls
from gregor.broker.services import ControllerGateway, MetadataView, PartitionHost, QuorumService
from gregor.broker.share_runtime import ShareRuntime
from gregor.metadata.acls import CLUSTER_NAME, AclOperation, ResourceType
from gregor.broker.transaction_runtime import TransactionRuntime
from gregor.protocol.messages import Message, RequestHeader


class RequestContext:
    """What a handler knows about the request it answers, on any listener."""

    __slots__ = ("header", "connection", "handlers", "now_ms")

    def __init__(self, header: RequestHeader, connection: ConnectionInfo,
                 handlers: Mapping[int, Handler[Any]], now_ms: int) -> None:
        """`now_ms`: the broker clock's time when the request is handled."""
        self.header = header
        self.connection = connection
        self.handlers = handlers
        self.now_ms = now_ms

    @property
    def version(self) -> int:
        return self.header.request_api_version


# (producer id, __consumer_offsets partition, committed): a transaction's marker is replicated there
TransactionCompleted = Callable[[int, int, bool], None]


@dataclass(frozen=True, slots=True)
class BrokerServices:
    """What a broker listener's handlers are given (the broker's composition root builds it).

    `transaction_completed`: the seam WriteTxnMarkers calls once a marker is replicated on a
    `__consumer_offsets` partition, for the group coordinator's pending transactional offset
    commits (the group runtime's `transaction_completed`; None in tests that need no groups)."""

    partitions: PartitionHost
    metadata: MetadataView
    controller: ControllerGateway
    groups: GroupRuntime
    metrics: BrokerEvents
    shares: ShareRuntime
    authorizer: BrokerAuthorizer = OPEN
    quotas: ClientQuotas = UNLIMITED_QUOTAS
    transaction_completed: TransactionCompleted | None = None
    transactions: TransactionRuntime | None = None
    listener_tls: ListenerTls | None = None  # the TLS listeners' reloadable stores
    appends: GatheredAppends | None = None  # acks=all appends left to the end of a step (None: at once)


class BrokerContext(RequestContext):
    """A request on a broker's client listener, with the broker's services."""

    __slots__ = ("partitions", "metadata", "controller", "groups", "metrics", "shares", "authorizer", "quotas",
                 "_transactions", "transaction_completed", "listener_tls", "appends")

    def __init__(self, services: BrokerServices, header: RequestHeader, connection: ConnectionInfo,
                 handlers: Mapping[int, Handler[Any]], now_ms: int) -> None:
        super().__init__(header, connection, handlers, now_ms)
        self.partitions = services.partitions
        self.metadata = services.metadata
        self.controller = services.controller
        self.groups = services.groups
        self.metrics = services.metrics
        self.shares = services.shares
        self.authorizer = services.authorizer
        self.quotas = services.quotas
        self._transactions = services.transactions
        self.transaction_completed = services.transaction_completed
        self.listener_tls = services.listener_tls
        self.appends = services.appends

    @property
    def transactions(self) -> TransactionRuntime:
        """The transaction coordinator's edge (every broker has one; tests of other APIs may leave it out)."""
        if self._transactions is None:
            raise RuntimeError("this broker was built without a transaction coordinator")
        return self._transactions

    def allowed(self, operation: AclOperation, resource_type: ResourceType = ResourceType.CLUSTER,
                name: str = CLUSTER_NAME) -> bool:
        """May this request's principal perform `operation` on the resource (the cluster by default)?"""
        return self.authorizer.allowed(self.connection, operation, resource_type, name)

    def allowed_names(self, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]) -> set[str]:
        """The resources among `names` this request's principal may perform `operation` on."""
        return self.authorizer.allowed_names(self.connection, operation, resource_type, names)


class QuorumContext(RequestContext):
    """A request on a controller listener (or from the broker in the same process)."""

    __slots__ = ("quorum",)

    def __init__(self, quorum: QuorumService, header: RequestHeader, connection: ConnectionInfo,
                 handlers: Mapping[int, Handler[Any]], now_ms: int) -> None:
        super().__init__(header, connection, handlers, now_ms)
        self.quorum = quorum


C = TypeVar("C", bound=RequestContext, contravariant=True)


@dataclass(frozen=True)
class Handler(Generic[C]):
    """One API as a listener serves it; `C` is the context its handle function needs. A request
    at a version outside the range closes the connection, unless `unsupported_version_response`
    answers it (ApiVersions, so that a client learns the versions). `gathers`: the handler may
    leave work for the end of the connection's step (`Dispatcher.step_done`), as Produce does."""

    api_key: int
    min_version: int
    max_version: int
    handle: Callable[[C, Any], object]
    unsupported_version_response: Callable[[], Message] | None = None
    gathers: bool = False


def quorum_partition(request: Any) -> Any:
    """The one `__cluster_metadata` partition a raft request names; a request naming none or
    several is malformed (raft never sends one), so the connection is closed."""
    topics = request.topics
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise CloseConnection(f"{type(request).__name__} must name exactly one metadata partition")
    return topics[0].partitions[0]


CLIENT_HANDLERS: dict[int, Handler[BrokerContext]] = {}
QUORUM_HANDLERS: dict[int, Handler[QuorumContext]] = {}


def client_handlers() -> dict[int, Handler[BrokerContext]]:
    """A broker's client listeners: its own APIs, with the controller's (topic and config changes,
    leader elections, reassignments, DescribeQuorum) forwarded to the active controller, which on
    the embedded single node is in the same process."""
    if not CLIENT_HANDLERS:
        from gregor.broker.handlers import (
            alter_client_quotas, alter_configs, alter_partition_reassignments, api_versions,
            consumer_group_describe, consumer_group_heartbeat, create_acls, create_partitions,
            create_topics, delete_acls, delete_groups, delete_records, delete_topics, describe_acls,
            describe_client_quotas, describe_cluster, describe_configs, describe_groups,
            describe_log_dirs, describe_quorum, elect_leaders, fetch, find_coordinator, heartbeat, init_producer_id,
            join_group, leave_group, list_groups, list_offsets, list_partition_reassignments, metadata,
            offset_commit, offset_delete, offset_fetch, offset_for_leader_epoch, produce, sync_group,
            describe_producers, write_txn_markers,
        )
        from gregor.broker.handlers import (
            add_offsets_to_txn, add_partitions_to_txn, describe_transactions, end_txn, list_transactions,
            txn_offset_commit,
        )
        from gregor.broker.handlers import (
            read_share_group_state, share_acknowledge, share_fetch, share_group_describe, share_group_heartbeat,
            write_share_group_state,
        )
        from gregor.broker.handlers import (
            alter_share_group_offsets, delete_share_group_offsets, delete_share_group_state,
            describe_share_group_offsets, initialize_share_group_state, read_share_group_state_summary,
        )
        from gregor.broker.handlers import alter_user_scram_credentials, describe_user_scram_credentials, sasl_handshake
        from gregor.broker.handlers import update_features
        from gregor.broker.handlers import describe_topic_partitions, list_config_resources
        from gregor.broker.handlers.forward import forwarding
        own: list[Handler[BrokerContext]] = [
            *api_versions.HANDLERS, *metadata.HANDLERS, *produce.HANDLERS, *fetch.HANDLERS, *list_offsets.HANDLERS,
            *describe_configs.HANDLERS, *delete_records.HANDLERS, *describe_cluster.HANDLERS,
            *init_producer_id.HANDLERS, *find_coordinator.HANDLERS, *join_group.HANDLERS, *sync_group.HANDLERS,
            *heartbeat.HANDLERS, *leave_group.HANDLERS, *offset_commit.HANDLERS, *offset_fetch.HANDLERS,
            *describe_groups.HANDLERS, *list_groups.HANDLERS, *delete_groups.HANDLERS, *offset_delete.HANDLERS,
            *offset_for_leader_epoch.HANDLERS, *describe_log_dirs.HANDLERS, *describe_acls.HANDLERS,
            *describe_client_quotas.HANDLERS, *share_group_heartbeat.HANDLERS, *share_group_describe.HANDLERS,
            *share_fetch.HANDLERS, *share_acknowledge.HANDLERS, *read_share_group_state.HANDLERS,
            *write_share_group_state.HANDLERS, *write_txn_markers.HANDLERS, *describe_producers.HANDLERS,
            *add_partitions_to_txn.HANDLERS, *add_offsets_to_txn.HANDLERS, *end_txn.HANDLERS,
            *list_transactions.HANDLERS, *describe_transactions.HANDLERS, *txn_offset_commit.HANDLERS,
            *sasl_handshake.HANDLERS, *describe_user_scram_credentials.HANDLERS, *consumer_group_heartbeat.HANDLERS,
            *consumer_group_describe.HANDLERS, *initialize_share_group_state.HANDLERS,
            *delete_share_group_state.HANDLERS, *read_share_group_state_summary.HANDLERS,
            *describe_share_group_offsets.HANDLERS, *alter_share_group_offsets.HANDLERS,
            *delete_share_group_offsets.HANDLERS, *describe_topic_partitions.HANDLERS,
            *list_config_resources.HANDLERS]
        forwarded: list[Handler[QuorumContext]] = [
            *create_topics.HANDLERS, *delete_topics.HANDLERS, *create_partitions.HANDLERS, *alter_configs.HANDLERS,
            *describe_quorum.HANDLERS, *elect_leaders.HANDLERS, *alter_partition_reassignments.HANDLERS,
            *list_partition_reassignments.HANDLERS, *create_acls.HANDLERS, *delete_acls.HANDLERS,
            *alter_client_quotas.HANDLERS, *alter_user_scram_credentials.HANDLERS, *update_features.HANDLERS]
        CLIENT_HANDLERS.update({handler.api_key: handler for handler in own})
        CLIENT_HANDLERS.update({handler.api_key: forwarding(handler) for handler in forwarded})
    return CLIENT_HANDLERS


def quorum_handlers() -> dict[int, Handler[QuorumContext]]:
    """The controller's APIs, on its listener and to a broker in the same process: the raft
    quorum's, the brokers' (registration, heartbeats, ISR changes), the topic, config,
    leader-election and reassignment requests brokers forward, ApiVersions, and an operator's
    DescribeCluster, DescribeConfigs and config changes (KIP-919)."""
    if not QUORUM_HANDLERS:
        from gregor.broker.handlers import (
            allocate_producer_ids, alter_client_quotas, alter_configs, alter_partition, alter_partition_reassignments,
            api_versions, begin_quorum_epoch, broker_heartbeat, broker_registration, create_acls, create_partitions,
            create_topics, delete_acls, delete_topics, describe_quorum, elect_leaders, end_quorum_epoch, fetch_snapshot,
            list_partition_reassignments, quorum_fetch, vote,
        )
        from gregor.broker.handlers import alter_user_scram_credentials, sasl_handshake, update_features
        handlers: list[Handler[QuorumContext]] = [
            *api_versions.HANDLERS, *vote.HANDLERS, *begin_quorum_epoch.HANDLERS, *end_quorum_epoch.HANDLERS,
            *quorum_fetch.HANDLERS, *fetch_snapshot.HANDLERS, *describe_quorum.HANDLERS,
            *broker_registration.HANDLERS, *broker_heartbeat.HANDLERS, *alter_partition.HANDLERS,
            *create_topics.HANDLERS, *delete_topics.HANDLERS, *create_partitions.HANDLERS, *alter_configs.HANDLERS,
            *allocate_producer_ids.HANDLERS, *elect_leaders.HANDLERS, *alter_partition_reassignments.HANDLERS,
            *list_partition_reassignments.HANDLERS, *create_acls.HANDLERS, *delete_acls.HANDLERS,
            *alter_client_quotas.HANDLERS, *alter_user_scram_credentials.HANDLERS, *update_features.HANDLERS]
        QUORUM_HANDLERS.update({handler.api_key: handler if handler.api_key == api_versions.API_KEY
                                else _requiring_cluster_action(handler) for handler in handlers})
        # answered before and after a login, as ApiVersions is (a SASL listener's gate answers them first)
        QUORUM_HANDLERS.update({handler.api_key: handler for handler in sasl_handshake.HANDLERS})
        # an operator's (KIP-919's --bootstrap-controller), each authorized as Kafka's ControllerApis do
        from gregor.broker.handlers import controller_describe_cluster, controller_describe_configs
        from gregor.broker.handlers.controller_config_authorization import authorized
        QUORUM_HANDLERS.update({handler.api_key: authorized(handler) for handler in alter_configs.HANDLERS})
        QUORUM_HANDLERS.update({handler.api_key: handler for handler in (
            *controller_describe_cluster.HANDLERS, *controller_describe_configs.HANDLERS)})
    return QUORUM_HANDLERS


def _requiring_cluster_action(handler: Handler[QuorumContext]) -> Handler[QuorumContext]:
    """A controller-listener API, for brokers and controllers only: with an authorizer, the
    principal must hold CLUSTER_ACTION on the cluster (or be a super user), as Kafka's ControllerApis
    require. Kafka answers the API's error response; Gregor closes the connection (logged)."""
    def handle(context: QuorumContext, request: Any) -> object:
        if not context.quorum.authorizer.allowed(context.connection, AclOperation.CLUSTER_ACTION,
                                                 ResourceType.CLUSTER):
            raise CloseConnection(f"{context.connection.principal} may not use the controller listener "
                                  f"(CLUSTER_ACTION on the cluster is required)")
        return handler.handle(context, request)
    return Handler(handler.api_key, handler.min_version, handler.max_version, handle,
                   handler.unsupported_version_response)
