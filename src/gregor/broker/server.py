"""The broker process: the composition root that builds, wires, starts and stops its components.

Imported by nothing but the `gregor server` command (an import contract in
tests/unit/test_layering.py keeps it so). Each component is its own module; this one only
decides what each is given and in which order they start and stop:

- `BrokerMetadata`: the committed image and what is asked of it (the `MetadataView` service);
- `HostedPartitions`: the partitions and their logs, the fetch purgatories, the `ReplicaManager`
  (the `PartitionHost` service);
- `ControllerClient`: requests to the active controller (the `ControllerGateway` service);
- `GroupRuntime`: the group coordinator's edge;
- `TransactionRuntime`: the transaction coordinator's edge;
- `BrokerMetadataPublisher`: applies each committed image to the partitions and the groups;
- `LogMaintenance`: retention, flushes, checkpoints and compaction in the background;
- `BrokerScrapeState`: what the metrics endpoint reads (`scrape_state`, for `gregor.metrics`).

The client listener's handlers get a `BrokerContext` with the services they call.

Every broker reaches the metadata the same way, whatever the deployment: it registers with the
active controller and heartbeats (`broker_lifecycle`), sends it the changes clients ask for
(`handlers/forward`) and its own requests (AlterPartition, AllocateProducerIds, CreateTopics for
auto-creation) through a `ControllerChannel`, and applies each committed metadata image to its
partitions (the publisher), only after it has caught up with the quorum's committed log once.

Where the images come from depends on the node's roles:

- the embedded single node (`process.roles=broker,controller`, at most one voter): a
  ControllerServer in this process is the one voter of the quorum; the broker takes its images
  from it and reaches it through the channel in process (a `LocalConnection`), not a socket;
- a combined node (`broker,controller` in a quorum of several voters): the same, but the active
  controller may be another voter, reached over sockets;
- a broker-only node (`process.roles=broker`): copies the metadata log as a raft observer
  (`metadata_observer`) and hosts replicas of partitions led elsewhere, fetching from their
  leaders (`replica_manager`).
"""

from __future__ import annotations

import logging
from functools import partial

from gregor.broker.authorization import configured_authorizer
from gregor.broker.broker_lifecycle import BrokerLifecycle
from gregor.broker.client_quotas import ClientQuotas
from gregor.broker.broker_metadata import BrokerMetadata
from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.config import SECURITY_PROTOCOLS, BrokerConfig
from gregor.broker.config import Endpoint as ListenerEndpoint
from gregor.broker.connection_rate import ConnectionRates
from gregor.broker.controller_channel import ControllerChannel, LocalConnection
from gregor.broker.controller_client import ControllerClient
from gregor.broker.controller_server import ControllerServer
from gregor.broker.dispatcher import Dispatcher
from gregor.broker.gathered_appends import GatheredAppends
from gregor.broker.events import BrokerEvents
from gregor.broker.group_runtime import GroupRuntime
from gregor.broker.share_runtime import ShareRuntime
from gregor.broker.handlers import BrokerContext, BrokerServices, client_handlers
from gregor.broker.hosted_partitions import HostedPartitions
from gregor.broker.log_maintenance import LogMaintenance, cleaner_config
from gregor.broker.meta_properties import ensure_cluster_id
from gregor.broker.metadata_observer import MetadataObserver
from gregor.broker.metadata_publisher import BrokerMetadataPublisher
from gregor.broker.network import KafkaServer
from gregor.broker.peer_channel import PLAINTEXT
from gregor.broker.request_quota import apply_request_quota
from gregor.broker.scrape_state import BrokerScrapeState
from gregor.broker.security.listener_tls import ListenerTls
from gregor.broker.transaction_runtime import TransactionRuntime
from gregor.controller.operations import Endpoint
from gregor.protocol.messages.broker_registration import BrokerRegistrationRequest
from gregor.protocol.scram import MECHANISM_IDS, ScramCredential
from gregor.raft.client import RaftClient
from gregor.storage.dir_lock import DirectoryLocks

log = logging.getLogger("gregor.broker")

SHUTDOWN_GRACE_S = 5.0  # requests already read get this long to be answered at shutdown
CONTROLLED_SHUTDOWN_S = 30.0


def _end_step(appends: GatheredAppends, partitions: HostedPartitions) -> None:
    """What a connection's step leaves for its end: the gathered acks=all appends, then the
    fetches they and the step's other requests made due."""
    appends.flush()
    partitions.answer_due_fetches()


