"""Kafka's offset checkpoint files: `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
`replication-offset-checkpoint` (high watermarks).

Text format: a version line (0), a count line, then `topic partition offset` per line. Written to
a temporary file, fsynced and renamed, so a crash leaves the old or the new file, never half.
"""

from __future__ import annotations

import os

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
VERSION = 0


Checkpoint = tuple[str, dict[tuple[str, int], int]]  # a file's path and its offsets


def write_checkpoints(files: list[Checkpoint]) -> None:
    for path, offsets in files:
        write_checkpoint(path, offsets)


def write_checkpoint(path: str, offsets: dict[tuple[str, int], int]) -> None:
    lines = [str(VERSION), str(len(offsets))]
    lines.extend(f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items()))
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def read_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """The offsets of a checkpoint file; a missing or malformed file reads as empty.

    Empty means every log recovers from offset 0 and keeps its first segment's base as log
    start: slower, never wrong.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return {}
    if len(lines) < 2 or lines[0].strip() != str(VERSION) or not lines[1].strip().isdigit():
        return {}
    count = int(lines[1])
    entries = lines[2:2 + count]
    if len(entries) != count:
        return {}
    offsets = {}
    for line in entries:
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
            return {}
        offsets[(parts[0], int(parts[1]))] = int(parts[2])
    return offsets
