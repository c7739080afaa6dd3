"""Offset ranges: one Spark input partition per topic-partition, planned from a start and an end.

Planning is also where data loss is found: a start below the log start offset (retention or
DeleteRecords removed records), an end below the start (the partition was recreated), or a
partition that disappeared. With failOnDataLoss those fail the query; without, the range is
moved or dropped and a warning says which offsets were skipped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Mapping

from pyspark.sql.datasource import InputPartition

from gregor.client import TopicPartition
from gregor.spark.errors import DataLossError
from gregor.spark.options import ReadSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """Read offsets [start, end) of one topic-partition; pickled to the executor that reads it."""

    topic: str
    partition: int
    start: int
    end: int
    settings: ReadSettings


def report_data_loss(fail: bool, problem: str) -> None:
    """Raise DataLossError, or log the skipped data when the query is told to go on."""
    if fail:
        raise DataLossError(problem)
    log.warning("%s; skipped because failOnDataLoss is false", problem)


def plan_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                earliest: Mapping[TopicPartition, int], settings: ReadSettings) -> list[OffsetRange]:
    """The non-empty ranges from `start` to `end`. A partition only in `end` is new and starts at
    its earliest offset; `earliest` holds the log start offset of every partition in `end`."""
    fail = settings.fail_on_data_loss
    for tp in sorted(set(start) - set(end)):
        report_data_loss(fail, f"partition {tp.topic}-{tp.partition} is gone (offset {start[tp]} was next)")
    ranges = []
    for tp in sorted(end):
        first = start.get(tp, earliest[tp])
        until = end[tp]
        if first < earliest[tp]:
            report_data_loss(fail, f"offsets {first} to {earliest[tp] - 1} of {tp.topic}-{tp.partition} were "
                                   f"deleted before they were read")
            first = earliest[tp]
        if until < first:
            report_data_loss(fail, f"the end offset of {tp.topic}-{tp.partition} went back from {first} to {until} "
                                   f"(was the topic recreated?)")
            continue
        if until > first:
            ranges.append(OffsetRange(tp.topic, tp.partition, first, until, settings))
    return ranges
