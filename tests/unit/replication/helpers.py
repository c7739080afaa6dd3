"""Replicas over real logs with messages passed by hand: each test decides what arrives and when."""

from __future__ import annotations

import random
import uuid

from gregor.metadata.image import PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.replication.config import ReplicationConfig, TruncationMode
from gregor.replication.effects import ProduceCompleted, ProposeIsr, SendFetch, SendOffsetsForLeaderEpoch
from gregor.replication.partition import Partition
from gregor.storage.log import Log, LogConfig

from tests.sim.replication.disk import crash_log
from tests.unit.storage.helpers import batch, records_of

TOPIC_ID = uuid.UUID(int=101)


class Replica:
    """One broker's replica; its directory and checkpointed high watermark survive crashes."""

    def __init__(self, root, broker_id: int, mode: TruncationMode = TruncationMode.DIVERGING_EPOCH,
                 replicas: tuple[int, ...] = (1, 2), min_insync_replicas: int = 1, **config) -> None:
        self.broker_id = broker_id
        self.replicas = replicas
        self.directory = str(root / str(broker_id) / "t-0")
        self.config = ReplicationConfig(truncation=mode, **config)
        self.log_config = LogConfig(min_insync_replicas=min_insync_replicas)
        self.hw_checkpoint = 0
        self.now = 0
        self.outbox: list = []
        self.start()

    def start(self) -> None:
        self.log = Log(self.directory, self.log_config, self.now)
        self.partition = Partition("t", 0, TOPIC_ID, self.log, self.broker_id, self.config,
                                   high_watermark=self.hw_checkpoint)
        self.outbox = []

    def crash(self, lose_unflushed: bool = False) -> None:
        crash_log(self.log, lose_unflushed, torn=False, rng=random.Random(0))

    def checkpoint_high_watermark(self) -> None:
        self.hw_checkpoint = self.partition.high_watermark

    def apply(self, leader: int, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int) -> list:
        effects = self.partition.apply_registration(PartitionRegistration(
            replicas=self.replicas, isr=isr, leader=leader, leader_epoch=leader_epoch,
            partition_epoch=partition_epoch), self.now)
        self.outbox += effects
        return effects

    def values(self) -> list[tuple[int, bytes]]:
        return [(offset, value.split(b"-")[0]) for offset, value in records_of(self.log.read_bytes(0, 1 << 20))]

    def produce(self, value: bytes, acks: int = -1, timeout_ms: int = 60_000) -> list:
        info = self.partition.append_as_leader(batch(1, tag=value), self.now, acks)
        effects = self.partition.await_replication(info, value, self.now, timeout_ms) if acks == -1 else []
        self.outbox += effects
        return effects

    def acknowledged(self) -> dict[object, ErrorCode]:
        return {e.token: e.error for e in self.outbox if isinstance(e, ProduceCompleted)}

    def proposed_isrs(self) -> list[tuple[int, ...]]:
        return [effect.isr for effect in self.outbox if isinstance(effect, ProposeIsr)]


def round_trip(follower: Replica, leader: Replica, deliver: bool = True, step_ms: int = 1_000) -> None:
    """The follower's next request reaches the leader; its answer comes back unless `deliver` is False."""
    follower.now += step_ms
    leader.now = max(leader.now, follower.now)
    follower.outbox += follower.partition.tick(follower.now)
    request = next(e for e in follower.outbox if isinstance(e, (SendFetch, SendOffsetsForLeaderEpoch)))
    follower.outbox.remove(request)
    if isinstance(request, SendFetch):
        data, effects = leader.partition.fetch_for_follower(follower.broker_id, request.partition, leader.now)
        leader.outbox += effects
        if deliver:
            follower.outbox += follower.partition.on_fetch_response(request.request_id, data, follower.now)
    else:
        answer = leader.partition.offsets_for_leader_epoch(request.partition)
        if deliver:
            follower.outbox += follower.partition.on_offsets_for_leader_epoch_response(
                request.request_id, answer, follower.now)


def catch_up(follower: Replica, leader: Replica, rounds: int = 20) -> None:
    for _ in range(rounds):
        round_trip(follower, leader)
    assert follower.log.log_end_offset == leader.log.log_end_offset
