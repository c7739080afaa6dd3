"""Kafka's transaction coordinator as a sans-IO state machine (`__transaction_state`).

`TransactionCoordinator` takes decoded requests and `now_ms` and returns effects
(`Respond`, `AppendTransaction`, `WriteMarkers`); the broker's `transaction_runtime` carries them
out. See `coordinator.py` for the drive contract.
"""

from gregor.coordinator.transaction.config import TransactionConfig
from gregor.coordinator.transaction.coordinator import TransactionCoordinator
from gregor.coordinator.transaction.effects import AppendTransaction, Effect, Respond, TxnResult, WriteMarkers
from gregor.coordinator.transaction.state import TransactionState

__all__ = ["AppendTransaction", "Effect", "Respond", "TransactionConfig", "TransactionCoordinator",
           "TransactionState", "TxnResult", "WriteMarkers"]
