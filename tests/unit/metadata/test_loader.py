"""The loader replays framed entries into one delta and tells every publisher, in order."""

from __future__ import annotations

import uuid

from gregor.metadata.image import MetadataImage
from gregor.metadata.loader import LogEntry, MetadataLoader
from gregor.metadata.record_codec import encode_metadata_record
from gregor.protocol.messages import PartitionRecord, TopicRecord


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[frozenset, int]] = []

    def on_metadata_update(self, delta, image) -> None:
        self.seen.append((delta.changed_topics(), image.highest_offset))


def test_install_publishes_current_image_then_each_load():
    loader = MetadataLoader(MetadataImage(cluster_id="c"))
    first, second = Recorder(), Recorder()
    loader.install(first)
    topic_id = uuid.UUID(int=500)
    entries = [LogEntry(3, 1, encode_metadata_record(TopicRecord(name="t", topic_id=topic_id))),
               LogEntry(4, 1, encode_metadata_record(PartitionRecord(partition_id=0, topic_id=topic_id,
                                                                     replicas=[1], isr=[1], leader=1)))]
    delta = loader.load(entries)
    loader.install(second)
    assert loader.load([]) is None
    assert delta.changed_topics() == {topic_id}
    assert first.seen == [(frozenset(), -1), (frozenset({topic_id}), 4)]
    assert second.seen == [(frozenset(), 4)]
    assert loader.image.cluster_id == "c" and loader.image.epoch == 1
