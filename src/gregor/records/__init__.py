"""Kafka record formats: batch v2, legacy message sets v0/v1, compression, CRC32C."""

from gregor.records.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, BatchHeader, parse_header, scan_batches
from gregor.records.compression import Compression
from gregor.records.errors import RecordsError
from gregor.records.record import BatchBuilder, Record, decode_records

__all__ = ["BATCH_HEADER_SIZE", "LOG_OVERHEAD", "BatchHeader", "BatchBuilder", "Compression", "Record",
           "RecordsError", "decode_records", "parse_header", "scan_batches"]
