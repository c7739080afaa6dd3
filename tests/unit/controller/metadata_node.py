"""The controller's metadata stack committed synchronously: a test harness.

A one-voter raft client, the loader (the image) and the controller, wired as a ControllerServer
wires them, but driven without an event loop: `commit` appends a decision's records and replays
them into a new image before it returns. The controller unit tests use it to run operations
through the real record path (decision -> records -> raft log -> replay -> image) in one call.
Production brokers reach the controller only through ControllerServer and a ControllerChannel.
"""

from __future__ import annotations

import random
from typing import TypeVar

from gregor.controller.metadata_replay import MetadataReplay, SnapshotPolicy
from gregor.controller.operations import BrokerRegistrationReply, ControllerResult, Endpoint
from gregor.controller.quorum_controller import ControllerConfig, QuorumController
from gregor.metadata.image import MetadataImage
from gregor.metadata.loader import MetadataLoader, MetadataPublisher
from gregor.metadata.record_codec import encode_metadata_record
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from gregor.raft.client import RaftClient
from gregor.raft.effects import Respond
from gregor.raft.quorum_state_file import QuorumStateFile
from gregor.raft.replicated_log import ReplicatedLog
from gregor.raft.storage_log import StorageLog, metadata_partition_dir

T = TypeVar("T")


class MetadataNode:
    def __init__(self, raft: RaftClient, controller: QuorumController, cluster_id: str,
                 snapshot_policy: SnapshotPolicy = SnapshotPolicy()) -> None:
        self.raft = raft
        self.controller = controller
        self.loader = MetadataLoader(MetadataImage(cluster_id=cluster_id))
        self.loader.install(controller)
        self.replay = MetadataReplay(raft, self.loader, snapshot_policy)

    @classmethod
    def open(cls, metadata_log_dir: str, config: ControllerConfig, cluster_id: str, rng: random.Random,
             now_ms: int, snapshot_policy: SnapshotPolicy = SnapshotPolicy()) -> MetadataNode:
        """The node over `<metadata_log_dir>/__cluster_metadata-0` (created when missing)."""
        log = StorageLog.open(metadata_log_dir, now_ms)
        return cls.over(log, QuorumStateFile(metadata_partition_dir(metadata_log_dir)), config, cluster_id, rng,
                        snapshot_policy)

    @classmethod
    def over(cls, log: ReplicatedLog, state_file: QuorumStateFile, config: ControllerConfig, cluster_id: str,
             rng: random.Random, snapshot_policy: SnapshotPolicy = SnapshotPolicy()) -> MetadataNode:
        """The node over any ReplicatedLog (a MemoryLog in tests and simulation)."""
        raft = RaftClient(config.node_id, [config.node_id], log, state_file, cluster_id)
        return cls(raft, QuorumController(config, rng), cluster_id, snapshot_policy)

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    def install(self, publisher: MetadataPublisher) -> None:
        """Add a listener of new images (told about the current one at once)."""
        self.loader.install(publisher)

    def start(self, now_ms: int) -> MetadataImage:
        """Become leader (one voter) and replay every committed record into the image."""
        self.raft.start(now_ms)
        self.replay.catch_up(now_ms)
        return self.image

    def bootstrap(self, endpoints: list[Endpoint], rack: str | None, now_ms: int) -> BrokerRegistrationReply:
        """Make a new cluster usable (metadata.version) and (re-)register this node as a broker."""
        self.commit(self.controller.bootstrap(), now_ms)
        reply = self.commit(self.controller.register_broker(self.controller.config.node_id, endpoints, rack),
                            now_ms)
        if reply.error:
            raise KafkaError(reply.error, reply.message)
        return reply

    def commit(self, result: ControllerResult[T], now_ms: int) -> T:
        """Append the result's records, replay them into a new image, return the answer.

        The records go in one batch, so they commit (and replay) together or not at all.
        """
        if result.records:
            self.raft.append([encode_metadata_record(record) for record in result.records], now_ms)
            self.replay.catch_up(now_ms)
        return result.response

    def describe_quorum(self, request: DescribeQuorumRequest, now_ms: int) -> DescribeQuorumResponse:
        """The quorum's DescribeQuorum answer (the one voter answers at once)."""
        effects = self.raft.handle_request(-1, 0, request, now_ms)
        response = next(effect.response for effect in effects if isinstance(effect, Respond))
        assert isinstance(response, DescribeQuorumResponse)
        return response

    def close(self) -> None:
        self.raft.close()
