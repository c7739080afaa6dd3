"""The partition logs' background work (Kafka's LogManager scheduler tasks and LogCleaner threads).

Housekeeping runs on the event loop every second (or every log.retention.check.interval.ms when
that is shorter): flushes due by flush.ms, retention every log.retention.check.interval.ms,
recovery-point and log-start checkpoints every log.flush.offset.checkpoint.interval.ms, high
watermarks every replica.high.watermark.checkpoint.interval.ms. The checkpoints' offsets are
taken on the loop and the files written and fsynced on a thread of their own: an fsync waits for
the file system's journal (up to tens of milliseconds while the logs are being written), which
the requests on the loop would otherwise wait out too. With log.cleaner.enable, each of
log.cleaner.threads cleaners compacts one log at a time: the key map and the rewrite run on a
worker thread, choosing the log and swapping its cleaned segments in on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.config import BrokerConfig
from gregor.storage.checkpoint import Checkpoint, write_checkpoints
from gregor.storage.cleaning import CleanerConfig, CleaningAborted
from gregor.storage.log_manager import LogManager

log = logging.getLogger("gregor.broker")

HOUSEKEEPING_INTERVAL_S = 1.0


def cleaner_config(config: BrokerConfig) -> CleanerConfig:
    """The log.cleaner.* keys, with the buffers shared among the cleaner threads as in Kafka."""
    threads = config.get("log.cleaner.threads")
    return CleanerConfig(dedupe_buffer_size=config.get("log.cleaner.dedupe.buffer.size") // threads,
                         dedupe_buffer_load_factor=config.get("log.cleaner.io.buffer.load.factor"),
                         io_buffer_size=config.get("log.cleaner.io.buffer.size") // threads)


class LogMaintenance:
    def __init__(self, config: BrokerConfig, clock: Clock = wall_clock_ms) -> None:
        self._config = config
        self._clock = clock
        self._housekeeping: asyncio.Task[None] | None = None
        self._cleaners: list[asyncio.Task[None]] = []
        self._cleaner_pool: ThreadPoolExecutor | None = None
        self._checkpoint_writer = ThreadPoolExecutor(1, thread_name_prefix="checkpoint-writer")

    def start(self, logs: LogManager) -> None:
        self._housekeeping = asyncio.ensure_future(self._housekeeping_loop(logs))
        if self._config.get("log.cleaner.enable"):
            self._cleaners = [asyncio.ensure_future(self._cleaner_loop(logs))
                              for _ in range(self._config.get("log.cleaner.threads"))]

    def stop(self) -> None:
        """Cancel the loops and wait for a cleaning in progress on a worker thread to end."""
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        for cleaner in self._cleaners:
            cleaner.cancel()
        if self._cleaner_pool is not None:
            self._cleaner_pool.shutdown(wait=True, cancel_futures=True)
        self._checkpoint_writer.shutdown(wait=True)  # before the shutdown checkpoint rewrites the files

    async def _housekeeping_loop(self, logs: LogManager) -> None:
        config = self._config
        retention_every = config.get("log.retention.check.interval.ms")
        checkpoint_every = config.get("log.flush.offset.checkpoint.interval.ms")
        high_watermarks_every = config.get("replica.high.watermark.checkpoint.interval.ms")
        last_retention = last_checkpoint = last_high_watermarks = self._clock()
        while True:
            await asyncio.sleep(HOUSEKEEPING_INTERVAL_S if retention_every >= 1000 else retention_every / 1000)
            current = self._clock()
            try:
                logs.flush_dirty(current)
                if current - last_retention >= retention_every:
                    last_retention = current
                    logs.cleanup(current)
                files: list[Checkpoint] = []
                if current - last_checkpoint >= checkpoint_every:
                    last_checkpoint = last_high_watermarks = current
                    files = logs.checkpoints()
                elif current - last_high_watermarks >= high_watermarks_every:
                    last_high_watermarks = current
                    files = logs.high_watermark_checkpoints()
                if files:
                    await asyncio.get_running_loop().run_in_executor(self._checkpoint_writer, write_checkpoints, files)
            except OSError:
                log.exception("housekeeping failed; will retry")

    async def _cleaner_loop(self, logs: LogManager) -> None:
        """One cleaner thread's worth of compaction: the key map and rewrite run on a worker
        thread; choosing the log and swapping segments in happen here, on the loop."""
        if self._cleaner_pool is None:
            self._cleaner_pool = ThreadPoolExecutor(self._config.get("log.cleaner.threads"),
                                                    thread_name_prefix="log-cleaner")
        loop = asyncio.get_running_loop()
        backoff = self._config.get("log.cleaner.backoff.ms") / 1000
        while True:
            task = logs.begin_cleaning(self._clock())
            if task is None:
                await asyncio.sleep(backoff)
                continue
            try:
                await loop.run_in_executor(self._cleaner_pool, task.run)
            except CleaningAborted:
                pass
            except Exception as error:  # noqa: BLE001 - finish_cleaning marks the log uncleanable
                log.warning("cleaning %s-%d failed; the log is not cleaned again until restart: %s",
                            task.log.topic, task.log.partition, error)
            finally:
                try:
                    logs.finish_cleaning(task, self._clock())
                except OSError:
                    log.exception("swapping cleaned segments of %s-%d failed", task.log.topic, task.log.partition)
