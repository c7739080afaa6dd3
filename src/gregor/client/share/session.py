"""One member's share session with one broker (KIP-932), as a sans-IO state: the epochs and the
partitions ShareFetch keeps in it.

Epoch 0 opens the session with the partitions named; each answered request moves the epoch on
(wrapping from 2^31-1 to 1), and a later fetch names only the partitions it adds or that carry
acknowledgements, and the ones it forgets. -1 closes the session (ShareAcknowledge on close),
releasing what the member still holds there. An unknown session or a wrong epoch
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH) starts again from 0: what was acquired in
the old session was released by the broker, so its acknowledgements can only fail.
"""

from __future__ import annotations

from gregor.client.network import TopicPartition
from gregor.protocol.error_codes import ErrorCode

OPEN_EPOCH = 0
CLOSE_EPOCH = -1
_MAX_EPOCH = 2**31 - 1
SESSION_ERRORS = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH})


class ShareSession:
    def __init__(self) -> None:
        self.epoch = OPEN_EPOCH
        self.partitions: frozenset[TopicPartition] = frozenset()

    @property
    def open(self) -> bool:
        return self.epoch != OPEN_EPOCH

    def plan(self, wanted: frozenset[TopicPartition]) -> tuple[frozenset[TopicPartition], frozenset[TopicPartition]]:
        """(partitions to name, partitions to forget) for a fetch of `wanted`."""
        if not self.open:
            return wanted, frozenset()
        return wanted - self.partitions, self.partitions - wanted

    def answered(self, wanted: frozenset[TopicPartition] | None = None) -> None:
        """A request in this session was answered; a fetch's partitions are the session's now."""
        if wanted is not None:
            self.partitions = wanted
        self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1

    def reset(self) -> None:
        self.epoch = OPEN_EPOCH
        self.partitions = frozenset()
