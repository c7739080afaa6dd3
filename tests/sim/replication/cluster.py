"""A seeded, deterministic simulation of one partition replicated on three brokers.

Each broker hosts a `gregor.replication.Partition` over a real `gregor.storage.Log` in a
temporary directory (on /dev/shm when there is one). Virtual time; everything random comes from
one `random.Random(seed)`: message delays, loss, duplication, network partitions, broker
crashes (optionally losing the unflushed tail, optionally leaving a torn batch behind), pauses
and the produce workload. Replica-to-replica requests cross the wire codec (Fetch at v9-v11 for
OffsetsForLeaderEpoch truncation, v12-v17 for diverging epochs; OffsetsForLeaderEpoch at v2-v4).
A controller stub (`controller.py`) fences brokers that miss heartbeats or restart, elects
leaders and applies AlterPartition.

After every step the invariants are checked; a violation raises `InvariantViolation` with the
seed and the last steps, and `Cluster(seed)` replays the same run:

- the high watermark of the current leader never passes a record missing from a live ISR member:
  every live ISR member's log holds the leader's batches below it;
- a leader's high watermark never moves back within its epoch;
- every replica's high watermark is within its log;
- with clean elections and crashes that lose nothing, what was once below a leader's high
  watermark never changes (committed records are never lost or rewritten), and every acks=all
  produce answered NONE is among those records;
- transactions (`transactions.py`): every replica's last stable offset lies within its log and
  below its high watermark, a leader's never moves back within its epoch, and once converged every
  replica's open transactions and aborted-transaction index are those a replay of its log gives.
"""

from __future__ import annotations

import heapq
from collections import Counter
import os
import random
import shutil
import tempfile
import uuid
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Callable

from gregor.broker.gathered_appends import GatheredAppends
from gregor.metadata.image import PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import FetchRequest, FetchResponse, OffsetForLeaderEpochResponse
from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder
from gregor.replication.config import ReplicationConfig, TruncationMode
from gregor.replication.delayed_fetch import DelayedFetches
from gregor.replication.effects import ProduceCompleted, ProposeIsr, SendFetch, SendOffsetsForLeaderEpoch
from gregor.replication.fetcher_links import FetcherLinks, Outgoing
from gregor.replication.fetch_sessions import FetchSessions, SessionFetch
from gregor.replication.follower_fetch import serve_follower_fetch
from gregor.replication.partition import NO_LEADER, Partition
from gregor.storage.log import AppendInfo, Log, LogConfig

from tests.sim.replication.controller import ControllerStub
from tests.sim.replication.disk import crash_log
from tests.sim.replication.transactions import TransactionalProducer, maintained, modelled

TOPIC = "sim"
TOPIC_ID = uuid.UUID(int=0x5157)
BROKERS = (1, 2, 3)
CONTROLLER = 0
PRODUCER = 100
TICK_MS = 10
HEARTBEAT_MS = 50
SESSION_TIMEOUT_MS = 300
METADATA_REFRESH_MS = 100
HW_CHECKPOINT_MS = 50
PRODUCE_TIMEOUT_MS = 1_000
MARKER_RETRY_MS = 300
TRACE_LENGTH = 300
TRACE_SHOWN = 80
SIM_REPLICATION = ReplicationConfig(replica_lag_time_max_ms=400, replica_fetch_max_bytes=1_500,
                                    replica_fetch_backoff_ms=40, replica_fetch_wait_max_ms=25,
                                    replica_socket_timeout_ms=250)
FETCH_VERSIONS = {TruncationMode.DIVERGING_EPOCH: (12, 17), TruncationMode.OFFSETS_FOR_LEADER_EPOCH: (9, 11),
                  TruncationMode.HIGH_WATERMARK: (9, 11)}
EPOCH_REQUEST_VERSIONS = (2, 4)
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None


class InvariantViolation(AssertionError):
    """A safety property broke; the message carries the seed and the trace to replay it."""


@dataclass
class Faults:
    """The fault mix and workload of one schedule."""

    loss: float = 0.0
    duplication: float = 0.0
    max_delay_ms: int = 5
    crash_rate: float = 0.0
    lossy_crashes: bool = False
    pause_rate: float = 0.0
    partition_rate: float = 0.0
    produce_rate: float = 0.2
    acks_all_share: float = 0.5
    transactional_share: float = 0.0

    @classmethod
    def random(cls, rng: random.Random) -> Faults:
        return cls(loss=rng.choice([0.0, 0.02, 0.1]), duplication=rng.choice([0.0, 0.05]),
                   max_delay_ms=rng.choice([1, 5, 20, 50]), crash_rate=rng.choice([0.0, 0.002, 0.006]),
                   lossy_crashes=rng.random() < 0.25, pause_rate=rng.choice([0.0, 0.002, 0.005]),
                   partition_rate=rng.choice([0.0, 0.004, 0.01]), produce_rate=rng.choice([0.1, 0.3, 0.6]),
                   acks_all_share=rng.choice([0.0, 0.5, 1.0]), transactional_share=rng.choice([0.0, 0.5]))


