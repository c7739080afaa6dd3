"""Gregor topics as a Spark 4 data source: `format("gregor")` with the options and schema of
Spark's Kafka connector, for batch and streaming reads and writes (docs/spark.md).

Registration is one explicit call per SparkSession, `gregor.spark.register(spark)`: Spark's
automatic discovery only looks at top-level modules named `pyspark_*`, and the format cannot be
called `kafka` (Spark keeps that name for its JVM connector).
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from gregor.spark.errors import DataLossError, OptionError
from gregor.spark.source import FORMAT, GregorDataSource

__all__ = ["FORMAT", "DataLossError", "GregorDataSource", "OptionError", "register"]


def register(spark: SparkSession) -> None:
    """Make `format("gregor")` available in `spark` (idempotent)."""
    spark.dataSource.register(GregorDataSource)
