"""A controller-only node (`process.roles=controller`): one voter of the metadata quorum.

It keeps `__cluster_metadata-0` and the quorum-state file under `metadata.log.dir` (or the first
of `log.dirs`), runs the raft client through the RaftDriver, answers the quorum's requests on its
controller listener(s), and replays every committed record into its metadata image, as Kafka's
ControllerServer does. The voters elect a leader among themselves, replicate the log with
Fetch, and elect another when the leader dies or is cut off.

The active controller (the quorum leader) also runs the controller: it bootstraps a new
cluster's metadata.version (from the formatted `bootstrap.checkpoint`, else the defaults), registers brokers (fenced until their heartbeats show they caught
up), keeps their sessions and fences those that go silent, and checks leaders' ISR proposals
(AlterPartition). Operations run one at a time: each decides on the committed image, appends
its records and waits until the quorum commits them, so no decision ever rests on records that
might still be lost (Kafka decides on uncommitted state instead, which is faster; this is
simpler and safe).

Not yet here (issue 7 goes on): brokers fetching the quorum's log as observers, and topic
changes requested through brokers.
"""

from __future__ import annotations

import asyncio
import logging
import random
from functools import partial
from typing import Callable, Sequence, TypeVar

from gregor.broker.config import BrokerConfig
from gregor.broker.authorization import configured_authorizer
from gregor.broker.dispatcher import Dispatcher
from gregor.broker.handlers import QuorumContext, quorum_handlers
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.leader_rebalance import LeaderRebalance
from gregor.broker.meta_properties import ensure_cluster_id
from gregor.broker.storage_format import read_bootstrap
from gregor.metadata.group_configs import BROKER_GROUP_DEFAULTS, SHARE_BROKER_DEFAULTS
from gregor.broker.network import KafkaServer
from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.peer_channel import PLAINTEXT
from gregor.broker.raft_driver import RaftDriver
from gregor.broker.security.listener_tls import ListenerTls
from gregor.controller.broker_heartbeats import BrokerHeartbeats
from gregor.controller.metadata_replay import MetadataReplay, SnapshotPolicy
from gregor.controller.operations import ControllerResult
from gregor.controller.quorum_controller import ControllerConfig, QuorumController
from gregor.controller.replication_control import fence_broker, unclean_policy
from gregor.metadata.image import MetadataImage
from gregor.metadata.loader import MetadataLoader, MetadataPublisher
from gregor.metadata.record_codec import encode_metadata_record
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import Message
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest
from gregor.raft.client import RaftClient, RaftConfig
from gregor.raft.quorum_state import EpochState, Role
from gregor.raft.quorum_state_file import QuorumStateFile
from gregor.raft.storage_log import StorageLog, metadata_partition_dir
from gregor.storage.dir_lock import DirectoryLocks
from gregor.protocol.scram import MECHANISM_IDS, ScramCredential

log = logging.getLogger("gregor.controller")
T = TypeVar("T")


def raft_config(config: BrokerConfig) -> RaftConfig:
    """Kafka's `controller.quorum.*` keys as the raft client's timings."""
    return RaftConfig(election_timeout_ms=config.get("controller.quorum.election.timeout.ms"),
                      fetch_timeout_ms=config.get("controller.quorum.fetch.timeout.ms"),
                      election_backoff_max_ms=config.get("controller.quorum.election.backoff.max.ms"),
                      request_timeout_ms=config.get("controller.quorum.request.timeout.ms"),
                      retry_backoff_ms=config.get("controller.quorum.retry.backoff.ms"))


def snapshot_policy(config: BrokerConfig) -> SnapshotPolicy:
    """Kafka's `metadata.log.max.*` snapshot keys."""
    return SnapshotPolicy(config.get("metadata.log.max.record.bytes.between.snapshots"),
                          config.get("metadata.log.max.snapshot.interval.ms"))


