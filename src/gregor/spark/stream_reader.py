"""`spark.readStream.format("gregor")`: micro-batches of offset ranges with admission control.

Spark's Python streaming engine runs this reader in one long-lived process on the driver and
calls: `initialOffset` once for a new query; `latestOffset(start, limit)` before each
micro-batch (the end it returns is written to the checkpoint's offset log before the batch
runs); `partitions(start, end)` to plan the batch, also when a restarted query replays a batch
from its offset log; `stop` at the end. Offsets are Spark's Kafka JSON, in canonical order,
because the engine compares them as text.

`getDefaultReadLimit` maps `maxOffsetsPerTrigger` to ReadMaxRows, and the reader implements
SupportsTriggerAvailableNow: `prepareForTriggerAvailableNow` pins the end offsets of that moment,
so `trigger(availableNow=True)` runs capped batches up to them and stops.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow,
)

from gregor.spark.admission import TriggerDelay, available, cap
from gregor.spark.bounds import Latest
from gregor.spark.catalog import Catalog
from gregor.spark.offsets import PartitionOffsets, from_json_dict, to_json_dict
from gregor.spark.options import SourceOptions
from gregor.spark.partition_reader import read_range
from gregor.spark.ranges import OffsetRange, plan_ranges


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """See the module doc; the catalog (a metadata consumer) lives as long as the query."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._catalog: Catalog | None = None
        self._target: PartitionOffsets | None = None
        self._latest: dict | None = None
        self._delay = None if options.min_offsets_per_trigger is None else TriggerDelay(
            options.min_offsets_per_trigger, options.max_trigger_delay_ms)

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = Catalog(self._options.read.client_config)
        return self._catalog

    def initialOffset(self) -> dict:
        """startingOffsets (default latest) for the partitions subscribed when the query starts."""
        partitions = self.catalog.partitions(self._options.subscription)
        return to_json_dict((self._options.starting or Latest()).resolve(partitions, self.catalog))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self._options.max_offsets_per_trigger)
        if self._options.min_offsets_per_trigger is not None:
            return ReadMinRows(self._options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._current_latest()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next micro-batch: everything up to the latest offsets (or the
        availableNow target), capped by ReadMaxRows; `start` itself when minOffsetsPerTrigger holds
        the batch back. Partitions that appeared since `start` enter at their earliest offset;
        deleted offsets are not counted against the cap (`partitions` reports them)."""
        latest = self._target if self._target is not None else self._current_latest()
        self._latest = to_json_dict(latest)
        begun = from_json_dict(start)
        earliest = self.catalog.earliest(latest)
        from_offsets = {tp: max(begun.get(tp, earliest[tp]), earliest[tp]) for tp in latest}
        waiting = available(from_offsets, latest)
        delay = self._delay if self._target is None and not isinstance(limit, ReadAllAvailable) else None
        if delay is not None and not delay.admit(waiting):
            return start
        end = cap(from_offsets, latest, limit.max_rows) if isinstance(limit, ReadMaxRows) else latest
        return to_json_dict(end)

    def reportLatestOffset(self) -> dict | None:
        return self._latest

    def partitions(self, start: dict, end: dict) -> list[OffsetRange]:
        end_offsets = from_json_dict(end)
        return plan_ranges(from_json_dict(start), end_offsets, self.catalog.earliest(end_offsets),
                           self._options.read)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return iter(())  # Spark reads one placeholder partition when none were planned
        return read_range(partition)

    def stop(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None

    def _current_latest(self) -> PartitionOffsets:
        return self.catalog.latest(self.catalog.partitions(self._options.subscription))
