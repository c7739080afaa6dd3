"""Kafka's file-suffix protocol for replacing segments by cleaned ones, and its completion at load.

`Log.replace_segments` swaps one cleaned segment in for a run of old ones in four steps:

1. the cleaner has written `<base>.log.cleaned`, `.index.cleaned`, `.timeindex.cleaned` and fsynced them;
2. the new segment's files are renamed `*.swap` (directory fsynced);
3. the old segments are renamed `*.deleted` (their open files keep serving reads until
   file.delete.delay.ms has passed);
4. the `*.swap` files get their final names (directory fsynced).

A crash can stop it anywhere. At load, as Kafka's LogLoader:

- A `.cleaned` file means step 2 did not finish: the old segments are intact. Every `.cleaned`
  file goes, with every `.swap` file at or above the lowest `.cleaned` base offset.
- A `<base>.log.swap` means step 2 finished. Its batches span [base, next); the old segments
  it replaces are the segment files with base offsets in that range: they are deleted (some
  may already be `*.deleted`, which the log removes anyway), the swap segment's indexes are
  rebuilt from its batches, and its files renamed to their final names.
- An index `.swap` without its `.log.swap` is from step 4 after the log file was renamed: it is
  deleted and the log rebuilds the missing index.
"""

from __future__ import annotations

import os

from gregor.storage.segment import (
    CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, LogSegment,
)

_SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


def _base_offset(name: str, suffix: str) -> int | None:
    """The base offset of a segment file `<20 digits><.log|.index|.timeindex><suffix>`."""
    if not name.endswith(suffix):
        return None
    stem = name[:len(name) - len(suffix)]
    for kind in _SEGMENT_SUFFIXES:
        digits = stem[:-len(kind)]
        if stem.endswith(kind) and digits.isdigit():
            return int(digits)
    return None


def complete_interrupted_swaps(directory: str, index_interval_bytes: int, max_index_bytes: int,
                               now_ms: int) -> list[int]:
    """Bring the directory to the state before or after each interrupted replacement (see above).

    Returns the base offsets of the segments swapped in: the log recovers them, which rebuilds
    their aborted-transaction index (a `.txnindex.swap` may have been renamed or removed)."""
    names = os.listdir(directory)
    cleaned = {name: base for name in names if (base := _base_offset(name, CLEANED_SUFFIX)) is not None}
    min_cleaned = min(cleaned.values(), default=None)
    for name in cleaned:
        os.remove(os.path.join(directory, name))
    swaps = {name: _base_offset(name, SWAP_SUFFIX) for name in names}
    swap_logs = []
    for name, base in swaps.items():
        if base is None:
            continue
        if (min_cleaned is not None and base >= min_cleaned) or not name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            os.remove(os.path.join(directory, name))
        else:
            swap_logs.append(base)
    for base in sorted(swap_logs):
        segment = LogSegment(directory, base, index_interval_bytes, max_index_bytes, now_ms, SWAP_SUFFIX)
        segment.offset_index.create()
        segment.time_index.create()
        segment.recover()
        _delete_replaced(directory, base, segment.next_offset)
        segment.rename_suffix("")
        segment.close()
    return sorted(swap_logs)


def _delete_replaced(directory: str, start: int, end: int) -> None:
    """Delete the live segment files with base offsets in [start, end): the segments a swap replaces."""
    for name in os.listdir(directory):
        base = _base_offset(name, "")
        if base is not None and start <= base < end:
            os.remove(os.path.join(directory, name))
