"""A driver for the transaction coordinator: writes commit at once (or fail, or wait), markers are
recorded and acknowledged on demand, and the written records are kept for reloading."""

from __future__ import annotations

import itertools

from gregor.coordinator.transaction import (
    AppendTransaction, Effect, Respond, TransactionConfig, TransactionCoordinator, TxnResult, WriteMarkers,
)
from gregor.protocol.error_codes import ErrorCode

TXN = "txn-a"


class Driver:
    def __init__(self, config: TransactionConfig | None = None, now_ms: int = 1_000) -> None:
        self.coordinator = TransactionCoordinator(config or TransactionConfig(transaction_state_log_num_partitions=1))
        self.now_ms = now_ms
        self.log: list[tuple[bytes, bytes | None]] = []  # the written __transaction_state records
        self.answers: dict[object, TxnResult] = {}
        self.markers: list[WriteMarkers] = []
        self.held: list[AppendTransaction] = []
        self.hold_appends = False
        self.fail_appends: ErrorCode | None = None
        self._pids = itertools.count(1000)
        self._tokens = itertools.count()
        self.coordinator.begin_load(0)
        self.apply(self.coordinator.load_partition(0, 1, [], self.now_ms))

    def new_pid(self) -> int:
        return next(self._pids)

    def apply(self, effects: list[Effect]) -> None:
        pending = list(effects)
        while pending:
            effect = pending.pop(0)
            if isinstance(effect, Respond):
                assert effect.token not in self.answers, "a token answered twice"
                self.answers[effect.token] = effect.result
            elif isinstance(effect, WriteMarkers):
                self.markers.append(effect)
            elif self.hold_appends:
                self.held.append(effect)
            elif self.fail_appends is not None:
                pending.extend(self.coordinator.append_done(effect.append_id, self.fail_appends, self.now_ms))
            else:
                self.log.append((effect.key, effect.value))
                pending.extend(self.coordinator.append_done(effect.append_id, ErrorCode.NONE, self.now_ms))

    def release(self) -> None:
        held, self.held = self.held, []
        for effect in held:
            self.log.append((effect.key, effect.value))
            self.apply(self.coordinator.append_done(effect.append_id, ErrorCode.NONE, self.now_ms))

    def call(self, method: str, **kwargs: object) -> TxnResult | None:
        token = next(self._tokens)
        self.apply(getattr(self.coordinator, method)(token, now_ms=self.now_ms, **kwargs))
        return self.answers.get(token)

    def init(self, txn: str = TXN, timeout_ms: int = 60_000, **kwargs: object) -> TxnResult | None:
        return self.call("init_producer_id", transactional_id=txn, timeout_ms=timeout_ms,
                         new_producer_id=self.new_pid, **kwargs)

    def add(self, pid: int, epoch: int, *partitions: tuple[str, int], txn: str = TXN) -> TxnResult | None:
        return self.call("add_partitions", transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                         partitions=partitions)

    def end(self, pid: int, epoch: int, commit: bool, txn: str = TXN, **kwargs: object) -> TxnResult | None:
        return self.call("end_transaction", transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                         commit=commit, **kwargs)

    def ack_markers(self, error: ErrorCode = ErrorCode.NONE) -> list[WriteMarkers]:
        sent, self.markers = self.markers, []
        for marker in sent:
            self.apply(self.coordinator.markers_written(
                marker.marker_id, {partition: error for partition in marker.partitions}, self.now_ms))
        return sent

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        self.apply(self.coordinator.tick(self.now_ms))

    def state(self, txn: str = TXN) -> str:
        metadata = self.coordinator.transaction(txn)
        assert metadata is not None
        return metadata.state.display_name

    def failover(self, coordinator_epoch: int = 2) -> Driver:
        """A new coordinator loading the same records (the old one's unanswered work is lost)."""
        other = Driver.__new__(Driver)
        other.__dict__.update(self.__dict__)
        other.coordinator = TransactionCoordinator(self.coordinator.config)
        other.answers, other.markers, other.held, other.hold_appends = {}, [], [], False
        other.log = list(self.log)
        other.coordinator.begin_load(0)
        other.apply(other.coordinator.load_partition(0, coordinator_epoch, list(other.log), other.now_ms))
        return other
