"""A seeded world for the transaction coordinator: the production `TransactionCoordinator` (crashed
and failed over to a fresh one that loads `__transaction_state`), partitions whose producer state
is the production `ProducerStateManager` (epoch fencing, sequences, markers), a network that
delays every message and lets some produce requests arrive long after their sender gave up, and
transactional producers that follow the client protocol (classic, or KIP-890's v2 with an epoch
bump on every EndTxn). Virtual time only; one `random.Random` decides everything.

The checks are Jepsen's for Kafka transactions:
- no aborted read: a read_committed reader never sees a record of an aborted transaction, nor one
  of a produce request its producer gave up on;
- no read of a transaction before its commit: a COMMIT marker reaches a partition only once the
  coordinator has written PrepareCommit for that producer and epoch;
- no record of a later transaction inside an earlier one (or the reverse): every committed range
  of a producer on a partition holds records of one transaction; no transaction is half visible;
  no transaction is left open on a partition once the world is quiet (a hanging transaction).
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

from gregor.coordinator.transaction import (
    AppendTransaction, Respond, TransactionConfig, TransactionCoordinator, TransactionState, WriteMarkers,
)
from gregor.coordinator.transaction.records import decode_key, decode_value
from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import parse_header
from gregor.records.record import BatchBuilder
from gregor.storage.errors import StorageError
from gregor.storage.producer_state import ProducerStateManager, TxnMarker

E = ErrorCode
PARTITIONS = [("out", index) for index in range(3)]
CLIENT_TIMEOUT_MS = 400
TXN_TIMEOUT_MS = 5000


class Violation(AssertionError):
    pass


@dataclass
class Partition:
    """One partition's log: data entries (producer id, epoch, value) and markers."""

    name: tuple[str, int]
    state: ProducerStateManager = field(default_factory=lambda: ProducerStateManager("unused"))
    entries: list[tuple[str, int, int, Any]] = field(default_factory=list)

    def append_data(self, producer_id: int, epoch: int, sequence: int, value: str,
                    verify: Callable[[int, int], bool] | None) -> ErrorCode:
        builder = BatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                               is_transactional=True)
        builder.append(0, None, value.encode())
        header = parse_header(builder.build())
        entry = self.state.producers.get(producer_id)
        opens = entry is None or entry.current_txn_first_offset < 0 or epoch != entry.epoch
        if verify is not None and opens and not verify(producer_id, epoch):
            return E.INVALID_TXN_STATE  # KIP-890 part 1: the coordinator does not know this write's transaction
        append = self.state.begin_append()
        try:
            duplicate = append.check(header, len(self.entries))
        except StorageError as error:
            return ErrorCode(error.code)
        if duplicate is None:
            append.commit()
            self.entries.append(("data", producer_id, epoch, value))
        return E.NONE

    def append_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, commit: bool) -> ErrorCode:
        append = self.state.begin_append()
        try:
            append.check_marker(producer_id, TxnMarker(commit, epoch, coordinator_epoch, 0), len(self.entries))
        except StorageError as error:
            return ErrorCode(error.code)
        append.commit()
        self.entries.append(("marker", producer_id, epoch, commit))
        return E.NONE

    def read_committed(self) -> tuple[list[list[str]], dict[int, list[str]]]:
        """The committed ranges (each a list of values, in order) and what is still open, by producer."""
        open_: dict[int, list[str]] = {}
        committed: list[list[str]] = []
        for kind, producer_id, _epoch, payload in self.entries:
            if kind == "data":
                open_.setdefault(producer_id, []).append(payload)
            else:
                values = open_.pop(producer_id, [])
                if payload and values:
                    committed.append(values)
        return committed, open_


