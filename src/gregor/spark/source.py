"""The `gregor` data source: Spark's entry point that hands out readers and writers.

Spark pickles this object to its Python workers; it carries only the option strings, and every
reader or writer checks them again where it is made, so a bad option fails at query start.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, DataSourceStreamWriter, \
    DataSourceWriter
from pyspark.sql.types import StructType

from gregor.spark.batch_reader import BatchReader
from gregor.spark.errors import OptionError
from gregor.spark.options import include_headers, parse_sink_options, parse_source_options
from gregor.spark.schema import check_sink_schema, source_schema
from gregor.spark.stream_reader import StreamReader
from gregor.spark.stream_writer import StreamWriter
from gregor.spark.writer import BatchWriter

FORMAT = "gregor"


class GregorDataSource(DataSource):
    """`format("gregor")` for read, readStream, write and writeStream, with the options of
    Spark's Kafka connector (see docs/spark.md)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return source_schema(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError("mode", "a topic cannot be overwritten; write with mode('append')")
        options = parse_sink_options(self.options, streaming=False)
        check_sink_schema(schema, options.topic)
        return BatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_sink_options(self.options)
        check_sink_schema(schema, options.topic)
        return StreamWriter(options)