def controller_config(config: BrokerConfig) -> ControllerConfig:
    """The controller's share of a node's config, the same for a combined node and a controller."""
    return ControllerConfig(
        node_id=config.node_id,
        default_num_partitions=config.get("num.partitions"),
        default_replication_factor=config.get("default.replication.factor"),
        delete_topic_enable=config.get("delete.topic.enable"),
        broker_config=config.originals,
        group_config_bounds={name: config.get(name) for name in (*BROKER_GROUP_DEFAULTS, *SHARE_BROKER_DEFAULTS)},
        bootstrap_records=read_bootstrap(config.metadata_log_dir))


class ControllerServer:
    """A voter of the metadata quorum; it is the `QuorumService` its listener's handlers use."""

    def __init__(self, config: BrokerConfig, lock_dirs: bool = True, clock: Clock = wall_clock_ms,
                 listener_tls: ListenerTls | None = None) -> None:
        """`lock_dirs=False` when the broker of the same process already holds the data
        directories' locks (a combined node); `listener_tls`: the broker's reloadable TLS stores
        on a combined node, which its controller listener joins (the broker publishes the images
        to it); a controller-only node makes its own."""
        self.config = config
        self._own_tls = listener_tls is None
        self.listener_tls = ListenerTls(config) if listener_tls is None else listener_tls
        self._clock = clock
        self._locks = DirectoryLocks([config.metadata_log_dir]) if lock_dirs else None
        self.node_id = config.node_id
        self.bound_ports: dict[str, int] = {}
        self.raft_driver: RaftDriver | None = None
        self.loader: MetadataLoader | None = None
        self.controller = QuorumController(controller_config(config), random.Random())
        self.heartbeats = BrokerHeartbeats(config.get("broker.session.timeout.ms"))
        self._server: KafkaServer | None = None
        self.authorizer = configured_authorizer(config, self)
        self.dispatcher = Dispatcher(quorum_handlers(), partial(QuorumContext, self), clock)
        self._operations = asyncio.Lock()
        self._commit_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._duties: asyncio.Task[None] | None = None
        self._duties_due = asyncio.Event()
        self._duties_timer = DeadlineTimer(clock, lambda now_ms: self._duties_due.set())
        self._caught_up: asyncio.Future[None] | None = None

    @property
    def image(self) -> MetadataImage:
        if self.loader is None:
            raise RuntimeError(f"controller {self.node_id} has not started: it has no image yet")
        return self.loader.image

    @property
    def raft(self) -> RaftClient:
        """The quorum's raft client, from `start` on (nothing reaches the quorum before)."""
        return self._driver().raft

    def install(self, publisher: MetadataPublisher) -> None:
        """Publish every committed image to `publisher` too (the broker in the same process)."""
        if self.loader is None:
            raise RuntimeError(f"controller {self.node_id} has not started: it has no images to publish")
        self.loader.install(publisher)

    def _driver(self) -> RaftDriver:
        if self.raft_driver is None:
            raise RuntimeError(f"controller {self.node_id} has not started: it has no raft client yet")
        return self.raft_driver

    def _scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """A user's SCRAM credential in the committed image (a SASL controller listener's check)."""
        return self.image.scram_credentials.get((user, MECHANISM_IDS[mechanism]))

    async def start(self) -> None:
        """Lock the metadata directory and bind the listeners before the log is read, so that a
        second process on the same directory or port leaves the data untouched."""
        if self._locks is not None:
            self._locks.acquire()
        self._caught_up = asyncio.get_running_loop().create_future()
        if self.config.controller_listeners():
            server = self._server = KafkaServer(self.dispatcher, self.config.get("socket.request.max.bytes"),
                                                self.config.connection_limits())
            for endpoint in self.config.controller_listeners():
                transport = self.config.listener_security[endpoint.listener].transport(self._scram_credential,
                                                                                       self._clock)
                self.bound_ports[endpoint.listener] = await server.listen(
                    endpoint.listener, endpoint.host, endpoint.port, start_serving=False, transport=transport,
                    buffers=self.config.socket_buffers(endpoint.listener))
                self.listener_tls.track(endpoint.listener, transport)
        # the embedded single node names no voters: it is the one voter, reached in process
        voters = self.config.quorum_voters() or {self.node_id: ("localhost", 0)}
        cluster_id = ensure_cluster_id([self.config.metadata_log_dir], self.node_id, self.config.get("cluster.id"),
                                       may_generate=len(voters) == 1)
        directory = self.config.metadata_log_dir
        raft = RaftClient(self.node_id, voters, StorageLog.open(directory, self._clock()),
                          QuorumStateFile(metadata_partition_dir(directory)), cluster_id, raft_config(self.config))
        self.loader = MetadataLoader(MetadataImage(cluster_id=cluster_id))
        self.loader.install(self.controller)
        if self._own_tls:
            self.loader.install(self.listener_tls)
        self.replay = MetadataReplay(raft, self.loader, snapshot_policy(self.config))
        self.raft_driver = RaftDriver(raft, voters, self._committed, self._state_changed, self._clock,
                                      self.config.peer_security.get("controller", PLAINTEXT))
        self.raft_driver.start()
        if self._server is not None:
            await self._server.start_serving()
        self._committed(raft.high_watermark)
        self._duties = asyncio.ensure_future(self._run_duties())
        self._duties_due.set()
        listeners = ", ".join(f"{e.listener}://{e.host}:{self.bound_ports[e.listener]}"
                              for e in self.config.controller_listeners()) or "no listener (in process only)"
        log.info("controller %d started: cluster %s, voters %s, listening on %s, metadata log in %s", self.node_id,
                 cluster_id, ",".join(str(v) for v in sorted(voters)), listeners, directory)

    def _committed(self, high_watermark: int) -> None:
        """Replay the newly committed records into the image; wake the operations they complete
        and, on the active controller, the duties (a broker registered, fenced or unfenced)."""
        self.replay.catch_up(self._clock())
        if self.raft_driver is not None and self.raft_driver.raft.is_leader:
            self._duties_due.set()
        if high_watermark > 0 and self._caught_up is not None and not self._caught_up.done():
            self._caught_up.set_result(None)
        waiting = []
        for last_offset, future in self._commit_waiters:
            if last_offset < high_watermark:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((last_offset, future))
        self._commit_waiters = waiting

    async def caught_up(self) -> MetadataImage:
        """The image once the quorum's high watermark is known here and replayed (what a broker in
        the same process waits for before it takes partition states from it)."""
        if self._caught_up is None:
            raise RuntimeError(f"controller {self.node_id} has not started")
        await self._caught_up
        return self.image

    def _state_changed(self, state: EpochState) -> None:
        """Operations waiting on records appended as leader fail when the leadership goes."""
        if state.role == Role.LEADER:
            return
        waiters, self._commit_waiters = self._commit_waiters, []
        for _, future in waiters:
            if not future.done():
                future.set_exception(KafkaError(ErrorCode.NOT_CONTROLLER, f"controller {self.node_id} lost the "
                                                "leadership before the records were committed"))

    async def submit(self, operation: Callable[[], ControllerResult[T]]) -> T:
        """Run a controller operation on the committed image and commit its records; operations
        run one at a time. KafkaError NOT_CONTROLLER when this node is not (or stops being) the
        active controller."""
        async with self._operations:
            raft = self.raft
            if not raft.is_leader:
                raise KafkaError(ErrorCode.NOT_CONTROLLER, f"node {self.node_id} is not the active controller "
                                 f"(the quorum leader is {raft.leader_id})")
            if not raft.leader_caught_up:
                raise KafkaError(ErrorCode.NOT_CONTROLLER, f"controller {self.node_id} was just elected and is "
                                 f"still replaying the committed log; retry")
            if not self.image.metadata_version:
                await self._commit(self.controller.bootstrap().records)
            result = operation()
            await self._commit(result.records)
            return result.response

    async def _commit(self, records: Sequence[Message]) -> None:
        """Append the records as one batch and wait until the quorum has committed them."""
        if not records:
            return
        driver = self._driver()
        last_offset = driver.append([encode_metadata_record(r) for r in records])
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._commit_waiters.append((last_offset, future))
        self._committed(driver.raft.high_watermark)
        await future

    def raft_request(self, sender_id: int, request: Message) -> asyncio.Future[Message]:
        """A raft request from node `sender_id`; the future completes with the answer."""
        return self._driver().handle_request(sender_id, request)

    def describe_quorum(self, request: DescribeQuorumRequest) -> asyncio.Future[Message]:
        return self._driver().handle_request(-1, request)

    def voter_endpoints(self) -> dict[int, list[tuple[str, str, int]]]:
        """Static voters are reached on the first of `controller.listener.names` at the address
        `controller.quorum.voters` gives, as Kafka reports them; a node that is its own only voter
        (no `controller.quorum.voters`) reports the controller listeners it bound, or none when it
        is reached only in process."""
        voters = self.config.quorum_voters()
        if not voters:
            return {self.node_id: [(e.listener, e.host, self.bound_ports.get(e.listener, e.port))
                                   for e in self.config.controller_listeners()]}
        names = self.config.get("controller.listener.names")
        name = names[0].upper() if names else ""
        return {voter: [(name, host, port)] for voter, (host, port) in voters.items()}

    @property
    def leader_id(self) -> int | None:
        leader = self.raft.leader_id if self.raft_driver is not None else -1
        return leader if leader >= 0 else None

    @property
    def next_offset(self) -> int:
        """Where the next appended record lands (the leader's log end)."""
        return self.raft.end_offset

    def unclean_allowed(self, topic: str) -> bool:
        """`unclean.leader.election.enable` in force for the topic, on the committed image."""
        return unclean_policy(self.image, self.config.originals)(topic)

    async def _run_duties(self) -> None:
        """The active controller fences brokers whose heartbeats stopped and, when due, moves
        leaders back to their preferred replicas (`leader_rebalance`). It sleeps until the
        earliest of the two deadlines, or until a commit may have changed them."""
        rebalance = LeaderRebalance(self.config)
        retry_ms = self.config.get("controller.quorum.retry.backoff.ms")
        while True:
            await self._duties_due.wait()
            self._duties_due.clear()
            if not self.raft.leader_caught_up:
                self._duties_timer.cancel()  # a commit wakes the duties once this node leads
                self._duties_timer.take_lateness()
                continue
            self.heartbeats.take_over(self.raft.leader_epoch)
            paused_ms = self._duties_timer.take_lateness()
            if paused_ms:
                self.heartbeats.controller_paused(paused_ms, self._clock())
            stale = self.heartbeats.stale_broker(self.image, self._clock())
            if stale is not None:
                await self._fence_stale(stale)
            await rebalance.run_if_due(self, self._clock())
            now_ms = self._clock()
            due = [d for d in (self.heartbeats.next_check(self.image, now_ms), rebalance.next_due(now_ms))
                   if d is not None]
            # the next stale broker, or one whose fencing was not committed, after the backoff
            self._duties_timer.arm(max(min(due), now_ms + retry_ms) if due else None)

    async def _fence_stale(self, broker_id: int) -> None:
        """Fence a broker whose session ran out, unless a heartbeat that waited for the operation
        before this one renewed it."""
        def fence() -> ControllerResult[bool]:
            broker = self.image.brokers.get(broker_id)
            if broker is None or broker.fenced or self.heartbeats.session_active(broker_id, self._clock()):
                return ControllerResult(False, ())
            return ControllerResult(True, tuple(fence_broker(self.image, broker_id, self.unclean_allowed)))

        try:
            if await self.submit(fence):
                log.info("controller %d: broker %d missed its session of %d ms: fenced it (OfflineReplica)",
                         self.node_id, broker_id, self.heartbeats.session_timeout_ms)
        except KafkaError as error:
            log.info("controller %d: fencing broker %d not committed: %s", self.node_id, broker_id, error)

    async def stop(self) -> None:
        log.info("controller %d shutting down", self.node_id)
        self._duties_timer.cancel()
        if self._duties is not None:
            self._duties.cancel()
        if self._server is not None:
            await self._server.close()
        if self.raft_driver is not None:
            await self.raft_driver.close()
        if self._locks is not None:
            self._locks.release()
        log.info("controller %d stopped cleanly", self.node_id)