class CoordinatorNode:
    """The broker leading the one `__transaction_state` partition; crashes lose what it had in flight."""

    def __init__(self, world: World, generation: int) -> None:
        self.world = world
        self.generation = generation
        self.alive = True
        self.coordinator = TransactionCoordinator(TransactionConfig(
            transaction_state_log_num_partitions=1, transaction_max_timeout_ms=60_000,
            transaction_abort_timed_out_transaction_cleanup_interval_ms=1000,
            transaction_version=2 if world.protocol_v2 else 0))
        self.coordinator.begin_load(0)
        self.apply(self.coordinator.load_partition(0, generation, list(world.txn_log), world.now))

    def apply(self, effects: list[Any]) -> None:
        world = self.world
        for effect in effects:
            if isinstance(effect, Respond):
                world.later(world.delay(), lambda e=effect: world.deliver_response(e.token, e.result))
            elif isinstance(effect, AppendTransaction):
                world.later(world.delay(), lambda e=effect: self._persisted(e))
            elif isinstance(effect, WriteMarkers):
                for partition in effect.partitions:
                    world.later(world.delay(), lambda e=effect, p=partition: self._marker(e, p))
        world.schedule_tick(self)

    def _persisted(self, effect: AppendTransaction) -> None:
        if not self.alive:
            return
        self.world.txn_log.append((effect.key, effect.value))
        self.world.later(self.world.delay(), lambda: self.alive and self.apply(
            self.coordinator.append_done(effect.append_id, E.NONE, self.world.now)))

    def _marker(self, effect: WriteMarkers, name: tuple[str, int]) -> None:
        world = self.world
        if world.rng.random() < 0.1:
            error = E.NOT_LEADER_OR_FOLLOWER
        else:
            error = world.partitions[name].append_marker(effect.producer_id, effect.producer_epoch,
                                                         effect.coordinator_epoch, effect.commit)
            if effect.commit and error is E.NONE:
                world.check_commit_decided(effect.transactional_id, effect.producer_id, effect.producer_epoch)
        world.later(world.delay(), lambda: self.alive and self.apply(
            self.coordinator.markers_written(effect.marker_id, {name: error}, world.now)))


Step = Generator[Any, Any, None]


@dataclass
class Call:
    method: str
    kwargs: dict[str, Any]


@dataclass
class Writes:
    producer_id: int
    epoch: int
    writes: list[tuple[tuple[str, int], int, str]]  # partition, sequence, value


