"""Jepsen's queue anomalies, computed from a history (tools.faults.history):

    lost-write            acknowledged, never read, though a later offset of its partition was read
    unseen                acknowledged, never read, and nothing at or after its offset was read
                          (after a complete final read this is a loss too; counted apart, as Jepsen)
    duplicate             one value stored at more than one offset
    inconsistent-offsets  two different values at one offset (sent or read there)
    nonmonotonic-send     a producer's consecutive acknowledged sends to a partition whose offsets
                          do not increase
    nonmonotonic-poll     a consumer reading a partition at an offset not above the one it read
                          before (within one assignment)
    poll-skip             a consumer's consecutive reads of a partition jumping over an offset
                          that holds a value (within one assignment)

A process's order restarts when it is assigned partitions again (a rebalance may legitimately
rewind it to the committed offset). Unacknowledged (`info`) sends are never losses; read, they
are simply values that made it.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ANOMALIES = ("lost-write", "unseen", "duplicate", "inconsistent-offsets", "nonmonotonic-send",
             "nonmonotonic-poll", "poll-skip")


@dataclass
class Report:
    counts: dict[str, int]
    examples: dict[str, list[Any]]
    acknowledged: int = 0
    indeterminate: int = 0
    read_values: int = 0
    polls: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    names: tuple[str, ...] = ANOMALIES  # the anomalies counted, in the order printed
    allowed: tuple[str, ...] = ()  # counted and printed, but behaviour the system permits

    @property
    def valid(self) -> bool:
        return not any(self.counts[name] for name in self.names if name not in self.allowed)

    def summary(self) -> str:
        lines = [(f"sends acknowledged {self.acknowledged}, indeterminate {self.indeterminate}; "
                  f"distinct values read {self.read_values} in {self.polls} polls")]
        if self.faults:
            lines.append("faults: " + ", ".join(f"{name} {count}" for name, count in sorted(self.faults.items())))
        lines.append("anomalies: " + ", ".join(f"{name} {self.counts[name]}" for name in self.names
                                               if name not in self.allowed))
        if self.allowed:
            lines.append("allowed by the design: " + ", ".join(f"{name} {self.counts[name]}" for name in self.allowed))
        for name in self.names:
            if self.examples[name]:
                lines.append(f"  {name}, e.g. {self.examples[name][:5]}")
        lines.append("valid" if self.valid else "INVALID")
        return "\n".join(lines)


def check(ops: Iterable[dict[str, Any]]) -> Report:
    ops = sorted(ops, key=lambda op: op["index"])
    found: dict[str, list[Any]] = {name: [] for name in ANOMALIES}
    at_offset: defaultdict[tuple[int, int], set[int]] = defaultdict(set)  # (partition, offset) -> values
    offsets_of: defaultdict[int, set[tuple[int, int]]] = defaultdict(set)  # value -> (partition, offset)
    acknowledged: dict[int, tuple[int, int]] = {}  # value -> (partition, offset)
    read: set[int] = set()
    polls = indeterminate = 0
    faults: defaultdict[str, int] = defaultdict(int)
    last_sent: dict[tuple[str, int], tuple[int, int]] = {}  # (process, partition) -> (offset, value)
    for op in ops:
        if op["f"] == "send" and op["type"] == "ok":
            partition, offset, value = op["value"]
            acknowledged[value] = (partition, offset)
            at_offset[(partition, offset)].add(value)
            offsets_of[value].add((partition, offset))
            previous = last_sent.get((op["process"], partition))
            if previous is not None and offset <= previous[0]:
                found["nonmonotonic-send"].append({"process": op["process"], "partition": partition,
                                                   "offsets": [previous[0], offset], "values": [previous[1], value]})
            last_sent[(op["process"], partition)] = (offset, value)
        elif op["f"] == "send" and op["type"] in ("info", "fail"):
            indeterminate += 1
        elif op["f"] == "poll" and op["type"] == "ok":
            polls += 1
            for partition, offset, value in op["value"]:
                at_offset[(partition, offset)].add(value)
                offsets_of[value].add((partition, offset))
                read.add(value)
        elif op["f"] == "nemesis" and op["value"].get("phase") == "start":
            faults[op["value"]["fault"]] += 1
    for (partition, offset), values in sorted(at_offset.items()):
        if len(values) > 1:
            found["inconsistent-offsets"].append({"partition": partition, "offset": offset, "values": sorted(values)})
    for value, places in sorted(offsets_of.items()):
        if len(places) > 1:
            found["duplicate"].append({"value": value, "at": sorted(places)})
    _lost_and_unseen(acknowledged, read, at_offset, found)
    _poll_order(ops, at_offset, found)
    return Report({name: len(items) for name, items in found.items()}, found, len(acknowledged), indeterminate,
                  len(read), polls, dict(faults))


def _lost_and_unseen(acknowledged: dict[int, tuple[int, int]], read: set[int],
                     at_offset: dict[tuple[int, int], set[int]], found: dict[str, list[Any]]) -> None:
    highest_read: defaultdict[int, int] = defaultdict(lambda: -1)
    for (partition, offset), values in at_offset.items():
        if values & read:
            highest_read[partition] = max(highest_read[partition], offset)
    for value, (partition, offset) in sorted(acknowledged.items()):
        if value in read:
            continue
        kind = "lost-write" if offset < highest_read[partition] else "unseen"
        found[kind].append({"value": value, "partition": partition, "offset": offset})


def _poll_order(ops: list[dict[str, Any]], at_offset: dict[tuple[int, int], set[int]],
                found: dict[str, list[Any]]) -> None:
    occupied: defaultdict[int, list[int]] = defaultdict(list)  # partition -> sorted offsets holding a value
    for partition, offset in sorted(at_offset):
        occupied[partition].append(offset)
    position: dict[tuple[str, int], int] = {}  # (process, partition) -> last offset read
    for op in ops:
        if op["f"] == "assign":
            for key in [key for key in position if key[0] == op["process"]]:
                del position[key]
        if op["f"] != "poll" or op["type"] != "ok":
            continue
        for partition, offset, value in op["value"]:
            key = (op["process"], partition)
            previous = position.get(key)
            position[key] = offset
            if previous is None:
                continue
            if offset <= previous:
                found["nonmonotonic-poll"].append({"process": op["process"], "partition": partition,
                                                   "offsets": [previous, offset], "value": value})
                continue
            known = occupied[partition]
            skipped = bisect.bisect_left(known, offset) - bisect.bisect_right(known, previous)
            if skipped > 0:
                found["poll-skip"].append({"process": op["process"], "partition": partition,
                                           "offsets": [previous, offset], "skipped": skipped})
