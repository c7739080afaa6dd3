"""Gregor topics as a Spark 4 data source: `format("gregor")` with the options and schema of
Spark's Kafka connector, for batch and streaming reads and writes (docs/spark.md).

Registration is one explicit call per SparkSession, `gregor.spark.register(spark)`: Spark's
automatic discovery only looks at top-level modules named `pyspark_*`, and the format cannot be
called `kafka` (Spark keeps that name for its JVM connector).
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from gregor.spark.errors import DataLossError, OptionError
from gregor.spark.source import FORMAT, GregorDataSource

__all__ = ["FORMAT", "DataLossError", "GregorDataSource", "OptionError", "register", "worker_python"]


def register(spark: SparkSession) -> None:
    """Make `format("gregor")` available in `spark` (idempotent), its readers and writers running
    in Python workers that can import gregor (see `worker_python`; like PYSPARK_PYTHON, the choice
    holds for the context's later Python UDFs too)."""
    spark.sparkContext.pythonExec = worker_python(spark)
    spark.dataSource.register(GregorDataSource)


def worker_python(spark: SparkSession) -> str:
    """The interpreter Spark's Python workers run: the user's choice, `spark.pyspark.python` then
    `PYSPARK_PYTHON` as in spark-submit, else this interpreter.

    A SparkContext reads PYSPARK_PYTHON once, when it starts, and falls back to `python3` from
    PATH, which usually lacks gregor (`ModuleNotFoundError: No module named 'gregor'` inside a
    py4j traceback); a session built in Python ignores `spark.pyspark.python`. So the choice is
    made here, on the started context, whose `pythonExec` the data source's registration carries
    to the JVM.
    """
    return spark.conf.get("spark.pyspark.python", None) or os.environ.get("PYSPARK_PYTHON") or sys.executable
