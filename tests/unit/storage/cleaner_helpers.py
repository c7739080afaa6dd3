"""Keyed batches, log contents and one-call cleaning for the compaction tests."""

from __future__ import annotations

from typing import Sequence

from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records
from gregor.storage.cleaner import CleanerConfig, CleanerStats, LogCleaner
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW

Entry = tuple[int, bytes | None, bytes | None]


def keyed(pairs: Sequence[tuple[bytes | None, bytes | None]], compression: int = 0, timestamp: int = NOW,
          producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """One batch of (key, value) records, all stamped `timestamp`."""
    builder = BatchBuilder(compression=compression, producer_id=producer_id, producer_epoch=producer_epoch,
                           base_sequence=base_sequence)
    for key, value in pairs:
        builder.append(timestamp, key, value)
    return builder.build()


def compacted(directory: str, now_ms: int = NOW, **config: object) -> Log:
    settings: dict = {"cleanup_policy": "compact", "segment_bytes": 600, "min_cleanable_dirty_ratio": 0.0}
    settings.update(config)
    return Log(directory, LogConfig(**settings), now_ms)


def append(log: Log, pairs: Sequence[tuple[bytes | None, bytes | None]], now_ms: int = NOW, **batch: object) -> int:
    """Append one batch; its first offset."""
    return log.append_as_leader(keyed(pairs, **batch), 0, now_ms).first_offset


def settle(log: Log, now_ms: int = NOW) -> None:
    """Roll so every record is in a non-active segment, and commit everything."""
    log.roll(now_ms)
    log.high_watermark = log.log_end_offset


def entries(data: bytes) -> list[Entry]:
    batches, end = scan_batches(data)
    assert end == len(data)
    out = []
    for header, pos in batches:
        out.extend((r.offset, r.key, r.value) for r in decode_records(data, pos, header, 1 << 26))
    return out


def contents(log: Log) -> list[Entry]:
    """(offset, key, value) of every record from the log start to the log end."""
    return entries(log.read_bytes(log.log_start_offset, 1 << 30))


def latest(written: Sequence[Entry]) -> list[Entry]:
    """The dict model of a compacted log: the last entry of each key, in offset order."""
    last: dict[bytes | None, Entry] = {}
    for entry in written:
        last[entry[1]] = entry
    return sorted(last.values())


def clean(log: Log, now_ms: int = NOW, config: CleanerConfig | None = None,
          cleaner: LogCleaner | None = None) -> CleanerStats | None:
    """One cleaning of `log` on this thread, as the broker does across two threads."""
    cleaner = cleaner or LogCleaner(config)
    task = cleaner.begin([log], now_ms)
    if task is None:
        return None
    try:
        task.run()
    finally:
        stats = cleaner.finish(task, now_ms)
    return stats