class Broker:
    """One broker node. `events` receives what the broker reports as it serves (the metrics, when
    they are on); `scrape_state` is what they read at a scrape."""

    def __init__(self, config: BrokerConfig, events: BrokerEvents | None = None, clock: Clock = wall_clock_ms) -> None:
        self.config = config
        self.clock = clock
        self.events = events if events is not None else BrokerEvents()
        self.node_id = config.node_id
        self.metadata = BrokerMetadata(config)
        self.controller = ControllerClient(self.metadata)
        self.partitions = HostedPartitions(config, self.metadata, self.controller, self.events, clock)
        self.groups = GroupRuntime(config, self.metadata, self.partitions, self.controller, clock)
        self.shares = ShareRuntime(config, self.metadata, self.partitions, self.controller, clock)
        self.transactions = TransactionRuntime(config, self.metadata, self.partitions, self.controller, clock)
        self.publisher = BrokerMetadataPublisher(self.metadata, self.partitions, self.groups, clock,
                                                 self.transactions)
        self.maintenance = LogMaintenance(config, clock)
        self.authorizer = configured_authorizer(config, self.metadata)
        self.quotas = ClientQuotas(self.metadata, config.get("quota.window.num"),
                                   config.get("quota.window.size.seconds") * 1000)
        self.connection_rates = ConnectionRates(self.metadata, config.get("max.connection.creation.rate"),
                                                config.inter_broker_listener, config.get("quota.window.num"),
                                                config.get("quota.window.size.seconds") * 1000)
        self.scrape_state = BrokerScrapeState(self.metadata, self.partitions.partitions, self.groups, self.shares,
                                              self.transactions)
        self.listener_tls = ListenerTls(config)
        self.bound_ports: dict[str, int] = {}
        self._server: KafkaServer | None = None
        self.observer: MetadataObserver | None = None
        self.controller_server: ControllerServer | None = None
        self.lifecycle: BrokerLifecycle | None = None
        self.controller_channel: ControllerChannel | None = None
        self._locks = DirectoryLocks([*config.log_dirs, config.metadata_log_dir])

    @property
    def runs_controller(self) -> bool:
        """A voter runs in this process (the embedded single node, or a combined node)."""
        return "controller" in self.config.process_roles

    async def start(self) -> None:
        """Lock the data directories and bind the listeners before anything reads or writes data
        there: a second broker on the same directories or ports exits leaving them untouched."""
        self._locks.acquire()
        try:
            await self._start()
        except BaseException:
            self._locks.release()
            raise

    async def _start(self) -> None:
        appends = GatheredAppends(self.partitions.on_leader_append)
        services = BrokerServices(partitions=self.partitions, metadata=self.metadata, controller=self.controller,
                                  groups=self.groups, metrics=self.events, shares=self.shares,
                                  authorizer=self.authorizer, quotas=self.quotas, transactions=self.transactions,
                                  transaction_completed=self.groups.transaction_completed,
                                  listener_tls=self.listener_tls, appends=appends)
        server = self._server = self.scrape_state.server = KafkaServer(
            Dispatcher(client_handlers(), partial(BrokerContext, services), self.clock,
                       on_request=self.events.request_done, after_handler=apply_request_quota,
                       step_done=partial(_end_step, appends, self.partitions)),
            self.config.get("socket.request.max.bytes"), self.config.connection_limits(),
            lambda listener, ip: self.connection_rates.admit(listener, ip, self.clock()),
            on_closed=lambda info: self.shares.connection_closed(info.connection_id))
        for endpoint in self.config.client_listeners():
            transport = self.config.listener_security[endpoint.listener].transport(self._scram_credential, self.clock)
            port = await server.listen(endpoint.listener, endpoint.host, endpoint.port, start_serving=False,
                                       transport=transport, buffers=self.config.socket_buffers(endpoint.listener))
            self.listener_tls.track(endpoint.listener, transport)
            self.bound_ports[endpoint.listener] = port
        cluster_id = self._cluster_id()
        source: ControllerServer | MetadataObserver
        if self.runs_controller:
            source = self.controller_server = self.scrape_state.controller_server = ControllerServer(
                self.config, lock_dirs=False, clock=self.clock, listener_tls=self.listener_tls)
            await source.start()
            self.metadata.image = await source.caught_up()
        else:
            source = self.observer = MetadataObserver(self.config, cluster_id, self.clock)
            log.info("broker %d: catching up with the metadata quorum %s", self.node_id,
                     ",".join(f"{node}@{host}:{port}" for node, (host, port) in self.config.quorum_voters().items()))
            self.metadata.image = await source.start()
        logs = self.partitions.load_logs(cleaner_config(self.config))
        self.partitions.start()
        source.install(self.publisher)
        source.install(self.listener_tls)
        endpoints = [Endpoint(e.listener, e.host, self._advertised_port(e), self._security_protocol(e.listener))
                     for e in self.config.advertised_client_listeners()]
        await self._join_cluster(cluster_id, endpoints, source.raft)
        await server.start_serving()
        self.maintenance.start(logs)
        listeners = ", ".join(f"{e.listener}://{e.host}:{self.bound_ports[e.listener]}"
                              for e in self.config.client_listeners())
        log.info("broker %d started: cluster %s, listening on %s, %d partition(s), data in %s",
                 self.node_id, cluster_id, listeners, len(self.partitions.partitions),
                 ", ".join(self.config.log_dirs))

    async def _join_cluster(self, cluster_id: str, endpoints: list[Endpoint], raft: RaftClient) -> None:
        """Register with the active controller; it unfences this broker once its heartbeats show
        the metadata caught up (partition leaderships come only then)."""
        settings = dict(leader_hint=lambda: raft.leader_id,
                        request_timeout_ms=self.config.get("controller.quorum.request.timeout.ms"),
                        retry_backoff_ms=self.config.get("controller.quorum.retry.backoff.ms"))
        if self.config.embedded and self.controller_server is not None:
            self.controller_channel = ControllerChannel(
                {self.node_id: LocalConnection(self.controller_server.dispatcher, self.node_id)},
                f"broker-{self.node_id}", **settings)
        else:
            security = self.config.peer_security.get("controller", PLAINTEXT)
            self.controller_channel = ControllerChannel.over_sockets(self.config.quorum_voters(), security,
                                                                     f"broker-{self.node_id}", **settings)
        self.controller.channel = self.controller_channel
        listeners = [BrokerRegistrationRequest.Listener(name=e.listener, host=e.host, port=e.port,
                                                        security_protocol=e.security_protocol) for e in endpoints]
        self.lifecycle = self.metadata.lifecycle = BrokerLifecycle(
            self.controller_channel, self.node_id, cluster_id, listeners, self.config.get("broker.rack"),
            lambda: self.metadata.image.highest_offset, self.config.get("broker.heartbeat.interval.ms"))
        self.lifecycle.start()
        epoch = await self.lifecycle.registered()
        log.info("broker %d registered in cluster %s (broker epoch %d); waiting to be unfenced", self.node_id,
                 cluster_id, epoch)
        await self.lifecycle.unfenced()

    def _scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """A user's SCRAM credential in the committed metadata image (what SASL checks against)."""
        return self.metadata.image.scram_credentials.get((user, MECHANISM_IDS[mechanism]))

    def _security_protocol(self, listener: str) -> int:
        return SECURITY_PROTOCOLS[self.config.security_protocol(listener)]

    def _advertised_port(self, endpoint: ListenerEndpoint) -> int:
        if endpoint.port == 0:
            return self.bound_ports.get(endpoint.listener, 0)
        return endpoint.port

    async def stop(self) -> None:
        log.info("broker %d shutting down", self.node_id)
        if self.lifecycle is not None:
            await self.lifecycle.controlled_shutdown(CONTROLLED_SHUTDOWN_S)
        self.maintenance.stop()
        if self._server is not None:
            await self._server.close(grace_s=SHUTDOWN_GRACE_S)
        self.groups.close()
        self.shares.close()
        self.transactions.close()
        await self.partitions.close()
        if self.observer is not None:
            await self.observer.close()
        if self.lifecycle is not None:
            await self.lifecycle.close()
        if self.controller_server is not None:
            await self.controller_server.stop()
        self._locks.release()
        log.info("broker %d stopped cleanly", self.node_id)

    def _cluster_id(self) -> str:
        """The data's cluster id; only the embedded single node may make one up (the nodes of a
        larger cluster must share the one in their `cluster.id`)."""
        return ensure_cluster_id(self.config.log_dirs, self.node_id, self.config.get("cluster.id"),
                                 may_generate=self.config.embedded)
