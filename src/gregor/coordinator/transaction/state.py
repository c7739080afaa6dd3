"""A transaction's states and the legal moves between them (Kafka's TransactionState).

The ids are those written in `__transaction_state` values (TransactionStatus), the names those
ListTransactions and DescribeTransactions report. `PREVIOUS` lists, for each state, the states a
transaction may come from; `TransactionMetadata` refuses any other move.
"""

from __future__ import annotations

import enum


class TransactionState(enum.Enum):
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display_name(self) -> str:
        return self.value[1]

    @staticmethod
    def from_id(state_id: int) -> TransactionState:
        """Raises ValueError for an id no state has."""
        for state in TransactionState:
            if state.id == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @staticmethod
    def from_name(name: str) -> TransactionState | None:
        for state in TransactionState:
            if state.display_name == name:
                return state
        return None


S = TransactionState

PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
"""PrepareAbort from Empty or a completed state is transaction protocol v2's abort of a
transaction the coordinator never saw partitions for (KIP-890), as in Kafka 4.0."""

COMPLETED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})
"""States in which a new transaction may begin."""
