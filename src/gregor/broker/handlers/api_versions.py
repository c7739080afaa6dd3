"""ApiVersions (key 18), v0–v4: the version ranges this broker honours.

A request for a version newer than v4 gets the v0 answer with UNSUPPORTED_VERSION and the
ApiVersions range, so the client can retry with a version both sides speak (KIP-511).
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler, QuorumContext, RequestContext
from gregor.metadata.features import SUPPORTED_FEATURES
from gregor.metadata.image import MetadataImage
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

API_KEY = 18
MIN_VERSION, MAX_VERSION = 0, 4


def handle(context: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    """The ranges of the listener's own handler table (a controller listener serves fewer APIs),
    and from v3 the features this build supports and those the cluster finalized (KIP-584), the
    image's offset as their epoch."""
    api_keys = [ApiVersionsResponse.ApiVersion(api_key=key, min_version=h.min_version, max_version=h.max_version)
                for key, h in sorted(context.handlers.items())]
    image = _image(context)
    supported = [ApiVersionsResponse.SupportedFeatureKey(name=f.name, min_version=f.min_level,
                                                         max_version=f.max_level)
                 for f in SUPPORTED_FEATURES]
    finalized = [ApiVersionsResponse.FinalizedFeatureKey(name=name, min_version_level=level,
                                                         max_version_level=level)
                 for name, level in sorted(image.features.items())]
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=api_keys, throttle_time_ms=0,
                               supported_features=supported, finalized_features=finalized,
                               finalized_features_epoch=image.highest_offset)


def _image(context: RequestContext) -> MetadataImage:
    if isinstance(context, BrokerContext):
        return context.metadata.image
    assert isinstance(context, QuorumContext)
    return context.quorum.image


def unsupported_version_response() -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=API_KEY, min_version=MIN_VERSION,
                                                 max_version=MAX_VERSION)],
    )


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle,
                    unsupported_version_response=unsupported_version_response)]
