"""Keeping a node's metadata image in step with its copy of `__cluster_metadata`, snapshots
included — the one path for a combined node, a controller and a broker.

Committed records are replayed into the loader's image. When the log start has moved past the
image (a restart after a snapshot, or a snapshot fetched from the leader because this node fell
too far behind), the latest snapshot is loaded first. Every
`metadata.log.max.record.bytes.between.snapshots` of replayed records, or
`metadata.log.max.snapshot.interval.ms` after the last snapshot when anything was replayed since,
the image is written as a snapshot and the log prefix it covers is dropped (Kafka's
SnapshotGenerator), so the log does not grow without bound.

A snapshot's data is v2 record batches of framed metadata records, the format of Kafka's
`.checkpoint` files.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from gregor.metadata.image import MetadataImage
from gregor.metadata.loader import MetadataLoader
from gregor.metadata.record_codec import MetadataRecordError, decode_metadata_record, encode_metadata_record
from gregor.metadata.snapshot import image_records
from gregor.protocol.messages import Message
from gregor.raft.client import RaftClient
from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records

log = logging.getLogger("gregor.metadata")

RECORDS_PER_BATCH = 1000
MAX_SNAPSHOT_BATCH_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class SnapshotPolicy:
    max_bytes_between_snapshots: int = 20 * 1024 * 1024
    max_interval_ms: int = 3_600_000


def encode_snapshot(image: MetadataImage, now_ms: int) -> bytes:
    return encode_records(image_records(image), now_ms)


def encode_records(records: Sequence[Message], now_ms: int) -> bytes:
    """Metadata records as v2 batches of framed records (a snapshot's or bootstrap.checkpoint's data)."""
    batches = []
    for start in range(0, len(records), RECORDS_PER_BATCH):
        builder = BatchBuilder()
        for record in records[start:start + RECORDS_PER_BATCH]:
            builder.append(now_ms, None, encode_metadata_record(record))
        batches.append(builder.build())
    return b"".join(batches)


def decode_snapshot(data: bytes) -> list[Message]:
    """The records of a snapshot; ValueError (MetadataRecordError for a bad record) if it is not one."""
    batches, end = scan_batches(data)
    if end != len(data):
        raise ValueError(f"the metadata snapshot has {len(data) - end} trailing bytes that are not a batch")
    records = []
    for header, pos in batches:
        for record in decode_records(data, pos, header, MAX_SNAPSHOT_BATCH_BYTES):
            if record.value is None:
                raise MetadataRecordError(f"the metadata snapshot's record at offset {record.offset} has no value")
            records.append(decode_metadata_record(record.value))
    return records


class MetadataReplay:
    def __init__(self, raft: RaftClient, loader: MetadataLoader, policy: SnapshotPolicy) -> None:
        self.raft = raft
        self.loader = loader
        self.policy = policy
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms: int | None = None  # the interval counts from the first catch-up

    def catch_up(self, now_ms: int) -> None:
        """Replay what was committed since the last call; snapshot when the policy says so."""
        snapshot = self.raft.log.latest_snapshot() \
            if self.raft.log.start_offset > self.loader.image.highest_offset + 1 else None
        if snapshot is not None:
            self.loader.load_snapshot(decode_snapshot(snapshot.data), snapshot.id.end_offset, snapshot.id.epoch)
            log.info("metadata image loaded from snapshot %d-%d", snapshot.id.end_offset, snapshot.id.epoch)
            self._bytes_since_snapshot = 0
        entries = list(self.raft.committed(self.loader.image.highest_offset + 1))
        if entries:
            self._bytes_since_snapshot += sum(len(entry.value) for entry in entries)
            self.loader.load(entries)
        self._maybe_snapshot(now_ms)

    def _maybe_snapshot(self, now_ms: int) -> None:
        if self._last_snapshot_ms is None:
            self._last_snapshot_ms = now_ms
        if not self._bytes_since_snapshot:
            return
        if (self._bytes_since_snapshot < self.policy.max_bytes_between_snapshots
                and now_ms - self._last_snapshot_ms < self.policy.max_interval_ms):
            return
        end_offset = self.loader.image.highest_offset + 1
        if end_offset <= self.raft.log.start_offset or end_offset > self.raft.high_watermark:
            return
        snapshot_id = self.raft.create_snapshot(end_offset, encode_snapshot(self.loader.image, now_ms))
        log.info("metadata snapshot %d-%d written after %d bytes of records; the log now starts at %d",
                 snapshot_id.end_offset, snapshot_id.epoch, self._bytes_since_snapshot, self.raft.log.start_offset)
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = now_ms
