"""The metadata a new cluster starts with (Kafka's BootstrapMetadata): its finalized feature levels
and any SCRAM credentials, chosen when a node's storage is formatted (`gregor storage format`) and
kept in `bootstrap.checkpoint` in its metadata log directory. The active controller of an empty
metadata log commits these records first; without a checkpoint it commits this build's defaults.

The checks are those of Kafka's Formatter: levels this build supports, each feature's dependencies
on the others (`metadata.feature_versions`), SCRAM only from metadata.version 3.5-IV2.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from gregor.controller.metadata_replay import decode_snapshot, encode_records
from gregor.controller.scram_control import ScramUpsertion, alter_user_scram_credentials
from gregor.metadata import feature_versions
from gregor.metadata.features import METADATA_VERSION, SUPPORTED_FEATURES
from gregor.metadata.image import MetadataImage
from gregor.protocol.messages import FeatureLevelRecord, Message

BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
#: Kafka's MetadataVersion.IBP_3_5_IV2, the first to carry SCRAM credential records.
SCRAM_METADATA_VERSION = 11


class BootstrapError(ValueError):
    """Bootstrap metadata that cannot be written: the reason in one line."""


def bootstrap_records(metadata_version: int, features: Mapping[str, int],
                      scram: Sequence[ScramUpsertion] = ()) -> list[Message]:
    """The records of a new cluster at `metadata_version`, with the other features at the levels
    its release starts with unless `features` names them (level 0: off)."""
    if feature_versions.supported_range_error(METADATA_VERSION, metadata_version) is not None:
        raise BootstrapError(f"Unsupported metadata.version {metadata_version}: this build supports "
                             f"{feature_versions.METADATA_VERSION_NAMES[0]} to "
                             f"{feature_versions.METADATA_VERSION_NAMES[-1]}")
    levels = feature_versions.release_levels(metadata_version)
    known = sorted(f.name for f in SUPPORTED_FEATURES if f.name != METADATA_VERSION)
    for name, level in features.items():
        if name == METADATA_VERSION or feature_versions.feature(name) is None:
            raise BootstrapError(f"Unsupported feature: {name}. Supported features are: {', '.join(known)}")
        problem = feature_versions.supported_range_error(name, level)
        if problem is not None:
            raise BootstrapError(f"Unsupported value {level} for {name}: {problem}")
        levels[name] = level
    for name, level in levels.items():
        dependency = feature_versions.dependency_error(name, level, levels)
        if dependency is not None:
            raise BootstrapError(dependency)
    records: list[Any] = [FeatureLevelRecord(name=name, feature_level=level)
                          for name, level in levels.items() if level > 0]
    if scram:
        if metadata_version < SCRAM_METADATA_VERSION:
            raise BootstrapError(f"SCRAM is only supported in metadata.version "
                                 f"{feature_versions.metadata_version_name(SCRAM_METADATA_VERSION)} or later.")
        result = alter_user_scram_credentials(MetadataImage(), [], scram)
        for outcome in result.response:
            if outcome.error:
                raise BootstrapError(f"--add-scram for {outcome.user}: {outcome.message}")
        records.extend(result.records)
    return records


def encode_bootstrap(records: Sequence[Message], now_ms: int) -> bytes:
    return encode_records(records, now_ms)


def decode_bootstrap(data: bytes) -> list[Message]:
    """The records of a bootstrap.checkpoint; BootstrapError if it holds no metadata.version."""
    try:
        records = decode_snapshot(data)
    except ValueError as error:
        raise BootstrapError(f"{BOOTSTRAP_CHECKPOINT} is not a metadata checkpoint: {error}") from None
    if not any(isinstance(r, FeatureLevelRecord) and r.name == METADATA_VERSION for r in records):
        raise BootstrapError(f"{BOOTSTRAP_CHECKPOINT} sets no metadata.version")
    return records
