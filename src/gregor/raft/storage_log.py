"""The ReplicatedLog of `__cluster_metadata-0` on disk, over a `gregor.storage.Log`.

The directory is `<metadata.log.dir or the first log.dirs entry>/__cluster_metadata-0`, with
Kafka's segment layout, and the quorum-state file beside the segments. Snapshots sit beside
them too, as `<20-digit end offset>-<10-digit epoch>.checkpoint`, written atomically. The
storage log's own high watermark is not trusted after a restart: raft decides what is
committed (at least everything a snapshot covers).
"""

from __future__ import annotations

import os

from gregor.raft.epoch_cache import EpochCache
from gregor.raft.replicated_log import AppendResult, ReplicatedLog, Snapshot, SnapshotId
from gregor.storage.log import Log, LogConfig

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
MAX_BATCH_BYTES = 8 * 1024 * 1024
METADATA_LOG_CONFIG = LogConfig(max_message_bytes=MAX_BATCH_BYTES + 1024, retention_ms=-1, retention_bytes=-1)
SNAPSHOT_SUFFIX = ".checkpoint"


def snapshot_file_name(snapshot_id: SnapshotId) -> str:
    return f"{snapshot_id.end_offset:020d}-{snapshot_id.epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_file_name(name: str) -> SnapshotId | None:
    stem = name[:-len(SNAPSHOT_SUFFIX)] if name.endswith(SNAPSHOT_SUFFIX) else ""
    offset, _, epoch = stem.partition("-")
    if len(offset) != 20 or len(epoch) != 10 or not (offset.isdigit() and epoch.isdigit()):
        return None
    return SnapshotId(int(offset), int(epoch))


def metadata_partition_dir(metadata_log_dir: str) -> str:
    return os.path.join(metadata_log_dir, METADATA_PARTITION_DIR)


class StorageLog(ReplicatedLog):
    def __init__(self, directory: str, now_ms: int, config: LogConfig = METADATA_LOG_CONFIG) -> None:
        self.directory = directory
        self.log = Log(directory, config, now_ms)
        self._high_watermark = 0
        self.log.high_watermark = 0
        self._now_ms = now_ms
        self._snapshot_id = self._find_latest_snapshot()
        self._epochs = EpochCache()
        self._scan_epochs()

    @classmethod
    def open(cls, metadata_log_dir: str, now_ms: int) -> StorageLog:
        """Open (creating it if needed) `__cluster_metadata-0` under `metadata_log_dir`."""
        return cls(metadata_partition_dir(metadata_log_dir), now_ms)

    def _scan_epochs(self) -> None:
        self._epochs.clear()
        for segment in self.log.segments:
            for _, header in segment.batches():
                self._epochs.assign(header.partition_leader_epoch, header.base_offset)

    def _find_latest_snapshot(self) -> SnapshotId | None:
        found = [parse_snapshot_file_name(name) for name in os.listdir(self.directory)]
        return max((f for f in found if f is not None), default=None)

    def _base(self) -> tuple[int, int]:
        return (self._snapshot_id.epoch if self._snapshot_id else 0, self.start_offset)

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_fetched_epoch(self) -> int:
        return self._epochs.last_epoch(self._base()[0])

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> None:
        self._high_watermark = max(self._high_watermark, min(offset, self.end_offset))
        self.log.high_watermark = self._high_watermark

    def append_as_leader(self, batches: bytes, epoch: int, now_ms: int) -> AppendResult:
        self._now_ms = now_ms
        info = self.log.append_as_leader(batches, epoch, now_ms)
        self._epochs.assign(epoch, info.first_offset)
        return AppendResult(info.first_offset, info.last_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self._epochs.end_offset_for(epoch, self.end_offset, self._base())

    def read(self, start_offset: int, max_offset: int, max_bytes: int) -> bytes:
        return self.log.read_bytes(start_offset, max_bytes, max_offset)

    def truncate_to(self, offset: int) -> None:
        self.log.truncate_to(offset)
        self._high_watermark = min(self._high_watermark, self.end_offset)
        self.log.high_watermark = self._high_watermark
        self._epochs.truncate_from_end(self.end_offset)

    def latest_snapshot(self) -> Snapshot | None:
        if self._snapshot_id is None:
            return None
        with open(os.path.join(self.directory, snapshot_file_name(self._snapshot_id)), "rb") as handle:
            return Snapshot(self._snapshot_id, handle.read())

    def store_snapshot(self, snapshot: Snapshot) -> None:
        if snapshot.id.end_offset > self._high_watermark:
            raise ValueError(f"a snapshot at {snapshot.id.end_offset} is above the high watermark "
                             f"{self._high_watermark}")
        if self._snapshot_id is not None and snapshot.id.end_offset <= self._snapshot_id.end_offset:
            return
        self._write_snapshot(snapshot)

    def _write_snapshot(self, snapshot: Snapshot) -> None:
        path = os.path.join(self.directory, snapshot_file_name(snapshot.id))
        temporary = path + ".part"
        with open(temporary, "wb") as handle:
            handle.write(snapshot.data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        previous, self._snapshot_id = self._snapshot_id, snapshot.id
        if previous is not None:
            os.remove(os.path.join(self.directory, snapshot_file_name(previous)))

    def delete_before_snapshot(self) -> int:
        if self._snapshot_id is not None and self._snapshot_id.end_offset > self.start_offset:
            self.log.delete_records_before(min(self._snapshot_id.end_offset, self.log.high_watermark))
            self._epochs.truncate_from_start(self.start_offset)
        return self.start_offset

    def install_snapshot(self, snapshot: Snapshot) -> None:
        self._write_snapshot(snapshot)
        self.log._truncate_fully_and_start_at(snapshot.id.end_offset, self._now_ms)
        self._epochs.clear()
        self._high_watermark = snapshot.id.end_offset

    def flush(self, now_ms: int) -> None:
        self.log.flush(now_ms)

    def close(self) -> None:
        self.log.close()