class World:
    def __init__(self, seed: int, protocol_v2: bool, verify: bool, producers: int = 3,
                 transactions: int = 12) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.protocol_v2 = protocol_v2
        self.verify = verify
        self.now = 0
        self._queue: list[tuple[int, int, Callable[[], Any]]] = []
        self._order = itertools.count()
        self.txn_log: list[tuple[bytes, bytes | None]] = []
        self.partitions = {name: Partition(name) for name in PARTITIONS}
        self.generation = 1
        self._tick_at: dict[int, int] = {}
        self.node = CoordinatorNode(self, self.generation)
        self._waiting: dict[object, Callable[[Any], None]] = {}
        self._pids = itertools.count(1000)
        self.outcomes: dict[str, str] = {}  # transaction tag -> committed / aborted / unknown
        self.acked: dict[str, set[str]] = {}  # transaction tag -> values whose produce was acknowledged
        self.given_up: set[str] = set()  # values whose produce the client stopped waiting for
        self.history: list[str] = []
        self.crashes = 0
        for index in range(producers):
            self._run(Producer(self, f"txn-{index}", transactions).run())

    # -- the scheduler

    def later(self, delay_ms: int, action: Callable[[], Any]) -> None:
        heapq.heappush(self._queue, (self.now + delay_ms, next(self._order), action))

    def delay(self) -> int:
        return self.rng.randrange(1, 30)

    def schedule_tick(self, node: CoordinatorNode) -> None:
        deadline = node.coordinator.next_deadline()
        if deadline is not None and self._tick_at.get(node.generation) != deadline:
            self._tick_at[node.generation] = deadline
            self.later(max(0, deadline - self.now), lambda: node.alive and node.apply(
                node.coordinator.tick(self.now)))

    def run(self, chaos_ms: int, settle_ms: int = 60_000) -> None:
        """Faults for `chaos_ms`, then none until everything is done (or `settle_ms` passes)."""
        self.later(self.rng.randrange(200, 800), self._chaos)
        end = chaos_ms + settle_ms
        self._chaos_until = chaos_ms
        while self._queue and self.now <= end:
            self.now, _, action = heapq.heappop(self._queue)
            action()

    def _chaos(self) -> None:
        if self.now > self._chaos_until:
            return
        self.crash_coordinator()
        self.later(self.rng.randrange(300, 2000), self._chaos)

    def crash_coordinator(self) -> None:
        """The coordinator dies with its in-flight writes and markers; a new one loads the log."""
        self.crashes += 1
        self.node.alive = False
        self.generation += 1
        self.history.append(f"{self.now}: coordinator crash, generation {self.generation}")
        self.later(self.rng.randrange(10, 200), self._new_node)

    def _new_node(self) -> None:
        self.node = CoordinatorNode(self, self.generation)

    # -- clients' requests

    def _run(self, steps: Step, value: Any = None) -> None:
        try:
            request = steps.send(value)
        except StopIteration:
            return
        if isinstance(request, Call):
            self._call(steps, request)
        elif isinstance(request, Writes):
            self._writes(steps, request)
        else:
            self.later(request, lambda: self._run(steps))

    def _call(self, steps: Step, call: Call) -> None:
        token = object()
        answered = [False]

        def answer(result: Any) -> None:
            if not answered[0]:
                answered[0] = True
                self._run(steps, result)

        self._waiting[token] = answer
        self.later(CLIENT_TIMEOUT_MS, lambda: answer(None))  # no answer: a timeout, as a client sees it

        def deliver() -> None:
            node = self.node
            if not node.alive:
                return
            kwargs = dict(call.kwargs, now_ms=self.now)
            if call.method in ("init_producer_id", "end_transaction"):
                kwargs["new_producer_id"] = lambda: next(self._pids)
            node.apply(getattr(node.coordinator, call.method)(token, **kwargs))
        self.later(self.delay(), deliver)

    def deliver_response(self, token: object, result: Any) -> None:
        answer = self._waiting.pop(token, None)
        if answer is not None:
            answer(result)

    def _writes(self, steps: Step, writes: Writes) -> None:
        acked: set[str] = set()
        waiting = [len(writes.writes)]
        done = [False]

        def finish() -> None:
            if not done[0]:
                done[0] = True
                self._run(steps, acked)

        for name, sequence, value in writes.writes:
            late = self.rng.random() < 0.08
            delay = self.rng.randrange(CLIENT_TIMEOUT_MS + 100, 4000) if late else self.delay()

            def arrive(name=name, sequence=sequence, value=value, producer_id=writes.producer_id,
                       epoch=writes.epoch) -> None:
                verify = self._verifier if self.verify else None
                error = self.partitions[name].append_data(producer_id, epoch, sequence, value, verify)
                self.later(self.delay(), lambda: ack(value, error))

            def ack(value: str, error: ErrorCode) -> None:
                if done[0]:
                    return
                if error is E.NONE:
                    acked.add(value)
                waiting[0] -= 1
                if not waiting[0]:
                    finish()
            self.later(delay, arrive)
        self.later(CLIENT_TIMEOUT_MS, finish)

    def _verifier(self, producer_id: int, epoch: int) -> bool:
        """KIP-890 part 1 as a partition leader asks it (AddPartitionsToTxn verifyOnly): is this
        producer's transaction ongoing at the coordinator? Asked of the live coordinator's state."""
        node = self.node
        for txn in node.coordinator.transactions.values():
            if txn.producer_id == producer_id:
                return txn.producer_epoch == epoch and txn.state is TransactionState.ONGOING
        return False

    # -- checks

    def check_commit_decided(self, transactional_id: str, producer_id: int, epoch: int) -> None:
        """No read before commit: the log says PrepareCommit (or CompleteCommit) for this epoch."""
        latest = None
        for key, value in self.txn_log:
            if decode_key(key) == transactional_id and value is not None:
                latest = decode_value(value)
        if latest is None or latest.producer_id != producer_id or latest.producer_epoch != epoch or \
                latest.state not in (TransactionState.PREPARE_COMMIT, TransactionState.COMPLETE_COMMIT):
            raise Violation(f"seed {self.seed}: a COMMIT marker for {transactional_id} ({producer_id}, {epoch}) "
                            f"before the coordinator decided to commit: {latest}")

    def check(self) -> None:
        visible: dict[str, list[str]] = {}
        for partition in self.partitions.values():
            committed, open_ = partition.read_committed()
            if open_:
                raise Violation(f"seed {self.seed}: a hanging transaction on {partition.name}: {open_}")
            for values in committed:
                tags = {value.rsplit(":", 1)[0] for value in values}
                if len(tags) != 1:
                    raise Violation(f"seed {self.seed}: one committed range of {partition.name} holds records of "
                                    f"transactions {sorted(tags)}: {values}")
                for value in values:
                    visible.setdefault(value.rsplit(":", 1)[0], []).append(value)
        for tag, values in visible.items():
            if len(values) != len(set(values)):
                raise Violation(f"seed {self.seed}: a record of {tag} is visible twice: {values}")
            if self.outcomes.get(tag) == "aborted":
                raise Violation(f"seed {self.seed}: aborted read: {tag} was aborted, yet {values} are visible")
            given_up = self.given_up & set(values)
            if given_up:
                raise Violation(f"seed {self.seed}: {sorted(given_up)} were given up by their producer and "
                                f"are visible")
            if set(values) != self.acked.get(tag, set()):
                raise Violation(f"seed {self.seed}: {tag} is half visible: {sorted(values)} of "
                                f"{sorted(self.acked.get(tag, set()))}")
        for tag, outcome in self.outcomes.items():
            if outcome == "committed" and tag not in visible and self.acked.get(tag):
                raise Violation(f"seed {self.seed}: {tag} was committed but none of it is visible")
        for txn in self.node.coordinator.transactions.values():
            if txn.state not in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                                 TransactionState.COMPLETE_ABORT):
                raise Violation(f"seed {self.seed}: {txn.transactional_id} never completed: {txn.state}")


