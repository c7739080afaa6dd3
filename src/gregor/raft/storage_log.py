"""The ReplicatedLog of `__cluster_metadata-0` on disk, over a `gregor.storage.Log`.

The directory is `<metadata.log.dir or the first log.dirs entry>/__cluster_metadata-0`, with
Kafka's segment layout, and the quorum-state file beside the segments. The storage log's own
high watermark is not trusted after a restart: raft decides what is committed.
"""

from __future__ import annotations

import os

from gregor.raft.replicated_log import AppendResult, ReplicatedLog
from gregor.storage.log import Log, LogConfig

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
MAX_BATCH_BYTES = 8 * 1024 * 1024
METADATA_LOG_CONFIG = LogConfig(max_message_bytes=MAX_BATCH_BYTES + 1024, retention_ms=-1, retention_bytes=-1)


def metadata_partition_dir(metadata_log_dir: str) -> str:
    return os.path.join(metadata_log_dir, METADATA_PARTITION_DIR)


class StorageLog(ReplicatedLog):
    def __init__(self, directory: str, now_ms: int, config: LogConfig = METADATA_LOG_CONFIG) -> None:
        self.directory = directory
        self.log = Log(directory, config, now_ms)
        self._high_watermark = 0
        self.log.high_watermark = 0
        self._last_epoch = self._scan_last_epoch()

    @classmethod
    def open(cls, metadata_log_dir: str, now_ms: int) -> StorageLog:
        """Open (creating it if needed) `__cluster_metadata-0` under `metadata_log_dir`."""
        return cls(metadata_partition_dir(metadata_log_dir), now_ms)

    def _scan_last_epoch(self) -> int:
        for segment in reversed(self.log.segments):
            last = None
            for _, header in segment.batches():
                last = header
            if last is not None:
                return last.partition_leader_epoch
        return 0

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_fetched_epoch(self) -> int:
        return self._last_epoch

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> None:
        self._high_watermark = max(self._high_watermark, min(offset, self.end_offset))
        self.log.high_watermark = self._high_watermark

    def append_as_leader(self, batches: bytes, epoch: int, now_ms: int) -> AppendResult:
        info = self.log.append_as_leader(batches, epoch, now_ms)
        self._last_epoch = epoch
        return AppendResult(info.first_offset, info.last_offset)

    def read(self, start_offset: int, max_offset: int, max_bytes: int) -> bytes:
        return self.log.read_bytes(start_offset, max_bytes, max_offset)

    def truncate_to(self, offset: int) -> None:
        self.log.truncate_to(offset)
        self._high_watermark = min(self._high_watermark, self.end_offset)
        self.log.high_watermark = self._high_watermark
        self._last_epoch = self._scan_last_epoch()

    def flush(self, now_ms: int) -> None:
        self.log.flush(now_ms)

    def close(self) -> None:
        self.log.close()
