"""A streaming job copying a topic with the exactly-once sink, slowed down per row so that a
kill lands while a micro-batch's transactions are open: `python -m tests.spark.eos_copy_job
BOOTSTRAP SOURCE TARGET CHECKPOINT PREFIX` runs it until killed; `copy_query` is the same query
for the restart in the tests' own session."""

from __future__ import annotations

import os
import sys
import tempfile
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import BinaryType

ROW_DELAY_S = 0.1
PER_TRIGGER = 4


def _slowly(value: bytes) -> bytes:
    time.sleep(ROW_DELAY_S)
    return value


def copy_query(spark: SparkSession, bootstrap: str, source: str, target: str, checkpoint: str, prefix: str, *,
               available_now: bool) -> StreamingQuery:
    frame: DataFrame = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                        .option("subscribe", source).option("startingOffsets", "earliest")
                        .option("maxOffsetsPerTrigger", PER_TRIGGER).load())
    slowly = F.udf(_slowly, BinaryType(), useArrow=False)
    writer = (frame.select("key", slowly("value").alias("value")).writeStream.format("gregor")
              .option("kafka.bootstrap.servers", bootstrap).option("topic", target)
              .option("deliveryGuarantee", "exactly-once").option("transactionalIdPrefix", prefix)
              .option("checkpointLocation", checkpoint))
    return (writer.trigger(availableNow=True) if available_now else writer).start()


def main(bootstrap: str, source: str, target: str, checkpoint: str, prefix: str) -> None:
    import gregor.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("gregor-eos-copy")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.local.dir", tempfile.mkdtemp(prefix="eos-copy-"))
             .config("spark.sql.execution.python.udf.maxRecordsPerBatch", "1")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    gregor.spark.register(spark)
    copy_query(spark, bootstrap, source, target, checkpoint, prefix, available_now=False).awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:6])
