"""Gregor's producer: `Producer`, the futures it returns and the records interceptors see."""

from gregor.client.producer.future import BatchMetadata, ColumnsFuture, RecordFuture, RecordMetadata
from gregor.client.producer.producer import Producer, ProducerRecord
from gregor.client.producer.transaction_manager import TransactionHandle

__all__ = ["BatchMetadata", "ColumnsFuture", "Producer", "ProducerRecord", "RecordFuture", "RecordMetadata",
           "TransactionHandle"]
