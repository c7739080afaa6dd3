"""All partition logs of a broker across its `log.dirs`, with checkpoints and clean shutdown.

A log dir holds `topic-N` partition directories, the `recovery-point-offset-checkpoint`,
`log-start-offset-checkpoint`, `replication-offset-checkpoint` (high watermarks, which a
restarted replica must not take from its log end: records past it may never have been
committed) and `cleaner-offset-checkpoint` files, and `.kafka_cleanshutdown`
while the broker is stopped cleanly. Its absence at start means an unclean stop: every log is then recovered from its
checkpointed recovery point. The marker is removed once the logs are loaded.

Periodic work is plain methods the broker calls with its clock: `cleanup` (retention),
`flush_dirty` (flush.ms), `checkpoint`, and compaction: `begin_cleaning` on the loop, the
returned task's `run` on a worker thread, then `finish_cleaning` on the loop (or `clean_once`
for all three on one thread); see `gregor.storage.cleaner`.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from typing import Collection, Mapping

from gregor.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, Checkpoint, read_checkpoint,
    write_checkpoints,
)
from gregor.storage.cleaner import CLEANER_OFFSET_CHECKPOINT, CleanerConfig, CleanerStats, CleaningTask, LogCleaner
from gregor.storage.log import Log, parse_partition_dir
from gregor.storage.log_config import LogConfig

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
DELETE_SUFFIX = "-delete"

log = logging.getLogger("gregor.storage")


class LogManager:
    """Opens every partition log found in `log_dirs` at construction.

    `topic_configs` gives per-topic configs (others get `default_config`); directories named in
    `skip` (e.g. `__cluster_metadata-0`, owned by raft) are left alone. `cleaner_config` holds the
    broker's log.cleaner.* settings.
    """

    def __init__(self, log_dirs: list[str], default_config: LogConfig, now_ms: int,
                 topic_configs: Mapping[str, LogConfig] | None = None, skip: Collection[str] = (),
                 cleaner_config: CleanerConfig | None = None) -> None:
        self.log_dirs = list(log_dirs)
        self.default_config = default_config
        self.logs: dict[tuple[str, int], Log] = {}
        self._high_watermarks: dict[tuple[str, int], int | None] = {}
        self._dir_of: dict[tuple[str, int], str] = {}
        self.cleaner = LogCleaner(cleaner_config)
        self.clean_shutdown = True
        topic_configs = topic_configs or {}
        for directory in self.log_dirs:
            os.makedirs(directory, exist_ok=True)
            self._load_dir(directory, topic_configs, skip, now_ms)

    def _load_dir(self, directory: str, topic_configs: Mapping[str, LogConfig], skip: Collection[str],
                  now_ms: int) -> None:
        marker = os.path.join(directory, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        self.clean_shutdown = self.clean_shutdown and clean
        recovery_points = read_checkpoint(os.path.join(directory, RECOVERY_POINT_CHECKPOINT))
        start_offsets = read_checkpoint(os.path.join(directory, LOG_START_OFFSET_CHECKPOINT))
        cleaner_offsets = read_checkpoint(os.path.join(directory, CLEANER_OFFSET_CHECKPOINT))
        high_watermarks_path = os.path.join(directory, REPLICATION_OFFSET_CHECKPOINT)
        high_watermarks = read_checkpoint(high_watermarks_path) if os.path.exists(high_watermarks_path) else None
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
            partition_log = Log(path, topic_configs.get(key[0], self.default_config), now_ms,
                                recovery_point=recovery_points.get(key, 0),
                                log_start_offset=start_offsets.get(key, 0), clean_shutdown=clean)
            partition_log.cleaner_offset = cleaner_offsets.get(key, 0)
            if partition_log.truncated_bytes_at_load:
                log.warning("recovered %s: truncated %d bytes of torn or corrupt batches",
                            name, partition_log.truncated_bytes_at_load)
            self.logs[key] = partition_log
            self._high_watermarks[key] = None if high_watermarks is None else high_watermarks.get(key, 0)
            self._dir_of[key] = directory
        if clean:
            os.remove(marker)

    def checkpointed_high_watermark(self, topic: str, partition: int) -> int | None:
        """The high watermark the log had at the last checkpoint: 0 for a log that was not in it,
        None when the log dir has no such checkpoint (data of a single-replica broker from
        before it was written, where the log end is the high watermark)."""
        return self._high_watermarks.get((topic, partition), 0)

    def high_watermark_checkpoints(self) -> list[Checkpoint]:
        """`replication-offset-checkpoint` of every log dir, as it would be written now
        (`replica.high.watermark.checkpoint.interval.ms`); `write_checkpoints` may write it on
        another thread, since writing and fsyncing the files can stall for milliseconds."""
        return [(os.path.join(directory, REPLICATION_OFFSET_CHECKPOINT),
                 {key: self.logs[key].high_watermark for key in self._keys_in(directory)})
                for directory in self.log_dirs]

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def create_log(self, topic: str, partition: int, config: LogConfig | None, now_ms: int) -> Log:
        """The log of `topic-partition`, created in the log dir holding the fewest logs if new."""
        key = (topic, partition)
        existing = self.logs.get(key)
        if existing is not None:
            return existing
        counts = {directory: 0 for directory in self.log_dirs}
        for directory in self._dir_of.values():
            counts[directory] += 1
        directory = min(self.log_dirs, key=counts.__getitem__)
        partition_log = Log(os.path.join(directory, f"{topic}-{partition}"), config or self.default_config, now_ms)
        self.logs[key] = partition_log
        self._dir_of[key] = directory
        return partition_log

    def delete_log(self, topic: str, partition: int) -> bool:
        """Rename the directory to `<topic>-<partition>.<uuid hex>-delete`, then remove it.

        A crash between the two leaves a `-delete` directory that the next start removes.
        Returns whether the log existed.
        """
        key = (topic, partition)
        partition_log = self.logs.pop(key, None)
        self._high_watermarks.pop(key, None)
        directory = self._dir_of.pop(key, None)
        if partition_log is None or directory is None:
            return False
        self.cleaner.abort(partition_log)
        partition_log.close()
        doomed = os.path.join(directory, f"{topic}-{partition}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
        os.replace(partition_log.directory, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        return True

    def all_logs(self) -> list[Log]:
        return list(self.logs.values())

    def logs_in(self, directory: str) -> dict[tuple[str, int], Log]:
        """The partition logs held in one log dir (DescribeLogDirs reports them per dir)."""
        return {key: self.logs[key] for key in self._keys_in(directory)}

    def _keys_in(self, directory: str) -> list[tuple[str, int]]:
        return [key for key, owner in self._dir_of.items() if owner == directory]

    def checkpoint(self) -> None:
        """Write the offset checkpoint files of every log dir."""
        write_checkpoints(self.checkpoints())

    def checkpoints(self) -> list[Checkpoint]:
        """What `checkpoint` writes, taken now (see `high_watermark_checkpoints`)."""
        files: list[Checkpoint] = []
        for directory in self.log_dirs:
            keys = self._keys_in(directory)
            files.append((os.path.join(directory, RECOVERY_POINT_CHECKPOINT),
                          {key: self.logs[key].recovery_point for key in keys}))
            files.append((os.path.join(directory, LOG_START_OFFSET_CHECKPOINT),
                          {key: self.logs[key].log_start_offset for key in keys}))
            files.append(self._cleaner_checkpoint(directory))
        return files + self.high_watermark_checkpoints()

    def _write_cleaner_checkpoint(self, directory: str) -> None:
        write_checkpoints([self._cleaner_checkpoint(directory)])

    def _cleaner_checkpoint(self, directory: str) -> Checkpoint:
        """`cleaner-offset-checkpoint`: where the dirty section of each compacted log starts."""
        return (os.path.join(directory, CLEANER_OFFSET_CHECKPOINT),
                {key: self.logs[key].cleaner_offset for key in self._keys_in(directory)
                 if self.logs[key].config.compacts})

    # -- compaction

    def begin_cleaning(self, now_ms: int) -> CleaningTask | None:
        """On the loop: the task compacting the filthiest log, for `run` on a worker thread; or None."""
        return self.cleaner.begin(self.logs.values(), now_ms)

    def finish_cleaning(self, task: CleaningTask, now_ms: int) -> CleanerStats | None:
        """On the loop, once `task.run` has returned or raised: swap the cleaned segments in, write
        the log dir's cleaner checkpoint and log one line. The stats, or None if nothing changed."""
        stats = self.cleaner.finish(task, now_ms)
        key = (task.log.topic, task.log.partition)
        if stats is None or self.logs.get(key) is not task.log:
            return stats
        self._write_cleaner_checkpoint(self._dir_of[key])
        log.info("%s", stats.summary())
        return stats

    def clean_once(self, now_ms: int) -> CleanerStats | None:
        """One cleaning on the calling thread (tests, tools): begin, run, finish."""
        task = self.begin_cleaning(now_ms)
        if task is None:
            return None
        try:
            task.run()
        finally:
            stats = self.finish_cleaning(task, now_ms)
        return stats

    def cleanup(self, now_ms: int) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        deleted = 0
        for (topic, partition), partition_log in self.logs.items():
            count = partition_log.apply_retention(now_ms)
            if count:
                log.info("retention deleted %d segment(s) of %s-%d; log start offset now %d",
                         count, topic, partition, partition_log.log_start_offset)
            deleted += count
        return deleted

    def flush_dirty(self, now_ms: int) -> None:
        """flush.ms for every log."""
        for partition_log in self.logs.values():
            partition_log.flush_if_due(now_ms)

    def shutdown(self, now_ms: int) -> None:
        """Stop cleaning, flush and close every log, checkpoint, and leave the clean-shutdown marker."""
        for partition_log in self.logs.values():
            self.cleaner.abort(partition_log)
            partition_log.flush(now_ms)
            partition_log.close()
        self.checkpoint()
        for directory in self.log_dirs:
            with open(os.path.join(directory, CLEAN_SHUTDOWN_FILE), "w", encoding="utf-8") as handle:
                handle.flush()
                os.fsync(handle.fileno())
