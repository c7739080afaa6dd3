"""The idempotent producer's state: its producer id and epoch and each partition's next sequence.

Sequences are given to batches when they are first drained, so a retried batch keeps its own
and the broker can drop a duplicate. When a sequenced batch is given up on (expired, failed)
or the broker no longer knows the producer (UNKNOWN_PRODUCER_ID), the sequence chain has a
gap; as the Java client does for a non-transactional producer, the producer then takes a new
identity (InitProducerId) and every partition starts again at sequence 0, and batches that
still wait are re-sequenced when drained again.
"""

from __future__ import annotations

from gregor.client.network import TopicPartition
from gregor.client.producer.batch import ProducerBatch

NO_PRODUCER_ID = -1
_MAX_SEQUENCE = 0x7FFFFFFF


class ProducerIdentity:
    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self._next_sequence: dict[TopicPartition, int] = {}
        self._pending: dict[TopicPartition, set[int]] = {}

    @property
    def known(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    def set(self, producer_id: int, producer_epoch: int) -> None:
        """A new identity from InitProducerId: sequences restart at 0 everywhere."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self._next_sequence.clear()
        self._pending.clear()

    def reset(self) -> None:
        """Forget the identity; the sender asks for a new one before sending again."""
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1

    def stamp(self, batch: ProducerBatch) -> None:
        """Give a drained batch this identity and, unless it already has one under it, the
        partition's next sequence."""
        if batch.producer_id == self.producer_id and batch.producer_epoch == self.producer_epoch \
                and batch.base_sequence >= 0:
            return
        topic_partition = TopicPartition(batch.topic, batch.partition)
        sequence = self._next_sequence.get(topic_partition, 0)
        batch.producer_id = self.producer_id
        batch.producer_epoch = self.producer_epoch
        batch.base_sequence = sequence
        self._next_sequence[topic_partition] = (sequence + batch.count) & _MAX_SEQUENCE
        self._pending.setdefault(topic_partition, set()).add(sequence)

    def acknowledged(self, batch: ProducerBatch) -> None:
        """The batch is done (either way): it no longer holds back later sequences."""
        if batch.producer_id != self.producer_id:
            return
        pending = self._pending.get(TopicPartition(batch.topic, batch.partition))
        if pending is not None:
            pending.discard(batch.base_sequence)

    def has_earlier_pending(self, batch: ProducerBatch) -> bool:
        """Whether a batch before this one in its partition is still unacknowledged, so an
        OUT_OF_ORDER_SEQUENCE_NUMBER for this one only means it overtook a retry."""
        if batch.producer_id != self.producer_id:
            return False
        pending = self._pending.get(TopicPartition(batch.topic, batch.partition), ())
        return any(sequence < batch.base_sequence for sequence in pending)
