"""Where a read starts or ends, as the options say it (earliest, latest, per-partition offsets,
a timestamp), and how that becomes concrete offsets for the partitions subscribed right now."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gregor.client import TopicPartition
from gregor.spark.catalog import Catalog
from gregor.spark.errors import OptionError
from gregor.spark.offsets import EARLIEST, LATEST, PartitionOffsets, describe


class Bound(Protocol):
    def resolve(self, partitions: list[TopicPartition], catalog: Catalog) -> PartitionOffsets:
        """Concrete offsets for exactly `partitions`."""


@dataclass(frozen=True)
class Earliest:
    def resolve(self, partitions: list[TopicPartition], catalog: Catalog) -> PartitionOffsets:
        return catalog.earliest(partitions)


@dataclass(frozen=True)
class Latest:
    def resolve(self, partitions: list[TopicPartition], catalog: Catalog) -> PartitionOffsets:
        return catalog.latest(partitions)


def _check_covers(option: str, specified: PartitionOffsets, partitions: list[TopicPartition]) -> None:
    """Spark's rule: per-partition offsets name exactly the subscribed partitions, so a typo in a
    topic or partition is an error rather than a partition silently read from elsewhere."""
    if set(specified) != set(partitions):
        subscribed = ", ".join(f"{tp.topic}-{tp.partition}" for tp in partitions) or "none"
        raise OptionError(option, f"names partitions {describe(specified)} but the subscribed partitions "
                                  f"are {subscribed}; give an offset for each of them")


@dataclass(frozen=True)
class SpecificOffsets:
    """Per-partition offsets; -2 and -1 stand for earliest and latest."""

    option: str
    offsets: PartitionOffsets

    def resolve(self, partitions: list[TopicPartition], catalog: Catalog) -> PartitionOffsets:
        _check_covers(self.option, self.offsets, partitions)
        earliest = catalog.earliest(tp for tp, offset in self.offsets.items() if offset == EARLIEST)
        latest = catalog.latest(tp for tp, offset in self.offsets.items() if offset == LATEST)
        return {tp: earliest.get(tp, latest.get(tp, offset)) for tp, offset in self.offsets.items()}


@dataclass(frozen=True)
class ByTimestamp:
    """The first offset at or after a timestamp (ms), one for all partitions or one per partition.

    Where every record is older: `on_missing="latest"` takes the end offset, `"error"` refuses
    (Spark's startingOffsetsByTimestampStrategy; ending bounds always take the end offset).
    """

    option: str
    timestamp: int | None = None
    timestamps: PartitionOffsets | None = None
    on_missing: str = "error"

    def resolve(self, partitions: list[TopicPartition], catalog: Catalog) -> PartitionOffsets:
        if self.timestamps is not None:
            _check_covers(self.option, self.timestamps, partitions)
            wanted = dict(self.timestamps)
        elif self.timestamp is not None:
            wanted = {tp: self.timestamp for tp in partitions}
        else:
            raise ValueError("a timestamp bound names a timestamp or one per partition")
        found = catalog.offsets_for_times(wanted)
        missing = [tp for tp in partitions if found.get(tp) is None]
        if missing and self.on_missing == "error":
            raise OptionError(self.option, f"no record at or after the timestamp in "
                                           f"{describe({tp: wanted[tp] for tp in missing})}; set "
                                           f"startingOffsetsByTimestampStrategy to latest to start at the end")
        latest = catalog.latest(missing)
        return {tp: latest[tp] if (offset := found.get(tp)) is None else offset for tp in partitions}
