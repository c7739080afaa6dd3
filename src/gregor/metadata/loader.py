"""From committed metadata log entries to published images (Kafka's MetadataLoader).

The loader owns the current image. Each call to `load` replays a run of committed entries into
one delta, applies it, and hands (delta, new image) to every installed publisher, in install
order: the broker creates and deletes partition logs from it, the controller refreshes the
state it decides on. Replaying the whole log at start is one `load` from the empty image.
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple, Protocol

from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import MetadataImage
from gregor.metadata.record_codec import decode_metadata_record
from gregor.protocol.messages import NoOpRecord


class LogEntry(NamedTuple):
    """One committed value of `__cluster_metadata`: its offset, leader epoch and bytes."""

    offset: int
    epoch: int
    value: bytes


class MetadataPublisher(Protocol):
    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Called with each new image and the delta that made it from the previous one."""


class MetadataLoader:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._publishers: list[MetadataPublisher] = []

    def install(self, publisher: MetadataPublisher) -> None:
        """Add a publisher; it is told about the current image at once (with an empty delta)."""
        self._publishers.append(publisher)
        publisher.on_metadata_update(MetadataDelta(self.image), self.image)

    def load_snapshot(self, records: Iterable[Any], end_offset: int, epoch: int) -> MetadataDelta:
        """Replace the image by a snapshot's (the image of every offset below `end_offset`)."""
        delta = MetadataDelta.snapshot_of(self.image)
        for record in records:
            delta.replay(record, end_offset - 1, epoch)
        delta.replay(NoOpRecord(), end_offset - 1, epoch)
        return self._publish(delta)

    def load(self, entries: Iterable[tuple[int, int, bytes]]) -> MetadataDelta | None:
        """Replay `entries` ((offset, epoch, framed value), e.g. LogEntry or raft's CommittedEntry), publish
        the new image; None if there were none."""
        delta = MetadataDelta(self.image)
        replayed = False
        for offset, epoch, value in entries:
            delta.replay(decode_metadata_record(value), offset, epoch)
            replayed = True
        if not replayed:
            return None
        return self._publish(delta)

    def _publish(self, delta: MetadataDelta) -> MetadataDelta:
        self.image = delta.apply()
        for publisher in self._publishers:
            publisher.on_metadata_update(delta, self.image)
        return delta
