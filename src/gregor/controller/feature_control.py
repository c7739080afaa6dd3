"""UpdateFeatures on the controller (Kafka's FeatureControlManager.updateFeatures), sans-IO.

A request is all or nothing: the first update that fails decides the answer (INVALID_UPDATE_VERSION
with Kafka's message) and nothing is written; otherwise one FeatureLevelRecord per update, level 0
turning a feature off. The rules, in Kafka's order: a known upgrade type; no negative level; a level
this build supports; a level every registered broker supports; for metadata.version no downgrade
(Kafka refuses those that might lose metadata, and Gregor's levels all change the records); for the
others the dependencies on the proposed levels, and the upgrade type matching the direction.

Kafka also asks the other controllers which levels they support; a Gregor quorum runs one build,
so the local ranges stand for every voter.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Sequence

from gregor.controller.operations import ControllerResult
from gregor.metadata import feature_versions
from gregor.metadata.features import METADATA_VERSION
from gregor.metadata.image import MetadataImage
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FeatureLevelRecord


class UpgradeType(enum.IntEnum):
    """UpdateFeatures v1+'s UpgradeType (v0's AllowDowngrade=true is SAFE_DOWNGRADE)."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True)
class FeatureUpdate:
    name: str
    level: int
    upgrade_type: int = UpgradeType.UPGRADE


@dataclass(frozen=True)
class FeatureUpdateResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


def update_features(image: MetadataImage, updates: Sequence[FeatureUpdate], validate_only: bool,
                    node_id: int) -> ControllerResult[FeatureUpdateResult]:
    proposed = dict(image.features)
    proposed.update({update.name: update.level for update in updates})
    records: list[Any] = []
    for update in updates:
        reason = _refusal(image, update, proposed, node_id)
        if reason is not None:
            return ControllerResult(FeatureUpdateResult(ErrorCode.INVALID_UPDATE_VERSION, reason))
        records.append(FeatureLevelRecord(name=update.name, feature_level=update.level))
    return ControllerResult(FeatureUpdateResult(), () if validate_only else tuple(records))


def _refusal(image: MetadataImage, update: FeatureUpdate, proposed: dict[str, int], node_id: int) -> str | None:
    name, level = update.name, update.level

    def invalid(message: str) -> str:
        return f"Invalid update version {level} for feature {name}. {message}"

    if update.upgrade_type not in UpgradeType.__members__.values():
        return invalid("The controller does not support the given upgrade type.")
    if level < 0:
        return invalid("A feature version cannot be less than 0.")
    unsupported = feature_versions.supported_range_error(name, level)
    if unsupported is not None:
        known = feature_versions.feature(name)
        return invalid(f"Local controller {node_id} does not support this feature." if known is None else
                       f"Local controller {node_id} only supports versions {known.min_level}-{known.max_level}.")
    for broker_id, broker in sorted(image.brokers.items()):
        low, high = broker.supported_features.get(name, (0, 0))
        if level > 0 and name not in broker.supported_features:
            return invalid(f"Broker {broker_id} does not support this feature.")
        if level > 0 and not low <= level <= high:
            return invalid(f"Broker {broker_id} does not support the given version. It supports {low} to {high}.")
    current = image.features.get(name, 0)
    if name == METADATA_VERSION:
        if level < current:
            reason = ("Unsafe metadata downgrade is not supported in this version."
                      if update.upgrade_type == UpgradeType.UNSAFE_DOWNGRADE else
                      "Refusing to perform the requested downgrade because it might delete metadata information.")
            return f"Invalid metadata.version {level}. {reason}"
        return None
    dependency = feature_versions.dependency_error(name, level, proposed)
    if dependency is not None:
        return invalid(dependency)
    if level < current and update.upgrade_type == UpgradeType.UPGRADE:
        return invalid("Can't downgrade the version of this feature without setting the upgrade type to either "
                       "safe or unsafe downgrade.")
    if level > current and update.upgrade_type != UpgradeType.UPGRADE:
        return invalid("Can't downgrade to a newer version.")
    return None
