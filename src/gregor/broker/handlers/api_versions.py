"""ApiVersions (key 18), v0–v4: the version ranges this broker honours.

A request for a version newer than v4 gets the v0 answer with UNSUPPORTED_VERSION and the
ApiVersions range, so the client can retry with a version both sides speak (KIP-511).
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, RequestContext
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

API_KEY = 18
MIN_VERSION, MAX_VERSION = 0, 4


def handle(context: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    """The ranges of the listener's own handler table (a controller listener serves fewer APIs)."""
    api_keys = [ApiVersionsResponse.ApiVersion(api_key=key, min_version=h.min_version, max_version=h.max_version)
                for key, h in sorted(context.handlers.items())]
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=api_keys, throttle_time_ms=0)


def unsupported_version_response() -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=API_KEY, min_version=MIN_VERSION,
                                                 max_version=MAX_VERSION)],
    )


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle,
                    unsupported_version_response=unsupported_version_response)]