Batch = tuple[int, int, int, int]  # base offset, last offset, leader epoch, crc


class LogView:
    """The batches of one replica's log as (base, last, epoch, crc), re-read only where it changed.

    Between two resets (a truncation, a new incarnation's log) a view only grows, so what an
    invariant compared in it stays compared: `generation` tells the checks when to start again,
    and `committed_checked` is how many of its first batches `Cluster._check_committed` found
    equal to the committed ones (each check compares only what is new, not the whole log)."""

    def __init__(self) -> None:
        self.log: Log | None = None
        self.truncations = -1
        self.batches: list[Batch] = []
        self.bases: list[int] = []
        self.end = 0
        self.generation = 0
        self.committed_checked = 0

    def refresh(self, log: Log) -> LogView:
        if log is not self.log or log.truncations != self.truncations or log.log_end_offset < self.end:
            self.log, self.truncations = log, log.truncations
            self.batches, self.bases, self.end = [], [], log.log_start_offset
            self.generation += 1
            self.committed_checked = 0
        if log.log_end_offset > self.end:
            data = log.read_bytes(self.end, 1 << 30)
            for header, _ in scan_batches(data)[0]:
                self.batches.append((header.base_offset, header.last_offset, header.partition_leader_epoch, header.crc))
                self.bases.append(header.base_offset)
            self.end = log.log_end_offset
        return self


@dataclass
class SimBroker:
    """One broker process: the log directory and the checkpointed high watermark and recovery point
    outlive crashes (so data fsynced by an earlier incarnation stays durable, as on a real disk)."""

    broker_id: int
    directory: str
    log: Log | None = None
    partition: Partition | None = None
    incarnation: int = 0
    paused_until: int = -1
    links: FetcherLinks | None = None  # this broker's requests to the leaders it follows
    parked: DelayedFetches[Callable[[], None]] | None = None  # followers' fetches it holds as leader
    sessions: FetchSessions | None = None  # followers' fetch sessions it holds as leader
    fetch_version: int = 13  # the Fetch version of its replica fetches, drawn at each start
    hw_checkpoint: int = 0
    recovery_point_checkpoint: int = 0
    tick_at: int | None = None  # the tick scheduled at the partition's next deadline
    view: LogView = field(default_factory=LogView)
    gathered: GatheredAppends | None = None  # its acks=all produces not appended yet

    @property
    def alive(self) -> bool:
        return self.partition is not None