class Producer:
    """A transactional producer as the Java client behaves: it flushes before EndTxn, aborts a
    transaction whose produce request timed out, and then bumps its epoch with InitProducerId
    (KIP-360) so that the lost request cannot land in a later transaction."""

    def __init__(self, world: World, transactional_id: str, transactions: int) -> None:
        self.world = world
        self.transactional_id = transactional_id
        self.transactions = transactions
        self.producer_id = -1
        self.epoch = -1
        self.sequences: dict[tuple[str, int], int] = {}

    def _init(self) -> Step:
        while True:
            result = yield Call("init_producer_id", dict(
                transactional_id=self.transactional_id, timeout_ms=TXN_TIMEOUT_MS,
                producer_id=self.producer_id, producer_epoch=self.epoch))
            if result is not None and result.error is E.NONE:
                self.producer_id, self.epoch = result.producer_id, result.producer_epoch
                self.sequences.clear()
                return
            if result is not None and result.error is E.PRODUCER_FENCED:
                self.producer_id, self.epoch = -1, -1  # start over as a new producer
            yield 50

    def _call(self, method: str, **kwargs: Any) -> Generator[Any, Any, Any]:
        """A coordinator call retried on retriable answers and timeouts, a few times."""
        for _ in range(8):
            result = yield Call(method, dict(transactional_id=self.transactional_id, producer_id=self.producer_id,
                                             producer_epoch=self.epoch, **kwargs))
            if result is not None and result.error not in (E.CONCURRENT_TRANSACTIONS, E.NOT_COORDINATOR,
                                                            E.COORDINATOR_LOAD_IN_PROGRESS,
                                                            E.COORDINATOR_NOT_AVAILABLE):
                return result
            yield 30
        return None

    def run(self) -> Step:
        world = self.world
        yield from self._init()
        for number in range(self.transactions):
            tag = f"{self.transactional_id}/{number}"
            world.outcomes[tag] = "unknown"
            chosen = world.rng.sample(PARTITIONS, world.rng.randrange(1, len(PARTITIONS) + 1))
            added = yield from self._call("add_partitions", partitions=chosen)
            if added is None or added.error is not E.NONE:
                world.outcomes[tag] = "aborted" if added is not None else "unknown"
                yield from self._init()
                continue
            writes = []
            for index in range(world.rng.randrange(1, 4)):
                name = world.rng.choice(chosen)
                sequence = self.sequences.get(name, 0)
                self.sequences[name] = sequence + 1
                writes.append((name, sequence, f"{tag}:{index}"))
            acked = yield Writes(self.producer_id, self.epoch, writes)
            world.acked[tag] = set(acked)
            lost = {value for _, _, value in writes} - acked
            world.given_up |= lost
            commit = not lost and world.rng.random() < 0.75
            ended = yield from self._call("end_transaction", commit=commit, epoch_bump=world.protocol_v2)
            if ended is not None and ended.error is E.NONE:
                world.outcomes[tag] = "committed" if commit else "aborted"
                if world.protocol_v2:
                    self.producer_id, self.epoch = ended.producer_id, ended.producer_epoch
                    self.sequences.clear()
                if lost:
                    yield from self._init()
            else:
                # Abandoned: a new InitProducerId aborts it if still open and fences this epoch.
                world.outcomes[tag] = "aborted" if ended is not None and not commit else "unknown"
                yield from self._init()
