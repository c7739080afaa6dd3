"""A node's storage formatted before its first start (Kafka's Formatter, `kafka-storage.sh format`):
`meta.properties` (cluster id, node id) in every log directory and the metadata log directory, and
`bootstrap.checkpoint` (the bootstrap metadata: feature levels, SCRAM credentials) in the metadata
log directory, where the controller reads it when its metadata log is empty.

A directory is formatted when it has a meta.properties; formatting one again is refused unless
told to skip it (`--ignore-formatted`), as Kafka does.
"""

from __future__ import annotations

import os
from typing import Sequence

from gregor.broker.config import BrokerConfig, ConfigError
from gregor.broker.meta_properties import META_PROPERTIES, write_meta_properties
from gregor.controller.bootstrap_metadata import (
    BOOTSTRAP_CHECKPOINT, BootstrapError, decode_bootstrap, encode_bootstrap,
)
from gregor.protocol.messages import Message


def directories(config: BrokerConfig) -> list[str]:
    """The directories a format writes: the metadata log directory first, then the log directories."""
    return list(dict.fromkeys([config.metadata_log_dir, *config.log_dirs]))


def is_formatted(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, META_PROPERTIES))


def format_storage(config: BrokerConfig, cluster_id: str, records: Sequence[Message], ignore_formatted: bool,
                   now_ms: int) -> list[str]:
    """Format every directory of `config` that is not yet; the directories formatted, in order
    (none when all were). ConfigError (one line) when one is formatted already and
    `ignore_formatted` is off."""
    every = directories(config)
    formatted = [directory for directory in every if is_formatted(directory)]
    if formatted and not ignore_formatted:
        raise ConfigError(f"Log directory {formatted[0]} is already formatted. Use --ignore-formatted to ignore "
                          f"this directory and format the others.")
    todo = [directory for directory in every if directory not in formatted]
    for directory in todo:
        os.makedirs(directory, exist_ok=True)
        if directory == config.metadata_log_dir:
            _write_atomically(os.path.join(directory, BOOTSTRAP_CHECKPOINT), encode_bootstrap(records, now_ms))
        write_meta_properties(directory, config.node_id, cluster_id)
    return todo


def read_bootstrap(metadata_log_dir: str) -> tuple[Message, ...]:
    """The formatted bootstrap records of this node, or () when it was not formatted (the
    controller then bootstraps this build's defaults). ConfigError for an unreadable checkpoint."""
    path = os.path.join(metadata_log_dir, BOOTSTRAP_CHECKPOINT)
    if not os.path.exists(path):
        return ()
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return tuple(decode_bootstrap(data))
    except BootstrapError as error:
        raise ConfigError(f"{path}: {error}") from None


def _write_atomically(path: str, data: bytes) -> None:
    with open(path + ".tmp", "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(path + ".tmp", path)
