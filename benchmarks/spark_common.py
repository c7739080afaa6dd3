"""What the Spark benchmarks share: their options and a local[2] session on loopback."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    return parser.parse_args()


def local_spark() -> Any:
    """A local[2] session whose Python workers run this interpreter, with Gregor's source registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import gregor.spark

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    gregor.spark.register(spark)
    return spark
