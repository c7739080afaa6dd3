"""All partition logs of a broker across its `log.dirs`, with checkpoints and clean shutdown.

A log dir holds `topic-N` partition directories, the recovery-point and log-start-offset
checkpoints, and `.kafka_cleanshutdown` while the broker is stopped cleanly: its absence at
start means an unclean stop, so every log is recovered from its recovery point.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid

from gregor.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, read_checkpoint, write_checkpoint,
)
from gregor.storage.log import Log, LogConfig, parse_partition_dir

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
DELETE_SUFFIX = "-delete"

log = logging.getLogger("gregor.storage")


class LogManager:
    def __init__(self, log_dirs: list[str], now_ms: int) -> None:
        self.log_dirs = log_dirs
        self.logs: dict[tuple[str, int], Log] = {}
        self._dir_of: dict[tuple[str, int], str] = {}
        self.clean_shutdown = True
        for directory in log_dirs:
            os.makedirs(directory, exist_ok=True)

    def load(self, configs: dict[tuple[str, int], LogConfig], default: LogConfig, now_ms: int,
             skip: frozenset[str] = frozenset()) -> None:
        """Open every partition directory, recovering when the last stop was unclean."""
        for directory in self.log_dirs:
            marker = os.path.join(directory, CLEAN_SHUTDOWN_FILE)
            clean = os.path.exists(marker)
            self.clean_shutdown = self.clean_shutdown and clean
            recovery_points = read_checkpoint(os.path.join(directory, RECOVERY_POINT_CHECKPOINT))
            start_offsets = read_checkpoint(os.path.join(directory, LOG_START_OFFSET_CHECKPOINT))
            for name in sorted(os.listdir(directory)):
                path = os.path.join(directory, name)
                if not os.path.isdir(path) or name in skip:
                    continue
                if name.endswith(DELETE_SUFFIX):
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                key = parse_partition_dir(name)
                if key is None:
                    continue
                partition_log = Log(path, configs.get(key, default), now_ms,
                                    recovery_point=recovery_points.get(key, 0),
                                    log_start_offset=start_offsets.get(key, 0), clean_shutdown=clean)
                if partition_log.truncated_bytes_at_load:
                    log.warning("recovered %s-%d: truncated %d bytes of torn or corrupt batches",
                                key[0], key[1], partition_log.truncated_bytes_at_load)
                self.logs[key] = partition_log
                self._dir_of[key] = directory
            if clean:
                os.remove(marker)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def create_log(self, topic: str, partition: int, config: LogConfig, now_ms: int) -> Log:
        key = (topic, partition)
        existing = self.logs.get(key)
        if existing is not None:
            return existing
        directory = min(self.log_dirs, key=lambda d: sum(1 for v in self._dir_of.values() if v == d))
        partition_log = Log(os.path.join(directory, f"{topic}-{partition}"), config, now_ms)
        self.logs[key] = partition_log
        self._dir_of[key] = directory
        return partition_log

    def delete_log(self, topic: str, partition: int) -> None:
        """Rename to `<dir>.<uuid>-delete` first, as Kafka does, then remove."""
        key = (topic, partition)
        partition_log = self.logs.pop(key, None)
        directory = self._dir_of.pop(key, None)
        if partition_log is None or directory is None:
            return
        for segment in partition_log.segments:
            segment.close()
        doomed = os.path.join(directory, f"{topic}-{partition}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
        os.replace(partition_log.directory, doomed)
        shutil.rmtree(doomed, ignore_errors=True)

    def all_logs(self) -> list[Log]:
        return list(self.logs.values())

    def checkpoint(self) -> None:
        for directory in self.log_dirs:
            keys = [k for k, d in self._dir_of.items() if d == directory]
            write_checkpoint(os.path.join(directory, RECOVERY_POINT_CHECKPOINT),
                             {k: self.logs[k].recovery_point for k in keys})
            write_checkpoint(os.path.join(directory, LOG_START_OFFSET_CHECKPOINT),
                             {k: self.logs[k].log_start_offset for k in keys})

    def cleanup(self, now_ms: int) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        deleted = 0
        for (topic, partition), partition_log in list(self.logs.items()):
            count = partition_log.apply_retention(now_ms)
            if count:
                log.info("retention deleted %d segment(s) of %s-%d; log start offset now %d",
                         count, topic, partition, partition_log.log_start_offset)
            deleted += count
        return deleted

    def flush_dirty(self, now_ms: int) -> None:
        for partition_log in self.logs.values():
            partition_log.flush_if_due(now_ms)
            partition_log.checkpoint_flush()

    def shutdown(self, now_ms: int) -> None:
        """Flush everything, checkpoint, and leave the clean-shutdown marker."""
        for partition_log in self.logs.values():
            partition_log.flush(now_ms)
            partition_log.close()
        self.checkpoint()
        for directory in self.log_dirs:
            with open(os.path.join(directory, CLEAN_SHUTDOWN_FILE), "w", encoding="utf-8"):
                pass
