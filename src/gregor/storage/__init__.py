"""Partition logs on disk in Kafka's layout: segments, indexes, producer state, checkpoints."""

from gregor.storage.errors import StorageError
from gregor.storage.file_slice import FetchDataInfo, FileSlice
from gregor.storage.log import AppendInfo, Log
from gregor.storage.log_config import LogConfig
from gregor.storage.log_manager import LogManager

__all__ = ["AppendInfo", "FetchDataInfo", "FileSlice", "Log", "LogConfig", "LogManager", "StorageError"]
