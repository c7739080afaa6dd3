"""Log compaction (cleanup.policy=compact): Kafka's LogCleaner and LogCleanerManager.

The cleaner has no thread or clock of its own: the broker passes `now_ms` and runs the work.

Which thread calls what:

| call                                   | thread                      | does                                  |
| -------------------------------------- | --------------------------- | ------------------------------------- |
| `LogCleaner.begin(logs, now_ms)`       | the one appending (loop)    | picks the filthiest log, snapshots it |
| `CleaningTask.run()`                   | a worker thread             | maps keys, writes `.cleaned` segments |
| `LogCleaner.finish(task, now_ms)`      | the loop, after `run` ends  | swaps segments in, moves checkpoint   |
| `LogCleaner.abort(log)`                | the loop                    | cancels a running task of that log    |

`finish` must be called once per task whether `run` returned, raised or never ran (a
`try/finally` around `run`). While `run` works, the loop keeps appending to the active segment
and reading any segment: the task reads old segments through duplicated descriptors and only
`finish` touches the log. What changed meanwhile is respected: segments deleted by retention or
DeleteRecords are not swapped, a truncation voids the whole task.

Choosing a log follows Kafka. The dirty section starts at the log's `cleaner_offset` (the
`cleaner-offset-checkpoint` entry; the log start offset when that is outside the log) and ends at
the first uncleanable offset, rounded down to a segment base: the active segment's base, the last
stable offset (nothing above it is cleaned: an open transaction may still abort), or the first dirty segment whose largest timestamp is
within min.compaction.lag.ms of now. The dirty ratio is dirty bytes / (clean + dirty bytes);
a log is cleanable when the ratio is above min.cleanable.dirty.ratio (strictly, as Kafka), or
when it has dirty bytes and a dirty segment's first batch is older than max.compaction.lag.ms.
The cleanable log with the highest ratio goes first.

Transactions: aborted batches are removed and markers kept as Kafka keeps them
(`gregor.storage.cleaned_txns`). Where Gregor differs: a log whose cleaning fails stays uncleanable until it is reopened (Kafka:
until the broker restarts or the log moves); one offset map per running task, sized by
`CleanerConfig.dedupe_buffer_size`.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Iterable, NamedTuple

from gregor.storage.cleaning import CleanerConfig, CleanerError, CleanerStats, CleaningAborted, CleaningTask
from gregor.storage.log import Log

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"

__all__ = ["CLEANER_OFFSET_CHECKPOINT", "CleanerConfig", "CleanerError", "CleanerStats", "CleaningAborted",
           "CleaningTask", "Dirtiness", "LogCleaner", "dirtiness"]


class Dirtiness(NamedTuple):
    """Kafka's LogToClean: where a log's dirty section lies and how much of the log it is."""

    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    overdue: bool

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    def cleanable(self, min_ratio: float) -> bool:
        return (self.overdue and self.dirty_bytes > 0) or self.ratio > min_ratio


def dirtiness(log: Log, now_ms: int) -> Dirtiness:
    """The dirty section of `log` as of `now_ms` (see the module docstring)."""
    config = log.config
    segments = log.segments
    bases = [segment.base_offset for segment in segments]
    first_dirty = log.cleaner_offset
    if not log.log_start_offset <= first_dirty <= log.log_end_offset:
        first_dirty = log.log_start_offset
    dirty_start = max(bisect_right(bases, first_dirty) - 1, 0)
    uncleanable = min(log.last_stable_offset, bases[-1])
    if config.min_compaction_lag_ms > 0:
        for segment in segments[dirty_start:-1]:
            if segment.largest_timestamp > now_ms - config.min_compaction_lag_ms:
                uncleanable = min(uncleanable, segment.base_offset)
                break
    dirty_end = max(bisect_right(bases, uncleanable) - 1, 0)
    first_uncleanable = bases[dirty_end]
    clean_bytes = sum(segment.size for segment in segments[:dirty_start])
    dirty_bytes = sum(segment.size for segment in segments[dirty_start:dirty_end])
    first_timestamps = [s.rolling_base_timestamp for s in segments[dirty_start:-1] if s.rolling_base_timestamp > 0]
    overdue = bool(first_timestamps) and min(first_timestamps) < now_ms - max(config.max_compaction_lag_ms, 0)
    return Dirtiness(first_dirty, first_uncleanable, clean_bytes, dirty_bytes, overdue)


class LogCleaner:
    """Chooses logs to compact and swaps the results in; one task per log at a time."""

    def __init__(self, config: CleanerConfig | None = None) -> None:
        self.config = config or CleanerConfig()
        self.in_progress: dict[Log, CleaningTask] = {}
        self.uncleanable: set[Log] = set()

    def begin(self, logs: Iterable[Log], now_ms: int) -> CleaningTask | None:
        """The task cleaning the filthiest cleanable compacted log, or None when none qualifies."""
        best: tuple[float, Log, Dirtiness] | None = None
        for log in logs:
            if not log.config.compacts or log in self.in_progress or log in self.uncleanable:
                continue
            found = dirtiness(log, now_ms)
            if found.cleanable(log.config.min_cleanable_dirty_ratio) and (best is None or found.ratio > best[0]):
                best = (found.ratio, log, found)
        if best is None:
            return None
        ratio, log, found = best
        task = CleaningTask(log, found.first_dirty, found.first_uncleanable, ratio, self.config, now_ms)
        self.in_progress[log] = task
        return task

    def finish(self, task: CleaningTask, now_ms: int) -> CleanerStats | None:
        """Swap the task's segments in and advance the log's `cleaner_offset`; its stats, or None
        when the task did not complete, was aborted, or its log was truncated meanwhile (the
        `.cleaned` files are then deleted). A task that failed on its own marks the log uncleanable.
        An OSError from a rename propagates (a storage failure of the log dir); whatever files it
        leaves, the next load completes or undoes the swap.
        """
        log = task.log
        self.in_progress.pop(log, None)
        task.close_sources()
        voided = task.cancelled or log.truncations != task.truncations
        if not task.completed or voided:
            task.discard()
            if task.failed and not voided:
                self.uncleanable.add(log)
            return None
        for old, new in task.replacements:
            if not log.replace_segments(old, new, now_ms):
                new.destroy()
        log.cleaner_offset = task.end_offset
        return task.stats

    def abort(self, log: Log) -> None:
        """Stop cleaning `log` (being deleted or closed): a running task stops at its next batch and
        its output is discarded by `finish`; the log is forgotten."""
        task = self.in_progress.get(log)
        if task is not None:
            task.cancel()
        self.uncleanable.discard(log)
