"""`spark.read.format("gregor")`: the offsets between startingOffsets and endingOffsets, resolved
once when Spark plans the query."""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from gregor.spark.bounds import Earliest, Latest
from gregor.spark.catalog import Catalog
from gregor.spark.errors import OptionError
from gregor.spark.offsets import describe
from gregor.spark.options import SourceOptions
from gregor.spark.partition_reader import read_range
from gregor.spark.ranges import OffsetRange, plan_ranges


class BatchReader(DataSourceReader):
    """Plans one range per subscribed topic-partition (empty ones left out)."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options

    def partitions(self) -> list[OffsetRange]:
        options = self._options
        with Catalog(options.read.client_config) as catalog:
            partitions = catalog.partitions(options.subscription)
            start = (options.starting or Earliest()).resolve(partitions, catalog)
            end = (options.ending or Latest()).resolve(partitions, catalog)
            backwards = {tp: start[tp] for tp in partitions if end[tp] < start[tp]}
            if backwards:
                raise OptionError("endingOffsets", f"the starting offsets {describe(backwards)} are after the "
                                                   f"ending offsets {describe({tp: end[tp] for tp in backwards})}")
            return plan_ranges(start, end, catalog.earliest(partitions), options.read)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return iter(())  # Spark reads one placeholder partition when none were planned
        return read_range(partition)
