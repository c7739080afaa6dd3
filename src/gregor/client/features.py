"""The admin client's feature-flag operations (KIP-584), as Java's Admin.describeFeatures and
Admin.updateFeatures: ApiVersions v3+ to any broker for the description, UpdateFeatures to the
controller (any broker forwards it) for a change.

A change is all or nothing on the controller, so every feature of one call gets the same outcome.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from gregor import __version__
from gregor.client.errors import KafkaException, error_for
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiVersionsRequest, UpdateFeaturesRequest

if TYPE_CHECKING:
    from gregor.client.admin import AdminOperations


class UpgradeType(enum.IntEnum):
    """Java's FeatureUpdate.UpgradeType: how a new level may relate to the finalized one."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True)
class FeatureUpdate:
    """The level to finalize a feature at (0: disable it) and how it may move."""

    max_version_level: int
    upgrade_type: UpgradeType = UpgradeType.UPGRADE


@dataclass(frozen=True)
class FeatureMetadata:
    """What the cluster says of its features: the (min, max) ranges a broker supports, the levels
    finalized cluster-wide, and the epoch of those (None when the broker gave none)."""

    supported_features: Mapping[str, tuple[int, int]]
    finalized_features: Mapping[str, int]
    finalized_features_epoch: int | None


async def describe_features(ops: AdminOperations, deadline: float) -> FeatureMetadata:
    async def attempt() -> FeatureMetadata:
        request = ApiVersionsRequest(client_software_name="gregor-python", client_software_version=__version__)
        response = await ops._send(request, None, deadline, versions=(3, 4))
        if response.error_code != ErrorCode.NONE:
            raise error_for(response.error_code, None)
        epoch = response.finalized_features_epoch
        return FeatureMetadata(
            {f.name: (f.min_version, f.max_version) for f in response.supported_features},
            {f.name: f.max_version_level for f in response.finalized_features},
            epoch if epoch is not None and epoch >= 0 else None)

    return await ops._single("describe_features", attempt, deadline)


async def update_features(ops: AdminOperations, updates: Mapping[str, FeatureUpdate], validate_only: bool,
                          deadline: float) -> dict[str, KafkaException | None]:
    async def attempt() -> dict[str, KafkaException | None]:
        request = UpdateFeaturesRequest(timeout_ms=int(ops._timeout_ms(deadline)), validate_only=validate_only,
                                        feature_updates=[UpdateFeaturesRequest.FeatureUpdateKey(
                                            feature=name, max_version_level=update.max_version_level,
                                            upgrade_type=update.upgrade_type,
                                            allow_downgrade=update.upgrade_type != UpgradeType.UPGRADE)
                                            for name, update in updates.items()])
        # v1 carries ValidateOnly and the upgrade type; v0 only when neither is needed
        plain = not validate_only and all(u.upgrade_type != UpgradeType.UNSAFE_DOWNGRADE for u in updates.values())
        response = await ops._send(request, await ops._controller(deadline), deadline,
                                   versions=(0 if plain else 1, 2))
        if response.error_code != ErrorCode.NONE:
            error = error_for(response.error_code, response.error_message)
            if error.retriable:
                raise error
            return {name: error for name in updates}
        by_feature = {r.feature: r for r in response.results or ()}
        outcome: dict[str, KafkaException | None] = {}
        for name in updates:
            result = by_feature.get(name)
            outcome[name] = None if result is None or result.error_code == ErrorCode.NONE else error_for(
                result.error_code, result.error_message)
        return outcome

    return await ops._single("update_features", attempt, deadline)
