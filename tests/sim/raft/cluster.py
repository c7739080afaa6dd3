"""A seeded, deterministic simulation of a raft quorum: virtual time, a faulty network, crashes.

Everything random comes from one `random.Random(seed)`: election timeouts, message delays, loss,
duplication, partitions, crashes, pauses and the workload. Every message crosses the wire codec
(encoded and decoded at a random version: Fetch from v13, the raft APIs from v0), so the
simulated edge is the real one minus sockets.
After every step the invariants are checked; a violation raises `InvariantViolation` with the
seed and the last steps, and `Cluster(seed)` replays the same run.

Nodes are driven as the broker's RaftDriver drives them: after every event the node is polled at
its client's `next_deadline()`, never on a period. So a deadline reported too late shows up as a
node that never elects, fetches or resigns; one reported too early is caught by polling a node at
random moments before its deadline, which must do nothing.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from gregor.protocol.exceptions import KafkaError
from gregor.raft.client import RaftClient, RaftConfig
from gregor.raft.effects import Respond, Send, SnapshotInstalled, StateChanged
from gregor.raft.memory_log import MemoryLog
from gregor.raft.quorum_state import Role
from gregor.raft.quorum_state_file import MemoryQuorumStateStore
from gregor.records.batch import scan_batches
from gregor.records.record import decode_records

SIM_CONFIG = RaftConfig(election_timeout_ms=300, fetch_timeout_ms=600, election_backoff_max_ms=300,
                        request_timeout_ms=200, retry_backoff_ms=20, fetch_max_wait_ms=100,
                        fetch_max_bytes=4096, snapshot_chunk_bytes=64)
TRACE_LENGTH = 400
TRACE_SHOWN = 60


class InvariantViolation(AssertionError):
    """A safety property broke; the message carries the seed and the trace to replay it."""


@dataclass
class Faults:
    """The fault mix of one schedule."""

    loss: float = 0.0
    duplication: float = 0.0
    max_delay_ms: int = 5
    crash_rate: float = 0.0
    pause_rate: float = 0.0
    partition_rate: float = 0.0
    snapshot_rate: float = 0.0
    append_rate: float = 0.05

    @classmethod
    def random(cls, rng: random.Random) -> Faults:
        return cls(loss=rng.choice([0.0, 0.01, 0.05, 0.15]), duplication=rng.choice([0.0, 0.02, 0.1]),
                   max_delay_ms=rng.choice([1, 5, 20, 60]), crash_rate=rng.choice([0.0, 0.001, 0.004]),
                   pause_rate=rng.choice([0.0, 0.001, 0.003]), partition_rate=rng.choice([0.0, 0.002, 0.006]),
                   snapshot_rate=rng.choice([0.0, 0.005, 0.02]), append_rate=rng.choice([0.02, 0.1, 0.3]))


KRAFT_FETCH_VERSION = 13  # the first Fetch with topic ids; diverging epochs and snapshot ids came in 12


def wire(message: object, rng: random.Random) -> object:
    """The message as the peer decodes it from the bytes of a random version raft may speak."""
    lowest, highest = type(message).VALID_VERSIONS
    if type(message).API_KEY == 1:
        lowest = KRAFT_FETCH_VERSION
    version = rng.randint(lowest, highest)
    return type(message).decode(message.encode(version), version)


def encode_values(values: list[bytes]) -> bytes:
    return b"\0".join(values)


def decode_values(data: bytes) -> list[bytes]:
    return data.split(b"\0") if data else []


@dataclass
class SimNode:
    """One process: its durable log and quorum-state store outlive the RaftClient across crashes."""

    node_id: int
    log: MemoryLog
    store: MemoryQuorumStateStore
    client: RaftClient | None = None
    incarnation: int = 0
    paused_until: int = -1
    poll_at: int | None = None  # the poll scheduled at the client's next deadline
    applied: list[bytes] = field(default_factory=list)
    applied_offset: int = 0
    last_high_watermark: int = 0


class Cluster:
    def __init__(self, seed: int, voters: int = 3, observers: int = 0, faults: Faults | None = None,
                 config: RaftConfig = SIM_CONFIG, wire_codec: bool = True,
                 logs: dict[int, MemoryLog] | None = None) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = faults if faults is not None else Faults.random(self.rng)
        self.schedule_faults = self.faults
        self.replay = f"RAFT_SIM_SEED={seed} RAFT_SIM_VOTERS={voters}"
        self.config = config
        self.wire_codec = wire_codec
        self.voters = list(range(1, voters + 1))
        logs = logs or {}
        self.nodes = {n: SimNode(n, logs.get(n) or MemoryLog(), MemoryQuorumStateStore())
                      for n in range(1, voters + observers + 1)}
        self.now = 0
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._sequence = 0
        self.blocked: set[tuple[int, int]] = set()
        self.trace: deque[str] = deque(maxlen=TRACE_LENGTH)
        self.leaders: dict[int, int] = {}
        self.history: dict[int, tuple[int, bytes]] = {}
        self.committed_by_epoch: dict[int, int] = {}
        self.appended = 0
        self.steps = 0
        for node in self.nodes.values():
            self._boot(node)

    # -- scheduling

    def at(self, time: int, action: Callable[[], None]) -> None:
        """Run `action` at virtual time `time` (after everything already due then)."""
        self._sequence += 1
        heapq.heappush(self._queue, (time, self._sequence, action))

    def run_until(self, end: int, stop: Callable[[], bool] = lambda: False) -> bool:
        """Process events until virtual time `end` or until `stop()` holds; returns whether it held."""
        while self._queue and self._queue[0][0] <= end:
            time, _, action = heapq.heappop(self._queue)
            self.now = time
            action()
            self.steps += 1
            if stop():
                return True
        self.now = max(self.now, end)
        return stop()

    def fail(self, message: str) -> None:
        trace = "\n  ".join(list(self.trace)[-TRACE_SHOWN:])
        raise InvariantViolation(f"seed {self.seed}: {message} at t={self.now}ms (replay: {self.replay})\n"
                                 f"faults: {self.schedule_faults}\nlast steps:\n  {trace}")

    # -- processes

    def _boot(self, node: SimNode) -> None:
        node.incarnation += 1
        node.client = RaftClient(node.node_id, self.voters, node.log, node.store, "sim", self.config,
                                 random.Random(self.rng.random()))
        node.client.start(self.now)
        snapshot = node.log.latest_snapshot()
        node.applied = decode_values(snapshot.data) if snapshot else []
        node.applied_offset = node.log.start_offset
        node.last_high_watermark = node.log.high_watermark
        self.trace.append(f"t={self.now} boot {node.node_id} #{node.incarnation} {node.client.quorum.state}")
        node.poll_at = None
        self._effects(node, node.client.poll(self.now))  # start() leaves its state change pending

    def _arm(self, node: SimNode) -> None:
        """Schedule the node's poll at its client's next deadline (a paused node's when it wakes)."""
        deadline = node.client.next_deadline() if node.client is not None else None
        if deadline is None:
            return
        at = max(deadline, self.now, node.paused_until)
        if node.poll_at is not None and self.now <= node.poll_at <= at:
            return  # that poll comes first and arms the next
        node.poll_at = at
        incarnation = node.incarnation
        self.at(at, lambda: self._poll(node, incarnation, at))

    def _poll(self, node: SimNode, incarnation: int, at: int) -> None:
        if node.incarnation != incarnation or node.client is None or node.poll_at != at:
            return
        node.poll_at = None
        if self.now < node.paused_until:
            self._arm(node)
            return
        effects = node.client.poll(self.now)
        deadline = node.client.next_deadline()
        if deadline is not None and deadline <= self.now:
            self.fail(f"node {node.node_id} polled at {self.now} is still due at {deadline}: its driver would spin")
        self._effects(node, effects)

    def probe_early_poll(self, node_id: int) -> None:
        """Poll a node before its next deadline: the drive contract says nothing happens."""
        node = self.nodes[node_id]
        client = node.client
        if client is None or self.now < node.paused_until:
            return
        deadline = client.next_deadline()
        if deadline is not None and deadline <= self.now:
            return
        state_before = client.quorum.state
        effects = client.poll(self.now)
        if effects or client.quorum.state != state_before:
            self.fail(f"node {node_id} polled at {self.now}, before its next deadline {deadline}, "
                      f"acted: {effects}")

    def crash(self, node_id: int, downtime_ms: int) -> None:
        node = self.nodes[node_id]
        if node.client is None:
            return
        self.trace.append(f"t={self.now} crash {node_id} for {downtime_ms}ms")
        node.client = None
        node.log = node.log.reopened()
        node.incarnation += 1
        self.at(self.now + downtime_ms, lambda: self.restart(node_id))

    def restart(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.client is None:
            self._boot(node)

    def resign(self, node_id: int) -> None:
        """A graceful leader shutdown (EndQuorumEpoch to the voters), the process kept running."""
        self.trace.append(f"t={self.now} resign {node_id}")
        node = self.nodes[node_id]
        self._effects(node, node.client.resign(self.now))

    def pause(self, node_id: int, duration_ms: int) -> None:
        self.trace.append(f"t={self.now} pause {node_id} for {duration_ms}ms")
        node = self.nodes[node_id]
        node.paused_until = max(node.paused_until, self.now + duration_ms)

    def partition(self, *groups: set[int]) -> None:
        """Only nodes inside the same group reach each other; unnamed nodes are isolated."""
        self.trace.append(f"t={self.now} partition {[sorted(g) for g in groups]}")
        member = {n: i for i, group in enumerate(groups) for n in group}
        self.blocked = {(a, b) for a in self.nodes for b in self.nodes
                        if a != b and (member.get(a, -a) != member.get(b, -b))}

    def heal(self) -> None:
        self.trace.append(f"t={self.now} heal")
        self.blocked = set()

    # -- the network

    def _effects(self, node: SimNode, effects: list) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                self._transmit(node.node_id, effect.destination, effect.correlation_id, effect.request, False)
            elif isinstance(effect, Respond):
                self._transmit(node.node_id, effect.destination, effect.correlation_id, effect.response, True)
            elif isinstance(effect, StateChanged):
                self.trace.append(f"t={self.now} {node.node_id} -> {effect.state.role.value} e{effect.state.epoch} "
                                  f"leader {effect.state.leader_id} log {node.log.end_offset}")
                if effect.state.role == Role.LEADER:
                    self._check_new_leader(node, effect.state.epoch)
            elif isinstance(effect, SnapshotInstalled):
                snapshot = node.log.latest_snapshot()
                node.applied = decode_values(snapshot.data)
                node.applied_offset = snapshot.id.end_offset
                self.trace.append(f"t={self.now} {node.node_id} installed snapshot {tuple(effect.snapshot_id)}")
        self._check_node(node)
        self._arm(node)

    def _transmit(self, source: int, destination: int, correlation_id: int, message: object,
                  is_response: bool) -> None:
        faults = self.rng
        if (source, destination) in self.blocked or faults.random() < self.faults.loss:
            return
        copies = 2 if faults.random() < self.faults.duplication else 1
        incarnation = self.nodes[destination].incarnation if is_response else 0
        for _ in range(copies):
            delay = 1 + faults.randrange(self.faults.max_delay_ms)
            self.at(self.now + delay, lambda: self._deliver(source, destination, correlation_id, message,
                                                              is_response, incarnation))

    def _deliver(self, source: int, destination: int, correlation_id: int, message: object, is_response: bool,
                 incarnation: int) -> None:
        node = self.nodes[destination]
        if node.client is None or (is_response and node.incarnation != incarnation):
            return
        if (source, destination) in self.blocked:
            return
        if self.now < node.paused_until:
            self.at(node.paused_until, lambda: self._deliver(source, destination, correlation_id, message,
                                                              is_response, incarnation))
            return
        received = wire(message, self.rng) if self.wire_codec else message
        self.trace.append(f"t={self.now} {source}->{destination} {type(message).__name__}#{correlation_id}")
        if is_response:
            effects = node.client.handle_response(source, correlation_id, received, self.now)
        else:
            effects = node.client.handle_request(source, correlation_id, received, self.now)
        self._effects(node, effects)

    # -- the workload

    def append(self, node_id: int) -> int | None:
        """Append one unique value at `node_id` if it leads; the offset, or None."""
        node = self.nodes[node_id]
        if node.client is None or not node.client.is_leader or self.now < node.paused_until:
            return None
        self.appended += 1
        value = f"{node_id}:{node.client.leader_epoch}:{self.appended}".encode()
        try:
            offset = node.client.append([value], self.now)
        except KafkaError:
            return None
        self.trace.append(f"t={self.now} append {value.decode()} at {node_id} offset {offset}")
        self._effects(node, node.client.poll(self.now))
        return offset

    def snapshot(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.client is None or node.applied_offset <= node.log.start_offset:
            return
        snapshot_id = node.client.create_snapshot(node.applied_offset, encode_values(node.applied))
        self.trace.append(f"t={self.now} {node_id} snapshot {tuple(snapshot_id)} log start {node.log.start_offset}")

    def leader(self) -> int | None:
        """The node that leads the highest epoch, if any."""
        leading = [(n.client.leader_epoch, n.node_id) for n in self.nodes.values()
                   if n.client is not None and n.client.is_leader]
        return max(leading)[1] if leading else None

    # -- invariants

    def _check_new_leader(self, node: SimNode, epoch: int) -> None:
        """One leader per epoch; it holds every entry committed in an earlier epoch (leader
        completeness: a leader of an older epoch may still be elected late, and need not)."""
        previous = self.leaders.setdefault(epoch, node.node_id)
        if previous != node.node_id:
            self.fail(f"two leaders in epoch {epoch}: {previous} and {node.node_id}")
        required = max((end for committed_epoch, end in self.committed_by_epoch.items() if committed_epoch < epoch),
                       default=0)
        if node.log.end_offset < required:
            self.fail(f"leader {node.node_id} of epoch {epoch} ends at {node.log.end_offset}, below the end "
                      f"{required} committed in earlier epochs")
        start = node.log.start_offset
        data = node.log.read(start, required, 1 << 30)
        batches, _ = scan_batches(data)
        for header, pos in batches:
            if header.is_control:
                continue
            for record in decode_records(data, pos, header, 1 << 30):
                if start <= record.offset < required:
                    self._check_committed(node, record.offset, header.partition_leader_epoch,
                                          bytes(record.value or b""))

    def _check_committed(self, node: SimNode, offset: int, epoch: int, value: bytes) -> None:
        known = self.history.setdefault(offset, (epoch, value))
        if known != (epoch, value):
            self.fail(f"node {node.node_id} has {(epoch, value)} at committed offset {offset}, "
                      f"the history has {known}")

    def _check_node(self, node: SimNode) -> None:
        client = node.client
        if client is None:
            return
        high_watermark = node.log.high_watermark
        if high_watermark < node.last_high_watermark:
            self.fail(f"node {node.node_id} high watermark went back from {node.last_high_watermark} "
                      f"to {high_watermark}")
        node.last_high_watermark = high_watermark
        if client.is_leader and high_watermark > self.committed_by_epoch.get(client.leader_epoch, 0):
            self.committed_by_epoch[client.leader_epoch] = high_watermark
        if high_watermark > node.applied_offset:
            for entry in client.committed(node.applied_offset):
                self._check_committed(node, entry.offset, entry.epoch, entry.value)
                node.applied.append(entry.value)
            node.applied_offset = high_watermark
        if client.is_leader:
            self._check_new_leader_epoch(node)

    def _check_new_leader_epoch(self, node: SimNode) -> None:
        epoch = node.client.leader_epoch
        if self.leaders.setdefault(epoch, node.node_id) != node.node_id:
            self.fail(f"two leaders in epoch {epoch}: {self.leaders[epoch]} and {node.node_id}")

    def check_state_machines(self) -> None:
        """Every node's applied values are the committed values, in offset order, with no gap."""
        values = [value for _, (_, value) in sorted(self.history.items())]
        for node in self.nodes.values():
            if node.client is None:
                continue
            if node.applied != values[:len(node.applied)]:
                self.fail(f"node {node.node_id} applied {len(node.applied)} values that are not a prefix of the "
                          f"{len(values)} committed ones")