class Cluster:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = rng = random.Random(seed)
        self.faults = Faults.random(rng)
        self.truncation = rng.choice([TruncationMode.DIVERGING_EPOCH, TruncationMode.OFFSETS_FOR_LEADER_EPOCH])
        unclean = rng.random() < 0.15
        self.config = replace(SIM_REPLICATION, truncation=self.truncation)
        self.log_config = LogConfig(
            segment_bytes=rng.choice([1_200, 4_000, 1 << 20]), index_interval_bytes=256,
            min_insync_replicas=rng.choice([1, 2]), flush_messages=rng.choice([1, 3, 1 << 62]))
        self.controller = ControllerStub(BROKERS, unclean_election=unclean)
        self.checks_history = not unclean and not self.faults.lossy_crashes
        self.replay = f"REPLICATION_SIM_SEED={seed}"
        self.now = 0
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._sequence = 0
        self.steps = 0
        self.blocked: set[frozenset[int]] = set()
        self.trace: deque[str] = deque(maxlen=TRACE_LENGTH)
        self.root = tempfile.mkdtemp(prefix="gregor-replication-sim-", dir=SCRATCH)
        self.brokers = {b: SimBroker(b, os.path.join(self.root, str(b), f"{TOPIC}-0")) for b in BROKERS}
        self.last_heartbeat = {b: 0 for b in BROKERS}
        self.committed: list[Batch] = []
        self.committed_bases: list[int] = []
        #: (leader, ISR member) -> the generations of their views and how many of their first
        #: batches `_check_isr_holds_high_watermark` found equal
        self.isr_checked: dict[tuple[int, int], tuple[int, int, int]] = {}
        self.acked: dict[tuple[int, int], int] = {}
        self.answers: dict[int, ErrorCode] = {}
        self.sent: dict[int, tuple[int, int]] = {}
        self.sent_at: dict[int, int] = {}
        self.answered_at: dict[int, int] = {}
        self.leader_high_watermarks: dict[tuple[int, int, int], int] = {}
        self.leader_stable_offsets: dict[tuple[int, int, int], int] = {}
        self.transactions = TransactionalProducer()
        self.next_token = 0
        self._checked: tuple = ()
        self.stats: Counter[str] = Counter()
        self._broadcast_epoch = 0
        for broker in self.brokers.values():
            self._start(broker)
        self.at(TICK_MS, self._controller_tick)
        self.at(METADATA_REFRESH_MS, self._metadata_refresh)
        self.at(MARKER_RETRY_MS, self._send_markers)

    def close(self) -> None:
        for broker in self.brokers.values():
            if broker.log is not None:
                self.stats["truncations"] += broker.log.truncations
                broker.log.close()
        self.stats["unclean_elections"] = self.controller.unclean_elections
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- scheduling

    def at(self, time: int, action: Callable[[], None]) -> None:
        self._sequence += 1
        heapq.heappush(self._queue, (time, self._sequence, action))

    def run_until(self, end: int, stop: Callable[[], bool] = lambda: False) -> bool:
        """Process events until virtual time `end` or until `stop()` holds; returns whether it held."""
        while self._queue and self._queue[0][0] <= end:
            time, _, action = heapq.heappop(self._queue)
            self.now = time
            action()
            self.steps += 1
            self.check()
            if stop():
                return True
        self.now = max(self.now, end)
        return stop()

    def log_event(self, text: str) -> None:
        self.trace.append(f"{self.now:>6} {text}")

    def fail(self, message: str) -> None:
        trace = "\n".join(list(self.trace)[-TRACE_SHOWN:])
        states = "\n".join(f"  {b}: {broker.partition!r}" for b, broker in self.brokers.items())
        raise InvariantViolation(
            f"{message}\nseed {self.seed} ({self.replay}), t={self.now}, {self.truncation.value}, "
            f"controller {self.controller.state}, live {sorted(self.controller.live)}, {self.faults}\n"
            f"{states}\nlast steps:\n{trace}")

    # -- brokers

    def _start(self, broker: SimBroker) -> None:
        broker.log = Log(broker.directory, self.log_config, self.now,
                         recovery_point=broker.recovery_point_checkpoint)
        broker.partition = Partition(TOPIC, 0, TOPIC_ID, broker.log, broker.broker_id, self.config,
                                     high_watermark=broker.hw_checkpoint)
        broker.links = FetcherLinks(broker.broker_id, self.config.replica_fetch_wait_max_ms,
                                    lambda partition: partition is broker.partition)
        broker.parked = DelayedFetches()
        broker.sessions = FetchSessions()
        broker.gathered = GatheredAppends(lambda partition, effects: self._on_leader_append(broker, effects))
        # one version per incarnation, as a broker negotiates it once: a fetch session's topics are
        # named one way (a change between fetches is refused with FETCH_SESSION_TOPIC_ID_ERROR)
        broker.fetch_version = self.rng.randint(*FETCH_VERSIONS[self.truncation])
        incarnation = broker.incarnation
        if incarnation > 0 and self.controller.fence(broker.broker_id):
            self.log_event(f"controller fenced restarted {broker.broker_id}: {self.controller.state}")
            self._broadcast()
        broker.tick_at = None
        self._apply(broker, self.controller.state)
        self.at(self.now + self.rng.randint(1, HW_CHECKPOINT_MS), lambda: self._checkpoint(broker, incarnation))
        self.at(self.now + self.rng.randint(1, HEARTBEAT_MS), lambda: self._heartbeat(broker, incarnation))

    def _running(self, broker: SimBroker, incarnation: int, retry: Callable[[], None]) -> bool:
        """Whether `incarnation` of the broker can act now; a paused broker acts when it resumes."""
        if not broker.alive or broker.incarnation != incarnation:
            return False
        if self.now < broker.paused_until:
            self.at(broker.paused_until, retry)
            return False
        return True

    def _arm(self, broker: SimBroker) -> None:
        """Schedule the broker's tick at its partition's next deadline, as the replica manager's
        timer does after every event on a partition (a paused broker ticks when it resumes)."""
        if not broker.alive:
            return
        deadline = broker.partition.next_deadline(self.now)
        if deadline is None:
            return
        at = max(deadline, self.now, broker.paused_until)
        if broker.tick_at is not None and self.now <= broker.tick_at <= at:
            return  # that tick comes first and arms the next
        broker.tick_at = at
        incarnation = broker.incarnation
        self.at(at, lambda: self._tick(broker, incarnation, at))

    def _tick(self, broker: SimBroker, incarnation: int, at: int) -> None:
        if not broker.alive or broker.incarnation != incarnation or broker.tick_at != at:
            return
        broker.tick_at = None
        if self.now < broker.paused_until:
            self._arm(broker)
            return
        self._flush_gathered_first(broker)
        effects = broker.partition.tick(self.now)
        deadline = broker.partition.next_deadline(self.now)
        if deadline is not None and deadline <= self.now:
            self.fail(f"broker {broker.broker_id} ticked at {self.now} is still due at {deadline}: "
                      f"its timer would spin ({broker.partition})")
        self._effects(broker, effects)

    def probe_early_tick(self, broker_id: int) -> None:
        """Tick a partition before its next deadline: the drive contract says nothing happens."""
        broker = self.brokers[broker_id]
        if not broker.alive or self.now < broker.paused_until:
            return
        partition = broker.partition
        deadline = partition.next_deadline(self.now)
        if deadline is not None and deadline <= self.now:
            return
        before = (partition.high_watermark, partition.isr_state.pending, len(partition.delayed))
        effects = partition.tick(self.now)
        if effects or (partition.high_watermark, partition.isr_state.pending, len(partition.delayed)) != before:
            self.fail(f"broker {broker_id} ticked at {self.now}, before its next deadline {deadline}, acted: "
                      f"{effects} ({partition})")

    def _checkpoint(self, broker: SimBroker, incarnation: int) -> None:
        """The high-watermark checkpoint, written on a period as Kafka's
        replica.high.watermark.checkpoint.interval.ms."""
        def again() -> None:
            self._checkpoint(broker, incarnation)
        if not self._running(broker, incarnation, again):
            return
        broker.hw_checkpoint = broker.partition.high_watermark
        self.at(self.now + HW_CHECKPOINT_MS, again)

    def _heartbeat(self, broker: SimBroker, incarnation: int) -> None:
        def again() -> None:
            self._heartbeat(broker, incarnation)
        if not self._running(broker, incarnation, again):
            return
        broker_id = broker.broker_id
        self._send(broker_id, CONTROLLER, lambda: self._on_heartbeat(broker_id))
        self.at(self.now + HEARTBEAT_MS, again)

    def crash(self, broker_id: int, downtime_ms: int, lose_unflushed: bool = False, torn: bool = False) -> None:
        """Kill the broker process; with `lose_unflushed` the data past the last fsync is gone, with
        `torn` part of the first lost batch is left behind for recovery to cut off."""
        broker = self.brokers[broker_id]
        if not broker.alive:
            return
        self.log_event(f"crash {broker_id} for {downtime_ms} ms{' losing unflushed data' if lose_unflushed else ''}"
                       f"{' with a torn tail' if torn else ''}")
        log = broker.log
        self.stats["crashes"] += 1
        self.stats["lossy_crashes"] += lose_unflushed
        self.stats["truncations"] += log.truncations
        broker.partition = None
        broker.log = None
        broker.links = broker.parked = broker.sessions = None
        broker.incarnation += 1
        broker.paused_until = -1
        broker.gathered = None  # requests the process held, never appended: their producers time out
        broker.recovery_point_checkpoint = log.recovery_point
        crash_log(log, lose_unflushed, torn, self.rng)
        self.at(self.now + downtime_ms, lambda: self.restart(broker_id))

    def restart(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if broker.alive:
            return
        self.log_event(f"restart {broker_id} (hw checkpoint {broker.hw_checkpoint})")
        self._start(broker)

    def pause(self, broker_id: int, duration_ms: int) -> None:
        broker = self.brokers[broker_id]
        if broker.alive:
            self.log_event(f"pause {broker_id} for {duration_ms} ms")
            broker.paused_until = max(broker.paused_until, self.now + duration_ms)

    # -- network

    def partition_network(self, *groups: set[int]) -> None:
        """Cut every link between brokers (and the controller, node 0) of different groups."""
        self.blocked = {frozenset((a, b)) for g in groups for h in groups if g is not h for a in g for b in h}
        self.log_event(f"network partition {[sorted(g) for g in groups]}")

    def heal(self) -> None:
        if self.blocked:
            self.log_event("network healed")
        self.blocked = set()

    def _send(self, source: int, destination: int, deliver: Callable[[], None], duplicable: bool = True) -> None:
        faults = self.faults
        if frozenset((source, destination)) in self.blocked or self.rng.random() < faults.loss:
            return
        copies = 2 if self.rng.random() < faults.duplication and duplicable else 1
        for _ in range(copies):
            self.at(self.now + self.rng.randint(1, faults.max_delay_ms), deliver)

    def _to_broker(self, broker_id: int, incarnation: int | None,
                   handle: Callable[[SimBroker], None], gathers: bool = False) -> Callable[[], None]:
        """A delivery to the broker: any incarnation for requests, the sender's for responses.
        Anything but an acks=all produce (`gathers`) first appends the gathered ones, as the
        broker's dispatcher does before a request of another API and after each step."""
        broker = self.brokers[broker_id]

        def deliver() -> None:
            if not broker.alive or (incarnation is not None and broker.incarnation != incarnation):
                return
            if self.now < broker.paused_until:
                self.at(broker.paused_until, deliver)
                return
            if not gathers:
                self._flush_gathered_first(broker)
            handle(broker)
        return deliver

    @staticmethod
    def _wire(message, version: int):
        """The message as the peer decodes it from its bytes at `version`."""
        return type(message).decode(message.encode(version), version)

    # -- effects and requests

    def _effects(self, broker: SimBroker, effects: list, send: bool = True) -> None:
        broker.links.check_following(broker.partition)  # as the replica manager's apply does
        for effect in effects:
            if isinstance(effect, (SendFetch, SendOffsetsForLeaderEpoch)):
                broker.links.add(broker.partition, effect)
            elif isinstance(effect, ProposeIsr):
                self._send_proposal(broker, effect)
            elif isinstance(effect, ProduceCompleted):
                token, offset = effect.token
                if token == "marker":
                    if effect.error == ErrorCode.NONE:
                        self._send(broker.broker_id, PRODUCER, lambda pid=offset: self._marker_replicated(pid))
                    continue
                self._answer_produce(broker.broker_id, token, effect.error, offset)
        if send:
            self._send_ready(broker)
        self._arm(broker)

    def _send_ready(self, broker: SimBroker) -> None:
        """Send what the broker's fetcher links have ready, as the broker's replica manager does,
        and give up on an answer after replica.socket.timeout.ms (lost, or the leader died)."""
        if not broker.alive:
            return
        for outgoing in broker.links.ready():
            if isinstance(outgoing.request, FetchRequest):
                self._send_fetch(broker, outgoing)
            else:
                self._send_epoch_request(broker, outgoing)
            self.at(self.now + self.config.replica_socket_timeout_ms, self._to_broker(
                broker.broker_id, broker.incarnation, lambda b, o=outgoing: self._link_results(
                    b, b.links.on_failure(o.leader_id, o.request_id, self.now))))

    def _link_results(self, broker: SimBroker, results: list) -> None:
        for _, effects in results:
            self._effects(broker, effects, send=False)
        self._send_ready(broker)

    def _send_fetch(self, broker: SimBroker, outgoing: Outgoing) -> None:
        version = broker.fetch_version
        follower, incarnation = broker.broker_id, broker.incarnation

        def answer(response: FetchResponse) -> None:
            self._send(outgoing.leader_id, follower, self._to_broker(follower, incarnation, lambda f: self._link_results(
                f, f.links.on_response(outgoing.leader_id, outgoing.request_id, self._wire(response, version),
                                       self.now))))

        def at_leader(leader: SimBroker) -> None:
            decoded = self._wire(outgoing.request, version)
            replica = decoded.replica_state.replica_id if version >= 15 else decoded.replica_id
            assert leader.sessions is not None
            session = leader.sessions.open(decoded, replica, version >= 13)
            if isinstance(session, FetchResponse):
                answer(session)
                return
            self._serve_fetch(leader, decoded, version >= 13, replica, answer, may_wait=True, session=session)

        self._send(follower, outgoing.leader_id, self._to_broker(outgoing.leader_id, None, at_leader))

    def _serve_fetch(self, leader: SimBroker, request: FetchRequest, by_id: bool, replica: int,
                     answer: Callable[[FetchResponse], None], may_wait: bool,
                     session: SessionFetch | None = None) -> None:
        """The leader's side, as the broker's replica-fetch handler: serve, or park the fetch in the
        purgatory until an append or its max wait, then serve it once more (in the fetch session
        `session` opened when it arrived)."""
        served = serve_follower_fetch(request, replica, by_id,
                                      lambda name, index: leader.partition if (name, index) == (TOPIC, 0) else None,
                                      lambda topic_id: TOPIC if topic_id == TOPIC_ID else None, self.now, session)
        for _, effects in served.effects:
            self._effects(leader, effects)
        if may_wait and served.must_wait(request):
            self.stats["parked_fetches"] += 1
            leader.parked.park(served.keys, self.now + request.max_wait_ms,
                               lambda: self._serve_fetch(leader, request, by_id, replica, answer, may_wait=False,
                                                         session=session))
            self.at(self.now + request.max_wait_ms, self._to_broker(leader.broker_id, leader.incarnation,
                                                                   self._expire_fetches))
            return
        answer(served.response())

    def _expire_fetches(self, leader: SimBroker) -> None:
        for serve in leader.parked.expire(self.now):
            serve()

    def _wake_fetches(self, broker: SimBroker) -> None:
        """Records appended or the partition's state changed: the parked fetches are served again,
        those of the fetch sessions it rested in too (as `HostedPartitions.on_leader_append`)."""
        woken = broker.partition.take_woken_sessions() if broker.partition is not None else []
        for key in [(TOPIC, 0), *woken]:
            for serve in broker.parked.complete(key):
                serve()

    def _send_epoch_request(self, broker: SimBroker, outgoing: Outgoing) -> None:
        follower, incarnation = broker.broker_id, broker.incarnation
        version = self.rng.randint(*EPOCH_REQUEST_VERSIONS)

        def at_leader(leader: SimBroker) -> None:
            decoded = self._wire(outgoing.request, version)
            response = OffsetForLeaderEpochResponse(topics=[
                OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=topic.topic, partitions=[
                    leader.partition.offsets_for_leader_epoch(asked) for asked in topic.partitions])
                for topic in decoded.topics])
            self._send(leader.broker_id, follower, self._to_broker(follower, incarnation, lambda f: self._link_results(
                f, f.links.on_response(outgoing.leader_id, outgoing.request_id, self._wire(response, version),
                                       self.now))))

        self._send(follower, outgoing.leader_id, self._to_broker(outgoing.leader_id, None, at_leader))

    def _send_proposal(self, broker: SimBroker, effect: ProposeIsr) -> None:
        broker_id, incarnation = broker.broker_id, broker.incarnation

        def at_controller() -> None:
            error = self.controller.alter_partition(broker_id, effect.leader_epoch, effect.partition_epoch,
                                                    effect.isr)
            state = self.controller.state
            self.log_event(f"AlterPartition from {broker_id} {list(effect.isr)}: {error.name}")
            if error == ErrorCode.NONE:
                self.stats["isr_changes"] += 1
                self._broadcast()
            self._send(CONTROLLER, broker_id, self._to_broker(
                broker_id, incarnation, lambda b: self._effects(b, b.partition.on_alter_partition_response(
                    effect.request_id, error, state.leader_epoch, state.partition_epoch, state.isr, self.now))))

        # Delivered at most once, as over the controller channel's TCP connection: a leader takes
        # INELIGIBLE_REPLICA as the controller's word that the proposal was not applied and will
        # not be (Kafka's Partition.handleAlterPartitionError reasons the same way), and moves its
        # high watermark without the replica; a second copy accepted later would put a replica
        # behind that high watermark into the ISR (seed 2400146, when this copy was duplicated).
        self._send(broker_id, CONTROLLER, at_controller, duplicable=False)

    # -- controller

    def _on_heartbeat(self, broker_id: int) -> None:
        self.last_heartbeat[broker_id] = self.now
        if self.brokers[broker_id].alive and self.controller.unfence(broker_id):
            self.log_event(f"controller unfenced {broker_id}: {self.controller.state}")
            self._broadcast()

    def _controller_tick(self) -> None:
        for broker_id in BROKERS:
            if broker_id in self.controller.live and self.now - self.last_heartbeat[broker_id] > SESSION_TIMEOUT_MS:
                self.controller.fence(broker_id)
                self.log_event(f"controller fenced {broker_id}: {self.controller.state}")
                self._broadcast()
        self.at(self.now + TICK_MS, self._controller_tick)

    def _broadcast(self) -> None:
        state = self.controller.state
        if state.leader_epoch != self._broadcast_epoch:
            self._broadcast_epoch = state.leader_epoch
            self.stats["leader_changes"] += 1
        for broker_id in BROKERS:
            self._send(CONTROLLER, broker_id, self._to_broker(broker_id, None, lambda b: self._apply(b, state)))

    def _metadata_refresh(self) -> None:
        self._broadcast()
        self.at(self.now + METADATA_REFRESH_MS, self._metadata_refresh)

    def _apply(self, broker: SimBroker, state: PartitionRegistration) -> None:
        before = (broker.partition.leader_id, broker.partition.leader_epoch, broker.partition.partition_epoch)
        self._effects(broker, broker.partition.apply_registration(state, self.now))
        after = (broker.partition.leader_id, broker.partition.leader_epoch, broker.partition.partition_epoch)
        if after[:2] != before[:2]:
            self._wake_fetches(broker)
        if after != before:
            self.log_event(f"{broker.broker_id} applies leader {state.leader} epoch {state.leader_epoch} "
                           f"isr {list(state.isr)} partition epoch {state.partition_epoch}")

    # -- producing

    def produce(self, acks: int) -> int | None:
        """Send one batch to the broker the controller names leader; returns its token."""
        leader = self.controller.state.leader
        if leader == NO_LEADER:
            return None
        self.next_token += 1
        token = self.next_token
        if self.rng.random() < self.faults.transactional_share:
            _, records = self.transactions.batch(b"value-%d" % token, self.now)
            self.transactions.maybe_close(self.rng.random(), self.rng.random() < 0.5)
        else:
            builder = BatchBuilder()
            builder.append(self.now, None, b"value-%d" % token)
            records = builder.build()
        crc = scan_batches(records)[0][0][0].crc
        self.sent[token] = (acks, crc)
        self.sent_at[token] = self.now
        self._send(PRODUCER, leader, self._to_broker(leader, None, lambda b: self._on_produce(b, token, records, acks),
                                                     gathers=acks == -1))
        return token

    def _on_produce(self, broker: SimBroker, token: int, records: bytes, acks: int) -> None:
        """acks=all produces are gathered until the end of the step (the broker's
        `GatheredAppends`): every produce arriving at this instant joins them."""
        if acks == -1:
            gathered = broker.gathered
            if not gathered.pending:
                self.at(self.now, lambda: gathered.flush() if broker.gathered is gathered else None)
            answer = [token, -1]  # the token of its wait, and the offset the append gives it
            gathered.add(broker.partition, records, self.now, PRODUCE_TIMEOUT_MS, answer,
                         lambda outcome: self._gathered_appended(broker, answer, outcome))
            self.stats["gathered produces"] += 1
            return
        partition = broker.partition
        try:
            info = partition.append_as_leader(records, self.now, acks)
        except KafkaError as error:
            self._answer_produce(broker.broker_id, token, ErrorCode(error.code), -1)
            return
        self.log_event(f"{broker.broker_id} appended token {token} at {info.first_offset} (acks={acks})")
        self._wake_fetches(broker)
        self._arm(broker)
        self._answer_produce(broker.broker_id, token, ErrorCode.NONE, info.first_offset)

    def _flush_gathered_first(self, broker: SimBroker) -> None:
        """The gathered produces are appended in a step of their own (the end of their
        connection's), checked as every step is, before the event that follows them."""
        if broker.gathered is not None and broker.gathered.pending:
            broker.gathered.flush()
            self.check()

    def _gathered_appended(self, broker: SimBroker, answer: list, outcome: AppendInfo | Exception) -> None:
        """A gathered produce was appended (its offset goes to its answer) or refused."""
        token = answer[0]
        if isinstance(outcome, KafkaError):
            self._answer_produce(broker.broker_id, token, ErrorCode(outcome.code), -1)
            return
        if isinstance(outcome, Exception):
            raise outcome
        answer[1] = outcome.first_offset
        self.log_event(f"{broker.broker_id} appended token {token} at {outcome.first_offset} (acks=-1, gathered)")

    def _on_leader_append(self, broker: SimBroker, effects: list) -> None:
        """`GatheredAppends` appended records: what `HostedPartitions.on_leader_append` does."""
        self.stats["gathered appends"] += 1
        self._wake_fetches(broker)
        self._arm(broker)
        self._effects(broker, effects)

    def _answer_produce(self, broker_id: int, token: int, error: ErrorCode, offset: int) -> None:
        def at_producer() -> None:
            acks, crc = self.sent[token]
            if token not in self.answers:
                self.answered_at[token] = self.now
            self.answers.setdefault(token, error)
            self.log_event(f"produce token {token} answered {error.name} at {offset} by {broker_id}")
            self.stats[f"answered {error.name}"] += 1
            if acks == -1 and error == ErrorCode.NONE:
                self.acked[(token, offset)] = crc
                self._check_acknowledged(token, offset, crc)
        self._send(broker_id, PRODUCER, at_producer)

    def _send_markers(self) -> None:
        """The coordinator (re)sends each pending marker to the leader until it is replicated."""
        leader = self.controller.state.leader
        if leader != NO_LEADER:
            for producer_id, commit in sorted(self.transactions.pending.items()):
                self._send(PRODUCER, leader, self._to_broker(
                    leader, None, lambda b, pid=producer_id, result=commit: self._on_marker(b, pid, result)))
        self.at(self.now + MARKER_RETRY_MS, self._send_markers)

    def _on_marker(self, broker: SimBroker, producer_id: int, commit: bool) -> None:
        partition = broker.partition
        try:
            info = partition.append_txn_marker(producer_id, 0, 0, commit, self.now)
        except KafkaError as error:
            self.log_event(f"{broker.broker_id} refused the marker of {producer_id}: {ErrorCode(error.code).name}")
            return
        self.stats["markers appended"] += 1
        self.log_event(f"{broker.broker_id} appended the {'COMMIT' if commit else 'ABORT'} marker of {producer_id} "
                       f"at {info.first_offset}")
        self._wake_fetches(broker)
        self._arm(broker)
        self._effects(broker, partition.await_replication(info, ("marker", producer_id), self.now,
                                                          PRODUCE_TIMEOUT_MS))

    def _marker_replicated(self, producer_id: int) -> None:
        self.transactions.pending.pop(producer_id, None)

    # -- invariants

    def leader(self) -> SimBroker | None:
        """The controller's leader, if it is running and knows it leads the current epoch."""
        state = self.controller.state
        broker = self.brokers.get(state.leader)
        if broker is None or not broker.alive or not broker.partition.is_leader \
                or broker.partition.leader_epoch != state.leader_epoch:
            return None
        return broker

    def _signature(self) -> tuple:
        """Everything the invariants read; checking again is pointless while it is unchanged."""
        parts: list = [self.controller.state]
        for broker in self.brokers.values():
            partition = broker.partition
            if partition is None:
                parts.append(None)
            else:
                log = broker.log
                parts.append((broker.incarnation, log.truncations, log.log_end_offset, log.high_watermark,
                              partition.leader_id, partition.leader_epoch))
        return tuple(parts)

    def check(self) -> None:
        signature = self._signature()
        if signature == self._checked:
            return
        self._checked = signature
        for broker in self.brokers.values():
            partition = broker.partition
            if partition is None:
                continue
            log = broker.log
            if not log.log_start_offset <= partition.high_watermark <= log.log_end_offset:
                self.fail(f"broker {broker.broker_id}: high watermark {partition.high_watermark} outside its log "
                          f"{log.log_start_offset}..{log.log_end_offset}")
            if not log.log_start_offset <= partition.last_stable_offset <= partition.high_watermark:
                self.fail(f"broker {broker.broker_id}: last stable offset {partition.last_stable_offset} outside "
                          f"{log.log_start_offset}..{partition.high_watermark} (log start..high watermark)")
            if partition.is_leader:
                key = (broker.broker_id, broker.incarnation, partition.leader_epoch)
                previous = self.leader_high_watermarks.get(key, -1)
                if partition.high_watermark < previous:
                    self.fail(f"leader {broker.broker_id} moved its high watermark back from {previous} to "
                              f"{partition.high_watermark} in epoch {partition.leader_epoch}")
                self.leader_high_watermarks[key] = partition.high_watermark
                stable = partition.last_stable_offset
                if stable < self.leader_stable_offsets.get(key, -1):
                    self.fail(f"leader {broker.broker_id} moved its last stable offset back from "
                              f"{self.leader_stable_offsets[key]} to {stable} in epoch {partition.leader_epoch}")
                self.leader_stable_offsets[key] = stable
                if self.checks_history:
                    self._check_committed(broker)
        leader = self.leader()
        if leader is not None:
            self._check_isr_holds_high_watermark(leader)

    def _check_isr_holds_high_watermark(self, leader: SimBroker) -> None:
        """Every live ISR member holds the leader's batches below its high watermark, as they are."""
        high_watermark = leader.partition.high_watermark
        expected = leader.view.refresh(leader.log)
        count = bisect_left(expected.bases, high_watermark)
        for member in self.controller.state.isr:
            broker = self.brokers[member]
            if member == leader.broker_id or not broker.alive:
                continue
            view = broker.view.refresh(broker.log)
            pair = (leader.broker_id, member)
            generations = (expected.generation, view.generation)
            checked = self.isr_checked.get(pair)
            start = checked[2] if checked is not None and checked[:2] == generations else 0
            if view.end < high_watermark or bisect_left(view.bases, high_watermark) != count \
                    or view.batches[start:count] != expected.batches[start:count]:
                self.fail(f"the high watermark {high_watermark} of leader {leader.broker_id} passes records that ISR "
                          f"member {member} does not hold (its log ends at {view.end})")
            self.isr_checked[pair] = (*generations, max(start, count))

    def _check_committed(self, broker: SimBroker) -> None:
        """What a leader exposes below its high watermark agrees with everything ever exposed."""
        view = broker.view.refresh(broker.log)
        count = bisect_left(view.bases, broker.partition.high_watermark)
        start, known = view.committed_checked, len(self.committed)
        end = min(count, known)
        if view.batches[start:end] != self.committed[start:end]:
            first = next(i for i in range(start, end) if view.batches[i] != self.committed[i])
            self.fail(f"committed batch {self.committed[first]} was replaced by {view.batches[first]} below the high "
                      f"watermark {broker.partition.high_watermark} of leader {broker.broker_id}")
        if count > known:
            self.committed.extend(view.batches[known:count])
            self.committed_bases.extend(view.bases[known:count])
        view.committed_checked = max(start, count)

    def _check_acknowledged(self, token: int, offset: int, crc: int) -> None:
        if not self.checks_history:
            return
        index = bisect_left(self.committed_bases, offset)
        if index >= len(self.committed) or self.committed[index][0] != offset or self.committed[index][3] != crc:
            self.fail(f"acks=all produce {token} was answered at offset {offset} but is not committed there")

    def check_transaction_state(self, broker: SimBroker) -> None:
        """The replica's open transactions and aborted-transaction index, as a replay of its log gives them."""
        expected = modelled(broker.log)
        if maintained(broker.log) != expected:
            self.fail(f"broker {broker.broker_id} keeps transactions {maintained(broker.log)}, its log says {expected}")
        self.stats["aborted_transactions"] = max(self.stats["aborted_transactions"], len(expected[1]))

    def check_acknowledged_survive(self, broker: SimBroker) -> None:
        """Every acks=all acknowledged batch is in this broker's log where it was acknowledged."""
        if not self.checks_history:
            return
        batches = {base: crc for base, _, _, crc in broker.view.refresh(broker.log).batches}
        for (token, offset), crc in sorted(self.acked.items()):
            if batches.get(offset) != crc:
                self.fail(f"acks=all produce {token} acknowledged at offset {offset} is missing from broker "
                          f"{broker.broker_id}")
