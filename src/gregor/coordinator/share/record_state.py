"""The delivery states of a share-partition's in-flight records, and their legal moves.

Codes are Kafka's (`RecordState`, persisted in share state records): AVAILABLE 0, ACQUIRED 1,
ACKNOWLEDGED 2, ARCHIVED 4. ACKNOWLEDGED and ARCHIVED are terminal: such a record is never
delivered again. Acknowledgement types are the wire's: 0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT.
"""

from __future__ import annotations

import enum


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


TRANSITIONS: dict[RecordState, frozenset[RecordState]] = {
    RecordState.AVAILABLE: frozenset({RecordState.ACQUIRED, RecordState.ARCHIVED}),
    RecordState.ACQUIRED: frozenset({RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED}),
    RecordState.ACKNOWLEDGED: frozenset(),
    RecordState.ARCHIVED: frozenset(),
}

TERMINAL = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})
