"""UpdateFeatures (key 57), v0–v2: finalized feature levels changed by the active controller
(`gregor.controller.feature_control`) and committed to the metadata log before the answer.

v0's AllowDowngrade=true is a SAFE_DOWNGRADE; v1 adds the upgrade type and ValidateOnly; v2 answers
with the top-level error only. As Kafka 4, one error decides the whole request: v0–v1 repeat it for
each feature. A broker forwards it once the principal holds ALTER on the cluster
(`forward_authorization`). DescribeFeatures is ApiVersions v3+.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.feature_control import FeatureUpdate, UpgradeType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import UpdateFeaturesRequest, UpdateFeaturesResponse

API_KEY = 57


def error_response(request: UpdateFeaturesRequest, code: int, message: str | None) -> UpdateFeaturesResponse:
    """The answer every feature of the request shares (v2 encodes only the top level)."""
    names = dict.fromkeys(update.feature for update in request.feature_updates)
    return UpdateFeaturesResponse(throttle_time_ms=0, error_code=code, error_message=message, results=[
        UpdateFeaturesResponse.UpdatableFeatureResult(feature=name, error_code=code, error_message=message)
        for name in names])


def _update(key: UpdateFeaturesRequest.FeatureUpdateKey, version: int) -> FeatureUpdate:
    if version == 0:
        upgrade_type: int = UpgradeType.SAFE_DOWNGRADE if key.allow_downgrade else UpgradeType.UPGRADE
    else:
        upgrade_type = key.upgrade_type
    return FeatureUpdate(key.feature, key.max_version_level, upgrade_type)


async def handle(context: QuorumContext, request: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    quorum = context.quorum
    updates = list({key.feature: _update(key, context.version) for key in request.feature_updates}.values())
    try:
        result = await quorum.submit(lambda: quorum.controller.update_features(updates, request.validate_only))
    except KafkaError as error:
        return error_response(request, error.code, str(error))
    return error_response(request, result.error, result.message if result.error != ErrorCode.NONE else None)


HANDLERS = [Handler(API_KEY, 0, 2, handle)]
